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
	// CPU is the processor time the process used, with what its children
	// that it waited for used (so a tree's sum does not drop when a child
	// ends and is reaped inside it). RSS is its resident memory in bytes,
	// Threads its tasks. They are read with the rest of the row, where the
	// system gives them (Linux); Usage says they were.
	CPU     time.Duration
	RSS     uint64
	Threads int
	Usage   bool
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
	return walk(children, root, skip)
}

// walk lists what descends from root through children, breadth first.
func walk(children map[int][]Info, root int, skip func(Info) bool) []Info {
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

// Index is one process table indexed for many questions: the walks of
// hundreds of sessions over one table cost one pass to build it, not one
// pass each.
type Index struct {
	table    []Info
	children map[int][]Info
	byPID    map[int]int
	// groups holds each process under its process group and, when
	// different, under its session.
	groups map[int][]Info
}

// NewIndex indexes t.
func NewIndex(t []Info) *Index {
	ix := &Index{table: t, children: make(map[int][]Info, len(t)), byPID: make(map[int]int, len(t)), groups: make(map[int][]Info, len(t)/2)}
	for i, p := range t {
		ix.children[p.PPID] = append(ix.children[p.PPID], p)
		ix.byPID[p.PID] = i
		ix.groups[p.PGID] = append(ix.groups[p.PGID], p)
		if p.SID != p.PGID {
			ix.groups[p.SID] = append(ix.groups[p.SID], p)
		}
	}
	return ix
}

// Table is the table indexed.
func (ix *Index) Table() []Info { return ix.table }

// Lookup is the row of pid, if the table has one.
func (ix *Index) Lookup(pid int) (Info, bool) {
	i, ok := ix.byPID[pid]
	if !ok {
		return Info{}, false
	}
	return ix.table[i], true
}

// InGroup lists the processes whose process group or session is id.
func (ix *Index) InGroup(id int) []Info { return ix.groups[id] }

// DescendantsExcept is DescendantsExcept over the indexed table.
func (ix *Index) DescendantsExcept(root int, skip func(Info) bool) []Info {
	return walk(ix.children, root, skip)
}
