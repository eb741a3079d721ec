package top

import (
	"slices"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

func at(d time.Duration) *time.Time { t := t0.Add(d); return &t }
func i64(v int64) *int64            { return &v }
func f64(v float64) *float64        { return &v }
func code(v int) *int               { return &v }

func sess(id string, st api.Status, mod ...func(*api.Session)) api.Session {
	s := api.Session{ID: id, Adapter: "exec", Origin: api.OriginLaunched, Status: st, CreatedAt: t0.Add(-time.Hour)}
	for _, m := range mod {
		m(&s)
	}
	return s
}

func ev(seq uint64, typ string, s api.Session) api.Event {
	return api.Event{Seq: seq, Type: typ, SessionID: s.ID, Session: &s, Timestamp: t0}
}

func ids(rows []Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Handle)
	}
	return out
}

func TestStateEventsToRows(t *testing.T) {
	named := func(n string) func(*api.Session) { return func(s *api.Session) { s.Name = n } }
	created := func(d time.Duration) func(*api.Session) { return func(s *api.Session) { s.CreatedAt = t0.Add(d) } }
	ended := func(d time.Duration) func(*api.Session) { return func(s *api.Session) { s.EndedAt = at(d) } }
	activity := func(a string) func(*api.Session) { return func(s *api.Session) { s.Activity = a } }
	base := api.SessionList{Sessions: []api.Session{
		sess("01aaaaaaaaaa", api.StatusRunning, named("a"), created(-3*time.Minute)),
		sess("01bbbbbbbbbb", api.StatusRunning, named("b"), created(-2*time.Minute)),
		sess("01cccccccccc", api.StatusExited, named("c"), ended(-time.Minute)),
	}}
	tests := []struct {
		name   string
		events []api.Event
		opts   ViewOptions
		want   []string
		resync bool
	}{
		{name: "snapshot only: running newest first, ended hidden", want: []string{"b", "a"}},
		{name: "ended shown last", opts: ViewOptions{ShowEnded: true}, want: []string{"b", "a", "c"}},
		{
			name:   "a started session appears",
			events: []api.Event{ev(5, api.EventSessionStarted, sess("01dddddddddd", api.StatusRunning, named("d"), created(-time.Second)))},
			want:   []string{"d", "b", "a"},
		},
		{
			name:   "a stopped session leaves the running rows",
			events: []api.Event{ev(5, api.EventSessionStopped, sess("01bbbbbbbbbb", api.StatusKilled, named("b"), created(-2*time.Minute), ended(0)))},
			want:   []string{"a"},
		},
		{
			name:   "a stopped session is the most recent ended one",
			events: []api.Event{ev(5, api.EventSessionStopped, sess("01bbbbbbbbbb", api.StatusKilled, named("b"), created(-2*time.Minute), ended(0)))},
			opts:   ViewOptions{ShowEnded: true},
			want:   []string{"a", "b", "c"},
		},
		{
			name:   "a waiting session comes first",
			events: []api.Event{ev(5, api.EventSessionIdle, sess("01aaaaaaaaaa", api.StatusRunning, named("a"), created(-3*time.Minute), activity("waiting")))},
			want:   []string{"a", "b"},
		},
		{
			name:   "an unknown session comes after running ones",
			events: []api.Event{ev(5, api.EventSessionStarted, sess("01eeeeeeeeee", api.StatusUnknown, named("e"), created(0)))},
			want:   []string{"b", "a", "e"},
		},
		{
			name: "the same session twice is one row",
			events: []api.Event{
				ev(5, api.EventSessionStarted, sess("01dddddddddd", api.StatusRunning, named("d"))),
				ev(6, api.EventSessionBusy, sess("01dddddddddd", api.StatusRunning, named("d"), activity("busy"))),
			},
			want: []string{"b", "a", "d"},
		},
		{
			name:   "lock events change no row",
			events: []api.Event{{Seq: 5, Type: api.EventLockAcquired}},
			want:   []string{"b", "a"},
		},
		{
			name:   "a gap asks for a new snapshot",
			events: []api.Event{{Seq: 9, Type: api.EventGap}},
			want:   []string{"b", "a"},
			resync: true,
		},
		{name: "the filter matches the adapter", opts: ViewOptions{Filter: "EXE"}, want: []string{"b", "a"}},
		{name: "the filter matches a name", opts: ViewOptions{Filter: "b"}, want: []string{"b"}},
		{name: "the filter matches nothing", opts: ViewOptions{Filter: "zzz"}, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := NewState()
			st.Snapshot(base, 0)
			resync := false
			for _, e := range tc.events {
				_, r := st.Apply(e)
				resync = resync || r
			}
			if got := ids(st.Rows(tc.opts)); !slices.Equal(got, tc.want) {
				t.Errorf("rows = %q, want %q", got, tc.want)
			}
			if resync != tc.resync {
				t.Errorf("resync = %v, want %v", resync, tc.resync)
			}
		})
	}
}

func TestSnapshotKeepsNewerEvents(t *testing.T) {
	running := sess("01aaaaaaaaaa", api.StatusRunning)
	stopped := sess("01aaaaaaaaaa", api.StatusExited, func(s *api.Session) { s.ExitCode = code(0); s.EndedAt = at(0) })
	tests := []struct {
		name string
		asOf uint64
		want api.Status
	}{
		{name: "a list asked before the event does not undo it", asOf: 4, want: api.StatusExited},
		{name: "a list asked after the event is the truth", asOf: 5, want: api.StatusRunning},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := NewState()
			st.Snapshot(api.SessionList{Sessions: []api.Session{running}}, 0)
			st.Apply(ev(5, api.EventSessionStopped, stopped))
			st.Snapshot(api.SessionList{Sessions: []api.Session{running}}, tc.asOf)
			got, _ := st.Session(running.ID)
			if got.Status != tc.want || st.Len() != 1 {
				t.Errorf("status %s with %d sessions, want %s with 1", got.Status, st.Len(), tc.want)
			}
		})
	}
}

func TestSnapshotDropsVanishedSessions(t *testing.T) {
	st := NewState()
	st.Snapshot(api.SessionList{Sessions: []api.Session{sess("01a", api.StatusRunning), sess("01b", api.StatusRunning)}}, 0)
	st.Snapshot(api.SessionList{Sessions: []api.Session{sess("01b", api.StatusRunning)}, Warnings: []string{"claude: timed out"}}, 0)
	if st.Len() != 1 || !slices.Equal(st.Warnings, []string{"claude: timed out"}) {
		t.Fatalf("len %d warnings %q", st.Len(), st.Warnings)
	}
}

func TestHandles(t *testing.T) {
	tests := []struct {
		name     string
		sessions []api.Session
		want     map[string]string
	}{
		{
			name:     "short prefixes of distinct ids",
			sessions: []api.Session{sess("01abcdefgh", api.StatusRunning), sess("01zzzzzzzz", api.StatusRunning)},
			want:     map[string]string{"01abcdefgh": "01abcd", "01zzzzzzzz": "01zzzz"},
		},
		{
			name:     "ids that share a long prefix",
			sessions: []api.Session{sess("01abcdefgh1", api.StatusRunning), sess("01abcdefgh2", api.StatusRunning)},
			want:     map[string]string{"01abcdefgh1": "01abcdefgh1", "01abcdefgh2": "01abcdefgh2"},
		},
		{
			name: "a unique name, and a name two sessions share",
			sessions: []api.Session{
				sess("01aaaaaaaa", api.StatusRunning, func(s *api.Session) { s.Name = "web" }),
				sess("01bbbbbbbb", api.StatusRunning, func(s *api.Session) { s.Name = "api" }),
				sess("01cccccccc", api.StatusRunning, func(s *api.Session) { s.Name = "api" }),
			},
			want: map[string]string{"01aaaaaaaa": "web", "01bbbbbbbb": "01bbbb", "01cccccccc": "01cccc"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := NewState()
			st.Snapshot(api.SessionList{Sessions: tc.sessions}, 0)
			got := st.Handles()
			for id, h := range tc.want {
				if got[id] != h {
					t.Errorf("handle of %s = %q, want %q", id, got[id], h)
				}
			}
		})
	}
}

func TestCounts(t *testing.T) {
	st := NewState()
	st.Snapshot(api.SessionList{Sessions: []api.Session{
		sess("01a", api.StatusRunning, func(s *api.Session) { s.Activity = "waiting"; s.CostUSD = f64(1.5) }),
		sess("01b", api.StatusRunning, func(s *api.Session) { s.CostUSD = f64(0.25) }),
		sess("01c", api.StatusExited, func(s *api.Session) { s.EndedAt = at(-time.Hour); s.CostUSD = f64(2) }),
		sess("01d", api.StatusExited, func(s *api.Session) { s.EndedAt = at(-48 * time.Hour); s.CostUSD = f64(100) }),
		sess("01e", api.StatusUnknown),
		sess("01f", api.StatusQueued, func(s *api.Session) { s.Queue = &api.QueuePlace{Position: 1, Reason: "2 of 2 sessions run"} }),
	}}, 0)
	got := st.Count(t0)
	want := Counts{Running: 2, Waiting: 1, Queued: 1, Unknown: 1, EndedToday: 1, CostToday: 3.75, Costed: true}
	if got != want {
		t.Errorf("counts = %+v, want %+v", got, want)
	}
	// A queued row shows its place, after the running ones.
	rows := st.Rows(ViewOptions{})
	if i := slices.IndexFunc(rows, func(r Row) bool { return r.ID == "01f" }); i < 0 || StatusText(rows[i].Session) != "queued(#1)" || rows[i].Rank != RankQueued {
		t.Errorf("the queued row: %+v", rows)
	}
}

// The header sums up the sessions usage limits hold, by provider, with
// the latest reset.
func TestLimitsText(t *testing.T) {
	st := NewState()
	reset := t0.Add(2 * time.Hour)
	hold := func(provider string, resets *time.Time) func(*api.Session) {
		return func(s *api.Session) {
			s.WaitingFor = api.WaitingLimit
			s.Waiting = &api.Waiting{For: api.WaitingLimit, Limit: &api.LimitHold{Provider: provider, ResetsAt: resets}}
		}
	}
	if got := limitsText(st, t0); got != "" {
		t.Errorf("with no session: %q", got)
	}
	st.Snapshot(api.SessionList{Sessions: []api.Session{
		sess("01a", api.StatusExited, hold("openai", &reset)),
		sess("01b", api.StatusExited, hold("openai", nil)),
		sess("01c", api.StatusRunning, hold("anthropic", nil)),
		sess("01d", api.StatusRunning),
	}}, 0)
	want := "limit: anthropic 1, openai 2 until " + reset.Local().Format("15:04")
	if got := limitsText(st, t0); got != want {
		t.Errorf("limitsText = %q, want %q", got, want)
	}
}
