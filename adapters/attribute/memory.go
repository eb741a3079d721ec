package attribute

import (
	"slices"
	"sync"
	"time"
)

// Memory keeps what earlier answers proved, so that a fact seen once still
// counts when what showed it is gone: a one-shot's argv named its session
// while it ran; two TUIs were told apart while one of them had written
// alone; of two TUIs that each hold one of two sessions, the one that
// quits took one of them with it. An adapter keeps one (it is safe for
// concurrent use); without it each answer stands on what is visible at
// that moment.
type Memory struct {
	mu sync.Mutex
	// holds are the live processes proven to hold one of some sessions,
	// since when.
	holds map[procKey]held
	// ended are the processes that held one of some sessions and have
	// ended since.
	ended map[procKey]held
}

type procKey struct {
	pid   int
	stamp uint64
}

type held struct {
	sessions []string
	at       time.Time
	// gone is when the process was first seen gone.
	gone time.Time
}

// Bounds of what a Memory keeps of ended processes: one whose sessions
// were all written after its end (or are gone) is forgotten, and the
// oldest go first past maxEnded or after keepFor.
const (
	maxEnded = 1024
	keepFor  = 7 * 24 * time.Hour
)

// Apply returns procs with what the memory proved earlier: Held on the
// live processes proven to hold one of some sessions, and, appended, the
// processes that held one and have ended since (Ended set), which stand
// for the session they took with them. A process proven before and not in
// procs has ended, seen at now.
func (m *Memory) Apply(now time.Time, procs []Proc, sessions []Session) []Proc {
	m.mu.Lock()
	defer m.mu.Unlock()
	live := make(map[procKey]int, len(procs))
	for i, p := range procs {
		live[procKey{p.PID, p.Stamp}] = i
	}
	out := append([]Proc(nil), procs...)
	for k, h := range m.holds {
		i, ok := live[k]
		if !ok {
			if m.ended == nil {
				m.ended = map[procKey]held{}
			}
			h.gone = now
			m.ended[k] = h
			delete(m.holds, k)
			continue
		}
		if out[i].Pin == "" {
			out[i].Held, out[i].HeldAt = h.sessions, h.at
		}
	}
	m.prune(now, sessions)
	for k, h := range m.ended {
		out = append(out, Proc{PID: k.pid, Stamp: k.stamp, Held: h.sessions, HeldAt: h.at, Ended: h.gone})
	}
	return out
}

// Record keeps what res proves of the live processes among procs (as
// given to Solve), as of now.
func (m *Memory) Record(now time.Time, procs []Proc, res Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, ids := range res.Holds {
		if procs[i].gone() || len(ids) == 0 {
			continue
		}
		if m.holds == nil {
			m.holds = map[procKey]held{}
		}
		k := procKey{procs[i].PID, procs[i].Stamp}
		if old, ok := m.holds[k]; ok && slices.Equal(old.sessions, ids) {
			continue // proven since then
		}
		m.holds[k] = held{sessions: ids, at: now}
	}
}

// prune forgets the ended processes that can stand for no session any
// more, and the oldest past the bounds.
func (m *Memory) prune(now time.Time, sessions []Session) {
	updated := make(map[string]time.Time, len(sessions))
	for _, s := range sessions {
		updated[s.ID] = s.Updated
	}
	for k, h := range m.ended {
		keep := false
		for _, id := range h.sessions {
			if u, ok := updated[id]; ok && !u.After(h.gone) {
				keep = true
			}
		}
		if !keep || now.Sub(h.gone) > keepFor {
			delete(m.ended, k)
		}
	}
	for len(m.ended) > maxEnded {
		var oldest procKey
		first := true
		for k, h := range m.ended {
			if first || h.gone.Before(m.ended[oldest].gone) {
				oldest, first = k, false
			}
		}
		delete(m.ended, oldest)
	}
}

// Solve is Solve over what the memory adds to procs and sessions, and
// keeps what it proves. It returns the processes as solved: procs (at the
// same indexes), then the ended ones the memory stands for. A nil Memory
// solves the facts of the moment.
func (m *Memory) Solve(now time.Time, procs []Proc, sessions []Session) ([]Proc, Result) {
	if m == nil {
		return procs, Solve(procs, sessions)
	}
	procs = m.Apply(now, procs, sessions)
	res := Solve(procs, sessions)
	m.Record(now, procs, res)
	return procs, res
}
