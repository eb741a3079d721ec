package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/openclaw"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/fakemodel"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/proc"
)

// The OpenClaw tests run a real gateway (the npm package, installed by
// scripts/install-openclaw.sh) on 127.0.0.1 with a throwaway HOME, its model
// provider pointed at internal/fakemodel.

const gatewayToken = "test-token-0123456789abcdef"

// openclawInstall finds the installed gateway, or skips loudly.
func openclawInstall(t *testing.T) (node, entry string) {
	t.Helper()
	dir := os.Getenv("AGENTCTL_OPENCLAW_DIR")
	if dir == "" {
		dir = filepath.Join("..", ".cache", "openclaw")
	}
	nodes, _ := filepath.Glob(filepath.Join(dir, "node", "node_modules", "node-linux-*", "bin", "node"))
	entry = filepath.Join(dir, "app", "node_modules", "openclaw", "openclaw.mjs")
	_, err := os.Stat(entry)
	if len(nodes) == 0 || err != nil {
		msg := fmt.Sprintf("SKIPPING OpenClaw gateway tests: no OpenClaw install in %s (run scripts/install-openclaw.sh)", dir)
		fmt.Fprintln(os.Stderr, "!!! "+msg)
		t.Skip(msg)
	}
	node, _ = filepath.Abs(nodes[0])
	entry, _ = filepath.Abs(entry)
	return node, entry
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// gateway is a throwaway OpenClaw gateway.
type gateway struct {
	URL   string
	Dir   string
	PID   int
	Model *fakemodel.Server
	log   string

	exited   chan struct{} // closed when the gateway process has been reaped
	stopOnce sync.Once
	stopTook time.Duration
}

// startGateway starts a gateway and its fake model and waits until it
// answers RPCs. Both are stopped, by PID, when the test ends. env is added
// to the gateway's environment, which its exec tool passes on.
func startGateway(t *testing.T, env ...string) *gateway {
	t.Helper()
	node, entry := openclawInstall(t)
	// A short path of its own: the gateway makes sockets under its state.
	dir, err := os.MkdirTemp("", "ocgw")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	model, err := fakemodel.Start(ctx, fakemodel.WithLogFile(filepath.Join(dir, "model.log")))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	port := freePort(t)
	g := &gateway{URL: fmt.Sprintf("ws://127.0.0.1:%d", port), Dir: dir, Model: model, log: filepath.Join(dir, "gateway.log")}
	home := filepath.Join(dir, "home")
	stateDir := filepath.Join(home, ".openclaw")
	for _, d := range []string{stateDir, filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	conf := map[string]any{
		"gateway": map[string]any{"mode": "local", "port": port, "bind": "loopback",
			"auth": map[string]any{"mode": "token", "token": gatewayToken}},
		"update":  map[string]any{"checkOnStart": false},
		"logging": map[string]any{"file": filepath.Join(dir, "openclaw-file.log")},
		"models": map[string]any{"mode": "merge", "providers": map[string]any{"fake": map[string]any{
			"baseUrl": model.URL() + "/v1", "apiKey": "fake-key", "api": "openai-completions",
			"models": []any{map[string]any{"id": "fake-model", "name": "Fake", "reasoning": false, "input": []string{"text"},
				"cost":          map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
				"contextWindow": 128000, "maxTokens": 4096}}}}},
		"agents": map[string]any{"defaults": map[string]any{"model": map[string]any{"primary": "fake/fake-model"}}},
	}
	b, _ := json.MarshalIndent(conf, "", "  ")
	if err := os.WriteFile(filepath.Join(stateDir, "openclaw.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(g.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, entry, "gateway", "run", "--port", fmt.Sprint(port), "--bind", "loopback")
	cmd.Dir = dir
	cmd.Env = append(envWithout(os.Environ(), "HOME", "TMPDIR", "PATH"),
		"HOME="+home,
		"TMPDIR="+filepath.Join(dir, "tmp"),
		"PATH="+filepath.Dir(node)+":"+os.Getenv("PATH"),
		"OPENCLAW_GATEWAY_TOKEN="+gatewayToken,
		"OPENCLAW_DISABLE_BONJOUR=1", "OPENCLAW_NO_RESPAWN=1", "OPENCLAW_SKIP_CHANNELS=1",
		"OPENCLAW_EXEC_SHELL_SNAPSHOT=0", "OPENCLAW_NO_AUTO_UPDATE=1",
	)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start gateway: %v", err)
	}
	logf.Close()
	g.PID = cmd.Process.Pid
	g.exited = make(chan struct{})
	go func() { cmd.Wait(); close(g.exited) }()
	// The gateway makes its preferred temporary root whatever TMPDIR says;
	// one it made (and left empty) goes with it.
	const gatewayTmp = "/tmp/openclaw"
	_, statErr := os.Stat(gatewayTmp)
	madeTmp := errors.Is(statErr, os.ErrNotExist)
	t.Cleanup(func() {
		g.stop(t)
		if madeTmp {
			os.Remove(gatewayTmp) // only if empty
		}
		cancel()
		model.Close()
		if t.Failed() {
			t.Logf("kept the gateway's folder %s for inspection", dir)
			return
		}
		os.RemoveAll(dir)
	})

	// Ready when an RPC is answered; the port opens seconds before that.
	ready := time.Now().Add(150 * time.Second)
	cfg := g.config(t)
	for {
		select {
		case <-g.exited:
			t.Fatalf("gateway exited during start-up:\n%s", g.logTail())
		default:
		}
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := openclaw.Dial(dctx, cfg, []string{openclaw.ScopeRead})
		if err == nil {
			err = c.Call(dctx, "sessions.list", map[string]any{"limit": 1}, nil)
			c.Close()
		}
		dcancel()
		if err == nil {
			break
		}
		if time.Now().After(ready) {
			t.Fatalf("gateway not answering after %s: %v\n%s", time.Since(t0).Round(time.Millisecond), err, g.logTail())
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("gateway pid %d answered its first RPC %s after launch", g.PID, time.Since(t0).Round(time.Millisecond))
	return g
}

func envWithout(env []string, keys ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := strings.HasPrefix(k, "OPENCLAW_")
		for _, x := range keys {
			drop = drop || k == x
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// stop ends the gateway by PID: SIGTERM, SIGKILL after 15 s, then any of its
// descendants still alive (they are ours: the gateway started them). Only
// the first call acts.
func (g *gateway) stop(t *testing.T) {
	g.stopOnce.Do(func() { g.stopTook = g.stopNow(t) })
}

func (g *gateway) stopNow(t *testing.T) time.Duration {
	var kids []proc.Info
	if table, err := proc.Table(); err == nil {
		kids = proc.Descendants(table, g.PID)
	}
	t0 := time.Now()
	syscall.Kill(g.PID, syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(15 * time.Second):
		t.Logf("gateway pid %d ignored SIGTERM for 15s; killing it", g.PID)
		syscall.Kill(g.PID, syscall.SIGKILL)
		<-g.exited
	}
	took := time.Since(t0)
	for _, k := range kids {
		if proc.Alive(k.Identity) {
			t.Logf("gateway child pid %d outlived it; killing it", k.PID)
			syscall.Kill(k.PID, syscall.SIGKILL)
		}
	}
	t.Logf("gateway stopped in %s", took.Round(time.Millisecond))
	return took
}

func (g *gateway) logTail() string {
	b, _ := os.ReadFile(g.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// config is an adapter configuration for this gateway with a device key of
// the test's own.
func (g *gateway) config(t *testing.T) openclaw.Config {
	return openclaw.Config{
		URL:          g.URL,
		Token:        gatewayToken,
		IdentityPath: filepath.Join(t.TempDir(), openclaw.IdentityFile),
		Timeout:      20 * time.Second,
	}
}

// waitRunStarted waits until the session's latest run has started (its row
// has startedAt).
func (g *gateway) waitRunStarted(t *testing.T, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := openclaw.Dial(ctx, g.config(t), []string{openclaw.ScopeRead})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for {
		var res struct {
			Sessions []struct {
				Key       string `json:"key"`
				StartedAt *int64 `json:"startedAt"`
			} `json:"sessions"`
		}
		if err := c.Call(ctx, "sessions.list", map[string]any{"search": key, "limit": 5}, &res); err != nil {
			t.Fatalf("wait for the run of %s to start: %v", key, err)
		}
		for _, s := range res.Sessions {
			if s.Key == key && s.StartedAt != nil {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the run of %s did not start within 90s", key)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

type createResult struct {
	Key        string `json:"key"`
	SessionID  string `json:"sessionId"`
	RunStarted bool   `json:"runStarted"`
}

// create makes a gateway session, with a first message when message != "".
func (g *gateway) create(t *testing.T, label, message string) createResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := openclaw.Dial(ctx, g.config(t), []string{openclaw.ScopeRead, openclaw.ScopeWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	params := map[string]any{"label": label}
	if message != "" {
		params["message"] = message
	}
	var res createResult
	if err := c.Call(ctx, "sessions.create", params, &res); err != nil {
		t.Fatal(err)
	}
	if res.Key == "" || res.RunStarted != (message != "") {
		t.Fatalf("sessions.create answered %+v", res)
	}
	return res
}

// eventLog collects a watch's events so tests can wait for one.
type eventLog struct {
	mu     sync.Mutex
	cond   *sync.Cond
	events []timedEvent
	closed bool
}

type timedEvent struct {
	openclaw.Event
	At time.Time // when it arrived here
}

func collect(ch <-chan openclaw.Event) *eventLog {
	l := &eventLog{}
	l.cond = sync.NewCond(&l.mu)
	go func() {
		for ev := range ch {
			l.mu.Lock()
			l.events = append(l.events, timedEvent{ev, time.Now()})
			l.cond.Broadcast()
			l.mu.Unlock()
		}
		l.mu.Lock()
		l.closed = true
		l.cond.Broadcast()
		l.mu.Unlock()
	}()
	return l
}

// wait returns the first event from index from on that matches, waiting up
// to timeout.
func (l *eventLog) wait(t *testing.T, timeout time.Duration, what string, match func(openclaw.Event) bool) timedEvent {
	t.Helper()
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() { l.mu.Lock(); l.cond.Broadcast(); l.mu.Unlock() })
	defer timer.Stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 0; ; {
		for ; i < len(l.events); i++ {
			if match(l.events[i].Event) {
				return l.events[i]
			}
		}
		if l.closed || time.Now().After(deadline) {
			var seen []string
			for _, e := range l.events {
				s := string(e.Kind) + " " + e.Key
				if e.Session != nil {
					s += " " + string(e.Session.State)
				}
				seen = append(seen, s)
			}
			t.Fatalf("no watch event for %s within %s; saw:\n%s", what, timeout, strings.Join(seen, "\n"))
		}
		l.cond.Wait()
	}
}

func stateEvent(key string, state adapters.NativeState) func(openclaw.Event) bool {
	return func(e openclaw.Event) bool {
		return e.Kind == openclaw.EventChanged && e.Key == key && e.Session != nil && e.Session.State == state
	}
}

func findSession(ss []adapters.NativeSession, key string) *adapters.NativeSession {
	for i := range ss {
		if ss[i].NativeID == key {
			return &ss[i]
		}
	}
	return nil
}

func TestOpenClawGateway(t *testing.T) {
	t.Parallel()
	openclawInstall(t)
	// The agentctl installation the gateway's exec tool talks to: its
	// service is auto-started from inside an exec.
	execEnv := NewEnv(t)
	g := startGateway(t, "AGENTCTL_HOME="+execEnv.Home)
	cfg := g.config(t)
	cfg.PageSize = 2 // several pages from a handful of sessions
	a := openclaw.New(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	ch, err := a.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events := collect(ch)
	events.wait(t, 30*time.Second, "the watch to connect", func(e openclaw.Event) bool { return e.Kind == openclaw.EventConnected })

	t.Run("created sessions are listed across pages", func(t *testing.T) {
		var keys []string
		for i := range 5 {
			keys = append(keys, g.create(t, fmt.Sprintf("listed-%d", i), "").Key)
		}
		t0 := time.Now()
		got, err := a.Discover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Discover of %d sessions in pages of 2: %s", len(got), time.Since(t0).Round(time.Millisecond))
		for i, k := range keys {
			s := findSession(got, k)
			if s == nil {
				t.Fatalf("session %s missing from Discover (%d sessions)", k, len(got))
			}
			if s.Adapter != openclaw.Name || s.State != adapters.NativeDone || s.CreatedAt.IsZero() ||
				s.Cwd != "" || s.Process != nil || s.FirstPrompt != fmt.Sprintf("listed-%d", i) {
				t.Errorf("never-run session mapped to %+v", *s)
			}
		}
	})

	t.Run("a run is watched, listed and previewed", func(t *testing.T) {
		t0 := time.Now()
		created := g.create(t, "chat", "hello gateway")
		busy := events.wait(t, 90*time.Second, "the run to start", stateEvent(created.Key, adapters.NativeBusy))
		done := events.wait(t, 90*time.Second, "the run to finish", stateEvent(created.Key, adapters.NativeDone))
		t.Logf("watch saw the run busy %s after create, done %s after that", busy.At.Sub(t0).Round(time.Millisecond), done.At.Sub(busy.At).Round(time.Millisecond))
		// The gateway stamps the change; it must reach the watcher within a second.
		if lag := done.At.Sub(done.Time); lag > time.Second {
			t.Errorf("done event arrived %s after the gateway stamped it", lag)
		}
		got, err := a.Discover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s := findSession(got, created.Key)
		if s == nil || s.State != adapters.NativeDone || s.Model != "fake-model" || s.TokensIn == nil || s.TokensOut == nil {
			t.Fatalf("finished session mapped to %+v", s)
		}
		msgs, err := a.Transcript(ctx, created.Key, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 2 || msgs[0].Role != "user" || msgs[0].Text != "hello gateway" ||
			msgs[1].Role != "assistant" || !strings.Contains(msgs[1].Text, fakemodel.DefaultText) || msgs[1].Time.IsZero() {
			t.Fatalf("transcript %+v", msgs)
		}
		last, err := a.Transcript(ctx, created.Key, 1)
		if err != nil || len(last) != 1 || last[0].Role != "assistant" {
			t.Fatalf("last message: %+v, %v", last, err)
		}
		if _, err := a.Transcript(ctx, "agent:main:no-such-session", 5); !errors.Is(err, openclaw.ErrNotFound) {
			t.Errorf("transcript of an unknown key: %v, want ErrNotFound", err)
		}
	})

	// The directive-driven cases need the fake model to find the directives
	// in what OpenClaw sends: the user's message followed by a context
	// message of OpenClaw's own. A fake model that reads only the last user
	// message misses them; those cases then skip, loudly.
	var directivesMissed string
	t.Run("the fake model reads the user's message", func(t *testing.T) {
		word := fmt.Sprintf("probe-%d", time.Now().UnixNano())
		created := g.create(t, "probe", "[[text: "+word+"]]")
		events.wait(t, 90*time.Second, "the probe run to finish", stateEvent(created.Key, adapters.NativeDone))
		msgs, err := a.Transcript(ctx, created.Key, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 1 && strings.Contains(msgs[0].Text, word) {
			return
		}
		var prompts []string
		for _, r := range g.Model.Requests() {
			if r.API == "chat" {
				prompts = append(prompts, fmt.Sprintf("%q", r.Prompt))
			}
		}
		directivesMissed = fmt.Sprintf("the fake model answered %+v, not %q: it read its directives from %s, OpenClaw's own context message; it must read every user message of the turn", msgs, word, strings.Join(prompts, ", "))
		fmt.Fprintln(os.Stderr, "!!! SKIPPING the OpenClaw abort and exec cases: "+directivesMissed)
		t.Skip(directivesMissed)
	})
	needDirectives := func(t *testing.T) {
		if directivesMissed != "" {
			t.Skip("needs the fake model to read OpenClaw's prompts: " + directivesMissed)
		}
	}

	t.Run("an active run is aborted and the watch sees it", func(t *testing.T) {
		needDirectives(t)
		created := g.create(t, "slow", "[[delay: 120]] take your time")
		events.wait(t, 90*time.Second, "the slow run to start", stateEvent(created.Key, adapters.NativeBusy))
		// Busy comes with the request; the run reaches the model (which then
		// holds it) once its lifecycle has started, which startedAt marks.
		g.waitRunStarted(t, created.Key)
		t0 := time.Now()
		if err := a.Stop(ctx, created.Key); errors.Is(err, openclaw.ErrNoActiveRun) {
			t.Fatalf("the run ended before the abort: the fake model did not hold it for [[delay: 120]]")
		} else if err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		t.Logf("abort took %s", stopped.Sub(t0).Round(time.Millisecond))
		ev := events.wait(t, 60*time.Second, "the aborted state", stateEvent(created.Key, adapters.NativeAborted))
		t.Logf("aborted event arrived %s after the abort returned", ev.At.Sub(stopped).Round(time.Millisecond))
		// Pushed, not polled: it reaches us within a second of the gateway
		// stamping the change (a starved gateway may stamp it late).
		if lag := ev.At.Sub(ev.Time); lag > time.Second {
			t.Errorf("aborted event arrived %s after the gateway stamped it", lag)
		}
		got, err := a.Discover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s := findSession(got, created.Key); s == nil || s.State != adapters.NativeAborted {
			t.Fatalf("aborted session listed as %+v", s)
		}
		if err := a.Stop(ctx, created.Key); !errors.Is(err, openclaw.ErrNoActiveRun) {
			t.Errorf("second stop: %v, want ErrNoActiveRun", err)
		}
	})

	t.Run("a listed gateway run is status'ed, peeked and stopped from the CLI", func(t *testing.T) {
		needDirectives(t)
		e := NewEnv(t)
		e.Setenv(openclaw.EnvURL, g.URL)
		e.Setenv(openclaw.EnvToken, gatewayToken)
		created := g.create(t, "cli-stop", "[[delay: 120]] hold on")
		if !strings.HasPrefix(created.Key, "agent:main:dashboard:") {
			t.Fatalf("gateway key %q is not shaped agent:main:dashboard:<uuid>", created.Key)
		}
		events.wait(t, 90*time.Second, "the slow run to start", stateEvent(created.Key, adapters.NativeBusy))
		g.waitRunStarted(t, created.Key)
		var listed *api.Session
		WaitFor(t, 60*time.Second, "the running gateway session in list", func() bool {
			for _, s := range e.List().Sessions {
				if s.ID == created.Key {
					listed = &s
					return true
				}
			}
			time.Sleep(500 * time.Millisecond)
			return false
		})
		if listed.Status != api.StatusRunning {
			t.Fatalf("listed as %s, want running", listed.Status)
		}
		if st := e.Session(created.Key); st.ID != created.Key || st.Status != api.StatusRunning {
			t.Fatalf("status %s: %+v", created.Key, st)
		}
		if out := e.MustRun("peek", created.Key); strings.Contains(out, "not a valid") {
			t.Fatalf("peek %s: %s", created.Key, out)
		}
		var stopped api.Session
		e.JSON(&stopped, "stop", "--json", created.Key)
		if stopped.ID != created.Key {
			t.Fatalf("stop answered for %s", stopped.ID)
		}
		events.wait(t, 60*time.Second, "the aborted state", stateEvent(created.Key, adapters.NativeAborted))
		if st := e.Session(created.Key); st.Status == api.StatusRunning {
			t.Fatalf("status after stop: %+v", st)
		}
	})

	t.Run("abort without the write scope is refused clearly", func(t *testing.T) {
		c, err := openclaw.Dial(ctx, g.config(t), []string{openclaw.ScopeRead})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		err = c.Call(ctx, "sessions.abort", map[string]any{"key": "agent:main:main"}, nil)
		if !errors.Is(err, openclaw.ErrMissingScope) || !strings.Contains(err.Error(), openclaw.ScopeWrite) {
			t.Fatalf("abort with read scope: %v, want ErrMissingScope naming %s", err, openclaw.ScopeWrite)
		}
	})

	t.Run("a wrong token is named as the reason", func(t *testing.T) {
		bad := g.config(t)
		bad.Token = "not-the-token"
		_, err := openclaw.New(bad).Discover(ctx)
		if err == nil || !strings.Contains(err.Error(), "rejected the token") || !strings.Contains(err.Error(), g.URL) {
			t.Fatalf("Discover with a wrong token: %v", err)
		}
	})

	t.Run("agentctl list shows gateway sessions", func(t *testing.T) {
		e := NewEnv(t)
		e.Setenv(openclaw.EnvURL, g.URL)
		e.Setenv(openclaw.EnvToken, gatewayToken)
		created := g.create(t, "from-list", "")
		// A busy gateway can answer after the service's discovery timeout;
		// that is a warning, so ask again until it answers in time.
		var list api.SessionList
		WaitFor(t, 90*time.Second, "a list without an openclaw warning", func() bool {
			list = api.SessionList{}
			e.JSON(&list, "list", "-a", "--json")
			for _, w := range list.Warnings {
				if strings.Contains(w, "openclaw") {
					t.Logf("list warned: %s", w)
					time.Sleep(time.Second)
					return false
				}
			}
			return true
		})
		var found *api.Session
		for i := range list.Sessions {
			if list.Sessions[i].ID == created.Key {
				found = &list.Sessions[i]
			}
		}
		if found == nil {
			t.Fatalf("list -a does not show gateway session %s: %+v", created.Key, list)
		}
		if found.Adapter != openclaw.Name || found.Origin != api.OriginDiscovered || found.PID != 0 || found.Cwd != "" {
			t.Errorf("gateway session listed as %+v", *found)
		}
		for _, w := range list.Warnings {
			if strings.Contains(w, "openclaw") {
				t.Errorf("warning with a working gateway: %s", w)
			}
		}
		// Without an active run nothing runs: the default list leaves it out.
		for _, s := range e.List().Sessions {
			if s.ID == created.Key {
				t.Errorf("a gateway session with no run is listed as running: %+v", s)
			}
		}
	})

	t.Run("agentctl list with the gateway down warns and carries on", func(t *testing.T) {
		e := NewEnv(t)
		e.Setenv(openclaw.EnvURL, fmt.Sprintf("ws://127.0.0.1:%d", freePort(t)))
		e.Setenv(openclaw.EnvToken, gatewayToken)
		local := e.Start("--", "sleep", "30")
		var list api.SessionList
		e.JSON(&list, "list", "--json")
		var shown bool
		for _, s := range list.Sessions {
			shown = shown || (s.ID == local.ID && s.Status == api.StatusRunning)
		}
		if !shown {
			t.Fatalf("list with the gateway down does not show the local session running: %+v", list)
		}
		var warned []string
		for _, w := range list.Warnings {
			if strings.Contains(w, "openclaw") {
				warned = append(warned, w)
			}
		}
		if len(warned) != 1 || !strings.Contains(warned[0], "not reachable") {
			t.Fatalf("warnings %q, want one naming the openclaw adapter and the reason", list.Warnings)
		}
	})

	// Last: it stops the gateway.
	t.Run("agentctl run from the gateway's exec tool outlives the gateway", func(t *testing.T) {
		needDirectives(t)
		// The session runs until the test opens its gate (two minutes at most).
		gate := filepath.Join(t.TempDir(), "gate")
		cmdline := fmt.Sprintf("%s run --label via=openclaw-exec -- sh -c %s", agentctlBin, text.ShellQuote(gatedScript(gate, 3)))
		t0 := time.Now()
		created := g.create(t, "exec", "[[bash: "+cmdline+"]] [[text: launched]]")
		done := events.wait(t, 120*time.Second, "the exec run to finish", stateEvent(created.Key, adapters.NativeDone))
		t.Logf("gateway run with the exec finished %s after create", done.At.Sub(t0).Round(time.Millisecond))
		l := execEnv.List("-a", "--label", "via=openclaw-exec")
		if len(l.Sessions) != 1 {
			msgs, _ := a.Transcript(ctx, created.Key, 0)
			t.Fatalf("sessions started from the exec: %+v; gateway transcript: %+v", l, msgs)
		}
		s := l.Sessions[0]
		if s.Status != api.StatusRunning || s.Labels["OPENCLAW_SHELL"] != "exec" {
			t.Fatalf("session from the exec: %+v", s)
		}
		if _, ok := s.Labels["OPENCLAW_GATEWAY_TOKEN"]; ok {
			t.Error("the gateway token was recorded")
		}
		assertTokenNotOnDisk(t, execEnv.SessionDir(s.ID), gatewayToken)
		msgs, err := a.Transcript(ctx, created.Key, 0)
		if err != nil {
			t.Fatal(err)
		}
		var sawID bool
		for _, m := range msgs {
			sawID = sawID || (m.Role == "tool" && strings.Contains(m.Text, s.ID))
		}
		if !sawID {
			t.Errorf("the exec's result does not carry the session id %s: %+v", s.ID, msgs)
		}
		// With nothing of the session holding the exec's pipes, the gateway
		// has no background exec session to drain before it stops (one that
		// did would hold its shutdown for minutes).
		g.stop(t)
		logged, _ := os.ReadFile(g.log)
		for _, line := range strings.Split(string(logged), "\n") {
			if strings.Contains(line, "draining active work") && strings.Contains(line, "backgroundExecSessions=") {
				t.Errorf("the gateway drained a background exec session at shutdown: %s", line)
			}
		}
		if !strings.Contains(string(logged), "drain settled") {
			t.Errorf("the gateway log does not show its drain settling; stop took %s", g.stopTook)
		}
		if st := execEnv.Session(s.ID); st.Status != api.StatusRunning {
			t.Fatalf("session is %s after the gateway stopped, want running", st.Status)
		}
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		final := execEnv.WaitStatus(s.ID, api.StatusExited, 60*time.Second)
		if final.ExitCode == nil || *final.ExitCode != 3 {
			t.Fatalf("session ended as %+v, want exit code 3", final)
		}
	})
}
