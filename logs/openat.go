package logs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// A session's folder is writable by the agent it runs, which may plant a
// symbolic link (or a FIFO) at the name of a file agentctl appends to. Every
// write in the folder therefore opens the name relative to the folder's
// descriptor, without following a link, and never blocks on a FIFO: what
// sits at the name that is not a regular file is removed and the file
// created afresh, so nothing is ever written outside the folder.

// openDir opens a session's folder for the *at calls below. The folder
// itself is not followed either.
func openDir(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open folder %s: %w", dir, err)
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// createTries bounds how often a planted entry is removed while something
// keeps planting it again.
const createTries = 8

// openAppendAt opens name in dir for appending, creating it with mode 0600.
func openAppendAt(dir *os.File, name string) (*os.File, error) {
	return openFileAt(dir, name, unix.O_WRONLY|unix.O_APPEND)
}

// openFileAt opens name in dir for writing with flags, creating it with
// mode 0600 if needed, never through a symbolic link and never a FIFO or
// device: such an entry is removed and a regular file created in its place.
func openFileAt(dir *os.File, name string, flags int) (*os.File, error) {
	dfd := int(dir.Fd())
	const safe = unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	for range createTries {
		fd, err := unix.Openat(dfd, name, flags|unix.O_CREAT|safe, 0o600)
		if err == nil {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				unix.Close(fd)
				return nil, fmt.Errorf("open %s: %w", filepath.Join(dir.Name(), name), err)
			}
			if st.Mode&unix.S_IFMT == unix.S_IFREG {
				// Non-blocking served only to pass a FIFO by.
				if err := unix.SetNonblock(fd, false); err != nil {
					unix.Close(fd)
					return nil, fmt.Errorf("open %s: %w", filepath.Join(dir.Name(), name), err)
				}
				return os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name)), nil
			}
			unix.Close(fd)
		} else if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENXIO) && !errors.Is(err, unix.EISDIR) {
			return nil, fmt.Errorf("open %s: %w", filepath.Join(dir.Name(), name), err)
		}
		// Not ours: a link, a FIFO, a device or a folder someone put there.
		if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
				return nil, fmt.Errorf("replace %s: %w", filepath.Join(dir.Name(), name), err)
			}
			if err := unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR); err != nil {
				return nil, fmt.Errorf("replace %s: %w", filepath.Join(dir.Name(), name), err)
			}
		}
	}
	return nil, fmt.Errorf("open %s: something keeps replacing it with a link or a special file", filepath.Join(dir.Name(), name))
}

// OpenAppend opens the file at path, in a session's folder, for appending,
// creating it with mode 0600. It never writes through a symbolic link
// planted at path, nor blocks on a FIFO there: such an entry is replaced by
// a regular file. The monitor's log and the decisions record use it.
func OpenAppend(path string) (*os.File, error) {
	dir, err := openDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return openAppendAt(dir, filepath.Base(path))
}
