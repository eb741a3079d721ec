package session

import (
	"fmt"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
)

// LimitBook says whether a provider's usage limit holds its sessions now,
// and until when where known (zero: not known).
type LimitBook interface {
	Held(provider string) (until time.Time, held bool)
}

// slot is a session as admission counts it: what caps it.
type slot struct {
	id, adapter, provider, group string
	// force starts it whatever its provider's usage limit says.
	force bool
}

// slotOf is the slot of a launch request (normalised).
func slotOf(id string, req api.RunRequest) slot {
	return slot{id: id, adapter: req.Adapter, provider: api.Provider(req.Adapter, req.Model), group: req.Group, force: req.Force}
}

// admitFacts are what one admission decides on.
type admitFacts struct {
	policy api.Admission
	// running are the sessions this service runs now.
	running []slot
	// memAvailable is the machine's MemAvailable; memErr says why it is
	// not known (read only when a floor is set).
	memAvailable uint64
	memErr       error
	// held is the providers' usage limits (nil: none holds).
	held LimitBook
}

// admitPlan is what an admission decided: the sessions to start now, in
// order, and where each other one stands and why.
type admitPlan struct {
	start  []string
	places map[string]api.QueuePlace
	// kinds says what holds each waiting one: a QueueHeld* value.
	kinds map[string]string
}

// What holds a queued session, for the metrics.
const (
	QueueHeldCap    = "cap"
	QueueHeldMemory = "memory"
	QueueHeldLimit  = "limit"
	// QueueHeldLock: admitted, but its folder is locked by another session.
	QueueHeldLock = "lock"
)

// decide admits the waiting sessions, oldest first: each starts when no cap
// of its own is full, no provider limit holds it and the memory floor
// allows; one that waits does not hold back those no cap of its holds
// (a blocked cap blocks only its own). With a memory floor, at most one
// starts per decision: what it takes is seen in the next reading.
func decide(f admitFacts, waiting []slot, since map[string]time.Time) admitPlan {
	p := admitPlan{places: map[string]api.QueuePlace{}, kinds: map[string]string{}}
	n := newCounts(f.running)
	memReason := ""
	if f.policy.MemoryFloorBytes > 0 {
		floor := uint64(f.policy.MemoryFloorBytes)
		switch {
		case f.memErr != nil:
			memReason = fmt.Sprintf("the machine's MemAvailable cannot be read (%v), and the memory floor is %s", f.memErr, text.Size(&floor))
		case f.memAvailable < floor:
			memReason = fmt.Sprintf("MemAvailable %s is below the memory floor %s", text.Size(&f.memAvailable), text.Size(&floor))
		}
	}
	startedUnderFloor := false
	pos := 0
	for _, w := range waiting {
		reason, kind := memReason, QueueHeldMemory
		if reason == "" && startedUnderFloor {
			reason = "the memory floor is read again after the session started before it"
		}
		if reason == "" && f.held != nil && w.provider != "" && !w.force {
			if until, held := f.held.Held(w.provider); held {
				reason, kind = fmt.Sprintf("%s usage limit", w.provider), QueueHeldLimit
				if !until.IsZero() {
					reason += " until " + until.Local().Format(time.DateTime)
				}
			}
		}
		if reason == "" {
			reason, kind = n.full(f.policy, w), QueueHeldCap
		}
		if reason == "" {
			p.start = append(p.start, w.id)
			n.add(w)
			startedUnderFloor = f.policy.MemoryFloorBytes > 0
			continue
		}
		pos++
		p.places[w.id] = api.QueuePlace{Position: pos, Reason: reason, Since: since[w.id]}
		p.kinds[w.id] = kind
	}
	return p
}

// counts are the running sessions per cap.
type counts struct {
	all                      int
	adapter, provider, group map[string]int
}

func newCounts(running []slot) *counts {
	n := &counts{adapter: map[string]int{}, provider: map[string]int{}, group: map[string]int{}}
	for _, s := range running {
		n.add(s)
	}
	return n
}

func (n *counts) add(s slot) {
	n.all++
	n.adapter[s.adapter]++
	if s.provider != "" {
		n.provider[s.provider]++
	}
	if s.group != "" {
		n.group[s.group]++
	}
}

// full names the first cap of s that is full, "" when none is.
func (n *counts) full(pol api.Admission, s slot) string {
	if pol.MaxSessions > 0 && n.all >= pol.MaxSessions {
		return fmt.Sprintf("%d of %d sessions run (cap max_sessions)", n.all, pol.MaxSessions)
	}
	for _, c := range []struct {
		key, name string
		caps      map[string]int
		running   map[string]int
	}{
		{"per_adapter", s.adapter, pol.PerAdapter, n.adapter},
		{"per_provider", s.provider, pol.PerProvider, n.provider},
		{"per_group", s.group, pol.PerGroup, n.group},
	} {
		if c.name == "" {
			continue
		}
		limit, ok := c.caps[c.name]
		if !ok {
			limit = c.caps[api.AdmissionAny]
		}
		if limit > 0 && c.running[c.name] >= limit {
			return fmt.Sprintf("%d of %d %s sessions run (cap %s %s)", c.running[c.name], limit, c.name, c.key, text.Quote(c.name))
		}
	}
	return ""
}
