package events

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
)

// DefaultJournalBytes is the size at which the journal rotates. Two files
// are kept (the current one and one rotated), so the journal takes at most
// twice this on disk: tens of thousands of events.
const DefaultJournalBytes = 8 << 20

// journal is the on-disk record of published events: one JSON object per
// line in path, rotated to path+".1" when it grows past maxBytes.
type journal struct {
	path     string
	maxBytes int64

	// mu guards the open file: appending, rotating, and opening the files
	// for a reader (which then reads without the lock).
	mu   sync.Mutex
	f    *os.File
	size int64
}

// openJournal opens (creating) the journal and returns the last sequence
// number in it. A torn last line, left by a crash in the middle of a write,
// is cut off so the next append starts on a line of its own.
func openJournal(path string, maxBytes int64) (*journal, uint64, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultJournalBytes
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("open event journal: %w", err)
	}
	size, last, err := scanTail(f)
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("read event journal %s: %w", path, err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("repair event journal %s: %w", path, err)
	}
	if _, err := f.Seek(size, io.SeekStart); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("open event journal %s: %w", path, err)
	}
	if last == 0 {
		// The current file is empty right after a rotation: the last
		// number is in the rotated one.
		if old, err := os.Open(path + ".1"); err == nil {
			_, last, _ = scanTail(old)
			old.Close()
		}
	}
	return &journal{path: path, maxBytes: maxBytes, f: f, size: size}, last, nil
}

// scanTail reads f from the start and returns the length of its complete
// lines and the sequence number of the last one that parses.
func scanTail(f *os.File) (int64, uint64, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, 0, err
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var size int64
	var last uint64
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return size, last, nil // a fragment without '\n' is torn
		}
		if err != nil {
			return 0, 0, err
		}
		size += int64(len(line))
		if seq, ok := lineSeq(line); ok {
			last = seq
		}
	}
}

// lineSeq reads a line's sequence number. Lines written here start with
// it, which spares a replay from decoding every line it skips.
func lineSeq(line []byte) (uint64, bool) {
	if rest, ok := bytes.CutPrefix(line, []byte(`{"seq":`)); ok {
		end := bytes.IndexAny(rest, ",}")
		if end > 0 {
			if n, err := strconv.ParseUint(string(rest[:end]), 10, 64); err == nil && n > 0 {
				return n, true
			}
		}
	}
	var e struct {
		Seq uint64 `json:"seq"`
	}
	if err := json.Unmarshal(line, &e); err != nil || e.Seq == 0 {
		return 0, false
	}
	return e.Seq, true
}

// append writes e as one line, rotating first when the file is full.
func (j *journal) append(e api.Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode event %d: %w", e.Seq, err)
	}
	b = append(b, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("event journal is closed")
	}
	if j.size > 0 && j.size+int64(len(b)) > j.maxBytes {
		if err := j.rotate(); err != nil {
			return err
		}
	}
	n, err := j.f.Write(b)
	j.size += int64(n)
	if err != nil {
		return fmt.Errorf("append to event journal %s: %w", j.path, err)
	}
	return nil
}

func (j *journal) rotate() error {
	if err := j.f.Close(); err != nil {
		return fmt.Errorf("rotate event journal %s: %w", j.path, err)
	}
	j.f = nil
	if err := os.Rename(j.path, j.path+".1"); err != nil {
		return fmt.Errorf("rotate event journal %s: %w", j.path, err)
	}
	f, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("rotate event journal %s: %w", j.path, err)
	}
	j.f, j.size = f, 0
	return nil
}

// files opens the rotated and the current file, oldest first. Holding the
// handles, a reader sees every line written before the call even if the
// journal rotates while it reads.
func (j *journal) files() ([]*os.File, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []*os.File
	for _, p := range []string{j.path + ".1", j.path} {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			for _, o := range out {
				o.Close()
			}
			return nil, fmt.Errorf("read event journal: %w", err)
		}
		out = append(out, f)
	}
	return out, nil
}

// read calls fn for each event with after < Seq <= upto, in order.
func (j *journal) read(after, upto uint64, fn func(api.Event) error) error {
	if after >= upto {
		return nil
	}
	files, err := j.files()
	if err != nil {
		return err
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, f := range files {
		r := bufio.NewReaderSize(f, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if errors.Is(err, io.EOF) {
				break // the end, or a line still being written (beyond upto)
			}
			if err != nil {
				return fmt.Errorf("read event journal: %w", err)
			}
			seq, ok := lineSeq(line)
			if !ok || seq <= after {
				continue
			}
			if seq > upto {
				return nil
			}
			var e api.Event
			if err := json.Unmarshal(bytes.TrimSpace(line), &e); err != nil {
				continue
			}
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// seqBefore returns the sequence number of the last event stamped before
// t, or 0 when no kept event is: the events rotated away may have been
// after t, and a replay from 0 reports them as missing.
func (j *journal) seqBefore(t time.Time, upto uint64) (uint64, error) {
	var before uint64
	err := j.read(0, upto, func(e api.Event) error {
		if e.Timestamp.Before(t) {
			before = e.Seq
		}
		return nil
	})
	return before, err
}

func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}
