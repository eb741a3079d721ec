package atomicfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// allocate gives f size bytes of real blocks.
func allocate(f *os.File, size int) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, int64(size))
	if err == unix.EOPNOTSUPP {
		return allocateByWriting(f, size)
	}
	return err
}
