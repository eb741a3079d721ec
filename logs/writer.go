// Package logs keeps a session's output: a size-capped, rotated log of the
// raw terminal bytes, read back as a tail, followed live, or as text with
// terminal escape sequences removed.
package logs

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// Defaults for a session log: three files of 50 MiB each, so a session keeps
// its last 100-150 MiB of output.
const (
	DefaultMaxSize = 50 << 20
	DefaultFiles   = 3
)

// Writer appends to path and rotates it to path.1, path.2, ... when it would
// grow past MaxSize. It is safe for concurrent use.
type Writer struct {
	path    string
	maxSize int64
	files   int

	mu    sync.Mutex
	f     *os.File
	size  int64
	ino   uint64
	marks *marker
}

// OpenWriter opens (or creates) path for appending. maxSize <= 0 and
// files <= 0 select the defaults.
func OpenWriter(path string, maxSize int64, files int) (*Writer, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxSize
	}
	if files <= 0 {
		files = DefaultFiles
	}
	w := &Writer{path: path, maxSize: maxSize, files: files}
	if err := w.open(); err != nil {
		return nil, err
	}
	w.marks = openMarker(path)
	return w, nil
}

func (w *Writer) open() error {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open log: %w", err)
	}
	w.f, w.size, w.ino = f, st.Size(), inode(st)
	return nil
}

// Write appends p, rotating first when p would not fit.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return 0, os.ErrClosed
	}
	if w.size > 0 && w.size+int64(len(p)) > w.maxSize {
		if err := w.rotate(); err != nil {
			return 0, err
		}
	}
	w.marks.mark(w.ino, w.size, time.Now())
	n, err := w.f.Write(p)
	w.size += int64(n)
	if err != nil {
		return n, fmt.Errorf("write log: %w", err)
	}
	return n, nil
}

func (w *Writer) rotate() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	w.f = nil
	os.Remove(RotatedName(w.path, w.files-1))
	for i := w.files - 2; i >= 0; i-- {
		if err := os.Rename(RotatedName(w.path, i), RotatedName(w.path, i+1)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("rotate log: %w", err)
		}
	}
	if err := w.open(); err != nil {
		return err
	}
	// Marks of the files left, but none for the new file: its inode may be
	// one a removed file had.
	keep := map[uint64]bool{}
	for _, lf := range snapshot(w.path) {
		keep[lf.ino] = lf.ino != w.ino
	}
	w.marks.trim(w.path, keep)
	return nil
}

// Sync flushes the current file to disk.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	return w.f.Sync()
}

// Close closes the log.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	w.marks.close()
	return err
}

// RotatedName is the name of the i-th file of a log: path itself for 0,
// path.i for older ones.
func RotatedName(path string, i int) string {
	if i == 0 {
		return path
	}
	return path + "." + strconv.Itoa(i)
}
