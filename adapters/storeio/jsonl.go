package storeio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
)

// Agents append JSON Lines transcripts while we read them, so every reader
// here has the same view of a file: a line counts once its '\n' is on disk.
// An unterminated last line is most likely half-written; it is offered
// separately (Partial) and only where a caller can use it without counting
// it twice.

// tailBlock is the size of the blocks TailLines reads backwards.
const tailBlock = 64 << 10

// HeadLines returns up to n complete lines from the start of the first size
// bytes of r, reading at most maxBytes. A line cut by maxBytes is dropped;
// so is an unterminated last line unless it is valid JSON (a writer that
// omits the final newline). Lines are returned without their '\n'; over
// Bytes they are slices of it, not copies.
func HeadLines(r io.ReaderAt, size int64, n int, maxBytes int64) ([][]byte, error) {
	if n <= 0 || size <= 0 {
		return nil, nil
	}
	limit := min(size, maxBytes)
	var buf []byte
	var got int
	if mem, ok := r.(Bytes); ok {
		buf = mem[:min(limit, int64(len(mem)))]
		got = len(buf)
	} else {
		buf = make([]byte, limit)
		var err error
		got, err = r.ReadAt(buf, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read head: %w", err)
		}
		buf = buf[:got]
	}
	var lines [][]byte
	for len(lines) < n {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			// The rest is complete only if it ends the file and is valid JSON.
			if int64(got) == size && len(bytes.TrimSpace(buf)) > 0 && json.Valid(buf) {
				lines = append(lines, buf)
			}
			break
		}
		lines = append(lines, buf[:i])
		buf = buf[i+1:]
	}
	return lines, nil
}

// TailLines returns up to n complete lines from the end of the first size
// bytes of r, oldest first, reading backwards block by block and at most
// maxBytes in all. It also returns the offset where the first returned line
// starts. An unterminated last line is included only when it is valid JSON;
// a line cut by maxBytes is dropped. Over Bytes the lines are slices of
// it, not copies.
func TailLines(r io.ReaderAt, size int64, n int, maxBytes int64) (lines [][]byte, start int64, err error) {
	if n <= 0 || size <= 0 || maxBytes <= 0 {
		return nil, size, nil
	}
	// Blocks are read backwards and joined once at the end. With c
	// newlines read, the c-1 lines between them are complete, so n+1
	// newlines are enough.
	off := size
	var buf []byte
	mem, inMemory := r.(Bytes)
	if inMemory && size > int64(len(mem)) {
		return nil, size, fmt.Errorf("read tail: file shrank while reading")
	}
	if inMemory {
		// The lines are cut from the bytes in memory; the window is
		// found as the blocks below would find it.
		if int64(n) >= maxBytes {
			off = size - min(size, maxBytes)
		} else {
			for newlines := 0; off > 0 && size-off < maxBytes && newlines <= n; {
				step := min(int64(tailBlock), off, maxBytes-(size-off))
				newlines += bytes.Count(mem[off-step:off], []byte{'\n'})
				off -= step
			}
		}
		buf = mem[off:size]
	} else if int64(n) >= maxBytes {
		// The window cannot hold more lines than n: every line of it is
		// wanted, and it is read at once into the buffer the lines are
		// cut from (read block by block and joined, every byte was
		// allocated twice).
		off = size - min(size, maxBytes)
		buf = make([]byte, size-off)
		got, err := r.ReadAt(buf, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, size, fmt.Errorf("read tail: %w", err)
		}
		if got != len(buf) {
			return nil, size, fmt.Errorf("read tail: file shrank while reading")
		}
	} else {
		var blocks [][]byte
		newlines := 0
		for off > 0 && size-off < maxBytes && newlines <= n {
			step := min(int64(tailBlock), off, maxBytes-(size-off))
			block := make([]byte, step)
			got, err := r.ReadAt(block, off-step)
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, size, fmt.Errorf("read tail: %w", err)
			}
			if int64(got) != step {
				return nil, size, fmt.Errorf("read tail: file shrank while reading")
			}
			off -= step
			newlines += bytes.Count(block, []byte{'\n'})
			blocks = append(blocks, block)
		}
		buf = make([]byte, 0, size-off)
		for i := len(blocks) - 1; i >= 0; i-- {
			buf = append(buf, blocks[i]...)
		}
	}
	// Split buf into lines.
	var pieces [][]byte
	rest := buf
	pos := off
	var starts []int64
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			if len(rest) > 0 {
				pieces = append(pieces, rest)
				starts = append(starts, pos)
			}
			break
		}
		pieces = append(pieces, rest[:i])
		starts = append(starts, pos)
		pos += int64(i) + 1
		rest = rest[i+1:]
	}
	// The first piece is a whole line when the byte before it ends one.
	firstWhole := off == 0
	if off > 0 {
		var b [1]byte
		if _, err := r.ReadAt(b[:], off-1); err != nil {
			return nil, size, fmt.Errorf("read tail: %w", err)
		}
		firstWhole = b[0] == '\n'
	}
	var out [][]byte
	var outStarts []int64
	for i, p := range pieces {
		if i == 0 && !firstWhole {
			continue // cut at the front: not a whole line
		}
		if i == len(pieces)-1 && len(buf) > 0 && buf[len(buf)-1] != '\n' {
			// Unterminated last line: half-written unless it parses.
			if len(bytes.TrimSpace(p)) == 0 || !json.Valid(p) {
				continue
			}
		}
		out = append(out, p)
		outStarts = append(outStarts, starts[i])
	}
	if len(out) > n {
		out = out[len(out)-n:]
		outStarts = outStarts[len(outStarts)-n:]
	}
	if len(out) == 0 {
		return nil, size, nil
	}
	return out, outStarts[0], nil
}

// TailChunks hands fn the complete lines of the first size bytes of r from
// the end backwards, a chunk at a time, each line once: the first chunk
// holds the lines of about the last window bytes, and each next one the
// lines before, in a window four times larger. Lines come oldest first
// within a chunk. fn says when it has enough; the scan also ends at the
// start of the file or once maxBytes are read. A reader that needs the last
// n of something thus reads the file's end, and a file's every byte at
// most once, where re-reading a growing tail would parse it many times.
// As with ScanLines, only '\n'-terminated lines count: an unterminated
// last line is never handed over.
func TailChunks(ctx context.Context, r io.ReaderAt, size, window, maxBytes int64, fn func(lines [][]byte) (enough bool)) error {
	terminated := true
	if size > 0 {
		var b [1]byte
		if _, err := r.ReadAt(b[:], size-1); err != nil {
			return fmt.Errorf("read tail: %w", err)
		}
		terminated = b[0] == '\n'
	}
	end := size
	for end > 0 && size-end < maxBytes {
		if err := ctx.Err(); err != nil {
			return err
		}
		budget := min(window, maxBytes-(size-end))
		lines, start, err := TailLines(r, end, math.MaxInt, budget)
		if err != nil {
			return err
		}
		if len(lines) == 0 {
			if budget >= end || budget < window {
				return nil // the rest is one line longer than the budget
			}
			window *= 4 // one line longer than the window: widen it
			continue
		}
		if !terminated && end == size {
			// TailLines keeps an unterminated last line that parses: drop it.
			last := start
			for _, l := range lines[:len(lines)-1] {
				last += int64(len(l)) + 1
			}
			if last+int64(len(lines[len(lines)-1])) == size {
				lines = lines[:len(lines)-1]
			}
		}
		if len(lines) > 0 && fn(lines) {
			return nil
		}
		end = start
		window *= 4
	}
	return nil
}

// ScanResult says how far ScanLines got.
type ScanResult struct {
	// Consumed is the number of bytes through the last '\n': where an
	// incremental reader continues next time.
	Consumed int64
	// Skipped counts lines longer than the limit, which were not passed on.
	Skipped int
	// Partial is an unterminated last line (possibly half-written), not
	// passed to the callback and not counted in Consumed; nil when the
	// input ends with '\n' or the last line is over the limit.
	Partial []byte
}

// ScanLines calls fn with each '\n'-terminated line of r in order, without
// the '\n'. Lines longer than maxLine bytes are skipped (counted in
// Skipped) rather than failing the scan, and never held in memory whole.
// The line slice is only valid during the call. An error from fn stops the
// scan and is returned.
func ScanLines(r io.Reader, maxLine int, fn func(line []byte) error) (ScanResult, error) {
	if data, ok := inMemory(r); ok {
		return scanBytes(data, maxLine, fn)
	}
	return scanLines(bufio.NewReaderSize(r, scanBufferSize(r)), maxLine, fn)
}

// LineBuffers lends ScanLines' read buffers out again: a first read scans
// thousands of files, and a buffer for each was most of what the readers
// allocated. The zero value is ready to use and safe for concurrent use; a
// nil *LineBuffers allocates a buffer for each scan, as ScanLines does.
type LineBuffers struct {
	pool sync.Pool
	// Size is the size of the buffers lent (0: 64 KB), the most each read
	// asks of the file. A reader of heads, which stops after a few records,
	// wants less: each read copies its whole size out of the page cache.
	Size int
}

// ScanLines is ScanLines with a read buffer borrowed from b.
func (b *LineBuffers) ScanLines(r io.Reader, maxLine int, fn func(line []byte) error) (ScanResult, error) {
	if data, ok := inMemory(r); ok {
		return scanBytes(data, maxLine, fn)
	}
	if b == nil {
		return ScanLines(r, maxLine, fn)
	}
	br, _ := b.pool.Get().(*bufio.Reader)
	if br == nil {
		size := b.Size
		if size <= 0 {
			size = scanBuffer
		}
		br = bufio.NewReaderSize(r, size)
	} else {
		br.Reset(r)
	}
	defer func() {
		br.Reset(nil) // hold no file while pooled
		b.pool.Put(br)
	}()
	return scanLines(br, maxLine, fn)
}

// Bytes is a file read whole into memory, as an io.ReaderAt: HeadLines,
// TailLines and ScanLines (over an io.SectionReader of it) cut their lines
// from it rather than copy them out again. A reader of many small files
// reads each once and hands its head, its lines and its tail to those.
type Bytes []byte

// ReadAt is io.ReaderAt's.
func (b Bytes) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("storeio.Bytes.ReadAt: negative offset")
	}
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// inMemory returns the bytes r reads when it is a section of Bytes.
func inMemory(r io.Reader) ([]byte, bool) {
	sr, ok := r.(*io.SectionReader)
	if !ok {
		return nil, false
	}
	outer, off, n := sr.Outer()
	mem, ok := outer.(Bytes)
	if !ok {
		return nil, false
	}
	if pos, err := sr.Seek(0, io.SeekCurrent); err != nil || pos != 0 {
		return nil, false // read from already: the general way
	}
	from := min(max(off, 0), int64(len(mem)))
	return mem[from:min(from+n, int64(len(mem)))], true
}

// scanBytes is scanLines over data in memory, with the same results.
func scanBytes(data []byte, maxLine int, fn func(line []byte) error) (ScanResult, error) {
	var res ScanResult
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if len(data) <= maxLine {
				res.Partial = append([]byte(nil), data...)
			}
			break
		}
		line := data[:i]
		data = data[i+1:]
		res.Consumed += int64(i) + 1
		if len(line) > maxLine {
			res.Skipped++
		} else if err := fn(line); err != nil {
			return res, err
		}
	}
	return res, nil
}

// scanLines is ScanLines over br.
func scanLines(br *bufio.Reader, maxLine int, fn func(line []byte) error) (ScanResult, error) {
	var res ScanResult
	var pending []byte  // the start of a line longer than br's buffer
	var lineBytes int64 // bytes of the current line before this chunk
	over := false       // the current line is longer than maxLine
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			lineBytes += int64(len(chunk))
			if !over {
				if len(pending)+len(chunk) > maxLine {
					over, pending = true, nil
				} else {
					pending = append(pending, chunk...)
				}
			}
		case err == nil:
			res.Consumed += lineBytes + int64(len(chunk))
			lineBytes = 0
			line := chunk[:len(chunk)-1]
			if len(pending) > 0 && !over {
				pending = append(pending, line...)
				line = pending
			}
			if over || len(line) > maxLine {
				res.Skipped++
			} else if ferr := fn(line); ferr != nil {
				return res, ferr
			}
			pending, over = pending[:0], false
		case errors.Is(err, io.EOF):
			if !over && len(pending)+len(chunk) > 0 && len(pending)+len(chunk) <= maxLine {
				res.Partial = append(append([]byte(nil), pending...), chunk...)
			}
			return res, nil
		default:
			return res, fmt.Errorf("scan lines: %w", err)
		}
	}
}

// scanBuffer is ScanLines' read buffer: a longer line is gathered in
// pieces.
const scanBuffer = 64 << 10

// scanBufferSize is the read buffer for r: no larger than what r holds
// when it says (an io.SectionReader does), since a first read scans
// thousands of small files and zeroing 64 KB for each was a tenth of it.
func scanBufferSize(r io.Reader) int {
	s, ok := r.(interface{ Size() int64 })
	if !ok || s.Size() >= scanBuffer {
		return scanBuffer
	}
	return max(int(s.Size())+1, 16) // bufio's least
}

// fingerprintLen is how many bytes Fingerprint keeps.
const fingerprintLen = 64

// Fingerprint returns the bytes (at most 64) that end at off in r. An
// incremental reader keeps it with the offset it stopped at, and continues
// later only if the bytes there are unchanged (ResumeOffset): a file
// truncated and rewritten in place keeps its inode and may regrow past the
// old size.
func Fingerprint(r io.ReaderAt, off int64) ([]byte, error) {
	start := max(off-fingerprintLen, 0)
	buf := make([]byte, off-start)
	if _, err := r.ReadAt(buf, start); err != nil && !(errors.Is(err, io.EOF) && len(buf) == 0) {
		return nil, fmt.Errorf("read fingerprint: %w", err)
	}
	return buf, nil
}

// ResumeOffset returns where an incremental reader of the file at key may
// continue: offset, when key is prev's file grown (FileKey.Grown) and the
// bytes before offset still match fingerprint; otherwise 0, to read from
// the start.
func ResumeOffset(r io.ReaderAt, key, prev FileKey, offset int64, fingerprint []byte) int64 {
	if offset <= 0 || !key.Grown(prev) || offset > key.Size {
		return 0
	}
	fp, err := Fingerprint(r, offset)
	if err != nil || !bytes.Equal(fp, fingerprint) {
		return 0
	}
	return offset
}
