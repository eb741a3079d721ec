package claude

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/agentctl/agentctl/adapters/storeio"
)

const (
	// Files up to wholeFile are read whole on first sight; larger ones by
	// their head and tail.
	wholeFile = 32 << 10
	// The head is read until the first prompt, at most headLines records
	// within headMax bytes.
	headMax   = 8 << 20
	headLines = 64
	// headBuffer is the head read's buffer: Claude Code 2.1 writes the
	// first prompt within the first kilobyte or two, and a read copies
	// its whole buffer (a longer head is read on in more of them).
	headBuffer = 8 << 10
	// The tail window starts at tailStart and doubles up to tailMax until
	// it holds the latest facts, a cost-state among them.
	tailStart = 32 << 10
	tailMax   = 8 << 20
	// fullScanMax bounds the files read whole to total tokens when no
	// cost-state says them (a first run still going, an older release).
	fullScanMax = 64 << 20
	// maxLine bounds one record; longer lines are skipped with a warning.
	maxLine = 32 << 20
	// ctxEvery is how many lines are read between context checks.
	ctxEvery = 512
)

// summaryReader builds and updates summaries; ctx bounds the reading, and
// lines and heads lend the read buffers (nil: one each read).
type summaryReader struct {
	ctx          context.Context
	lines, heads *storeio.LineBuffers
}

// fill is an storeio.FillFunc: read the transcript f at key, continuing
// from prev when the file only grew. The cache holds pointers so that a hit
// copies nothing; a stored summary is never changed.
func (sr summaryReader) fill(f *os.File, key storeio.FileKey, prev *storeio.Entry[*summary]) (*summary, error) {
	var pv *storeio.Entry[summary]
	if prev != nil && prev.Value != nil {
		pv = &storeio.Entry[summary]{Key: prev.Key, Value: *prev.Value}
	}
	s, err := sr.fillValue(f, key, pv)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

func (sr summaryReader) fillValue(f *os.File, key storeio.FileKey, prev *storeio.Entry[summary]) (summary, error) {
	if prev != nil {
		if off := storeio.ResumeOffset(f, key, prev.Key, prev.Value.Offset, prev.Value.Fingerprint); off > 0 {
			s := prev.Value.clone()
			if key.Size-off <= fullScanMax {
				if err := sr.scan(&s, f, off, key.Size, s.Complete); err != nil {
					return summary{}, err
				}
				return sr.finish(s, f)
			}
			// Gigabytes appended since the last look: keep what the head
			// said and read only the tail.
			s = summary{ID: s.ID, Cwd: s.Cwd, FirstPrompt: s.FirstPrompt, Created: s.Created}
			if _, err := sr.tail(&s, f, key.Size, 0); err != nil {
				return summary{}, err
			}
			return sr.finish(s, f)
		}
	}
	var s summary
	if key.Size <= wholeFile {
		if err := sr.scan(&s, f, 0, key.Size, true); err != nil {
			return summary{}, err
		}
		return sr.finish(s, f)
	}
	headEnd, err := sr.head(&s, f, key.Size)
	if err != nil {
		return summary{}, err
	}
	found, err := sr.tail(&s, f, key.Size, headEnd)
	if err != nil {
		return summary{}, err
	}
	switch {
	case found || key.Size > fullScanMax:
	case s.Offset == 0:
		// The tail window grew to the whole file: read every record in
		// order, which totals the usage exactly.
		full := summary{}
		if err := sr.scan(&full, f, 0, key.Size, true); err != nil {
			return summary{}, err
		}
		s = full
	default:
		// The tail knows the row but found no cost-state (a first run
		// still going, an older release): the usage scanner totals the
		// usage of the whole file, exactly, reading only that.
		if err := sr.totals(&s, f, s.Offset); err != nil {
			return summary{}, err
		}
	}
	return sr.finish(s, f)
}

// errHeadDone stops the head scan once the head facts are known.
var errHeadDone = errors.New("head read")

// head reads the first records until it knows where and how the session
// began (the first prompt may be a long line of its own), and returns the
// offset after the last line read.
func (sr summaryReader) head(s *summary, f *os.File, size int64) (int64, error) {
	n := 0
	res, err := sr.heads.ScanLines(io.NewSectionReader(f, 0, min(size, headMax)), maxLine, func(line []byte) error {
		r, ok, err := parseRecord(line)
		if err != nil {
			s.BadLines++
		} else if ok {
			s.head(r)
		}
		if n++; n >= headLines || (s.FirstPrompt != "" && s.Cwd != "" && !s.Created.IsZero()) {
			return errHeadDone
		}
		return nil
	})
	if err != nil && !errors.Is(err, errHeadDone) {
		return 0, fmt.Errorf("read head: %w", err)
	}
	return res.Consumed, nil
}

// tail reads the file backwards from its last complete line, in a window
// that grows until the latest facts are all found, or those of the row
// when no cost-state is among them. found reports whether the token totals
// are known from a cost-state; it is false when the window reached the
// start of the file (the summary's offset is then not set), which is then
// better read forwards.
// Unreadable lines before headEnd were counted by the head read. The
// summary's offset is set after the last complete line.
func (sr summaryReader) tail(s *summary, f *os.File, size, headEnd int64) (found bool, err error) {
	end, err := lastLineEnd(f, size)
	if err != nil {
		return false, err
	}
	base := s.clone()
	for window := int64(tailStart); ; window *= 2 {
		lines, start, err := storeio.TailLines(f, end, math.MaxInt32, window)
		if err != nil {
			return false, fmt.Errorf("read tail: %w", err)
		}
		if start == 0 && len(lines) > 0 {
			return false, nil
		}
		t := base.clone()
		var facts tailFacts
		pos := end
		for i := len(lines) - 1; i >= 0; i-- {
			pos -= int64(len(lines[i])) + 1
			if i%ctxEvery == 0 {
				if err := sr.ctx.Err(); err != nil {
					return false, err
				}
			}
			r, ok, err := parseRecord(lines[i])
			if err != nil {
				if pos >= headEnd {
					t.BadLines++
				}
				continue
			}
			if ok && t.applyBackwards(r, &facts) {
				break
			}
		}
		// Without a cost-state near the end, the totals of a file the
		// usage scanner reads (fillValue) are its: the window grows no
		// further than the row needs.
		row := facts.updated && facts.model && facts.turn && end <= fullScanMax
		if facts.all() || row && !facts.cost || window >= tailMax || window >= end {
			t.sinceCostInOrder()
			t.Offset = end
			t.Complete = false
			*s = t
			return facts.cost, nil
		}
	}
}

// lastLineEnd returns the offset after the file's last '\n': an
// unterminated last line is most likely still being written.
func lastLineEnd(f io.ReaderAt, size int64) (int64, error) {
	buf := make([]byte, 4096)
	for end := size; end > 0; {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("read tail: %w", err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
		if size-end > maxLine {
			break
		}
	}
	return 0, nil
}

// scan applies every complete line of f in [from, to). complete says the
// summary has seen every line before from, so head facts may still be
// learnt and usage sums stay exact.
func (sr summaryReader) scan(s *summary, f *os.File, from, to int64, complete bool) error {
	n := 0
	res, err := sr.lines.ScanLines(io.NewSectionReader(f, from, to-from), maxLine, func(line []byte) error {
		if n++; n%ctxEvery == 0 {
			if err := sr.ctx.Err(); err != nil {
				return err
			}
		}
		r, ok, err := parseRecord(line)
		if err != nil {
			s.BadLines++
			return nil
		}
		if !ok {
			return nil
		}
		if complete {
			s.head(r)
		}
		s.apply(r)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read transcript: %w", err)
	}
	s.LongLines += res.Skipped
	s.Offset = from + res.Consumed
	s.Complete = complete
	return nil
}

// finish records where reading stopped and turns counters into warnings.
func (sr summaryReader) finish(s summary, f *os.File) (summary, error) {
	fp, err := storeio.Fingerprint(f, s.Offset)
	if err != nil {
		return summary{}, err
	}
	s.Fingerprint = fp
	s.Warnings = s.Warnings[:0]
	if s.BadLines > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d unreadable lines skipped in the transcript", s.BadLines))
	}
	if s.LongLines > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d lines over %d MB skipped in the transcript", s.LongLines, maxLine>>20))
	}
	return s, nil
}
