// Package cgroup gives each session a cgroup of its own where the machine
// allows it: the service finds at its start where it may create cgroups
// (Detect), the session's monitor creates the session's, applies its limits
// and starts the agent inside it, and a stop ends everything in it at once
// (cgroup.kill), wherever its processes went in the process tree.
//
// cgroup v2 comes first (membership, cgroup.kill, memory.max, pids.max,
// cpu.max, memory.events); on a hybrid host whose cgroup2 hierarchy lacks a
// controller, that controller's v1 hierarchy stands in for the limits and
// the OOM count, where the service may write there.
package cgroup

import (
	"fmt"
	"os"
	"strings"
)

// Controllers a session's limits use.
const (
	Memory = "memory"
	Pids   = "pids"
	CPU    = "cpu"
)

// Paths are a session's cgroup directories: the one in the cgroup2
// hierarchy, and for a controller the cgroup2 hierarchy lacks (a hybrid
// host), its directory in that controller's v1 hierarchy. Written as the
// session folder's cgroup.json.
type Paths struct {
	V2 string            `json:"v2,omitempty"`
	V1 map[string]string `json:"v1,omitempty"`
}

// Empty reports whether p names no directory.
func (p Paths) Empty() bool { return p.V2 == "" && len(p.V1) == 0 }

// Exists reports whether any directory of p is there.
func (p Paths) Exists() bool {
	for _, d := range p.dirs() {
		if _, err := os.Stat(d); err == nil {
			return true
		}
	}
	return false
}

// dirs lists every directory of p, v2 first.
func (p Paths) dirs() []string {
	var out []string
	if p.V2 != "" {
		out = append(out, p.V2)
	}
	for _, c := range []string{Memory, Pids, CPU} {
		if d := p.V1[c]; d != "" {
			out = append(out, d)
		}
	}
	return out
}

// Limits bound what a session may use; zero fields are no bound.
type Limits struct {
	MemoryMax int64   `json:"memory_max_bytes,omitempty"`
	CPUs      float64 `json:"cpus,omitempty"`
	PidsMax   int64   `json:"pids_max,omitempty"`
}

// Zero reports whether l bounds nothing.
func (l Limits) Zero() bool { return l.MemoryMax == 0 && l.CPUs == 0 && l.PidsMax == 0 }

// needs lists the controllers l needs.
func (l Limits) needs() []string {
	var out []string
	if l.MemoryMax > 0 {
		out = append(out, Memory)
	}
	if l.PidsMax > 0 {
		out = append(out, Pids)
	}
	if l.CPUs > 0 {
		out = append(out, CPU)
	}
	return out
}

// Status says whether sessions get cgroups here, and where, or why not.
type Status struct {
	Enabled bool `json:"enabled"`
	// Reason says why not (Enabled false).
	Reason string `json:"reason,omitempty"`
	// V2 is the cgroup2 directory sessions' cgroups are created in.
	V2 string `json:"v2,omitempty"`
	// V1 names, per controller, the v1 directory used instead of a
	// controller cgroup2 lacks here.
	V1 map[string]string `json:"v1,omitempty"`
	// Controllers are the controllers a session's limits may use.
	Controllers []string `json:"controllers,omitempty"`
	// Note says why cgroup2's controllers are not used, when they are not.
	Note string `json:"note,omitempty"`
}

// String is the one line `daemon status` shows.
func (s Status) String() string {
	if !s.Enabled {
		return "no: " + s.Reason
	}
	var b strings.Builder
	if s.V2 != "" {
		fmt.Fprintf(&b, "yes (v2 at %s", s.V2)
	} else {
		b.WriteString("yes (v1")
	}
	var lim []string
	for _, c := range s.Controllers {
		if d, ok := s.V1[c]; ok {
			lim = append(lim, c+" via v1 at "+d)
		} else {
			lim = append(lim, c)
		}
	}
	if len(lim) == 0 {
		b.WriteString("; no limits: no controller available")
	} else {
		b.WriteString("; limits: " + strings.Join(lim, ", "))
	}
	if s.Note != "" {
		b.WriteString("; " + s.Note)
	}
	b.WriteString(")")
	return b.String()
}

// Check says whether l can be enforced with the controllers at hand.
func (s Status) Check(l Limits) error {
	if l.Zero() {
		return nil
	}
	if !s.Enabled {
		return fmt.Errorf("limits need a cgroup per session, which this service cannot create: %s", s.Reason)
	}
	var missing []string
	for _, c := range l.needs() {
		found := false
		for _, have := range s.Controllers {
			found = found || have == c
		}
		if !found {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("limits need the %s controller, which the service's cgroups do not have here (available: %s)", strings.Join(missing, " and "), orNone(s.Controllers))
	}
	return nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Usage is what a session's cgroup says of it once it has ended.
type Usage struct {
	// MemoryPeak is the most memory the session used, 0 when unknown.
	MemoryPeak int64
	// OOM says the kernel's OOM killer ended a process of the session.
	OOM bool
}
