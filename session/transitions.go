package session

import (
	"context"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
)

// ChangeKind is what changed.
type ChangeKind int

const (
	// ChangeStarted: a session only an adapter knows began running.
	ChangeStarted ChangeKind = iota + 1
	// ChangeEnded: a session only an adapter knows ended.
	ChangeEnded
	// ChangeBusy and ChangeIdle: a running session's agent started or
	// finished a turn.
	ChangeBusy
	ChangeIdle
	// ChangeWaiting: a running session began waiting for a person (or
	// waits for something else now), or a session ended held by a usage
	// limit; ChangeResumed: it no longer waits.
	ChangeWaiting
	ChangeResumed
)

// Change is one transition of one session, with the session as it is now.
type Change struct {
	Kind    ChangeKind
	Session api.Session
}

// transitions is the one detector of started/ended/busy/idle transitions in
// what the adapters report. It remembers the last state of the sessions it
// was shown and forgets a session once a full view no longer holds it, so
// what it keeps is bounded by what exists.
type transitions struct {
	mu   sync.Mutex
	gen  uint64
	last map[string]*seenState
	// views are what reads saw of running sessions, for the loop (follow)
	// to compare: a read offers, never waits.
	views chan []api.Session
	// every and idleEvery are followEvery and followIdleEvery (a test's
	// own are shorter).
	every, idleEvery time.Duration
}

type seenState struct {
	// status is what an adapter last pushed ("" when it pushed nothing).
	status   api.Status
	activity string
	// waiting is what a waiting session waits for ("" when not waiting).
	waiting string
	// waitingFor is a running session's api.Session.WaitingFor while it
	// waits, and byHand says agentctl did not launch it (the metrics'
	// count of the sessions started by hand that wait).
	waitingFor string
	byHand     bool
	gen        uint64 // the last full view that held the session
}

func newTransitions() *transitions {
	return &transitions{last: map[string]*seenState{}, views: make(chan []api.Session, pendingViews),
		every: followEvery, idleEvery: followIdleEvery}
}

// pendingViews bounds the views offered and not yet compared; past it a
// view is dropped (the next one, or the detector's own look, covers it).
const pendingViews = 8

// followEvery is how often the detector looks at the view by itself while
// it follows running sessions; with none to follow, it looks every
// followIdleEvery, so that a session's first transitions are announced
// whether or not anyone lists (a look builds only the sessions that may
// run: 7.5 ms over 50,000, BenchmarkList's follow).
const (
	followEvery     = 2 * time.Second
	followIdleEvery = 10 * time.Second
)

// followed is the ids the detector follows now (running ones: few). A read
// builds these sessions even when its filter would not, so that the view it
// offers holds their ends.
func (t *transitions) followed() map[string]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.last) == 0 {
		return nil
	}
	out := make(map[string]bool, len(t.last))
	for id := range t.last {
		out[id] = true
	}
	return out
}

// followable says whether a session of a view is the detector's business:
// running with a known activity, or followed from an earlier view.
func followable(s *api.Session, followed map[string]bool) bool {
	return (s.Status == api.StatusRunning && s.Activity != "") || followed[s.ID]
}

// offer hands the detector a whole view's followable sessions (see
// followable), as a read saw them. It never blocks.
func (t *transitions) offer(view []api.Session) {
	select {
	case t.views <- view:
	default:
	}
}

// follow is the detector's loop, until ctx ends: it looks at the view
// itself (look) at its start, then every followEvery while it follows
// running sessions and every followIdleEvery while it follows none, so
// that transitions are announced whether or not anyone lists; and it
// compares each view a read offers. publish hears every transition.
func (t *transitions) follow(ctx context.Context, look func(context.Context) ([]api.Session, error), publish func([]Change)) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	idle := false // the timer runs at followIdleEvery
	arm := func() {
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		idle = t.size() == 0
		if idle {
			timer.Reset(t.idleEvery)
		} else {
			timer.Reset(t.every)
		}
	}
	lookNow := func() {
		if view, err := look(ctx); err == nil {
			publish(t.compare(view))
		}
		arm()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case view := <-t.views:
			publish(t.compare(view))
			if idle && t.size() > 0 {
				arm()
			}
		case <-timer.C:
			lookNow()
		}
	}
}

// compare passes over one whole view and returns its transitions.
func (t *transitions) compare(view []api.Session) []Change {
	p := t.begin()
	for i := range view {
		p.activity(&view[i])
	}
	return p.end()
}

// viewPass follows one pass over the full merged view.
type viewPass struct {
	t       *transitions
	gen     uint64
	changes []Change
}

// begin starts a pass over the full view; every session of it goes through
// activity, then end.
func (t *transitions) begin() *viewPass {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gen++
	return &viewPass{t: t, gen: t.gen}
}

// activity notes one session of the view: a running session whose agent's
// busy/idle signal changed since the last time is a transition.
func (p *viewPass) activity(s *api.Session) {
	p.t.mu.Lock()
	defer p.t.mu.Unlock()
	st, seen := p.t.last[s.ID]
	if s.Status != api.StatusRunning || s.Activity == "" {
		if seen {
			st.gen = p.gen
			p.changes = append(p.changes, st.unknown(s)...)
		}
		return
	}
	if !seen {
		st = &seenState{}
		p.t.last[s.ID] = st
	}
	st.gen = p.gen
	p.changes = append(p.changes, st.step(s, seen)...)
}

// observe notes one running session outside a pass over the view (its
// evidence just changed) and returns its transition, if any.
func (t *transitions) observe(s *api.Session) []Change {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, seen := t.last[s.ID]
	if s.Status != api.StatusRunning || s.Activity == "" {
		if seen {
			return st.unknown(s)
		}
		return nil
	}
	if !seen {
		st = &seenState{gen: t.gen}
		t.last[s.ID] = st
	}
	return st.step(s, seen)
}

// step moves st to s's activity and returns the transitions that makes. A
// session seen for the first time announces only that it waits.
func (st *seenState) step(s *api.Session, seen bool) []Change {
	var out []Change
	key := waitingKey(s)
	switch {
	case key != "" && key != st.waiting:
		out = append(out, Change{Kind: ChangeWaiting, Session: *s})
	case key == "" && st.waiting != "":
		out = append(out, Change{Kind: ChangeResumed, Session: *s})
		if s.Activity != api.ActivityWaiting && st.activity != s.Activity {
			out = append(out, Change{Kind: activityChange(s.Activity), Session: *s})
		}
	case seen && key == "" && st.activity != "" && st.activity != s.Activity:
		out = append(out, Change{Kind: activityChange(s.Activity), Session: *s})
	}
	st.activity, st.waiting = s.Activity, key
	st.waitingFor, st.byHand = "", s.Origin != api.OriginLaunched
	if key != "" {
		st.waitingFor = s.WaitingFor
	}
	return out
}

// unknown notes that nothing says s's activity now (or that it ended): a
// running session that waited no longer does.
func (st *seenState) unknown(s *api.Session) []Change {
	var out []Change
	if s.Status != api.StatusRunning && s.Waiting != nil && s.Waiting.For == api.WaitingLimit {
		// It ended on a usage limit (a headless run gives up at once):
		// held, announced once.
		key := "limit"
		if s.Waiting.Limit != nil {
			key += ":" + s.Waiting.Limit.Provider
		}
		if st.waiting != key {
			out = append(out, Change{Kind: ChangeWaiting, Session: *s})
		}
		st.waiting, st.waitingFor = key, "" // ended: no longer counted
		return out
	}
	if st.waiting != "" && s.Status == api.StatusRunning {
		out = append(out, Change{Kind: ChangeResumed, Session: *s})
	}
	st.waiting, st.waitingFor = "", "" // what was known of busy/idle is kept
	return out
}

// waitingKey tells one wait from another: what for, and which request.
func waitingKey(s *api.Session) string {
	if s.Activity != api.ActivityWaiting {
		return ""
	}
	k := "waiting:" + s.WaitingFor
	if s.Waiting != nil {
		k += ":" + s.Waiting.Request + ":" + s.Waiting.Kind
	}
	return k
}

// waitingByHand counts the running sessions agentctl did not launch that
// wait for a person now, by what for, as the detector last saw them (its
// look follows them every followEvery).
func (t *transitions) waitingByHand() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]int{}
	for _, st := range t.last {
		if st.byHand && st.waitingFor != "" {
			out[st.waitingFor]++
		}
	}
	return out
}

// end forgets the sessions the view no longer holds and returns the pass's
// transitions.
func (p *viewPass) end() []Change {
	p.t.mu.Lock()
	defer p.t.mu.Unlock()
	for id, st := range p.t.last {
		if st.gen < p.gen {
			delete(p.t.last, id)
		}
	}
	return p.changes
}

// pushed notes a session an adapter pushed a change for (a gateway's
// session agentctl did not start): started when it begins running, ended
// when it ends, and busy/idle in between.
func (t *transitions) pushed(s api.Session) []Change {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, seen := t.last[s.ID]
	if !seen {
		st = &seenState{gen: t.gen}
		t.last[s.ID] = st
	}
	var out []Change
	switch {
	case s.Status == api.StatusRunning && st.status != api.StatusRunning:
		out = append(out, Change{Kind: ChangeStarted, Session: s})
	case s.Status.Ended() && (st.status == "" || st.status == api.StatusRunning):
		out = append(out, Change{Kind: ChangeEnded, Session: s})
	}
	st.status = s.Status
	if s.Status != api.StatusRunning {
		st.activity = "" // a turn's state means nothing past the session's end
	}
	if s.Status == api.StatusRunning && s.Activity != "" {
		if st.activity != "" && st.activity != s.Activity {
			out = append(out, Change{Kind: activityChange(s.Activity), Session: s})
		}
		st.activity = s.Activity
	}
	return out
}

// forget drops a session that was removed.
func (t *transitions) forget(id string) {
	t.mu.Lock()
	delete(t.last, id)
	t.mu.Unlock()
}

// size is how many sessions the detector remembers.
func (t *transitions) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.last)
}

func activityChange(activity string) ChangeKind {
	if activity == "busy" {
		return ChangeBusy
	}
	return ChangeIdle
}
