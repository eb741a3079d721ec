package api

import "time"

// Resources is what a session costs the machine, sampled when asked: from
// the session's cgroup where it has one, else summed over its processes
// (its monitor among them, as a cgroup holds it too). A nil field is
// unknown. A session that ended has only its peak memory.
type Resources struct {
	// SampledAt is when the figures were read; zero for an ended session.
	SampledAt time.Time `json:"sampled_at,omitzero"`
	// Source is "cgroup" or "processes" (a sum over the session's process
	// tree), or "record" for an ended session's kept peak.
	Source string `json:"source"`
	// CPUPercent is the processor time used over the last CPUWindowS
	// seconds, in percent of one core (200 is two cores busy): over the
	// time since the last sample the service took of this session, or,
	// for its first, since the session started.
	CPUPercent *float64 `json:"cpu_percent,omitempty"`
	CPUWindowS float64  `json:"cpu_window_s,omitempty"`
	// CPUSeconds is the processor time used in all, by the live processes
	// and the children they waited for.
	CPUSeconds *float64 `json:"cpu_seconds,omitempty"`
	// MemoryBytes is the memory in use: the cgroup's, less the page cache
	// it could drop at once (inactive files), or the processes' resident
	// sets added up.
	MemoryBytes *uint64 `json:"memory_bytes,omitempty"`
	// MemoryPeakBytes is the most the session was seen to use: the
	// cgroup's own high-water mark, or the highest sample the service took.
	MemoryPeakBytes *uint64 `json:"memory_peak_bytes,omitempty"`
	// PIDs counts the session's tasks (threads included, as a cgroup's
	// pids.max counts them).
	PIDs *int `json:"pids,omitempty"`
	// Processes counts the session's processes.
	Processes *int `json:"processes,omitempty"`
	// IOReadBytes and IOWriteBytes are what the session read from and
	// wrote to storage.
	IOReadBytes  *uint64 `json:"io_read_bytes,omitempty"`
	IOWriteBytes *uint64 `json:"io_write_bytes,omitempty"`
}

// Machine is the host's own load and memory, beside its sessions'.
type Machine struct {
	CPUs   int     `json:"cpus"`
	Load1  float64 `json:"load1"`
	Load5  float64 `json:"load5"`
	Load15 float64 `json:"load15"`
	// MemTotalBytes and MemAvailableBytes are /proc/meminfo's.
	MemTotalBytes     uint64 `json:"mem_total_bytes"`
	MemAvailableBytes uint64 `json:"mem_available_bytes"`
}

// SessionStats is one row of the answer to stats: a session and what it
// costs.
type SessionStats struct {
	ID      string `json:"id"`
	Handle  string `json:"handle,omitempty"`
	Host    string `json:"host,omitempty"`
	Name    string `json:"name,omitempty"`
	Adapter string `json:"adapter"`
	Status  Status `json:"status"`
	// Label is the session's name, else its prompt or command, shortened.
	Label     string     `json:"label,omitempty"`
	Resources *Resources `json:"resources,omitempty"`
}

// Stats is the answer to a stats query: each session asked for (all the
// running ones this service started when none is named) and the machine.
type Stats struct {
	Sessions []SessionStats `json:"sessions"`
	Machine  *Machine       `json:"machine,omitempty"`
	// Total adds up the sessions' figures (CPU percent, memory, tasks).
	Total    *Resources `json:"total,omitempty"`
	Warnings []string   `json:"warnings,omitempty"`
}
