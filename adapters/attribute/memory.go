package attribute

import (
	"sync"
	"time"
)

// Memory keeps the pairs earlier answers proved, so that a fact seen once
// still counts when what showed it is gone: a one-shot's argv named its
// session while it ran, two TUIs were told apart while one of them had
// written alone. An adapter keeps one (it is safe for concurrent use);
// without it each answer stands on what is visible at that moment.
type Memory struct {
	mu sync.Mutex
	// ties are the live processes proven to hold a session, since when.
	ties map[procKey]tie
	// released are the sessions whose proven holder has ended, and when
	// that was first seen.
	released map[string]time.Time
}

type procKey struct {
	pid   int
	stamp uint64
}

type tie struct {
	session string
	at      time.Time
}

// Bounds of what a Memory keeps: a released session written since is
// forgotten, and the oldest go first past maxReleased or after keepFor.
const (
	maxReleased = 4096
	keepFor     = 7 * 24 * time.Hour
)

// Apply returns procs and sessions with what the memory proved earlier:
// Held on the live processes tied before, Released on the sessions whose
// tied process has ended since (until written again). A tie whose process
// is gone becomes a release, seen at now.
func (m *Memory) Apply(now time.Time, procs []Proc, sessions []Session) ([]Proc, []Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	live := make(map[procKey]int, len(procs))
	for i, p := range procs {
		live[procKey{p.PID, p.Stamp}] = i
	}
	outP := slices0(procs)
	for k, t := range m.ties {
		i, ok := live[k]
		if !ok {
			if m.released == nil {
				m.released = map[string]time.Time{}
			}
			if _, seen := m.released[t.session]; !seen {
				m.released[t.session] = now
			}
			delete(m.ties, k)
			continue
		}
		if outP[i].Pin == "" {
			outP[i].Held, outP[i].HeldAt = t.session, t.at
		}
	}
	outS := slices0(sessions)
	for i, s := range outS {
		at, ok := m.released[s.ID]
		if !ok {
			continue
		}
		if s.Updated.After(at) {
			// Written since its holder ended: another process resumed it.
			delete(m.released, s.ID)
			continue
		}
		outS[i].Released = true
	}
	m.prune(now)
	return outP, outS
}

// Record keeps the ties res proves between procs (as given to Solve) and
// their sessions, as of now.
func (m *Memory) Record(now time.Time, procs []Proc, res Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, id := range res.Procs {
		if !res.Sessions[id].Tied() {
			continue
		}
		if m.ties == nil {
			m.ties = map[procKey]tie{}
		}
		k := procKey{procs[i].PID, procs[i].Stamp}
		if old, ok := m.ties[k]; ok && old.session == id {
			continue // proven since then
		}
		m.ties[k] = tie{session: id, at: now}
		delete(m.released, id)
	}
}

func (m *Memory) prune(now time.Time) {
	for id, at := range m.released {
		if now.Sub(at) > keepFor {
			delete(m.released, id)
		}
	}
	for len(m.released) > maxReleased {
		oldest, first := "", time.Time{}
		for id, at := range m.released {
			if oldest == "" || at.Before(first) {
				oldest, first = id, at
			}
		}
		delete(m.released, oldest)
	}
}

func slices0[T any](in []T) []T { return append([]T(nil), in...) }

// Solve is Solve over what the memory adds to procs and sessions, and
// keeps the ties it proves. It returns the processes as solved (their
// indexes are those of procs). A nil Memory solves the facts of the moment.
func (m *Memory) Solve(now time.Time, procs []Proc, sessions []Session) ([]Proc, Result) {
	if m == nil {
		return procs, Solve(procs, sessions)
	}
	procs, sessions = m.Apply(now, procs, sessions)
	res := Solve(procs, sessions)
	m.Record(now, procs, res)
	return procs, res
}
