package atomicfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Slot is a small file whose blocks are allocated when it is made, so it
// can be rewritten in place when the disk is full: what a process must be
// able to say about itself (its output is being dropped, how it ended)
// when nothing else can be written.
type Slot struct {
	f    *os.File
	size int
}

// NewSlot creates path (replacing it) holding size bytes of allocated
// space.
func NewSlot(path string, size int) (*Slot, error) {
	// Not through a link planted at path: the slot lives in a session folder.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("reserve %s: %w", path, err)
	}
	if err := allocate(f, size); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("reserve %s: %w", path, err)
	}
	return &Slot{f: f, size: size}, nil
}

// Put writes data over the slot's content, padded with spaces to the
// slot's size (a reader trims them), and syncs it.
func (s *Slot) Put(data []byte) error {
	if len(data) > s.size {
		return fmt.Errorf("write %s: %d bytes do not fit its %d", s.f.Name(), len(data), s.size)
	}
	buf := make([]byte, s.size)
	copy(buf, data)
	for i := len(data); i < len(buf); i++ {
		buf[i] = ' '
	}
	if _, err := s.f.WriteAt(buf, 0); err != nil {
		return fmt.Errorf("write %s: %w", s.f.Name(), err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", s.f.Name(), err)
	}
	return nil
}

// CommitAs writes data into the slot, cuts it to data's length, and
// renames it to path (made durable): a file written whole without
// allocating. The slot is closed afterwards.
func (s *Slot) CommitAs(path string, data []byte) error {
	defer s.f.Close()
	if _, err := s.f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := s.f.Truncate(int64(len(data))); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(s.f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return SyncDir(filepath.Dir(path))
}

// Close closes the slot, keeping its file.
func (s *Slot) Close() error { return s.f.Close() }

// ReadSlot reads what a slot holds, less its padding.
func ReadSlot(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return bytes.TrimRight(b, " \x00"), nil
}

// allocateByWriting allocates by writing zeros, where fallocate is missing.
func allocateByWriting(f *os.File, size int) error {
	if _, err := f.WriteAt(make([]byte, size), 0); err != nil {
		return err
	}
	return f.Sync()
}
