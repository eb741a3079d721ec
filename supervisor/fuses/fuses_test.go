package fuses

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/supervisor/webhook"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// changes records what an engine reports, and lets a test wait for a kind.
type changes struct {
	mu  sync.Mutex
	all []Change
	ch  chan Change
}

func newChanges() *changes { return &changes{ch: make(chan Change, 10000)} }

func (c *changes) add(x Change) {
	c.mu.Lock()
	c.all = append(c.all, x)
	c.mu.Unlock()
	c.ch <- x
}

func (c *changes) wait(t *testing.T, kind ChangeKind) Change {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case x := <-c.ch:
			if x.Kind == kind {
				return x
			}
		case <-deadline:
			t.Fatalf("no %s change", kind)
		}
	}
}

func (c *changes) count(kind ChangeKind) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, x := range c.all {
		if x.Kind == kind {
			n++
		}
	}
	return n
}

func open(t *testing.T, path string, opts Options) *Engine {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet()
	}
	e, warnings, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Fatalf("warnings: %q", warnings)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

// lines counts the lines of a file the fuse scripts append to.
func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func TestSetExtendCancelList(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	ch := newChanges()
	e := open(t, filepath.Join(t.TempDir(), "fuses.json"), Options{OnChange: ch.add})
	e.Start()

	f, err := e.Set(SetRequest{Dir: link, TTL: time.Hour, Label: "first"})
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if f.Directory != real || f.TTLMs != 3600000 {
		t.Fatalf("fuse = %+v", f)
	}
	// One fuse per directory: setting again replaces.
	if _, err := e.Set(SetRequest{Dir: dir, TTL: 2 * time.Hour, Label: "second"}); err != nil {
		t.Fatal(err)
	}
	if got := e.List(); len(got) != 1 || got[0].Label != "second" {
		t.Fatalf("list = %+v", got)
	}
	before := e.List()[0].ExpiresAt
	ext, err := e.Extend(link, 0) // re-arms with its own ttl
	if err != nil {
		t.Fatal(err)
	}
	if ext.TTLMs != 7200000 || ext.ExpiresAt.Before(before) {
		t.Fatalf("extended = %+v (was %v)", ext, before)
	}
	if ext, err = e.Extend(dir, 3*time.Hour); err != nil || ext.TTLMs != 10800000 {
		t.Fatalf("extend with ttl = %+v, %v", ext, err)
	}
	if _, err := e.Cancel(dir); err != nil {
		t.Fatal(err)
	}
	if e.Count() != 0 {
		t.Fatal("cancelled fuse still listed")
	}
	for _, op := range []func() error{
		func() error { _, err := e.Extend(dir, 0); return err },
		func() error { _, err := e.Cancel(dir); return err },
	} {
		if err := op(); !errors.Is(err, ErrNoFuse) || !strings.Contains(err.Error(), real) {
			t.Errorf("on a directory without fuse: %v, want ErrNoFuse naming it", err)
		}
	}
	if ch.count(Set) != 2 || ch.count(Extended) != 2 || ch.count(Cancelled) != 1 || ch.count(Expired) != 0 {
		t.Errorf("changes = %+v", ch.all)
	}
	for _, bad := range []SetRequest{{Dir: dir}, {Dir: dir, TTL: -time.Second}, {Dir: dir, TTL: time.Second, Webhook: "file:///x"}, {TTL: time.Second}} {
		if _, err := e.Set(bad); err == nil {
			t.Errorf("Set(%+v) accepted", bad)
		}
	}
}

func TestExpiryRunsScriptOnce(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), "fired")
	ch := newChanges()
	path := filepath.Join(t.TempDir(), "fuses.json")
	e := open(t, path, Options{OnChange: ch.add, ScriptLog: filepath.Join(t.TempDir(), "fuses.log"), ScriptEnv: []string{"OUT=" + out, "PATH=/usr/bin:/bin"}})
	e.Start()
	if _, err := e.Set(SetRequest{Dir: dir, TTL: 50 * time.Millisecond, SessionID: "s1", Label: "cleanup", Script: `echo "$PWD $AGENTCTL_SESSION_ID" >> "$OUT"`}); err != nil {
		t.Fatal(err)
	}
	exp := ch.wait(t, Expired)
	if exp.Fuse.Label != "cleanup" {
		t.Errorf("expired = %+v", exp)
	}
	done := ch.wait(t, ScriptDone)
	if done.Script == nil || !done.Script.OK() {
		t.Fatalf("script result = %+v", done.Script)
	}
	b, _ := os.ReadFile(out)
	if got := strings.TrimSpace(string(b)); got != dir+" s1" {
		t.Errorf("script saw %q, want %q", got, dir+" s1")
	}
	if e.Count() != 0 {
		t.Error("expired fuse still listed")
	}
	// Gone from the file as well: a restart does not fire it again.
	again := open(t, path, Options{OnChange: ch.add})
	again.Start()
	if again.Count() != 0 || lines(t, out) != 1 {
		t.Fatalf("after reopen: %d fuses, script ran %d times", again.Count(), lines(t, out))
	}
}

func TestScriptTimeout(t *testing.T) {
	ch := newChanges()
	e := open(t, filepath.Join(t.TempDir(), "fuses.json"), Options{OnChange: ch.add, ScriptTimeout: 100 * time.Millisecond, ScriptLog: filepath.Join(t.TempDir(), "fuses.log")})
	e.Start()
	if _, err := e.Set(SetRequest{Dir: t.TempDir(), TTL: time.Millisecond, Script: "sleep 30"}); err != nil {
		t.Fatal(err)
	}
	if r := ch.wait(t, ScriptDone).Script; r == nil || !r.TimedOut {
		t.Fatalf("result = %+v, want timed out", r)
	}
}

// A fuse survives a restart of the engine with its deadline, and fires
// once, in the new engine; one that ran out while no engine ran fires on
// start.
func TestSurvivesRestart(t *testing.T) {
	tests := []struct {
		name string
		ttl  time.Duration
		down time.Duration // how long no engine runs
	}{
		{"remaining time kept", 400 * time.Millisecond, 0},
		{"overdue fires on start", 50 * time.Millisecond, 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fuses.json")
			out := filepath.Join(t.TempDir(), "fired")
			log := filepath.Join(t.TempDir(), "fuses.log")
			dir := t.TempDir()
			first := newChanges()
			e1, _, err := Open(path, Options{OnChange: first.add, ScriptLog: log, Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			e1.Start()
			set, err := e1.Set(SetRequest{Dir: dir, TTL: tt.ttl, Script: "echo fired >> " + out})
			if err != nil {
				t.Fatal(err)
			}
			if err := e1.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			time.Sleep(tt.down)

			second := newChanges()
			e2 := open(t, path, Options{OnChange: second.add, ScriptLog: log})
			got := e2.List()
			if len(got) != 1 || !got[0].ExpiresAt.Equal(set.ExpiresAt) {
				t.Fatalf("after restart: %+v, want the deadline %v kept", got, set.ExpiresAt)
			}
			e2.Start()
			exp := second.wait(t, Expired)
			second.wait(t, ScriptDone)
			if exp.At.Before(set.ExpiresAt) {
				t.Errorf("fired at %v, before its deadline %v", exp.At, set.ExpiresAt)
			}
			if first.count(Expired) != 0 || lines(t, out) != 1 {
				t.Fatalf("first engine expired %d, script ran %d times; want 0 and 1", first.count(Expired), lines(t, out))
			}
		})
	}
}

// Re-arming races the timer: however often a short fuse is extended or
// replaced, it fires once, for its last arming.
func TestRearmFiresOnce(t *testing.T) {
	ch := newChanges()
	e := open(t, filepath.Join(t.TempDir(), "fuses.json"), Options{OnChange: ch.add})
	e.Start()
	dir := t.TempDir()
	for i := range 200 {
		var err error
		if i%2 == 0 {
			_, err = e.Set(SetRequest{Dir: dir, TTL: time.Millisecond, Label: "last"})
		} else {
			_, err = e.Extend(dir, time.Millisecond)
		}
		if err != nil && !errors.Is(err, ErrNoFuse) {
			t.Fatal(err)
		}
	}
	if _, err := e.Set(SetRequest{Dir: dir, TTL: 20 * time.Millisecond, Label: "final"}); err != nil {
		t.Fatal(err)
	}
	for {
		x := ch.wait(t, Expired)
		if x.Fuse.Label == "final" {
			break
		}
	}
	// Every expiry is of an arming still current when its timer ran: a
	// stale timer would fire a newer arming before its deadline, or fire
	// one Set twice.
	if n, sets := ch.count(Expired), ch.count(Set); n > sets {
		t.Fatalf("%d expiries for %d fuses set", n, sets)
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for _, x := range ch.all {
		if x.Kind == Expired && x.At.Before(x.Fuse.ExpiresAt) {
			t.Errorf("fuse %q fired at %v, before its deadline %v", x.Fuse.Label, x.At, x.Fuse.ExpiresAt)
		}
	}
}

func TestOwnWebhook(t *testing.T) {
	type post struct {
		body []byte
		sig  string
	}
	posts := make(chan post, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		posts <- post{b, r.Header.Get(webhook.HeaderSignature)}
	}))
	defer srv.Close()
	sender := webhook.New(webhook.Options{Logger: quiet()})
	defer sender.Close(context.Background())
	e := open(t, filepath.Join(t.TempDir(), "fuses.json"), Options{Webhook: sender, WebhookSecret: "k"})
	e.Start()
	dir := t.TempDir()
	if _, err := e.Set(SetRequest{Dir: dir, TTL: time.Millisecond, SessionID: "s9", Label: "l", Webhook: srv.URL + "/fuse"}); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-posts:
		if !webhook.Verify("k", p.body, p.sig) {
			t.Error("signature does not verify")
		}
		var got map[string]any
		if err := json.Unmarshal(p.body, &got); err != nil {
			t.Fatal(err)
		}
		if got["type"] != "fuse.expired" || got["directory"] != dir || got["sessionId"] != "s9" || got["label"] != "l" || got["expiredAt"] == nil {
			t.Errorf("payload = %s", p.body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook")
	}
}

func TestOldFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fuses.json")
	dir := t.TempDir()
	old := `[
 {"directory": "` + dir + `", "ttlMs": 600000, "expiresAt": "2099-01-01T00:00:00.000Z", "sessionId": "abc", "onExpire": {"script": "make clean"}, "label": "tidy"},
 {"directory": "` + dir + `/x", "ttlMs": 14400000, "expiresAt": "2099-01-01T00:00:00.000Z", "sessionId": "def", "label": "lifecycle:claude-code:def12345"}
]`
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	e, warnings, err := Open(path, Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	if len(warnings) != 1 || !strings.Contains(warnings[0], "skipped 1 lifecycle") {
		t.Errorf("warnings = %q", warnings)
	}
	got := e.List()
	if len(got) != 1 || got[0].Label != "tidy" || got[0].OnExpire == nil || got[0].OnExpire.Script != "make clean" {
		t.Fatalf("fuses = %+v", got)
	}
	if _, err := os.Stat(path + ".old"); err != nil {
		t.Error("original not kept")
	}
}

func TestCorruptFileMovedAside(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fuses.json")
	if err := os.WriteFile(path, []byte("{nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, warnings, err := Open(path, Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	if len(warnings) != 1 || e.Count() != 0 {
		t.Fatalf("warnings %q, %d fuses", warnings, e.Count())
	}
	if m, _ := filepath.Glob(path + ".corrupt-*"); len(m) != 1 {
		t.Fatal("corrupt file not kept aside")
	}
}
