//go:build unix

package storeio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/agentctl/agentctl/internal/text"
)

// fileID returns the device and inode of a stat result.
func fileID(fi fs.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino) //nolint:unconvert // Dev is int32 on darwin
	}
	return 0, 0
}

// openRegular opens a file of ours to read (a cache), refusing what is
// not a regular file of at most max bytes: a symbolic link (it could
// point anywhere), a FIFO (whose open and reads block), a device. The
// open does not block (O_NONBLOCK, which changes nothing for a regular
// file) and its type is taken from the descriptor, not the name.
func openRegular(path string, max int64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("a symbolic link, not a file of agentctl's: %w", err)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, err
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	case fi.Size() > max:
		f.Close()
		return nil, fmt.Errorf("%d bytes, over the bound of %s", fi.Size(), text.Bytes(max))
	}
	return f, nil
}
