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
	argvs map[int]listResult
	infos map[int]infoResult
	envs  map[int]listResult
}

type listResult struct {
	list []string
	err  error
}

type infoResult struct {
	info Info
	err  error
}

// NewSnapshot returns a snapshot that has read nothing yet.
func NewSnapshot() *Snapshot {
	return &Snapshot{argvs: map[int]listResult{}, infos: map[int]infoResult{}, envs: map[int]listResult{}}
}

// PIDs lists every process the caller may see, read once.
func (s *Snapshot) PIDs() ([]int, error) {
	s.pidsOnce.Do(func() { s.pids, s.pidsErr = pids() })
	return s.pids, s.pidsErr
}

// Cmdline is Cmdline(pid), read once per snapshot.
func (s *Snapshot) Cmdline(pid int) ([]string, error) {
	s.mu.Lock()
	r, ok := s.argvs[pid]
	s.mu.Unlock()
	if ok {
		return r.list, r.err
	}
	r.list, r.err = Cmdline(pid)
	s.mu.Lock()
	s.argvs[pid] = r
	s.mu.Unlock()
	return r.list, r.err
}

// Lookup is Lookup(pid), read once per snapshot.
func (s *Snapshot) Lookup(pid int) (Info, error) {
	s.mu.Lock()
	r, ok := s.infos[pid]
	s.mu.Unlock()
	if ok {
		return r.info, r.err
	}
	r.info, r.err = Lookup(pid)
	s.mu.Lock()
	s.infos[pid] = r
	s.mu.Unlock()
	return r.info, r.err
}

// Environ is Environ(pid), read once per snapshot.
func (s *Snapshot) Environ(pid int) ([]string, error) {
	s.mu.Lock()
	r, ok := s.envs[pid]
	s.mu.Unlock()
	if ok {
		return r.list, r.err
	}
	r.list, r.err = Environ(pid)
	s.mu.Lock()
	s.envs[pid] = r
	s.mu.Unlock()
	return r.list, r.err
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
