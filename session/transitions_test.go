package session

import (
	"fmt"
	"slices"
	"testing"

	"github.com/agentctl/agentctl/api"
)

func running(id, activity string) api.Session {
	return api.Session{ID: id, Status: api.StatusRunning, Activity: activity}
}

func kinds(cs []Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s:%d", c.Session.ID, c.Kind))
	}
	return out
}

func TestTransitionsInViews(t *testing.T) {
	tr := newTransitions()
	view := func(ss ...api.Session) []string {
		p := tr.begin()
		for i := range ss {
			p.activity(&ss[i])
		}
		return kinds(p.end())
	}
	for i, tc := range []struct {
		view []api.Session
		want []string
	}{
		// The first sight of a session is no transition.
		{[]api.Session{running("a", "busy"), running("b", "idle")}, nil},
		{[]api.Session{running("a", "idle"), running("b", "idle")}, []string{fmt.Sprintf("a:%d", ChangeIdle)}},
		// Running without a signal keeps what was known.
		{[]api.Session{running("a", ""), running("b", "busy")}, []string{fmt.Sprintf("b:%d", ChangeBusy)}},
		{[]api.Session{running("a", "busy"), running("b", "busy")}, []string{fmt.Sprintf("a:%d", ChangeBusy)}},
		// b leaves the view: forgotten, so its return is a first sight.
		{[]api.Session{running("a", "busy")}, nil},
		{[]api.Session{running("a", "busy"), running("b", "idle")}, nil},
	} {
		if got := view(tc.view...); !slices.Equal(got, tc.want) {
			t.Errorf("view %d: changes %v, want %v", i, got, tc.want)
		}
	}
}

func TestTransitionsPushed(t *testing.T) {
	tr := newTransitions()
	ended := api.Session{ID: "g", Status: api.StatusEnded}
	for i, tc := range []struct {
		s    api.Session
		want []string
	}{
		{running("g", "busy"), []string{fmt.Sprintf("g:%d", ChangeStarted)}},
		{running("g", "busy"), nil},
		{running("g", "idle"), []string{fmt.Sprintf("g:%d", ChangeIdle)}},
		{ended, []string{fmt.Sprintf("g:%d", ChangeEnded)}},
		{ended, nil}, // said once
		{running("g", "busy"), []string{fmt.Sprintf("g:%d", ChangeStarted)}},
		// A session first heard of as ended is announced as ended.
		{api.Session{ID: "h", Status: api.StatusEnded}, []string{fmt.Sprintf("h:%d", ChangeEnded)}},
	} {
		if got := kinds(tr.pushed(tc.s)); !slices.Equal(got, tc.want) {
			t.Errorf("push %d: changes %v, want %v", i, got, tc.want)
		}
	}
}

// What the detector keeps is bounded by what the views hold: sessions that
// come and go (discovered ones included) are forgotten once gone.
func TestTransitionsForgetSessionsThatLeft(t *testing.T) {
	tr := newTransitions()
	for round := range 100 {
		p := tr.begin()
		for i := range 50 {
			s := running(fmt.Sprintf("r%d-%d", round, i), "busy")
			p.activity(&s)
		}
		pushed := api.Session{ID: fmt.Sprintf("p%d", round), Status: api.StatusEnded}
		tr.pushed(pushed)
		p.end()
	}
	// The last view's 50, and the last push (made within that view).
	if n := tr.size(); n > 51 {
		t.Errorf("remembers %d sessions after 100 views of 50, want at most 51", n)
	}
	tr.forget("p99")
	p := tr.begin()
	p.end()
	if n := tr.size(); n != 0 {
		t.Errorf("remembers %d sessions after an empty view, want 0", n)
	}
}

func waitingFor(id, what, request string) api.Session {
	s := running(id, api.ActivityWaiting)
	s.WaitingFor = what
	s.Waiting = &api.Waiting{For: what, Request: request}
	return s
}

func TestTransitionsWaiting(t *testing.T) {
	tr := newTransitions()
	k := func(id string, kinds ...ChangeKind) []string {
		var out []string
		for _, kind := range kinds {
			out = append(out, fmt.Sprintf("%s:%d", id, kind))
		}
		return out
	}
	for i, tc := range []struct {
		s    api.Session
		want []string
	}{
		{running("a", "busy"), nil},
		{waitingFor("a", api.WaitingPermission, "r1"), k("a", ChangeWaiting)},
		{waitingFor("a", api.WaitingPermission, "r1"), nil},
		// Another request is another wait.
		{waitingFor("a", api.WaitingPermission, "r2"), k("a", ChangeWaiting)},
		{running("a", "busy"), k("a", ChangeResumed, ChangeBusy)},
		{running("a", "idle"), k("a", ChangeIdle)},
		{waitingFor("a", api.WaitingInput, ""), k("a", ChangeWaiting)},
		// The terminal's notification answered and nothing else says:
		// no longer waiting, and busy/idle stay unknown.
		{running("a", ""), k("a", ChangeResumed)},
		{running("a", "idle"), k("a", ChangeIdle)},
		// First sight of a waiting session announces it.
		{waitingFor("b", api.WaitingQuestion, ""), k("b", ChangeWaiting)},
	} {
		if got := kinds(tr.observe(&tc.s)); !slices.Equal(got, tc.want) {
			t.Errorf("step %d: changes %v, want %v", i, got, tc.want)
		}
	}
}
