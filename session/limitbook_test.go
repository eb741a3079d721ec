package session

import (
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

func heldSession(id string, created time.Time, l api.LimitHold) api.Session {
	return api.Session{ID: id, CreatedAt: created, Status: api.StatusExited, WaitingFor: api.WaitingLimit,
		Waiting: &api.Waiting{For: api.WaitingLimit, Limit: &l}}
}

// The book holds a provider until the latest reset of its held sessions
// (or, without one, for a while after the limit was recorded); a session a
// later run resumed no longer counts; the freshest evidence of a window
// wins.
func TestUsageLimits(t *testing.T) {
	t.Parallel()
	now := time.Now()
	t0 := now.Add(-10 * time.Minute)
	soon, later, past := now.Add(time.Hour), now.Add(2*time.Hour), now.Add(-time.Minute)
	since := func(d time.Duration) *time.Time { t := t0.Add(d); return &t }
	view := []api.Session{
		heldSession("a1", t0, api.LimitHold{Provider: "openai", Window: "primary", ResetsAt: &soon, Message: "old", Since: since(0)}),
		heldSession("a2", t0.Add(time.Second), api.LimitHold{Provider: "openai", Window: "primary", ResetsAt: &later, Message: "new", Since: since(time.Minute)}),
		heldSession("b1", t0, api.LimitHold{Provider: "anthropic", Since: since(0)}),
		heldSession("c1", t0, api.LimitHold{Provider: "fake", ResetsAt: &past}),
		heldSession("d1", t0, api.LimitHold{Provider: "gone", ResetsAt: &later}),
		{ID: "d2", CreatedAt: t0.Add(time.Minute), ResumeOf: "d1", Status: api.StatusRunning},
		{ID: "e1", CreatedAt: t0, Status: api.StatusRunning},
		// A snapshot of the windows, older for primary than a2's limit,
		// and the only word on secondary.
		{ID: "f1", CreatedAt: t0, Status: api.StatusExited, LimitWindows: []api.LimitWindow{
			{Provider: "openai", Name: "primary", UsedPercent: ptrF(80), At: since(30 * time.Second)},
			{Provider: "openai", Name: "secondary", UsedPercent: ptrF(42), At: since(30 * time.Second)},
		}},
		{ID: "f2", CreatedAt: t0, Status: api.StatusRunning, LimitWindows: []api.LimitWindow{
			{Provider: "quiet", Name: "primary", UsedPercent: ptrF(10), At: since(0)},
		}},
	}
	b := NewUsageLimits(30 * time.Minute)
	b.Observe(view, now)
	for _, tc := range []struct {
		provider string
		held     bool
		until    time.Time
	}{
		{"openai", true, later},
		{"anthropic", true, t0.Add(30 * time.Minute)},
		{"fake", false, time.Time{}},
		{"gone", false, time.Time{}},
		{"nobody", false, time.Time{}},
	} {
		until, held := b.Held(tc.provider)
		if held != tc.held || !until.Equal(tc.until) {
			t.Errorf("Held(%s) = %v, %v; want %v, %v", tc.provider, until, held, tc.until, tc.held)
		}
	}
	rep := b.Report(now)
	if len(rep) != 4 || rep[0].Provider != "anthropic" || rep[1].Provider != "fake" || rep[2].Provider != "openai" || rep[3].Provider != "quiet" {
		t.Fatalf("report %+v", rep)
	}
	o := rep[2]
	if !o.Held || o.HeldUntil == nil || !o.HeldUntil.Equal(later) || o.Message != "new" || len(o.Sessions) != 2 ||
		len(o.Windows) != 2 || o.Windows[0].Session != "a2" || *o.Windows[0].UsedPercent != 100 ||
		o.Windows[1].Name != "secondary" || o.Windows[1].Session != "f1" || *o.Windows[1].UsedPercent != 42 || o.Windows[1].Provider != "" {
		t.Errorf("openai: %+v", o)
	}
	if q := rep[3]; q.Held || len(q.Sessions) != 0 || len(q.Windows) != 1 || *q.Windows[0].UsedPercent != 10 {
		t.Errorf("a provider no limit holds, with a window's use: %+v", q)
	}
	if _, held := b.Held("quiet"); held {
		t.Error("quiet held")
	}
	if rep[1].Held || rep[1].HeldUntil != nil {
		t.Errorf("fake, past its reset: %+v", rep[1])
	}
	// Past the reset, the report says not held.
	if r := b.Report(later.Add(time.Second)); r[2].Held {
		t.Errorf("after the reset: %+v", r[2])
	}
}

func ptrF(f float64) *float64 { return &f }
