//go:build unix

package adapters

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// fileID returns the device and inode of a stat result.
func fileID(fi fs.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino) //nolint:unconvert // Dev is int32 on darwin
	}
	return 0, 0
}

// ListFiles returns the keys of the regular files in dir whose names match
// accepts, from one fresh stat each, made relative to the open folder
// (cheaper than a stat by full path). A file removed between the listing
// and its stat is left out. A missing dir is an error wrapping
// fs.ErrNotExist.
func ListFiles(dir string, accept func(name string) bool) ([]FileKey, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	fd := int(d.Fd())
	out := make([]FileKey, 0, len(names))
	for _, n := range names {
		if !accept(n) {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, 0); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return nil, fmt.Errorf("stat %s: %w", filepath.Join(dir, n), err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		out = append(out, FileKey{
			Path:    filepath.Join(dir, n),
			Size:    st.Size,
			ModTime: time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec)), //nolint:unconvert // int32 fields on some platforms
			Dev:     uint64(st.Dev),                                     //nolint:unconvert
			Inode:   uint64(st.Ino),                                     //nolint:unconvert
		})
	}
	return out, nil
}
