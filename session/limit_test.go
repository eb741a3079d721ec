package session

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

// A usage limit the agent's records say ended the last turn holds the
// session: a running one reads waiting for the limit, with the provider,
// window and reset; an ended one says what holds it without an activity;
// a hook's evidence newer than the limit's record outranks it.
func TestNativeLimitHoldsTheSession(t *testing.T) {
	t.Parallel()
	self, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	live := &adapters.ProcessRef{PID: self.PID, Start: self.Start, Evidence: "registry"}
	at := time.Now().Add(-time.Minute).UTC()
	resets := at.Add(5 * time.Hour)
	later := at.Add(30 * time.Second)
	limit := &adapters.LimitHit{Provider: "openai", Window: "primary", ResetsAt: resets, Message: "You've hit your usage limit.", At: at}
	launched := []api.Session{
		{ID: "01a", Adapter: "codex", Origin: api.OriginLaunched, Status: api.StatusRunning, NativeID: "n1"},
		{ID: "01b", Adapter: "codex", Origin: api.OriginLaunched, Status: api.StatusExited, NativeID: "n2"},
		{ID: "01c", Adapter: "claude", Origin: api.OriginLaunched, Status: api.StatusRunning, NativeID: "n3",
			Activity: api.ActivityBusy, ActivitySource: api.SourceHook, ActivitySince: &later},
		{ID: "01d", Adapter: "claude", Origin: api.OriginLaunched, Status: api.StatusRunning, NativeID: "n4",
			Activity: api.ActivityIdle, ActivitySource: api.SourceHook, ActivitySince: &at},
		{ID: "01e", Adapter: "claude", Origin: api.OriginLaunched, Status: api.StatusRunning, NativeID: "n6",
			Activity: api.ActivityWaiting, WaitingFor: api.WaitingInput, ActivitySource: api.SourceTerminal, ActivitySince: &later},
		{ID: "01f", Adapter: "claude", Origin: api.OriginLaunched, Status: api.StatusRunning, NativeID: "n7",
			Activity: api.ActivityWaiting, WaitingFor: api.WaitingPermission, ActivitySource: api.SourceHook, ActivitySince: &later},
	}
	disc := discovered{sessions: [][]adapters.NativeSession{
		{
			{Adapter: "codex", NativeID: "n1", State: adapters.NativeIdle, Process: live, Limit: limit},
			{Adapter: "codex", NativeID: "n2", State: adapters.NativeFailed, Limit: limit},
			{Adapter: "codex", NativeID: "n5", State: adapters.NativeDone},
		},
		{
			{Adapter: "claude", NativeID: "n3", State: adapters.NativeRunning, Process: live, Limit: &adapters.LimitHit{Provider: "anthropic", At: at}},
			{Adapter: "claude", NativeID: "n4", State: adapters.NativeRunning, Process: live, Limit: &adapters.LimitHit{Provider: "anthropic", At: later}},
			{Adapter: "claude", NativeID: "n6", State: adapters.NativeIdle, Process: live, Limit: &adapters.LimitHit{Provider: "anthropic", At: at}},
			{Adapter: "claude", NativeID: "n7", State: adapters.NativeIdle, Process: live, Limit: &adapters.LimitHit{Provider: "anthropic", At: at}},
		},
	}, failed: map[string]bool{}}
	byID := map[string]api.Session{}
	for _, s := range merge(launched, disc, nil) {
		byID[s.ID] = s
	}
	for _, tc := range []struct {
		id, activity, waitingFor, provider string
	}{
		{"01a", api.ActivityWaiting, api.WaitingLimit, "openai"},
		{"01b", "", api.WaitingLimit, "openai"},
		{"01c", api.ActivityBusy, "", ""},
		{"01d", api.ActivityWaiting, api.WaitingLimit, "anthropic"},
		{"01e", api.ActivityWaiting, api.WaitingLimit, "anthropic"},
		{"01f", api.ActivityWaiting, api.WaitingPermission, ""},
		{"n5", "", "", ""},
	} {
		s := byID[tc.id]
		if s.Activity != tc.activity || s.WaitingFor != tc.waitingFor {
			t.Errorf("%s: activity %q waiting for %q; want %q waiting for %q", tc.id, s.Activity, s.WaitingFor, tc.activity, tc.waitingFor)
			continue
		}
		if tc.provider == "" {
			continue
		}
		if s.Waiting == nil || s.Waiting.Limit == nil || s.Waiting.Limit.Provider != tc.provider {
			t.Errorf("%s: waiting %+v, want a limit of %s", tc.id, s.Waiting, tc.provider)
		}
	}
	s := byID["01a"]
	if h := s.Waiting.Limit; h.Window != "primary" || h.ResetsAt == nil || !h.ResetsAt.Equal(resets) || h.Message != limit.Message ||
		s.ActivitySource != api.SourceNative || s.ActivitySince == nil || !s.ActivitySince.Equal(at) {
		t.Errorf("01a: %+v since %v source %q", h, s.ActivitySince, s.ActivitySource)
	}
}

// A followed session that ends held by a usage limit is announced once, as
// a session that waits (the service sends it as session.limited).
func TestEndedOnALimitIsAnnouncedOnce(t *testing.T) {
	t.Parallel()
	tr := newTransitions()
	running := api.Session{ID: "01a", Status: api.StatusRunning, Activity: api.ActivityBusy}
	if ch := tr.compare([]api.Session{running}); len(ch) != 0 {
		t.Fatalf("first view: %+v", ch)
	}
	ended := api.Session{ID: "01a", Status: api.StatusExited, WaitingFor: api.WaitingLimit,
		Waiting: &api.Waiting{For: api.WaitingLimit, Limit: &api.LimitHold{Provider: "anthropic"}}}
	ch := tr.compare([]api.Session{ended})
	if len(ch) != 1 || ch[0].Kind != ChangeWaiting || ch[0].Session.WaitingFor != api.WaitingLimit {
		t.Fatalf("ended on a limit: %+v", ch)
	}
	if ch := tr.compare([]api.Session{ended}); len(ch) != 0 {
		t.Errorf("announced again: %+v", ch)
	}
}

func TestLimitSays(t *testing.T) {
	t.Parallel()
	resets := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	tests := []struct {
		l       api.LimitHold
		onLimit string
		want    []string
	}{
		{api.LimitHold{Provider: "openai", Window: "primary", ResetsAt: &resets, Message: "You've hit your usage limit."}, api.OnLimitResume,
			[]string{"held by the usage limit of openai (primary) until 2026-11-27T03:00:00Z: You've hit your usage limit.", "the service resumes it after the reset"}},
		{api.LimitHold{Provider: "anthropic"}, api.OnLimitWait, []string{"anthropic, its reset time not given", "resume it by hand"}},
		{api.LimitHold{Provider: "anthropic"}, "", []string{"as the service's configuration says"}},
	}
	for _, tt := range tests {
		got := limitSays(&tt.l, tt.onLimit)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("limitSays(%+v, %q) = %q, want it to hold %q", tt.l, tt.onLimit, got, w)
			}
		}
	}
}

// The limits book's view builds only what the book needs, and the book it
// makes is the one a whole list makes: held and windowed sessions and
// running ones are in it, a finished session without either is not built.
func TestLimitsViewMakesTheBookAListMakes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	self, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	live := &adapters.ProcessRef{PID: self.PID, Start: self.Start, Evidence: "registry"}
	now := time.Now()
	at := now.Add(-time.Hour)
	old := now.Add(-10 * 24 * time.Hour)
	resets := now.Add(3 * time.Hour)
	store := &fixed{name: "fixed", sessions: []adapters.NativeSession{
		{Adapter: "fixed", NativeID: "done1", State: adapters.NativeDone, CreatedAt: at, UpdatedAt: at},
		{Adapter: "fixed", NativeID: "done2", State: adapters.NativeDone, CreatedAt: at, UpdatedAt: at},
		{Adapter: "fixed", NativeID: "held1", State: adapters.NativeFailed, CreatedAt: at, UpdatedAt: at,
			Limit: &adapters.LimitHit{Provider: "openai", Window: "primary", ResetsAt: resets, At: at}},
		{Adapter: "fixed", NativeID: "windows1", State: adapters.NativeDone, CreatedAt: at, UpdatedAt: at,
			Windows: []adapters.LimitWindow{{Provider: "openai", Name: "secondary", UsedPercent: 40, ResetsAt: resets, At: at}}},
		{Adapter: "fixed", NativeID: "live1", State: adapters.NativeIdle, CreatedAt: at, UpdatedAt: at, Process: live},
		{Adapter: "fixed", NativeID: "oldheld", State: adapters.NativeFailed, CreatedAt: old, UpdatedAt: old,
			Limit: &adapters.LimitHit{Provider: "anthropic", At: old}},
	}}
	c := New(ctx, Options{Home: home.Home(t.TempDir()), Adapters: adapters.NewSet(store), DiscoveryTimeout: time.Minute})
	view, err := c.LimitsView(ctx, 8*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range view {
		got = append(got, s.ID)
	}
	slices.Sort(got)
	if want := []string{"held1", "live1", "windows1"}; !slices.Equal(got, want) {
		t.Errorf("limits view %v, want %v", got, want)
	}
	whole, err := c.List(ctx, api.ListOptions{All: true, Since: 8 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	fromView, fromList := NewUsageLimits(time.Hour), NewUsageLimits(time.Hour)
	fromView.Observe(view, now)
	fromList.Observe(whole.Sessions, now)
	if a, b := fromView.Report(now), fromList.Report(now); !reflect.DeepEqual(a, b) {
		t.Errorf("book from the limits view %+v\nbook from the list %+v", a, b)
	}
}
