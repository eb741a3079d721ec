//go:build unix

package storeio

import (
	"io/fs"
	"syscall"
)

// fileID returns the device and inode of a stat result.
func fileID(fi fs.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino) //nolint:unconvert // Dev is int32 on darwin
	}
	return 0, 0
}
