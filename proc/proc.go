// Package proc answers "is this the process we started?" and "which
// processes descend from it?" from the kernel's own tables. A process is
// identified by its pid together with its start time, so a recycled pid is
// never mistaken for the original process.
package proc

import (
	"errors"
	"fmt"
	"time"
)

// ErrNotFound means no process has that pid.
var ErrNotFound = errors.New("no such process")

// Identity names one process for its whole life.
type Identity struct {
	PID int `json:"pid"`
	// Start is the kernel's raw start stamp: clock ticks since boot on Linux,
	// microseconds since the epoch on macOS. Exact, unlike StartTime, which
	// depends on the boot time's resolution.
	Start uint64 `json:"start_ticks"`
	// StartTime is Start converted to wall time.
	StartTime time.Time `json:"start_time"`
}

// Info is one row of the process table.
type Info struct {
	Identity
	PPID   int
	PGID   int
	SID    int
	Zombie bool
	// Stopped: the process is stopped by a signal (SIGSTOP, SIGTSTP) or a
	// tracer, and will do nothing until it is continued.
	Stopped bool
}

// Lookup reads the identity of the live process pid.
func Lookup(pid int) (Info, error) {
	if pid <= 0 {
		return Info{}, fmt.Errorf("look up pid %d: %w", pid, ErrNotFound)
	}
	return lookup(pid)
}

// Alive reports whether id's process still exists, is not a zombie, and has
// the recorded start stamp.
func Alive(id Identity) bool {
	if id.PID <= 0 {
		return false
	}
	info, err := lookup(id.PID)
	if err != nil {
		return false
	}
	return !info.Zombie && info.Start == id.Start
}

// Table returns every process the caller may see.
func Table() ([]Info, error) { return table() }

// Descendants returns the descendants of root in t (root excluded), parents
// before children.
func Descendants(t []Info, root int) []Info { return DescendantsExcept(t, root, nil) }

// DescendantsExcept is Descendants, leaving out every process for which skip
// returns true together with everything below it.
func DescendantsExcept(t []Info, root int, skip func(Info) bool) []Info {
	children := make(map[int][]Info, len(t))
	for _, p := range t {
		children[p.PPID] = append(children[p.PPID], p)
	}
	var out []Info
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if seen[c.PID] || (skip != nil && skip(c)) {
				continue
			}
			seen[c.PID] = true
			out = append(out, c)
			queue = append(queue, c.PID)
		}
	}
	return out
}
