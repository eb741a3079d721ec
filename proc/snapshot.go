package proc

import (
	"context"
	"sync"
)

// Snapshot is one look at the process table, shared by everything that
// answers one query: each adapter asks which of its agents run, and
// without a shared snapshot every one of them would read every process's
// argv. A pid's argv and identity are read at most once per snapshot, when
// first asked for. It is safe for concurrent use.
type Snapshot struct {
	pidsOnce sync.Once
	pids     []int
	pidsErr  error

	mu    sync.Mutex
	argvs map[int]result[[]string]
	infos map[int]result[Info]
	envs  map[int]result[[]string]
}

// result is one read of one process.
type result[T any] struct {
	v   T
	err error
}

// NewSnapshot returns a snapshot that has read nothing yet.
func NewSnapshot() *Snapshot {
	return &Snapshot{argvs: map[int]result[[]string]{}, infos: map[int]result[Info]{}, envs: map[int]result[[]string]{}}
}

// PIDs lists every process the caller may see, read once.
func (s *Snapshot) PIDs() ([]int, error) {
	s.pidsOnce.Do(func() { s.pids, s.pidsErr = pids() })
	return s.pids, s.pidsErr
}

// Cmdline is Cmdline(pid), read once per snapshot.
func (s *Snapshot) Cmdline(pid int) ([]string, error) { return once(s, s.argvs, pid, Cmdline) }

// Lookup is Lookup(pid), read once per snapshot.
func (s *Snapshot) Lookup(pid int) (Info, error) { return once(s, s.infos, pid, Lookup) }

// Environ is Environ(pid), read once per snapshot.
func (s *Snapshot) Environ(pid int) ([]string, error) { return once(s, s.envs, pid, Environ) }

// once returns read(pid) from memo, reading it (outside the lock) the
// first time it is asked for.
func once[T any](s *Snapshot, memo map[int]result[T], pid int, read func(int) (T, error)) (T, error) {
	s.mu.Lock()
	r, ok := memo[pid]
	s.mu.Unlock()
	if ok {
		return r.v, r.err
	}
	r.v, r.err = read(pid)
	s.mu.Lock()
	memo[pid] = r
	s.mu.Unlock()
	return r.v, r.err
}

type snapshotKey struct{}

// WithSnapshot returns ctx carrying s, for the readers a query calls.
func WithSnapshot(ctx context.Context, s *Snapshot) context.Context {
	return context.WithValue(ctx, snapshotKey{}, s)
}

// SnapshotFrom returns the snapshot ctx carries, or a new one when it
// carries none (a reader called on its own).
func SnapshotFrom(ctx context.Context) *Snapshot {
	if s, ok := ctx.Value(snapshotKey{}).(*Snapshot); ok && s != nil {
		return s
	}
	return NewSnapshot()
}
