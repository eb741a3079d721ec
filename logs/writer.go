// Package logs keeps a session's output: a size-capped, rotated log of the
// raw terminal bytes, read back as a tail, followed live, or as text with
// terminal escape sequences removed.
package logs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults for a session log: three files of 50 MiB each, so a session keeps
// its last 100-150 MiB of output.
const (
	DefaultMaxSize = 50 << 20
	DefaultFiles   = 3
)

// Writer appends to path and rotates it to path.1, path.2, ... when it would
// grow past MaxSize. It is safe for concurrent use. It opens path's folder
// once and resolves every name in it from there, never following a
// symbolic link: the agent can write in its session's folder, and output
// must not land outside it.
type Writer struct {
	path    string
	name    string   // path's base name
	dir     *os.File // path's folder
	maxSize int64
	files   int

	mu     sync.Mutex
	closed bool
	f      *os.File // nil after a rotation that could not open the new file
	size   int64
	ino    uint64
	marks  *marker
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
	dir, err := openDir(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	w := &Writer{path: path, name: filepath.Base(path), dir: dir, maxSize: maxSize, files: files}
	if err := w.open(); err != nil {
		dir.Close()
		return nil, err
	}
	w.marks = openMarker(dir, w.name)
	return w, nil
}

func (w *Writer) open() error {
	f, err := openAppendAt(w.dir, w.name)
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
	if w.closed {
		return 0, os.ErrClosed
	}
	if w.f == nil {
		// A rotation could not open the new file: try again.
		if err := w.open(); err != nil {
			return 0, err
		}
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
	dfd := int(w.dir.Fd())
	unix.Unlinkat(dfd, RotatedName(w.name, w.files-1), 0)
	for i := w.files - 2; i >= 0; i-- {
		// A rename moves a link itself, never what it points to.
		if err := unix.Renameat(dfd, RotatedName(w.name, i), dfd, RotatedName(w.name, i+1)); err != nil && !errors.Is(err, unix.ENOENT) {
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
	w.marks.trim(w.dir, w.path, keep)
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
	if w.closed {
		return nil
	}
	w.closed = true
	var err error
	if w.f != nil {
		err = w.f.Close()
		w.f = nil
	}
	w.marks.close()
	w.dir.Close()
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
