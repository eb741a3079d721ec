package supervisor

import (
	"math"
	"runtime/debug"
	"testing"
)

// gcSettings reads the collector's percent and memory limit without
// changing them.
func gcSettings() (pct int, limit int64) {
	pct = debug.SetGCPercent(100)
	debug.SetGCPercent(pct)
	return pct, debug.SetMemoryLimit(-1)
}

// TestWarmGC: the first read runs with the headroom, and what was set
// before is back after it; a GOGC that is off or higher and a memory limit
// the user set are kept. Not parallel: the settings are the process's.
func TestWarmGC(t *testing.T) {
	pct0, limit0 := gcSettings()
	t.Cleanup(func() {
		debug.SetGCPercent(pct0)
		debug.SetMemoryLimit(limit0)
	})
	cases := []struct {
		name      string
		pct       int
		limit     int64
		warmPct   int
		warmLimit int64
	}{
		{"the service's GOGC", 50, math.MaxInt64, warmGCPercent, warmMemoryLimit},
		{"GOGC off", -1, math.MaxInt64, -1, math.MaxInt64},
		{"GOGC higher", 800, math.MaxInt64, 800, math.MaxInt64},
		{"GOMEMLIMIT set", 50, 64 << 20, warmGCPercent, 64 << 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			debug.SetGCPercent(c.pct)
			debug.SetMemoryLimit(c.limit)
			restore := warmGC()
			if pct, limit := gcSettings(); pct != c.warmPct || limit != c.warmLimit {
				t.Errorf("while warming: GOGC %d, limit %d; want %d, %d", pct, limit, c.warmPct, c.warmLimit)
			}
			restore()
			if pct, limit := gcSettings(); pct != c.pct || limit != c.limit {
				t.Errorf("after: GOGC %d, limit %d; want %d, %d", pct, limit, c.pct, c.limit)
			}
		})
	}
}
