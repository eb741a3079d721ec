//go:build !linux

package atomicfile

import "os"

// allocate gives f size bytes of real blocks.
func allocate(f *os.File, size int) error { return allocateByWriting(f, size) }
