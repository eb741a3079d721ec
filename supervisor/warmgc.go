package supervisor

import (
	"math"
	"runtime/debug"
)

// The first read of the stores allocates many times what it keeps (every
// line of every transcript passes through a buffer), while the heap it
// keeps is small: at the service's GOGC the collector then runs every few
// megabytes and takes about as much CPU as the reading itself. While that
// read runs, the heap may grow to warmGCPercent over what it holds, but
// the runtime's memory no further than warmMemoryLimit, past which the
// collector works as hard as it must. The limit is what holds the
// service's peak resident memory on a first list of a 50,000-session store
// to about 225 MB (280 MB under a limit of 256 MB, for about 0.2 s more of
// the list); it is not kept after the read: a warm list of such a store
// builds 80 MB more, and under a limit near that the collector ran without
// pause, making warm lists three times slower. The settings before are
// put back once the read is over.
const (
	warmGCPercent   = 400
	warmMemoryLimit = 200 << 20
)

// warmGC gives the collector the first read's headroom and returns what
// puts the settings back. A GOGC that is off or already higher, and a
// memory limit set (GOMEMLIMIT), are left as they are.
func warmGC() (restore func()) {
	pct := debug.SetGCPercent(warmGCPercent)
	if pct < 0 || pct >= warmGCPercent {
		debug.SetGCPercent(pct)
		return func() {}
	}
	limit := debug.SetMemoryLimit(-1) // a negative limit reads it
	if limit == math.MaxInt64 {
		debug.SetMemoryLimit(warmMemoryLimit)
	}
	return func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(pct)
	}
}
