package supervisor

import (
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/config"
	"github.com/agentctl/agentctl/session"
)

// Which held sessions are resumed at a tick: those a limit ended by
// themselves, whose on_limit is resume, past their reset and the margin,
// one per provider per interval, oldest first; never one a run already
// resumes, one stopped by a signal, one still running, nor any of a
// provider whose window is still used up.
func TestDueResumes(t *testing.T) {
	t.Parallel()
	now := time.Now()
	t0 := now.Add(-time.Hour)
	past, future := now.Add(-5*time.Minute), now.Add(time.Hour)
	justNow := now.Add(-30 * time.Second)
	policy := config.ResumePolicy{Margin: time.Minute, Interval: 2 * time.Minute, UnknownReset: time.Hour}
	held := func(id string, age time.Duration, provider string, resets *time.Time, mod func(*api.Session)) api.Session {
		s := api.Session{ID: id, Adapter: "codex", Origin: api.OriginLaunched, NativeID: "n-" + id, Status: api.StatusExited,
			CreatedAt: t0.Add(age), OnLimit: api.OnLimitResume, WaitingFor: api.WaitingLimit,
			Waiting: &api.Waiting{For: api.WaitingLimit, Limit: &api.LimitHold{Provider: provider, ResetsAt: resets}}}
		if mod != nil {
			mod(&s)
		}
		return s
	}
	tests := []struct {
		name     string
		view     []api.Session
		onLimit  string
		released map[string]time.Time
		want     []string
	}{
		{"oldest first, one per provider", []api.Session{
			held("b", 2*time.Second, "openai", &past, nil), held("a", time.Second, "openai", &past, nil),
			held("c", 0, "anthropic", &past, nil),
		}, "", nil, []string{"c", "a"}},
		{"within the margin of its reset", []api.Session{held("a", 0, "openai", &justNow, nil)}, "", nil, nil},
		{"the provider's window still used up by another", []api.Session{
			held("a", 0, "openai", &past, nil), held("b", time.Second, "openai", &future, nil),
		}, "", nil, nil},
		{"the interval since the provider's last resume", []api.Session{held("a", 0, "openai", &past, nil)}, "",
			map[string]time.Time{"openai": now.Add(-time.Minute)}, nil},
		{"an interval later", []api.Session{held("a", 0, "openai", &past, nil)}, "",
			map[string]time.Time{"openai": now.Add(-3 * time.Minute)}, []string{"a"}},
		{"stopped by the user", []api.Session{held("a", 0, "openai", &past, func(s *api.Session) { s.Status = api.StatusKilled })}, "", nil, nil},
		{"stopped by the user, and ended with a code of its own", []api.Session{held("a", 0, "openai", &past, func(s *api.Session) { s.StoppedBy = "agentctl stop" })}, "", nil, nil},
		{"still running", []api.Session{held("a", 0, "openai", &past, func(s *api.Session) { s.Status = api.StatusRunning })}, "", nil, nil},
		{"already resumed", []api.Session{held("a", 0, "openai", &past, nil), {ID: "r", ResumeOf: "a", Status: api.StatusRunning}}, "", nil, nil},
		{"on_limit wait", []api.Session{held("a", 0, "openai", &past, func(s *api.Session) { s.OnLimit = api.OnLimitWait })}, api.OnLimitResume, nil, nil},
		{"the configuration's resume", []api.Session{held("a", 0, "openai", &past, func(s *api.Session) { s.OnLimit = "" })}, api.OnLimitResume, nil, []string{"a"}},
		{"the configuration's default waits", []api.Session{held("a", 0, "openai", &past, func(s *api.Session) { s.OnLimit = "" })}, "", nil, nil},
		{"no reset known: held for a while after the limit", []api.Session{
			held("a", 0, "anthropic", nil, func(s *api.Session) { s.Waiting.Limit.Since = &justNow }),
			held("b", 0, "other", nil, func(s *api.Session) { old := now.Add(-2 * time.Hour); s.Waiting.Limit.Since = &old }),
		}, "", nil, []string{"b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			book := session.NewUsageLimits(policy.UnknownReset)
			book.Observe(tc.view, now)
			released := tc.released
			if released == nil {
				released = map[string]time.Time{}
			}
			var got []string
			for _, s := range dueResumes(tc.view, now, book, policy, tc.onLimit, released) {
				got = append(got, s.ID)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("resumed %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("resumed %v, want %v", got, tc.want)
				}
			}
		})
	}
}
