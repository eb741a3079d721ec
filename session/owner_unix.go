package session

import (
	"io/fs"
	"syscall"
)

// ownerOf is a file's owner, where the platform says.
func ownerOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
