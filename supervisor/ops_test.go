package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/spawn"
	"github.com/agentctl/agentctl/supervisor/webhook"
)

// The test binary doubles as the session monitor: the service starts
// `<test binary> shim DIR`, as it starts `agentctl shim DIR`.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "shim" {
		os.Exit(spawn.RunShim(os.Args[2]))
	}
	if len(os.Args) == 4 && os.Args[1] == "hook-approve" {
		os.Exit(hookApprove(os.Args[2], os.Args[3]))
	}
	if len(os.Args) >= 4 && os.Args[1] == "hook-report" {
		os.Exit(hookReport(os.Args[2], os.Args[3], os.Args[4:]))
	}
	os.Exit(m.Run())
}

// service is a real service on a real socket in a private home, run in
// this process; sessions run under real shims and ptys.
type service struct {
	t      *testing.T
	home   home.Home
	client *client.Client
	cancel context.CancelFunc
	done   chan error
}

// newHome makes a short home (socket paths have a length limit) removed
// with the test.
func newHome(t *testing.T) home.Home {
	t.Helper()
	dir, err := os.MkdirTemp("", "ac")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return home.Home(dir)
}

func startService(t *testing.T, home home.Home) *service {
	t.Helper()
	return startServiceWith(t, home, nil)
}

// startServiceWith starts a service reading the given adapters.
func startServiceWith(t *testing.T, home home.Home, as []adapters.Adapter) *service {
	t.Helper()
	return startServiceOpts(t, Options{Home: home, Adapters: adapters.NewSet(as...)})
}

// startServiceOpts starts a service with opts (its binary, version and
// logger filled in).
func startServiceOpts(t *testing.T, opts Options) *service {
	t.Helper()
	home := opts.Home
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &service{t: t, home: home, client: client.New(home, "", false), cancel: cancel, done: make(chan error, 1)}
	go func() {
		opts.Exe, opts.Version = exe, "test"
		if opts.Logger == nil {
			opts.Logger = slog.New(slog.DiscardHandler)
		}
		s.done <- Run(ctx, opts)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := s.client.DaemonStatus(context.Background()); err == nil {
			break
		}
		select {
		case err := <-s.done:
			t.Fatalf("service exited at start: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("service did not answer within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(s.stop)
	return s
}

// stop stops the service (sessions keep running); a second call is a no-op.
func (s *service) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Errorf("service: %v", err)
		}
	case <-time.After(15 * time.Second):
		s.t.Error("service did not stop within 15s")
	}
}

// run starts a session and stops it (forcefully) when the test ends.
func (s *service) run(req api.RunRequest) (api.Session, error) {
	if req.Env == nil {
		req.Env = []string{"PATH=" + os.Getenv("PATH")}
	}
	sess, err := s.client.Launch(context.Background(), req)
	if err == nil {
		home := s.home
		s.t.Cleanup(func() { killSession(home, sess.ID) })
	}
	return sess, err
}

// killSession ends a session's process group without the service.
func killSession(home home.Home, id string) {
	rec, err := spawn.ReadRecord(home.SessionDir(id))
	if err == nil && rec.PGID > 0 {
		syscall.Kill(-rec.PGID, syscall.SIGKILL)
	}
}

// eventually polls cond every 10 ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitEnded waits for a session's exit record, with or without a service.
func waitEnded(t *testing.T, home home.Home, id string) {
	t.Helper()
	eventually(t, 20*time.Second, "session "+id+" ended", func() bool {
		e, _ := spawn.ReadExit(home.SessionDir(id))
		return e != nil
	})
}

// words returns the whitespace-separated words of a file the hooks write.
func words(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

func countLines(t *testing.T, path string) int {
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

// A session's lock follows its process: kill -9 of the agent releases it
// within a second, without anyone stopping the session.
func TestLockReleasedOnKill(t *testing.T) {
	svc := startService(t, newHome(t))
	work := t.TempDir()
	sess, err := svc.run(api.RunRequest{Command: []string{"sleep", "60"}, Cwd: work, Lock: true})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := svc.client.Locks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].SessionID != sess.ID || ls[0].PID != sess.PID || ls[0].Type != "auto" {
		t.Fatalf("locks = %+v, want one auto lock owned by pid %d", ls, sess.PID)
	}
	_, err = svc.run(api.RunRequest{Command: []string{"true"}, Cwd: work, Lock: true})
	if api.CodeOf(err) != api.CodeLocked || !strings.Contains(err.Error(), sess.ID) {
		t.Fatalf("second run into the locked directory: %v, want a lock error naming %s", err, sess.ID)
	}
	if err := syscall.Kill(sess.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	eventually(t, time.Second, "lock released after kill -9", func() bool {
		ls, err := svc.client.Locks(context.Background())
		return err == nil && len(ls) == 0
	})
	t.Logf("lock released %s after kill -9", time.Since(killed).Round(time.Millisecond))
	if _, err := svc.run(api.RunRequest{Command: []string{"true"}, Cwd: work, Lock: true}); err != nil {
		t.Fatalf("run after the holder died: %v", err)
	}
}

// Many launches into one directory at once: exactly one wins; the others
// are told who holds it and leave nothing behind.
func TestParallelRunsOneWinner(t *testing.T) {
	svc := startService(t, newHome(t))
	work := t.TempDir()
	const n = 50
	var wg sync.WaitGroup
	results := make([]error, n)
	ids := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess, err := svc.run(api.RunRequest{Command: []string{"sleep", "30"}, Cwd: work, Lock: true})
			results[i], ids[i] = err, sess.ID
		}()
	}
	wg.Wait()
	winner := ""
	for i, err := range results {
		switch {
		case err == nil:
			if winner != "" {
				t.Fatalf("two winners: %s and %s", winner, ids[i])
			}
			winner = ids[i]
		case api.CodeOf(err) != api.CodeLocked:
			t.Fatalf("run %d: %v, want a lock error", i, err)
		}
	}
	if winner == "" {
		t.Fatal("no run won")
	}
	for _, err := range results {
		if err != nil && !strings.Contains(err.Error(), winner) {
			t.Fatalf("lock error %q does not name the holder %s", err, winner)
		}
	}
	list, err := svc.client.List(context.Background(), api.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 {
		t.Fatalf("%d sessions listed, want only the winner", len(list.Sessions))
	}
	// --force goes past the lock.
	if _, err := svc.run(api.RunRequest{Command: []string{"true"}, Cwd: work, Lock: true, Force: true}); err != nil {
		t.Fatalf("forced run: %v", err)
	}
}

// A manual lock wins over everything and stays until unlock.
func TestManualLock(t *testing.T) {
	svc := startService(t, newHome(t))
	ctx := context.Background()
	work := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(work, link); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.client.Lock(ctx, api.LockRequest{Directory: link, By: "alice", Reason: "release freeze"}); err != nil {
		t.Fatal(err)
	}
	_, err := svc.run(api.RunRequest{Command: []string{"true"}, Cwd: work, Lock: true})
	if api.CodeOf(err) != api.CodeLocked || !strings.Contains(err.Error(), "alice (release freeze)") {
		t.Fatalf("run into a manually locked dir: %v", err)
	}
	// A plain command without --lock does not care.
	if _, err := svc.run(api.RunRequest{Command: []string{"true"}, Cwd: work}); err != nil {
		t.Fatalf("run without --lock: %v", err)
	}
	if _, err := svc.client.Unlock(ctx, "relative"); api.CodeOf(err) != api.CodeInvalid {
		t.Fatalf("unlock of a relative path: %v", err)
	}
	if _, err := svc.client.Unlock(ctx, work); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.client.Unlock(ctx, work); api.CodeOf(err) != api.CodeNotFound {
		t.Fatalf("second unlock: %v, want not found", err)
	}
}

// A fuse survives a service restart with its deadline and fires once; one
// that expired while the service was down fires when it starts.
func TestFuseSurvivesRestart(t *testing.T) {
	tests := []struct {
		name string
		ttl  time.Duration
		down time.Duration
	}{
		{"remaining time kept", 1500 * time.Millisecond, 0},
		{"overdue fires on start", 200 * time.Millisecond, 600 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := newHome(t)
			work := t.TempDir()
			out := filepath.Join(t.TempDir(), "fired")
			svc := startService(t, home)
			f, err := svc.client.SetFuse(context.Background(), api.FuseRequest{Directory: work, TTL: tt.ttl.String(), Script: `echo "$PWD" >> ` + out, Label: "restart"})
			if err != nil {
				t.Fatal(err)
			}
			svc.stop()
			time.Sleep(tt.down)
			if countLines(t, out) != 0 {
				t.Fatal("the fuse fired while no service ran")
			}
			svc = startService(t, home)
			fs, err := svc.client.Fuses(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if tt.down == 0 && (len(fs) != 1 || !fs[0].ExpiresAt.Equal(f.ExpiresAt)) {
				t.Fatalf("after restart: %+v, want the deadline %v kept", fs, f.ExpiresAt)
			}
			eventually(t, 10*time.Second, "fuse script ran", func() bool { return countLines(t, out) > 0 })
			got := words(t, out)
			if len(got) != 1 || got[0] != work {
				t.Fatalf("script output %q, want one line %q", got, work)
			}
			svc.stop()
			startService(t, home)
			time.Sleep(300 * time.Millisecond)
			if n := countLines(t, out); n != 1 {
				t.Fatalf("the fuse fired %d times", n)
			}
		})
	}
}

// on-complete runs exactly once, run by the service, also for a session
// that ended while the service was down.
func TestOnCompleteOnceAcrossRestart(t *testing.T) {
	home := newHome(t)
	work := t.TempDir()
	out := filepath.Join(t.TempDir(), "completed")
	svc := startService(t, home)
	sess, err := svc.run(api.RunRequest{
		Command: []string{"sh", "-c", "sleep 1; exit 3"}, Cwd: work, Labels: map[string]string{"branch": "fix-1"},
		OnComplete: `echo "$AGENTCTL_SESSION_ID $AGENTCTL_EXIT_CODE $AGENTCTL_ADAPTER $AGENTCTL_BRANCH $PWD" >> ` + out,
	})
	if err != nil {
		t.Fatal(err)
	}
	svc.stop()
	waitEnded(t, home, sess.ID)
	if countLines(t, out) != 0 {
		t.Fatal("on-complete ran without a service")
	}
	svc = startService(t, home)
	eventually(t, 10*time.Second, "on-complete ran", func() bool { return countLines(t, out) > 0 })
	if got, want := strings.Join(words(t, out), " "), sess.ID+" 3 exec fix-1 "+work; got != want {
		t.Fatalf("hook saw %q, want %q", got, want)
	}
	var st api.Session
	eventually(t, 10*time.Second, "on-complete recorded", func() bool {
		st, err = svc.client.Get(context.Background(), sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Hooks) != 1 || st.Hooks[0].Phase != "on-complete" {
			t.Fatalf("status hooks = %+v", st.Hooks)
		}
		if s := st.Hooks[0].Status; s != "running" && s != "ok" {
			t.Fatalf("on-complete status %s while it runs or after", s)
		}
		return st.Hooks[0].Status == "ok"
	})
	for range 2 {
		svc.stop()
		svc = startService(t, home)
	}
	time.Sleep(300 * time.Millisecond)
	if n := countLines(t, out); n != 1 {
		t.Fatalf("on-complete ran %d times", n)
	}
}

// on-create runs once the session started; a failing hook shows in status
// and as hook.failed.
func TestHooksCreateAndFailure(t *testing.T) {
	svc := startService(t, newHome(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	failed := make(chan api.Event, 1)
	go svc.client.Events(ctx, client.EventOptions{Types: []string{api.EventHookFailed}}, nil, func(e api.Event) error {
		failed <- e
		return nil
	})
	time.Sleep(100 * time.Millisecond) // the stream is open
	work := t.TempDir()
	created := filepath.Join(t.TempDir(), "created")
	sess, err := svc.run(api.RunRequest{
		Command: []string{"true"}, Cwd: work,
		OnCreate:   `echo "$AGENTCTL_SESSION_ID" > ` + created,
		OnComplete: "echo about to fail; exit 4",
	})
	if err != nil {
		t.Fatal(err)
	}
	var e api.Event
	select {
	case e = <-failed:
	case <-ctx.Done():
		t.Fatal("no hook.failed event")
	}
	if e.SessionID != sess.ID || e.Meta["phase"] != "on-complete" || e.Meta["exit_code"] != float64(4) {
		t.Fatalf("hook.failed = %+v", e)
	}
	// on-create and on-complete of a session this short may run at once.
	eventually(t, 10*time.Second, "on-create to write the session id", func() bool {
		got := words(t, created)
		return len(got) == 1 && got[0] == sess.ID
	})
	var st api.Session
	eventually(t, 10*time.Second, "hooks recorded", func() bool {
		st, err = svc.client.Get(ctx, sess.ID)
		return err == nil && len(st.Hooks) == 2 && st.Hooks[1].Status != "running"
	})
	if len(st.Hooks) != 2 || st.Hooks[1].Status != "failed" || !strings.Contains(strings.Join(st.Warnings, "\n"), "on-complete hook failed with exit code 4") {
		t.Fatalf("status: hooks %+v, warnings %q", st.Hooks, st.Warnings)
	}
	log, err := os.ReadFile(st.Hooks[1].Log)
	if err != nil || !strings.Contains(string(log), "about to fail") {
		t.Fatalf("hook log: %q, %v", log, err)
	}
	if _, err := svc.run(api.RunRequest{Command: []string{"true"}, Cwd: work, OnComplete: "true", HookTimeout: "soon"}); api.CodeOf(err) != api.CodeInvalid {
		t.Fatalf("bad hook timeout: %v", err)
	}
}

// The webhook of the old tool: payload fields and three signature headers,
// checked by a real receiver; on session end and on fuse expiry.
func TestWebhook(t *testing.T) {
	const secret = "s3cret"
	type post struct {
		body []byte
		ok   bool
	}
	posts := make(chan post, 10)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sig := r.Header.Get(webhook.HeaderSignature)
		ok := webhook.Verify(secret, body, sig) && r.Header.Get(webhook.HeaderSignatureAlt) == "sha256="+sig && r.Header.Get(webhook.HeaderHubSignature) == "sha256="+sig
		posts <- post{body, ok}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()

	home := newHome(t)
	cfg := fmt.Sprintf(`{"webhook_url": "http://%s/hook", "webhook_secret": %q}`, ln.Addr(), secret)
	if err := os.WriteFile(filepath.Join(string(home), "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := startService(t, home)
	work := t.TempDir()
	sess, err := svc.run(api.RunRequest{Command: []string{"sh", "-c", "exit 3"}, Cwd: work, Prompt: ""})
	if err != nil {
		t.Fatal(err)
	}
	next := func() map[string]any {
		t.Helper()
		select {
		case p := <-posts:
			if !p.ok {
				t.Fatalf("signature does not verify: %s", p.body)
			}
			var m map[string]any
			if err := json.Unmarshal(p.body, &m); err != nil {
				t.Fatal(err)
			}
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no webhook")
		}
		return nil
	}
	m := next()
	for _, k := range []string{"hook_type", "session_id", "cwd", "adapter", "duration_seconds", "exit_status", "summary", "meta", "timestamp"} {
		if _, ok := m[k]; !ok {
			t.Errorf("payload lacks %s: %v", k, m)
		}
	}
	if m["hook_type"] != "session.stopped" || m["session_id"] != sess.ID || m["exit_status"] != float64(3) || m["cwd"] != work || m["adapter"] != "exec" {
		t.Fatalf("payload = %v", m)
	}
	if _, err := svc.client.SetFuse(context.Background(), api.FuseRequest{Directory: work, TTL: "10ms", Label: "hooked"}); err != nil {
		t.Fatal(err)
	}
	if m = next(); m["hook_type"] != "fuse.expired" || m["summary"] != "hooked" {
		t.Fatalf("fuse payload = %v", m)
	}
	// Once per session: a restart does not send it again.
	svc.stop()
	startService(t, home)
	select {
	case p := <-posts:
		t.Fatalf("a second webhook after restart: %s", p.body)
	case <-time.After(500 * time.Millisecond):
	}
}

// collect reads events from a stream into a channel until ctx ends.
func collect(ctx context.Context, c *client.Client, since string, out chan<- api.Event) error {
	return c.Events(ctx, client.EventOptions{Since: since}, nil, func(e api.Event) error {
		out <- e
		return nil
	})
}

// A consumer that reconnects after a service restart with the last
// sequence number it saw gets every event once, in order.
func TestEventsAcrossReconnect(t *testing.T) {
	home := newHome(t)
	svc := startService(t, home)
	ctx := context.Background()
	work := t.TempDir()
	publish := func(n int) {
		for range n {
			if _, err := svc.client.Lock(ctx, api.LockRequest{Directory: work, By: "t"}); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.client.Unlock(ctx, work); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := make(chan api.Event, 1000)
	streamCtx, cancel := context.WithCancel(ctx)
	ended := make(chan error, 1)
	go func() { ended <- collect(streamCtx, svc.client, "", got) }()
	time.Sleep(100 * time.Millisecond)
	publish(10)
	var seen []api.Event
	for len(seen) < 20 {
		seen = append(seen, <-got)
	}
	// The service restarts; events happen before the consumer is back.
	svc.stop()
	if err := <-ended; err == nil {
		t.Fatal("the stream did not end with the service")
	}
	cancel()
	svc = startService(t, home)
	publish(5)
	last := seen[len(seen)-1].Seq
	streamCtx, cancel = context.WithCancel(ctx)
	defer cancel()
	go collect(streamCtx, svc.client, strconv.FormatUint(last, 10), got)
	publish(5)
	for len(seen) < 40 {
		select {
		case e := <-got:
			seen = append(seen, e)
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d of 40 events", len(seen))
		}
	}
	for i, e := range seen {
		if i > 0 && e.Seq != seen[i-1].Seq+1 {
			t.Fatalf("event %d has seq %d after %d: a gap or a duplicate", i, e.Seq, seen[i-1].Seq)
		}
		want := api.EventLockAcquired
		if i%2 == 1 {
			want = api.EventLockReleased
		}
		if e.Type != want {
			t.Fatalf("event %d is %s, want %s", i, e.Type, want)
		}
	}
}

// A session's exit reaches a subscriber as the exit watch sees it, with
// its exit code; the time from the exit record to the event is logged.
func TestExitEvent(t *testing.T) {
	svc := startService(t, newHome(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan api.Event, 100)
	go svc.client.Events(ctx, client.EventOptions{Types: []string{"session.*"}}, nil, func(e api.Event) error {
		got <- e
		return nil
	})
	time.Sleep(100 * time.Millisecond)
	var lat []time.Duration
	for i := range 5 {
		sess, err := svc.run(api.RunRequest{Command: []string{"sh", "-c", "sleep 0.2; exit " + strconv.Itoa(i)}, Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		for {
			var e api.Event
			select {
			case e = <-got:
			case <-ctx.Done():
				t.Fatal("no session.stopped")
			}
			if e.Type != api.EventSessionStopped || e.SessionID != sess.ID {
				continue
			}
			if e.Session == nil || e.Session.ExitCode == nil || *e.Session.ExitCode != i || e.Session.EndedAt == nil {
				t.Fatalf("session.stopped = %+v", e.Session)
			}
			lat = append(lat, time.Since(*e.Session.EndedAt))
			if st, err := os.Stat(filepath.Join(svc.home.SessionDir(sess.ID), home.ExitFile)); err == nil {
				t.Logf("exit.json written %s after the exit", st.ModTime().Sub(*e.Session.EndedAt))
			}
			break
		}
	}
	t.Logf("exit record to subscriber: %v", lat)
}

// /metrics on 127.0.0.1 parses with the Prometheus text parser and counts
// what happened.
func TestMetricsEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	home := newHome(t)
	if err := os.WriteFile(filepath.Join(string(home), "config.json"), []byte(fmt.Sprintf(`{"metrics_port": %d}`, port)), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := startService(t, home)
	sess, err := svc.run(api.RunRequest{Command: []string{"true"}, Cwd: t.TempDir(), Lock: true})
	if err != nil {
		t.Fatal(err)
	}
	waitEnded(t, home, sess.ID)
	if _, err := svc.client.Lock(context.Background(), api.LockRequest{Directory: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	var fams map[string]*dto.MetricFamily
	// The end is fed to the histogram when the service notices it, which
	// may be a moment after the exit record is on disk.
	eventually(t, 10*time.Second, "session counted and its end observed in /metrics", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		parser := expfmt.NewTextParser(model.UTF8Validation)
		parsed, err := parser.TextToMetricFamilies(resp.Body)
		if err != nil {
			t.Fatalf("parse /metrics: %v", err)
		}
		fams = parsed
		f := fams["agentctl_sessions_total"]
		h := fams["agentctl_session_duration_seconds"]
		return f != nil && len(f.GetMetric()) > 0 && f.GetMetric()[0].GetCounter().GetValue() == 1 &&
			h != nil && len(h.GetMetric()) > 0 && h.GetMetric()[0].GetHistogram().GetSampleCount() >= 1
	})
	if h := fams["agentctl_session_duration_seconds"]; h == nil || h.GetMetric()[0].GetHistogram().GetSampleCount() != 1 {
		t.Errorf("duration histogram not fed: %v", h)
	}
	if s := fams["agentctl_spawn_duration_seconds"]; s == nil || s.GetMetric()[0].GetHistogram().GetSampleCount() != 1 {
		t.Errorf("spawn latency not recorded: %v", s)
	}
	manual := 0.0
	for _, m := range fams["agentctl_locks_active"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "type" && l.GetValue() == "manual" {
				manual = m.GetGauge().GetValue()
			}
		}
	}
	if manual != 1 {
		t.Errorf("manual locks gauge = %v, want 1", manual)
	}
}
