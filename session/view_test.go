package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

func TestResolvePrefix(t *testing.T) {
	ids := []string{"01aaa1", "01aaa2", "01bbb1"}
	var ambiguous *AmbiguousError
	tests := []struct {
		prefix, want string
		fails        func(error) bool
	}{
		{"01b", "01bbb1", nil},
		{"01aaa2", "01aaa2", nil},
		{"01a", "", func(err error) bool { return errors.As(err, &ambiguous) }},
		{"zz", "", func(err error) bool { return errors.Is(err, ErrNotFound) }},
	}
	for _, tc := range tests {
		got, err := resolvePrefix(tc.prefix, ids)
		if tc.fails != nil {
			if !tc.fails(err) {
				t.Errorf("resolvePrefix(%q) error %v, not the kind expected", tc.prefix, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("resolvePrefix(%q) = %q, %v; want %q", tc.prefix, got, err, tc.want)
		}
	}
	_, err := resolvePrefix("01a", ids)
	var e *AmbiguousError
	if !errors.As(err, &e) || len(e.Candidates) != 2 {
		t.Errorf("ambiguous error lists %v, want both candidates", err)
	}
}

func TestMerge(t *testing.T) {
	now := time.Now()
	in := int64(10)
	launched := []api.Session{
		{ID: "01a", Adapter: "claude", Origin: api.OriginLaunched, Status: api.StatusRunning, NativeID: "n1", CreatedAt: now},
		{ID: "01b", Adapter: "claude", Origin: api.OriginLaunched, Status: api.StatusExited, NativeID: "n1", CreatedAt: now.Add(time.Second)},
		{ID: "01c", Adapter: "codex", Origin: api.OriginLaunched, Status: api.StatusRunning, CreatedAt: now},
	}
	disc := discovered{
		sessions: [][]adapters.NativeSession{{
			{Adapter: "claude", NativeID: "n1", Model: "m", TokensIn: &in, State: adapters.NativeBusy},
			{Adapter: "claude", NativeID: "n2", State: adapters.NativeDone, CreatedAt: now},
		}, {
			{Adapter: "codex", NativeID: "n3", CreatedAt: now},
		}},
		failed: map[string]bool{"codex": true},
	}
	out := merge(launched, disc, nil)
	byID := map[string]api.Session{}
	for _, s := range out {
		byID[s.ID] = s
	}
	if len(out) != 5 {
		t.Fatalf("merge gave %d sessions, want 5 (3 launched, 2 discovered): %+v", len(out), out)
	}
	if s := byID["01a"]; s.Model != "m" || s.TokensIn == nil || s.Activity != "busy" || s.Status != api.StatusRunning {
		t.Errorf("launched session not enriched: %+v", s)
	}
	if s := byID["01b"]; s.Model != "m" || s.Activity != "" {
		t.Errorf("resumed run: %+v; want enriched, no activity once exited", s)
	}
	if s := byID["n2"]; s.Origin != api.OriginDiscovered || s.Status != api.StatusEnded {
		t.Errorf("discovered session: %+v", s)
	}
	if s := byID["n3"]; s.Status != api.StatusUnknown {
		t.Errorf("session of a failed adapter is %s, want unknown", s.Status)
	}
	if s := byID["01c"]; s.Status != api.StatusRunning {
		t.Errorf("a launched session of a failed adapter is %s: its process still speaks for it", s.Status)
	}
}

// A plain command that is an agent (`run -- claude`) is listed once: the
// launched row, with the agent's native facts; not a second discovered row
// with the same pid.
func TestCommandThatIsAnAgentIsListedOnce(t *testing.T) {
	self, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	launched := []api.Session{{ID: "01a", Adapter: "exec", Origin: api.OriginLaunched, Status: api.StatusRunning, PID: self.PID}}
	model := "claude-x"
	disc := discovered{sessions: [][]adapters.NativeSession{{
		{Adapter: "claude", NativeID: "n1", Model: model, State: adapters.NativeBusy,
			Process: &adapters.ProcessRef{PID: self.PID, Start: self.Start, Evidence: "argv"}},
		// The same pid with another start stamp is another process.
		{Adapter: "claude", NativeID: "n2", State: adapters.NativeDone,
			Process: &adapters.ProcessRef{PID: self.PID, Start: self.Start + 1, Evidence: "argv"}},
	}}}
	out := merge(launched, disc, nil)
	byID := map[string]api.Session{}
	for _, s := range out {
		byID[s.ID] = s
	}
	if s, ok := byID["01a"]; !ok || s.NativeID != "n1" || s.Model != model || s.Activity != "busy" {
		t.Errorf("the command's row = %+v, want it enriched with n1", s)
	}
	if _, twice := byID["n1"]; twice {
		t.Error("the agent's native session is listed again as discovered")
	}
	if _, ok := byID["n2"]; !ok || len(out) != 2 {
		t.Errorf("merge = %+v, want the command's row and n2", out)
	}
}

// A filtered merge keeps only what the filter accepts, and a launched
// session left out still claims its native session: it never shows up again
// as discovered.
func TestMergeFiltered(t *testing.T) {
	now := time.Now()
	launched := []api.Session{
		{ID: "01a", Adapter: "claude", Origin: api.OriginLaunched, Status: api.StatusExited, NativeID: "n1", CreatedAt: now},
	}
	disc := discovered{sessions: [][]adapters.NativeSession{{
		{Adapter: "claude", NativeID: "n1", State: adapters.NativeDone},
		{Adapter: "claude", NativeID: "n2", State: adapters.NativeBusy},
		{Adapter: "claude", NativeID: "n3", State: adapters.NativeDone},
	}, {
		// The same store read by a second adapter (pi and pi-rust).
		{Adapter: "claude-too", NativeID: "n2", State: adapters.NativeBusy},
	}}}
	for _, tc := range []struct {
		name string
		keep func(*api.Session) bool
		want []string
	}{
		{"all", nil, []string{"01a", "n2", "n3"}},
		{"running", func(s *api.Session) bool { return s.Status == api.StatusRunning }, []string{"n2"}},
		{"ended", func(s *api.Session) bool { return s.Status == api.StatusEnded }, []string{"n3"}},
		{"none", func(*api.Session) bool { return false }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range merge(launched, disc, tc.keep) {
				got = append(got, s.ID)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("merge kept %q, want %q", got, tc.want)
			}
		})
	}
}

// merge answers oldest first, as sortByCreation orders the launched
// sessions followed by the native ones as discovered (ties keep that
// order), filtered or not: List shows it without sorting it again.
func TestMergeIsOldestFirst(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	launched := []api.Session{
		{ID: "L3", Adapter: "claude", Status: api.StatusExited, NativeID: "n9", CreatedAt: at(3)},
		{ID: "L1", Adapter: "codex", Status: api.StatusExited, CreatedAt: at(1)},
		{ID: "L2", Adapter: "codex", Status: api.StatusExited, CreatedAt: at(2)},
		{ID: "L2b", Adapter: "codex", Status: api.StatusExited, CreatedAt: at(2)},
	}
	disc := discovered{sessions: [][]adapters.NativeSession{{
		{Adapter: "claude", NativeID: "n9", State: adapters.NativeDone, CreatedAt: at(9)},
		{Adapter: "claude", NativeID: "n5", State: adapters.NativeDone, CreatedAt: at(5)},
		{Adapter: "claude", NativeID: "n2", State: adapters.NativeDone, CreatedAt: at(2)},
		{Adapter: "claude", NativeID: "n0", State: adapters.NativeBusy, CreatedAt: at(0)},
	}, {
		{Adapter: "pi", NativeID: "p2", State: adapters.NativeDone, CreatedAt: at(2)},
		{Adapter: "pi", NativeID: "p7", State: adapters.NativeBusy, CreatedAt: at(7)},
	}}}
	for _, tc := range []struct {
		name string
		keep func(*api.Session) bool
		want []string
	}{
		{"all", nil, []string{"n0", "L1", "L2", "L2b", "n2", "p2", "L3", "n5", "p7"}},
		{"running", func(s *api.Session) bool { return s.Status == api.StatusRunning }, []string{"n0", "p7"}},
		{"not n2", func(s *api.Session) bool { return s.ID != "n2" }, []string{"n0", "L1", "L2", "L2b", "p2", "L3", "n5", "p7"}},
		{"none", func(*api.Session) bool { return false }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var asked, got []string
			out := merge(launched, disc, func(s *api.Session) bool {
				asked = append(asked, s.ID)
				return tc.keep == nil || tc.keep(s)
			})
			for _, s := range out {
				got = append(got, s.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("merge gave %q, want %q", got, tc.want)
			}
			if all := []string{"n0", "L1", "L2", "L2b", "n2", "p2", "L3", "n5", "p7"}; !slices.Equal(asked, all) {
				t.Errorf("keep asked about %q, want %q", asked, all)
			}
		})
	}
}

// failing is an adapter whose discovery works once, then hangs until
// released, then fails.
type failing struct {
	calls   atomic.Int32
	release chan struct{}
}

func (f *failing) Name() string { return "flaky" }
func (f *failing) Discover(ctx context.Context) ([]adapters.NativeSession, error) {
	n := f.calls.Add(1)
	if n == 1 {
		return []adapters.NativeSession{{Adapter: "flaky", NativeID: "x1", State: adapters.NativeBusy}}, nil
	}
	if n == 2 {
		select { // a hung store
		case <-f.release:
		case <-ctx.Done():
		}
	}
	return nil, errors.New("store unreadable")
}
func (f *failing) Transcript(context.Context, string, int) ([]adapters.Message, error) {
	return nil, nil
}

// A failed or hung adapter marks nothing stopped: what it vouched for last
// time is shown as unknown, with a warning naming it. Requests while it
// hangs wait on the same discovery rather than pile up new ones.
func TestFailedDiscoveryMarksNothingStopped(t *testing.T) {
	f := &failing{release: make(chan struct{})}
	d := newDiscovery([]adapters.Adapter{f}, 100*time.Millisecond)
	first := merge(nil, d.run(context.Background()), nil)
	if len(first) != 1 || first[0].Status != api.StatusRunning {
		t.Fatalf("first discovery = %+v", first)
	}
	check := func(run int, wantWarning string) {
		t.Helper()
		disc := d.run(context.Background())
		got := merge(nil, disc, nil)
		if len(got) != 1 || got[0].Status != api.StatusUnknown {
			t.Fatalf("run %d: sessions = %+v, want the known one as unknown", run, got)
		}
		if len(disc.warnings) != 1 || !strings.Contains(disc.warnings[0], "flaky") || !strings.Contains(disc.warnings[0], wantWarning) {
			t.Errorf("run %d: warnings = %q", run, disc.warnings)
		}
	}
	check(2, "timed out")
	check(3, "timed out")
	if n := f.calls.Load(); n != 2 {
		t.Errorf("the hung store was asked %d times, want 2", n)
	}
	close(f.release)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		d.mu.Lock()
		busy := len(d.inflight) > 0
		d.mu.Unlock()
		if !busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the released discovery did not end")
		}
	}
	check(4, "store unreadable")
}

func TestSortByCreation(t *testing.T) {
	t0 := time.Now()
	ss := []api.Session{
		{ID: "c", CreatedAt: t0.Add(2 * time.Second)},
		{ID: "a1", CreatedAt: t0},
		{ID: "b", CreatedAt: t0.Add(time.Second)},
		{ID: "a2", CreatedAt: t0},
	}
	sortByCreation(ss)
	var got []string
	for _, s := range ss {
		got = append(got, s.ID)
	}
	if want := []string{"a1", "a2", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("order %q, want %q (ties keep their order)", got, want)
	}
	sortByCreation(nil)
}

// sortByCreation moves the sessions in place: its one allocation is the
// index, never a second copy of the sessions; any order comes out sorted
// and stable.
func TestSortByCreationInPlace(t *testing.T) {
	t0 := time.Now()
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 10, 257} {
		ss := make([]api.Session, n)
		for i := range ss {
			ss[i] = api.Session{ID: strconv.Itoa(i), CreatedAt: t0.Add(time.Duration(r.IntN(n/2+1)) * time.Second)}
		}
		want := slices.Clone(ss)
		slices.SortStableFunc(want, func(a, b api.Session) int { return a.CreatedAt.Compare(b.CreatedAt) })
		sortByCreation(ss)
		for i := range ss {
			if ss[i].ID != want[i].ID {
				t.Fatalf("%d sessions: at %d %s, want %s", n, i, ss[i].ID, want[i].ID)
			}
		}
	}
	ss := make([]api.Session, 1000)
	for i := range ss {
		ss[i].CreatedAt = t0.Add(-time.Duration(i) * time.Second)
	}
	if allocs := testing.AllocsPerRun(5, func() { sortByCreation(ss) }); allocs > 1 {
		t.Errorf("%v allocations a sort, want the index's alone", allocs)
	}
}

// slowAdapter's Discover takes delay, or until its context ends; it counts
// its calls and remembers whether its context ended early.
type slowAdapter struct {
	adapters.Adapter
	delay    time.Duration
	calls    atomic.Int32
	canceled atomic.Bool
}

func (a *slowAdapter) Name() string { return "slow" }

func (a *slowAdapter) Discover(ctx context.Context) ([]adapters.NativeSession, error) {
	a.calls.Add(1)
	select {
	case <-time.After(a.delay):
		return []adapters.NativeSession{{Adapter: "slow", NativeID: "s1", State: adapters.NativeDone}}, nil
	case <-ctx.Done():
		a.canceled.Store(true)
		return nil, ctx.Err()
	}
}

// A discovery that outlasts a request's timeout goes on (its work is not
// thrown away), and requests meanwhile join it rather than start another:
// a cold store is read once, and the answer after it is complete.
func TestSlowDiscoveryGoesOnAndIsJoined(t *testing.T) {
	a := &slowAdapter{delay: 600 * time.Millisecond}
	d := newDiscovery([]adapters.Adapter{a}, 100*time.Millisecond)
	d.first = 0 // a first answer is waited for no longer than any
	first := d.run(context.Background())
	if !first.failed["slow"] || len(first.warnings) != 1 {
		t.Fatalf("first answer: failed %v warnings %q; want a timeout warning", first.failed, first.warnings)
	}
	// Requests while it runs join it.
	for range 3 {
		d.run(context.Background())
	}
	if n := a.calls.Load(); n != 1 {
		t.Errorf("Discover called %d times while one was under way, want 1", n)
	}
	// A request with time enough gets the discovery's answer.
	d.timeout = 5 * time.Second
	got := d.run(context.Background())
	if got.failed["slow"] || len(got.sessions) != 1 || len(got.sessions[0]) != 1 {
		t.Errorf("answer after the slow discovery: %+v", got)
	}
	if a.canceled.Load() {
		t.Error("the discovery was canceled when the first request gave up")
	}
	if n := a.calls.Load(); n != 1 {
		t.Errorf("Discover called %d times, want 1", n)
	}
}

// fixed is an adapter whose store holds the given sessions.
type fixed struct {
	name     string
	sessions []adapters.NativeSession
}

func (f *fixed) Name() string { return f.name }
func (f *fixed) Discover(context.Context) ([]adapters.NativeSession, error) {
	return f.sessions, nil
}
func (f *fixed) Transcript(context.Context, string, int) ([]adapters.Message, error) {
	return nil, nil
}

// Looking up one discovered session merges only the native sessions with
// its prefix, and answers as the whole view does: the same session object,
// a launched session's native session not found as discovered, prefixes
// matched without regard to case.
func TestLookupOfDiscoveredSessionAgreesWithList(t *testing.T) {
	h := home.Home(t.TempDir())
	created := time.Now().Add(-time.Hour)
	store := &fixed{name: "fixed", sessions: []adapters.NativeSession{
		{Adapter: "fixed", NativeID: "abc111", State: adapters.NativeDone, FirstPrompt: "one", CreatedAt: created},
		{Adapter: "fixed", NativeID: "abc222", State: adapters.NativeFailed, CreatedAt: created},
		{Adapter: "fixed", NativeID: "ABD333", State: adapters.NativeAborted, CreatedAt: created},
		{Adapter: "fixed", NativeID: "claimed9", State: adapters.NativeBusy, CreatedAt: created},
	}}
	c := New(context.Background(), Options{Home: h, Adapters: adapters.NewSet(store), DiscoveryTimeout: time.Second})
	launchedHere(t, h, "fixed", "claimed9")
	ctx := context.Background()
	list, err := c.List(ctx, api.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]api.Session{}
	for _, s := range list.Sessions {
		listed[s.ID] = s
	}
	var ambiguous *AmbiguousError
	for _, tc := range []struct {
		prefix, want string
		wantErr      error
		ambiguous    bool
	}{
		{prefix: "abc1", want: "abc111"},
		{prefix: "abc222", want: "abc222"},
		{prefix: "abd", want: "ABD333"},
		{prefix: "ABC1", want: "abc111"},
		{prefix: "abc", ambiguous: true},
		{prefix: "claimed9", wantErr: ErrNotFound},
		{prefix: "zzz", wantErr: ErrNotFound},
	} {
		got, err := c.Get(ctx, tc.prefix)
		switch {
		case tc.ambiguous:
			if !errors.As(err, &ambiguous) {
				t.Errorf("%s: %v, want ambiguous", tc.prefix, err)
			}
		case tc.wantErr != nil:
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("%s: %v, want %v", tc.prefix, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.prefix, err)
		default:
			want := listed[tc.want]
			if got.ID != tc.want || got.Status != want.Status || got.Prompt != want.Prompt || got.Origin != api.OriginDiscovered {
				t.Errorf("%s: got %s %s %q, list says %s %s %q", tc.prefix, got.ID, got.Status, got.Prompt, want.ID, want.Status, want.Prompt)
			}
		}
	}
}

// A list of running sessions, which does not build the ended sessions only
// an adapter knows, shows what the full list shows of the running ones,
// handles included (they stay unique among every id).
func TestRunningListAgreesWithFullList(t *testing.T) {
	h := home.Home(t.TempDir())
	self, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	created := time.Now().Add(-time.Hour)
	live := &adapters.ProcessRef{PID: self.PID, Start: self.Start, Evidence: "argv"}
	store := &fixed{name: "fixed", sessions: []adapters.NativeSession{
		{Adapter: "fixed", NativeID: "abcd1111", State: adapters.NativeDone, CreatedAt: created},
		{Adapter: "fixed", NativeID: "abcd1122", State: adapters.NativeBusy, CreatedAt: created},
		{Adapter: "fixed", NativeID: "abcd2222", State: adapters.NativeDone, Process: live, CreatedAt: created},
		{Adapter: "fixed", NativeID: "abcd2233", State: adapters.NativeFailed, CreatedAt: created},
		{Adapter: "fixed", NativeID: "zz999999", State: adapters.NativeUnknown, CreatedAt: created},
	}}
	c := New(context.Background(), Options{Home: h, Adapters: adapters.NewSet(store), DiscoveryTimeout: time.Second})
	ctx := context.Background()
	all, err := c.List(ctx, api.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range all.Sessions {
		if !s.Status.Ended() {
			want = append(want, s.ID+" "+s.Handle)
		}
	}
	running, err := c.List(ctx, api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range running.Sessions {
		got = append(got, s.ID+" "+s.Handle)
	}
	if !slices.Equal(got, want) || len(got) != 3 {
		t.Errorf("running list %q, the full list's running and unknown sessions %q (want the three)", got, want)
	}
}

// A list without -a leaves out no session that may be live: two TUIs of
// one agent in one folder that nothing ties to their sessions, or the
// sessions of an adapter that did not answer (a stalled gateway), are
// listed as unknown, each with why; --status running still narrows to
// running ones, and a session whose own record says it is over stays out.
func TestListHidesUnknownSessions(t *testing.T) {
	t.Parallel()
	h := home.Home(t.TempDir())
	now := time.Now()
	contenders := adapters.ContenderEvidence("opencode", []int{101, 102})
	store := &fixed{name: "opencode", sessions: []adapters.NativeSession{
		{Adapter: "opencode", NativeID: "ses_aaaa1", State: adapters.NativeUnknown, CreatedAt: now, Evidence: contenders,
			Warnings: []string{"unknown while opencode pid 101, 102 lives"}},
		{Adapter: "opencode", NativeID: "ses_aaaa2", State: adapters.NativeUnknown, CreatedAt: now, Evidence: contenders,
			Warnings: []string{"unknown while opencode pid 101, 102 lives"}},
		{Adapter: "opencode", NativeID: "ses_bbbb1", State: adapters.NativeDone, CreatedAt: now},
	}}
	gateway := &failing{release: make(chan struct{})}
	close(gateway.release)
	c := New(context.Background(), Options{Home: h, Adapters: adapters.NewSet(store, gateway), DiscoveryTimeout: time.Second})
	ctx := context.Background()
	if _, err := c.List(ctx, api.ListOptions{}); err != nil { // the gateway answers once
		t.Fatal(err)
	}
	ids := func(o api.ListOptions) ([]string, []string) {
		t.Helper()
		l, err := c.List(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range l.Sessions {
			got = append(got, s.ID+"="+string(s.Status))
		}
		slices.Sort(got)
		return got, l.Warnings
	}
	got, warnings := ids(api.ListOptions{})
	want := []string{"ses_aaaa1=unknown", "ses_aaaa2=unknown", "x1=unknown"}
	if !slices.Equal(got, want) {
		t.Errorf("list = %q, want %q: a session that may be live is hidden", got, want)
	}
	for _, id := range []string{"ses_aaaa1", "ses_aaaa2"} {
		if !slices.ContainsFunc(warnings, func(w string) bool {
			return strings.Contains(w, id) && strings.Contains(w, "unknown") && strings.Contains(w, "pid 101, 102")
		}) {
			t.Errorf("no warning says why %s is unknown: %q", id, warnings)
		}
	}
	if got, _ := ids(api.ListOptions{Status: "running"}); len(got) != 0 {
		t.Errorf("list --status running = %q, want none", got)
	}
	if got, _ := ids(api.ListOptions{Status: "unknown"}); !slices.Equal(got, want) {
		t.Errorf("list --status unknown = %q, want %q", got, want)
	}
}

// The first answer of an adapter is its whole store: a request waits for
// it past the timeout (a first list after a start shows every session);
// once it has answered, a slow discovery falls back on the last answer
// after the timeout.
func TestFirstDiscoveryIsWaitedFor(t *testing.T) {
	a := &slowAdapter{delay: 400 * time.Millisecond}
	d := newDiscovery([]adapters.Adapter{a}, 50*time.Millisecond)
	d.first = 10 * time.Second
	first := d.run(context.Background())
	if first.failed["slow"] || len(first.warnings) != 0 || len(first.sessions) != 1 || len(first.sessions[0]) != 1 {
		t.Fatalf("first answer: %+v; want the whole store, without a warning", first)
	}
	next := d.run(context.Background())
	if !next.failed["slow"] || len(next.warnings) != 1 || !strings.Contains(next.warnings[0], "timed out") || len(next.sessions[0]) != 1 {
		t.Errorf("a slow second answer: %+v; want the last one, with a timeout warning", next)
	}
	// A first answer later than the first wait: the warning says how long
	// the request waited, not the timeout of later requests.
	d = newDiscovery([]adapters.Adapter{a}, 50*time.Millisecond)
	d.first = 200 * time.Millisecond
	if late := d.run(context.Background()); len(late.warnings) != 1 || !strings.Contains(late.warnings[0], "timed out after 200ms") {
		t.Errorf("a first answer past the first wait: warnings %q, want one that it timed out after 200ms", late.warnings)
	}
}

// The runs of one native session (an original and its resumes) each carry
// their own tokens and cost, which add up to the native session's total;
// the total is carried apart. A run whose start was not recorded has
// unknown counts, never the total.
func TestOwnCountsAddUp(t *testing.T) {
	t0 := time.Now()
	i64 := func(v int64) *int64 { return &v }
	f64 := func(v float64) *float64 { return &v }
	usage := func(in, out int64, cost float64) *api.Usage {
		return &api.Usage{TokensIn: i64(in), TokensOut: i64(out), CostUSD: f64(cost)}
	}
	run := func(id string, at int, resumeOf string, base *api.Usage) api.Session {
		return api.Session{ID: id, Adapter: "claude", Origin: api.OriginLaunched, Status: api.StatusExited, NativeID: "n1",
			CreatedAt: t0.Add(time.Duration(at) * time.Second), ResumeOf: resumeOf, Baseline: base}
	}
	native := adapters.NativeSession{Adapter: "claude", NativeID: "n1", State: adapters.NativeDone,
		TokensIn: i64(1000), TokensOut: i64(100), CostUSD: f64(0.75)}
	type want struct {
		in, out int64
		cost    float64
		known   bool
	}
	for _, tc := range []struct {
		name      string
		runs      []api.Session
		want      map[string]want
		withTotal bool
	}{
		{"one run", []api.Session{run("a", 0, "", nil)},
			map[string]want{"a": {1000, 100, 0.75, true}}, false},
		{"original and a resume", []api.Session{run("b", 1, "a", usage(600, 40, 0.5)), run("a", 0, "", nil)},
			map[string]want{"a": {600, 40, 0.5, true}, "b": {400, 60, 0.25, true}}, true},
		{"three runs", []api.Session{run("a", 0, "", nil), run("b", 1, "a", usage(300, 30, 0.25)), run("c", 2, "b", usage(900, 90, 0.5))},
			map[string]want{"a": {300, 30, 0.25, true}, "b": {600, 60, 0.25, true}, "c": {100, 10, 0.25, true}}, true},
		{"a resume whose start is not known", []api.Session{run("a", 0, "", nil), run("b", 1, "a", nil)},
			map[string]want{"a": {}, "b": {}}, true},
		{"a lone resume of a session begun elsewhere", []api.Session{run("b", 1, "x", usage(1000, 40, 0.7))},
			map[string]want{"b": {0, 60, 0.05, true}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := merge(tc.runs, discovered{sessions: [][]adapters.NativeSession{{native}}}, nil)
			if len(out) != len(tc.runs) {
				t.Fatalf("%d sessions, want %d (the native session is not listed again)", len(out), len(tc.runs))
			}
			var sumIn, sumOut int64
			var sumCost float64
			for _, s := range out {
				w := tc.want[s.ID]
				if !w.known {
					if s.TokensIn != nil || s.TokensOut != nil || s.CostUSD != nil {
						t.Errorf("%s: counts %v/%v/%v, want unknown", s.ID, s.TokensIn, s.TokensOut, s.CostUSD)
					}
				} else if s.TokensIn == nil || *s.TokensIn != w.in || *s.TokensOut != w.out || math.Abs(*s.CostUSD-w.cost) > 1e-9 {
					t.Errorf("%s: counts %v/%v/%v, want %d/%d/%g", s.ID, deref(s.TokensIn), deref(s.TokensOut), deref(s.CostUSD), w.in, w.out, w.cost)
				} else {
					sumIn, sumOut, sumCost = sumIn+*s.TokensIn, sumOut+*s.TokensOut, sumCost+*s.CostUSD
				}
				if (s.NativeTotal != nil) != tc.withTotal {
					t.Errorf("%s: native total %+v, want one: %v", s.ID, s.NativeTotal, tc.withTotal)
				} else if s.NativeTotal != nil && *s.NativeTotal.TokensIn != 1000 {
					t.Errorf("%s: native total %d, want 1000", s.ID, *s.NativeTotal.TokensIn)
				}
			}
			if tc.name == "original and a resume" || tc.name == "three runs" {
				if sumIn != 1000 || sumOut != 100 || math.Abs(sumCost-0.75) > 1e-9 {
					t.Errorf("the runs add up to %d/%d/%g, want the native total 1000/100/0.75", sumIn, sumOut, sumCost)
				}
			}
		})
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// counted is a store whose sessions may change, counting its discoveries.
type counted struct {
	name     string
	calls    atomic.Int32
	mu       sync.Mutex
	sessions []adapters.NativeSession
}

func (c *counted) Name() string { return c.name }
func (c *counted) Discover(context.Context) ([]adapters.NativeSession, error) {
	c.calls.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sessions), nil
}
func (c *counted) Transcript(context.Context, string, int) ([]adapters.Message, error) {
	return nil, nil
}
func (c *counted) add(ns adapters.NativeSession) {
	c.mu.Lock()
	c.sessions = append(c.sessions, ns)
	c.mu.Unlock()
}

// A lookup of one native id asks only the adapter whose store held it;
// a prefix two stores share stays ambiguous; an id no store held at the
// last discovery is looked for in every store.
func TestNativeLookupAsksTheOwningAdapter(t *testing.T) {
	created := time.Now().Add(-time.Hour)
	a := &counted{name: "a", sessions: []adapters.NativeSession{
		{Adapter: "a", NativeID: "aaa111", State: adapters.NativeDone, CreatedAt: created},
		{Adapter: "a", NativeID: "shared1", State: adapters.NativeDone, CreatedAt: created},
	}}
	b := &counted{name: "b", sessions: []adapters.NativeSession{
		{Adapter: "b", NativeID: "bbb222", State: adapters.NativeDone, CreatedAt: created},
		{Adapter: "b", NativeID: "shared2", State: adapters.NativeDone, CreatedAt: created},
	}}
	c := New(context.Background(), Options{Home: home.Home(t.TempDir()), Adapters: adapters.NewSet(a, b), DiscoveryTimeout: time.Second})
	ctx := context.Background()
	if _, err := c.List(ctx, api.ListOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	calls := func() (int32, int32) { return a.calls.Load(), b.calls.Load() }
	a0, b0 := calls()
	got, err := c.Get(ctx, "aaa1")
	if err != nil || got.ID != "aaa111" || got.Adapter != "a" {
		t.Fatalf("Get aaa1: %v %v", got.ID, err)
	}
	if a1, b1 := calls(); a1 != a0+1 || b1 != b0 {
		t.Errorf("discoveries for one id of a: a %d, b %d; want 1 and 0", a1-a0, b1-b0)
	}
	var ambiguous *AmbiguousError
	if _, err := c.Get(ctx, "shared"); !errors.As(err, &ambiguous) || len(ambiguous.Candidates) != 2 {
		t.Errorf("Get shared: %v, want ambiguous between the two stores", err)
	}
	b.add(adapters.NativeSession{Adapter: "b", NativeID: "new333", State: adapters.NativeBusy, CreatedAt: created})
	a0, b0 = calls()
	if got, err := c.Get(ctx, "new333"); err != nil || got.Adapter != "b" {
		t.Fatalf("Get of a session new since the last discovery: %v %v", got.ID, err)
	}
	if a1, b1 := calls(); a1 != a0+1 || b1 != b0+1 {
		t.Errorf("discoveries for an id no store held: a %d, b %d; want 1 each", a1-a0, b1-b0)
	}
}

// A native id listed by two adapters (or twice by one) is listed once, as
// the first had it, whether the repeats are found by merge or kept from
// the last answer; the kept ones are found again when an answer changes.
func TestRepeatedNativeIDsAreListedOnce(t *testing.T) {
	pi := []adapters.NativeSession{{Adapter: "pi", NativeID: "a"}, {Adapter: "pi", NativeID: "b"}, {Adapter: "pi", NativeID: "a"}}
	rust := []adapters.NativeSession{{Adapter: "pi-rust", NativeID: "b"}, {Adapter: "pi-rust", NativeID: "c"}}
	other := []adapters.NativeSession{{Adapter: "pi-rust", NativeID: "a"}, {Adapter: "pi-rust", NativeID: "d"}}
	var x repeatIndex
	for _, tc := range []struct {
		name     string
		sessions [][]adapters.NativeSession
		kept     bool
		want     []string
	}{
		{"found by merge", [][]adapters.NativeSession{pi, rust}, false, []string{"pi/a", "pi/b", "pi-rust/c"}},
		{"kept index", [][]adapters.NativeSession{pi, rust}, true, []string{"pi/a", "pi/b", "pi-rust/c"}},
		{"kept index, same answers", [][]adapters.NativeSession{pi, rust}, true, []string{"pi/a", "pi/b", "pi-rust/c"}},
		{"kept index, an answer changed", [][]adapters.NativeSession{pi, other}, true, []string{"pi/a", "pi/b", "pi-rust/d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disc := discovered{sessions: tc.sessions}
			if tc.kept {
				disc.repeats = x.repeats(tc.sessions)
			}
			var got []string
			for _, s := range merge(nil, disc, nil) {
				got = append(got, s.Adapter+"/"+s.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("listed %q, want %q", got, tc.want)
			}
		})
	}
}

// one is a counted adapter that reads one session alone.
type one struct {
	*counted
	ones atomic.Int32
}

func (o *one) DiscoverOne(_ context.Context, id string) (adapters.NativeSession, error) {
	o.ones.Add(1)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ns := range o.sessions {
		if ns.NativeID == id {
			return ns, nil
		}
	}
	return adapters.NativeSession{}, adapters.ErrNoSession
}

// A lookup of a whole native id that one store held reads that session
// alone from its adapter; a prefix, or an id no longer there, is left to
// the discoveries.
func TestWholeNativeIDIsReadAlone(t *testing.T) {
	created := time.Now().Add(-time.Hour)
	a := &one{counted: &counted{name: "a", sessions: []adapters.NativeSession{
		{Adapter: "a", NativeID: "aaa111", State: adapters.NativeDone, CreatedAt: created, Model: "m1"},
		{Adapter: "a", NativeID: "gone11", State: adapters.NativeDone, CreatedAt: created},
	}}}
	b := &counted{name: "b", sessions: []adapters.NativeSession{
		{Adapter: "b", NativeID: "bbb222", State: adapters.NativeDone, CreatedAt: created},
	}}
	c := New(context.Background(), Options{Home: home.Home(t.TempDir()), Adapters: adapters.NewSet(a, b), DiscoveryTimeout: time.Second})
	ctx := context.Background()
	if _, err := c.List(ctx, api.ListOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.sessions = a.sessions[:1]
	a.mu.Unlock()
	for _, tc := range []struct {
		handle           string
		found            bool
		ones, discovered int32
	}{
		{"gone11", false, 1, 2}, // gone since: every store's discovery
		{"aaa111", true, 1, 0},
		{"AAA111", true, 1, 0},
		{"aaa1", true, 0, 1},   // a prefix: the owner's discovery
		{"bbb222", true, 0, 1}, // b cannot read one alone
	} {
		t.Run(tc.handle, func(t *testing.T) {
			ones, calls := a.ones.Load(), a.calls.Load()+b.calls.Load()
			got, err := c.Get(ctx, tc.handle)
			if tc.found != (err == nil) {
				t.Fatalf("Get(%s): %v %v", tc.handle, got.ID, err)
			}
			if tc.found && got.ID != strings.ToLower(tc.handle) && !strings.HasPrefix(got.ID, tc.handle) {
				t.Errorf("Get(%s) = %s", tc.handle, got.ID)
			}
			if d := a.ones.Load() - ones; d != tc.ones {
				t.Errorf("sessions read alone: %d, want %d", d, tc.ones)
			}
			if d := a.calls.Load() + b.calls.Load() - calls; d < tc.discovered || (tc.discovered == 0 && d != 0) {
				t.Errorf("discoveries: %d, want %d", d, tc.discovered)
			}
		})
	}
}

// A native session mayKeepNative turns away is one keep would turn away
// once built, whatever the filter; and an old ended one is turned away by
// a list that looks back less far, without being built.
func TestMayKeepNativeNeverTurnsAwayWhatKeepKeeps(t *testing.T) {
	self, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old, recent := now.Add(-30*24*time.Hour), now.Add(-time.Hour)
	live := &adapters.ProcessRef{PID: self.PID, Start: self.Start}
	var sessions []adapters.NativeSession
	for _, state := range []adapters.NativeState{adapters.NativeUnknown, adapters.NativeBusy, adapters.NativeIdle, adapters.NativeRunning, adapters.NativeDone, adapters.NativeFailed, adapters.NativeAborted} {
		for _, p := range []*adapters.ProcessRef{nil, live} {
			for _, created := range []time.Time{old, recent} {
				for _, updated := range []time.Time{{}, old, recent} {
					sessions = append(sessions, adapters.NativeSession{Adapter: "x", NativeID: "n", State: state, Process: p, CreatedAt: created, UpdatedAt: updated})
				}
			}
		}
	}
	var turnedAway int
	for _, o := range []api.ListOptions{{}, {All: true}, {All: true, Since: 90 * 24 * time.Hour}, {Status: "ended"}, {All: true, Status: "ended"}, {Status: "running"}, {All: true, Status: "unknown"}} {
		f, err := newFilter(o, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range sessions {
			for _, vouched := range []bool{true, false} {
				if f.mayKeepNative(&ns, vouched) {
					continue
				}
				turnedAway++
				if s := fromNative(&ns, vouched); f.keep(&s) {
					t.Errorf("filter %+v turned away %+v (vouched %v), which it keeps built: %s", o, ns, vouched, s.Status)
				}
			}
		}
	}
	f, _ := newFilter(api.ListOptions{All: true}, now)
	if f.mayKeepNative(&adapters.NativeSession{State: adapters.NativeDone, CreatedAt: old, UpdatedAt: old}, true) {
		t.Error("list -a builds a session ended 30 days ago")
	}
	if turnedAway == 0 {
		t.Error("nothing turned away")
	}
}

// What the agent's own records say a live session waits for (Claude's
// registry: a permission prompt, a dialog; a TUI on its trust dialog) is
// its activity, from source native, where no hook or terminal notification
// decided it; those outrank it.
func TestClaudeWaitingFromItsRegistryIsShown(t *testing.T) {
	t.Parallel()
	self, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	live := &adapters.ProcessRef{PID: self.PID, Start: self.Start, Evidence: "registry"}
	since := time.Now().Add(-time.Minute)
	launched := []api.Session{
		{ID: "01a", Adapter: "claude", Origin: api.OriginLaunched, Status: api.StatusRunning, NativeID: "n1"},
		{ID: "01b", Adapter: "claude", Origin: api.OriginLaunched, Status: api.StatusRunning, NativeID: "n2",
			Activity: api.ActivityBusy, ActivitySource: api.SourceHook},
	}
	disc := discovered{sessions: [][]adapters.NativeSession{{
		{Adapter: "claude", NativeID: "n1", State: adapters.NativeRunning, Process: live, WaitingFor: adapters.WaitingDialog},
		{Adapter: "claude", NativeID: "n2", State: adapters.NativeRunning, Process: live, WaitingFor: adapters.WaitingPermission},
		{Adapter: "claude", NativeID: "n3", State: adapters.NativeRunning, Process: live, WaitingFor: adapters.WaitingPermission, WaitingSince: since},
		{Adapter: "claude", NativeID: "n4", State: adapters.NativeDone, WaitingFor: adapters.WaitingPermission},
	}}, failed: map[string]bool{}}
	byID := map[string]api.Session{}
	for _, s := range merge(launched, disc, nil) {
		byID[s.ID] = s
	}
	for _, tc := range []struct {
		id, activity, source, waitingFor string
	}{
		{"01a", api.ActivityWaiting, api.SourceNative, api.WaitingDialog},
		{"01b", api.ActivityBusy, api.SourceHook, ""},
		{"n3", api.ActivityWaiting, api.SourceNative, api.WaitingPermission},
		{"n4", "", "", ""},
	} {
		s := byID[tc.id]
		if s.Activity != tc.activity || s.ActivitySource != tc.source || s.WaitingFor != tc.waitingFor {
			t.Errorf("%s: activity %q from %q waiting for %q; want %q from %q waiting for %q",
				tc.id, s.Activity, s.ActivitySource, s.WaitingFor, tc.activity, tc.source, tc.waitingFor)
		}
	}
	if s := byID["n3"]; s.ActivitySince == nil || !s.ActivitySince.Equal(since) || s.Waiting == nil || s.Waiting.For != api.WaitingPermission {
		t.Errorf("n3: since %v, waiting %+v", s.ActivitySince, s.Waiting)
	}
}

// The handle `status` gives a session is the one `list` prints: unique
// among every session known, those only an adapter knows included (today
// two OpenCode sessions ses_… both read "ses_").
func TestStatusHandleIsTheListsHandle(t *testing.T) {
	t.Parallel()
	h := home.Home(t.TempDir())
	now := time.Now()
	store := &fixed{name: "opencode", sessions: []adapters.NativeSession{
		{Adapter: "opencode", NativeID: "ses_aaaa1111", State: adapters.NativeIdle, CreatedAt: now},
		{Adapter: "opencode", NativeID: "ses_aaaa2222", State: adapters.NativeBusy, CreatedAt: now},
		{Adapter: "opencode", NativeID: "ses_b", State: adapters.NativeDone, CreatedAt: now},
	}}
	c := New(context.Background(), Options{Home: h, Adapters: adapters.NewSet(store), DiscoveryTimeout: time.Second})
	ctx := context.Background()
	l, err := c.List(ctx, api.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Sessions) != 3 {
		t.Fatalf("list: %+v", l.Sessions)
	}
	for _, s := range l.Sessions {
		got, err := c.Get(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Handle != s.Handle {
			t.Errorf("status %s: handle %q, list's %q", s.ID, got.Handle, s.Handle)
		}
	}
}

// oneFixed is fixed that also reads one session alone.
type oneFixed struct{ fixed }

func (f *oneFixed) DiscoverOne(_ context.Context, id string) (adapters.NativeSession, error) {
	for _, ns := range f.sessions {
		if ns.NativeID == id {
			return ns, nil
		}
	}
	return adapters.NativeSession{}, adapters.ErrNoSession
}

// Stopping a session agentctl did not start, whose adapter cannot stop it,
// names the processes that may run it (an unknown session has no pid of
// its own): never "pid 0".
func TestStopOfAnUnknownSessionSaysPid0(t *testing.T) {
	t.Parallel()
	h := home.Home(t.TempDir())
	now := time.Now()
	store := &oneFixed{fixed{name: "pi", sessions: []adapters.NativeSession{
		{Adapter: "pi", NativeID: "019a0000-aaaa", State: adapters.NativeUnknown, CreatedAt: now,
			Evidence: adapters.ContenderEvidence("pi", []int{4242, 4141})},
		{Adapter: "pi", NativeID: "019a0000-bbbb", State: adapters.NativeUnknown, CreatedAt: now},
	}}}
	c := New(context.Background(), Options{Home: h, Adapters: adapters.NewSet(store), DiscoveryTimeout: time.Second})
	ctx := context.Background()
	for id, want := range map[string]string{
		"019a0000-aaaa": "pi pid 4141 or 4242",
		"019a0000-bbbb": "no live process of it is known",
	} {
		_, err := c.Stop(ctx, id, api.StopRequest{})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "pid 0") {
			t.Errorf("stop %s: %v; want it to say %q", id, err, want)
		}
	}
}

// A plain command tied to the native session its process ran (`run --
// claude -p`) keeps that session's facts once it has ended, from the
// agent's adapter, and the native session is not listed again.
func TestRunOfAnAgentIsOneRowForItsLife(t *testing.T) {
	t.Parallel()
	in := int64(42)
	launched := []api.Session{{ID: "01a", Adapter: api.ExecAdapter, Agent: "claude", NativeID: "n1", Origin: api.OriginLaunched, Status: api.StatusExited}}
	disc := discovered{sessions: [][]adapters.NativeSession{{
		{Adapter: "claude", NativeID: "n1", Model: "claude-x", TokensIn: &in, State: adapters.NativeDone},
	}}, failed: map[string]bool{}}
	out := merge(launched, disc, nil)
	if len(out) != 1 || out[0].ID != "01a" || out[0].Model != "claude-x" || out[0].TokensIn == nil || *out[0].TokensIn != 42 {
		t.Errorf("merge = %+v, want the command's row once, with the claude session's facts", out)
	}
}

// progressAdapter's Discover reports found sessions found and read read,
// then waits for release.
type progressAdapter struct {
	adapters.Adapter
	name              string
	found, read       int
	reported, release chan struct{}
}

func (a *progressAdapter) Name() string { return a.name }

func (a *progressAdapter) Discover(ctx context.Context) ([]adapters.NativeSession, error) {
	p := adapters.ProgressFrom(ctx)
	p.Found(a.found)
	p.Read(a.read)
	close(a.reported)
	<-a.release
	return nil, nil
}

// While a discovery is under way, the core says how far it got (what a
// waiting list shows), the adapters that answered already counted in;
// once it ended, nothing.
func TestReadingProgress(t *testing.T) {
	t.Parallel()
	a := &progressAdapter{name: "slow", found: 3, read: 2, reported: make(chan struct{}), release: make(chan struct{})}
	b := &progressAdapter{name: "quick", found: 5, read: 5, reported: make(chan struct{}), release: make(chan struct{})}
	close(b.release)
	d := newDiscovery([]adapters.Adapter{a, b}, time.Minute)
	if _, _, ok := d.reading(); ok {
		t.Fatal("reading before any discovery")
	}
	done := make(chan discovered)
	go func() { done <- d.run(context.Background()) }()
	<-a.reported
	<-b.reported
	for {
		d.mu.Lock()
		n := len(d.inflight)
		d.mu.Unlock()
		if n == 1 {
			break // quick answered
		}
		runtime.Gosched()
	}
	if read, found, ok := d.reading(); !ok || read != 7 || found != 8 {
		t.Errorf("reading %d of %d (%v), want 7 of 8", read, found, ok)
	}
	close(a.release)
	<-done
	if _, _, ok := d.reading(); ok {
		t.Error("reading after the discovery ended")
	}
}

// A list handed on session by session (ListEach, as the service writes
// it) is List's: the same sessions in the same order, handles and all,
// the same warnings, and no more than it announced; an emit that fails
// ends it there.
func TestListEachIsList(t *testing.T) {
	t.Parallel()
	h := home.Home(t.TempDir())
	self, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	live := &adapters.ProcessRef{PID: self.PID, Start: self.Start, Evidence: "argv"}
	states := []adapters.NativeState{adapters.NativeDone, adapters.NativeBusy, adapters.NativeFailed, adapters.NativeUnknown, adapters.NativeIdle}
	var one, two []adapters.NativeSession
	for i := range 60 {
		ns := adapters.NativeSession{Adapter: "one", NativeID: fmt.Sprintf("ab%02dcd%02d", i%7, i), State: states[i%len(states)],
			CreatedAt: now.Add(-time.Duration(i%9) * 5 * time.Hour), FirstPrompt: fmt.Sprintf("prompt %d", i)}
		if i%11 == 0 {
			ns.Process = live
		}
		if ns.State == adapters.NativeUnknown {
			ns.Warnings = []string{"unknown for a reason"}
		}
		if i%2 == 0 {
			one = append(one, ns)
		} else {
			ns.Adapter = "two"
			two = append(two, ns)
		}
	}
	two = append(two, adapters.NativeSession{Adapter: "two", NativeID: one[0].NativeID, State: adapters.NativeDone, CreatedAt: now}) // a repeat
	c := New(context.Background(), Options{Home: h, Adapters: adapters.NewSet(&fixed{name: "one", sessions: one}, &fixed{name: "two", sessions: two}), DiscoveryTimeout: time.Second})
	ctx := context.Background()
	for _, o := range []api.ListOptions{{All: true}, {}, {Status: "running"}, {Status: "unknown"}, {All: true, Adapter: "two"}, {All: true, Since: 12 * time.Hour}, {All: true, Table: true}} {
		want, err := c.List(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		var got []api.Session
		atMost := -1
		warnings, err := c.ListEach(ctx, o, func(n int) { atMost = n }, func(s *api.Session) error {
			got = append(got, *s)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			got = []api.Session{}
		}
		if !reflect.DeepEqual(got, want.Sessions) || !slices.Equal(warnings, want.Warnings) {
			t.Errorf("%+v: ListEach gave\n%+v\n%q\nList gave\n%+v\n%q", o, got, warnings, want.Sessions, want.Warnings)
		}
		if atMost < len(got) {
			t.Errorf("%+v: announced at most %d sessions, gave %d", o, atMost, len(got))
		}
	}
	full, _ := c.List(ctx, api.ListOptions{All: true})
	stop := errors.New("the client went away")
	n := 0
	_, err = c.ListEach(ctx, api.ListOptions{All: true}, nil, func(*api.Session) error {
		if n++; n == 5 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 5 || len(full.Sessions) < 10 {
		t.Errorf("an emit that failed at the 5th of %d sessions: %v after %d", len(full.Sessions), err, n)
	}
	if _, err := c.ListEach(ctx, api.ListOptions{Waiting: true}, nil, func(*api.Session) error { return nil }); err == nil {
		t.Error("ListEach made a list ordered by waiting")
	}
}
