package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
)

// heldBook is a limits book holding the providers it names.
type heldBook map[string]time.Time

func (b heldBook) Held(provider string) (time.Time, bool) {
	until, ok := b[provider]
	return until, ok
}

// Admission starts the waiting sessions oldest first, each as its own caps
// allow: a full cap holds only its own sessions, a provider's limit only
// that provider's, the memory floor everything (and lets one through per
// reading).
func TestDecide(t *testing.T) {
	t.Parallel()
	claude := func(id, group string) slot {
		return slot{id: id, adapter: "claude", provider: "anthropic", group: group}
	}
	codex := func(id string) slot { return slot{id: id, adapter: "codex", provider: "openai"} }
	cases := []struct {
		name    string
		facts   admitFacts
		waiting []slot
		start   []string
		// reasons holds a word of each waiting one's reason, by id.
		reasons map[string]string
	}{
		{
			name:    "no policy starts all, in order",
			waiting: []slot{claude("a", ""), codex("b"), claude("c", "")},
			start:   []string{"a", "b", "c"},
		},
		{
			name:    "a global cap of 2 with one running starts the first only",
			facts:   admitFacts{policy: api.Admission{MaxSessions: 2}, running: []slot{claude("r", "")}},
			waiting: []slot{claude("a", ""), codex("b"), claude("c", "")},
			start:   []string{"a"},
			reasons: map[string]string{"b": "cap max_sessions", "c": "cap max_sessions"},
		},
		{
			name:    "a full adapter cap does not hold another adapter's session",
			facts:   admitFacts{policy: api.Admission{PerAdapter: map[string]int{"claude": 1}}, running: []slot{claude("r", "")}},
			waiting: []slot{claude("a", ""), codex("b"), claude("c", "")},
			start:   []string{"b"},
			reasons: map[string]string{"a": `per_adapter "claude"`, "c": `per_adapter "claude"`},
		},
		{
			name:    "a provider cap counts every adapter of the provider",
			facts:   admitFacts{policy: api.Admission{PerProvider: map[string]int{"anthropic": 2}}},
			waiting: []slot{claude("a", ""), {id: "b", adapter: "opencode", provider: "anthropic"}, claude("c", ""), codex("d")},
			start:   []string{"a", "b", "d"},
			reasons: map[string]string{"c": `per_provider "anthropic"`},
		},
		{
			name:    "a group cap of * caps each group, not sessions without one",
			facts:   admitFacts{policy: api.Admission{PerGroup: map[string]int{api.AdmissionAny: 1}}, running: []slot{claude("r", "g1")}},
			waiting: []slot{claude("a", "g1"), claude("b", "g2"), claude("c", "g2"), claude("d", "")},
			start:   []string{"b", "d"},
			reasons: map[string]string{"a": `per_group "g1"`, "c": `per_group "g2"`},
		},
		{
			name:    "a name's own cap wins over *; 0 is no cap",
			facts:   admitFacts{policy: api.Admission{PerAdapter: map[string]int{api.AdmissionAny: 1, "exec": 0}}, running: []slot{claude("r", ""), {id: "x", adapter: "exec"}}},
			waiting: []slot{claude("a", ""), {id: "b", adapter: "exec"}, codex("c")},
			start:   []string{"b", "c"},
			reasons: map[string]string{"a": `per_adapter "claude"`},
		},
		{
			name:    "a provider's limit holds only its sessions",
			facts:   admitFacts{policy: api.Admission{MaxSessions: 10}, held: heldBook{"anthropic": {}}},
			waiting: []slot{claude("a", ""), codex("b"), {id: "x", adapter: "exec"}},
			start:   []string{"b", "x"},
			reasons: map[string]string{"a": "anthropic usage limit"},
		},
		{
			name:    "a forced launch starts whatever its provider's limit says",
			facts:   admitFacts{held: heldBook{"anthropic": {}}},
			waiting: []slot{{id: "a", adapter: "claude", provider: "anthropic", force: true}, claude("b", "")},
			start:   []string{"a"},
			reasons: map[string]string{"b": "anthropic usage limit"},
		},
		{
			name:    "below the memory floor nothing starts",
			facts:   admitFacts{policy: api.Admission{MemoryFloorBytes: 4 << 30}, memAvailable: 1 << 30},
			waiting: []slot{claude("a", ""), codex("b")},
			reasons: map[string]string{"a": "below the memory floor", "b": "below the memory floor"},
		},
		{
			name:    "memory that cannot be read holds everything",
			facts:   admitFacts{policy: api.Admission{MemoryFloorBytes: 1}, memErr: errors.New("no /proc")},
			waiting: []slot{claude("a", "")},
			reasons: map[string]string{"a": "cannot be read"},
		},
		{
			name:    "above the floor one starts per reading",
			facts:   admitFacts{policy: api.Admission{MemoryFloorBytes: 1 << 30}, memAvailable: 8 << 30},
			waiting: []slot{claude("a", ""), codex("b")},
			start:   []string{"a"},
			reasons: map[string]string{"b": "read again"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			since := map[string]time.Time{}
			plan := decide(tc.facts, tc.waiting, since)
			if !slices.Equal(plan.start, tc.start) {
				t.Errorf("started %v, want %v", plan.start, tc.start)
			}
			if len(plan.places) != len(tc.reasons) {
				t.Errorf("%d wait (%v), want %d", len(plan.places), plan.places, len(tc.reasons))
			}
			// Places count from 1, in the order of the queue.
			pos := 0
			for _, w := range tc.waiting {
				p, waits := plan.places[w.id]
				if !waits {
					continue
				}
				pos++
				if p.Position != pos {
					t.Errorf("%s is #%d, want #%d", w.id, p.Position, pos)
				}
				if want := tc.reasons[w.id]; !strings.Contains(p.Reason, want) || want == "" {
					t.Errorf("%s waits because %q, want it to say %q", w.id, p.Reason, want)
				}
			}
		})
	}
}

// A queued session's start is claimed by one rename: of claims racing for
// it, and of a claim racing a cancel, exactly one wins; a cancelled or
// claimed record is never claimed again.
func TestClaimQueuedOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	queue := func() {
		t.Helper()
		rec := queuedRecord{Request: api.RunRequest{Adapter: "exec", Command: []string{"true"}, Env: []string{"SECRET=1"}}, QueuedAt: time.Now()}
		if err := atomicfile.WriteJSON(filepath.Join(dir, home.QueuedFile), rec, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		queue()
		var wg sync.WaitGroup
		wins := make(chan string, 8)
		for i := range 8 {
			wg.Go(func() {
				if i == 0 {
					if err := os.Rename(filepath.Join(dir, home.QueuedFile), filepath.Join(dir, home.CancelledFile)); err == nil {
						wins <- "cancel"
					}
					return
				}
				if rec, err := claimQueued(dir, time.Now()); err == nil {
					if rec.ClaimedAt == nil || len(rec.Request.Command) == 0 {
						t.Errorf("the claim lost the request: %+v", rec)
					}
					wins <- "claim"
				} else if !errors.Is(err, os.ErrNotExist) {
					t.Errorf("claim: %v", err)
				}
			})
		}
		wg.Wait()
		close(wins)
		var got []string
		for w := range wins {
			got = append(got, w)
		}
		if len(got) != 1 {
			t.Fatalf("%d winners %v, want exactly one", len(got), got)
		}
		if _, err := claimQueued(dir, time.Now()); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a second claim after %s: %v, want os.ErrNotExist", got[0], err)
		}
		os.Remove(filepath.Join(dir, home.ClaimedFile))
		os.Remove(filepath.Join(dir, home.CancelledFile))
	}
}

// A session without a launch record reads from its queue record: queued
// with its place, cancelled as ended, a claimed start the service is making
// as queued, and a claim no start followed as unknown, then lost, with the
// reason; never as a start to make again.
func TestQueuedSessionStatus(t *testing.T) {
	t.Parallel()
	old := time.Now().Add(-2 * incompleteGrace)
	cases := []struct {
		name     string
		file     string
		rec      queuedRecord
		starting bool
		place    *api.QueuePlace
		want     api.Status
		warning  string
	}{
		{name: "queued", file: home.QueuedFile, place: &api.QueuePlace{Position: 2, Reason: "2 of 2 sessions run"}, want: api.StatusQueued},
		{name: "cancelled", file: home.CancelledFile, want: api.StatusEnded, warning: "never started"},
		{name: "claimed, starting now", file: home.ClaimedFile, rec: queuedRecord{ClaimedAt: &old}, starting: true, want: api.StatusQueued},
		{name: "claimed just now, no start", file: home.ClaimedFile, rec: queuedRecord{ClaimedAt: new(time.Now())}, want: api.StatusUnknown, warning: "never started twice"},
		{name: "claimed long ago, no start", file: home.ClaimedFile, rec: queuedRecord{ClaimedAt: &old}, want: api.StatusLost, warning: "not started again"},
		{name: "claimed, start failed", file: home.ClaimedFile, rec: queuedRecord{ClaimedAt: &old, Error: "exec: nope"}, want: api.StatusLost, warning: "exec: nope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := home.Home(t.TempDir())
			q := newQueueState()
			r := newRecords(h, q)
			id := home.NewID(time.Now())
			dir := h.SessionDir(id)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			tc.rec.QueuedAt = old
			tc.rec.Request = api.RunRequest{Adapter: "claude", Model: "opus", Group: "g", Prompt: "fix it"}
			if err := atomicfile.WriteJSON(filepath.Join(dir, tc.file), tc.rec, 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.place != nil {
				q.setPlace(id, *tc.place, QueueHeldCap)
			}
			q.setStarting(id, tc.starting)
			s, err := r.get(id)
			if err != nil {
				t.Fatal(err)
			}
			if s.Status != tc.want || s.Adapter != "claude" || s.Group != "g" || s.Prompt != "fix it" {
				t.Fatalf("got %s %s group %q prompt %q, want %s claude g", s.Status, s.Adapter, s.Group, s.Prompt, tc.want)
			}
			if tc.place != nil && (s.Queue == nil || s.Queue.Position != tc.place.Position || !s.Queue.Since.Equal(old)) {
				t.Errorf("queue place %+v, want #%d since %s", s.Queue, tc.place.Position, old)
			}
			if tc.warning != "" && !strings.Contains(strings.Join(s.Warnings, "; "), tc.warning) {
				t.Errorf("warnings %q, want one saying %q", s.Warnings, tc.warning)
			}
		})
	}
}

// A launch whose provider a usage limit holds goes through admission even
// with no cap set: refused, saying why and how to start it anyway; queued
// with --queue; started with --force.
func TestLaunchWhileTheProviderIsHeld(t *testing.T) {
	t.Parallel()
	h := home.Home(t.TempDir())
	if err := h.Ensure(); err != nil {
		t.Fatal(err)
	}
	c := New(context.Background(), Options{Home: h, Adapters: adapters.NewSet(), Holds: heldBook{"openai": {}}})
	t.Cleanup(c.Wait)
	req := api.RunRequest{Adapter: "codex", Cwd: t.TempDir(), Prompt: "hi"}
	if c.providerHeld(api.RunRequest{Adapter: "claude"}) || !c.providerHeld(req) {
		t.Fatal("providerHeld does not follow the book")
	}
	forced := req
	forced.Force = true
	if c.providerHeld(forced) {
		t.Error("a forced launch is held")
	}
	_, err := c.Launch(context.Background(), req)
	if !errors.Is(err, ErrAdmission) || !strings.Contains(err.Error(), "openai usage limit") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("launch while openai is held: %v; want it refused naming the limit and --force", err)
	}
	queued := req
	queued.Queue = true
	sess, err := c.Launch(context.Background(), queued)
	if err != nil || sess.Status != api.StatusQueued || sess.Queue == nil || !strings.Contains(sess.Queue.Reason, "openai usage limit") {
		t.Fatalf("queued launch: %+v, %v; want it queued behind the limit", sess.Queue, err)
	}
}
