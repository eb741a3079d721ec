package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/fakemodel"
)

// events returns the session.* events of session id the service
// journaled so far (the stream is read for a moment, then ended).
func (e *Env) events(t *testing.T, id string) []api.Event {
	t.Helper()
	cmd := e.Command("events", "--since", "0", "--type", "session.*")
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(2*time.Second, func() { cmd.Process.Kill() })
	cmd.Wait()
	timer.Stop()
	var evs []api.Event
	for _, line := range strings.Split(out.String(), "\n") {
		var ev api.Event
		if json.Unmarshal([]byte(line), &ev) == nil && ev.SessionID == id {
			evs = append(evs, ev)
		}
	}
	return evs
}

// eventStream follows `agentctl events` for the length of the test and
// notes when each event arrived.
type eventStream struct {
	mu     sync.Mutex
	events []api.Event
	at     []time.Time
}

func (e *Env) follow(t *testing.T) *eventStream {
	t.Helper()
	cmd := e.Command("events", "--type", "session.*")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	es := &eventStream{}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev api.Event
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			es.mu.Lock()
			es.events, es.at = append(es.events, ev), append(es.at, time.Now())
			es.mu.Unlock()
		}
	}()
	// The stream is up once it has answered: give it a moment.
	time.Sleep(300 * time.Millisecond)
	return es
}

// wait returns the first event of typ and when it arrived.
func (es *eventStream) wait(t *testing.T, typ string, timeout time.Duration) (api.Event, time.Time) {
	t.Helper()
	var ev api.Event
	var at time.Time
	WaitFor(t, timeout, "event "+typ, func() bool {
		es.mu.Lock()
		defer es.mu.Unlock()
		for i, e := range es.events {
			if e.Type == typ {
				ev, at = e, es.at[i]
				return true
			}
		}
		return false
	})
	return ev, at
}

func eventTypes(evs []api.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return out
}

// A plain command asks for attention with a terminal notification: the
// session reads waiting (source terminal) with the notification's text, a
// process of the session itself cannot answer it, its owner can, and the
// answer is recorded.
func TestTerminalNotificationWaits(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	dir := t.TempDir()
	script := `printf 'working\n\033]9;build needs input\007'
sleep 0.5
agentctl answer "$AGENTCTL_SESSION_ID" from-inside >inside.out 2>&1; echo "rc=$?" >>inside.out
read x; echo "got $x"; sleep 60`
	e.Setenv("PATH", filepath.Dir(e.Bin)+":"+os.Getenv("PATH"))
	s := e.Start("--cwd", dir, "--", "sh", "-c", script)
	var got api.Session
	WaitFor(t, 10*time.Second, "the session to wait", func() bool {
		got = e.Session(s.ID)
		return got.Activity == api.ActivityWaiting
	})
	if got.WaitingFor != api.WaitingInput || got.ActivitySource != api.SourceTerminal || got.Waiting == nil ||
		got.Waiting.Text != "build needs input" || got.Waiting.Kind != "osc9" || got.ActivitySince == nil {
		t.Fatalf("waiting session: %+v waiting %+v", got, got.Waiting)
	}
	if l := e.Launched("--waiting"); len(l) != 1 || l[0].ID != s.ID {
		t.Fatalf("list --waiting: %+v", l)
	}
	out := e.MustRun("list")
	if !strings.Contains(out, "waiting: input") {
		t.Fatalf("list shows no waiting cell:\n%s", out)
	}
	WaitFor(t, 10*time.Second, "the answer from inside the session", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "inside.out"))
		return strings.Contains(string(b), "rc=")
	})
	inside, _ := os.ReadFile(filepath.Join(dir, "inside.out"))
	if strings.Contains(string(inside), "rc=0") || !strings.Contains(string(inside), "cannot answer its own prompt") {
		t.Fatalf("an answer from the session's own tree was not refused: %s", inside)
	}
	if got := e.Session(s.ID); got.Activity != api.ActivityWaiting {
		t.Fatalf("after the refused answer the session is %q, want still waiting", got.Activity)
	}
	e.MustRun("answer", s.ID, "yes")
	WaitFor(t, 10*time.Second, "the answer to reach the program", func() bool {
		out, _, _ := e.Run("logs", s.ID)
		return strings.Contains(out, "got yes")
	})
	if got := e.Session(s.ID); got.Activity == api.ActivityWaiting {
		t.Fatalf("answered, the session still waits: %+v", got.Waiting)
	}
	b, err := os.ReadFile(filepath.Join(e.SessionDir(s.ID), "decisions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var rec api.DecisionRecord
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &rec) != nil {
		t.Fatalf("decisions.jsonl: %q", b)
	}
	if rec.Action != api.DecisionAnswer || rec.Text != "yes" || rec.UID != os.Getuid() || rec.PID <= 0 || rec.Delivered != "terminal" {
		t.Fatalf("decision record: %+v", rec)
	}
	WaitFor(t, 10*time.Second, "session.waiting and session.resumed events", func() bool {
		types := strings.Join(eventTypes(e.events(t, s.ID)), " ")
		return strings.Contains(types, api.EventSessionWaiting) && strings.Contains(types, api.EventSessionResumed)
	})
	for _, ev := range e.events(t, s.ID) {
		if ev.Type == api.EventSessionWaiting && (ev.Meta["reason"] != api.WaitingInput || ev.Meta["source"] != api.SourceTerminal) {
			t.Fatalf("session.waiting meta: %v", ev.Meta)
		}
	}
}

// claudeAttention starts an interactive Claude (default permission mode,
// set in the user's own settings together with a hook of the user's, which
// must keep running) whose fake model asks to run cmd, and waits until the
// session reads waiting for that permission.
func claudeAttention(t *testing.T, cmd string) (*claudeEnv, api.Session, *eventStream) {
	t.Helper()
	c := newClaudeEnv(t)
	key := "sk-ant-fake"
	seed := fmt.Sprintf(`{"hasCompletedOnboarding": true, "projects": {%q: {"hasTrustDialogAccepted": true}},
		"customApiKeyResponses": {"approved": [%q], "rejected": []}}`, c.proj, key[len(key)-min(20, len(key)):])
	if err := os.WriteFile(filepath.Join(c.home, ".claude.json"), []byte(seed), 0o600); err != nil {
		t.Fatal(err)
	}
	userHook := filepath.Join(c.home, "user-hook-ran")
	settings := fmt.Sprintf(`{"permissions": {"defaultMode": "default"},
		"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "touch %s"}]}]}}`, userHook)
	if err := os.MkdirAll(filepath.Join(c.home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.home, ".claude", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	stream := c.follow(t)
	s := c.launch("run it [[bash: "+cmd+"]]", "-i")
	var got api.Session
	WaitFor(t, 60*time.Second, "the session to wait for permission", func() bool {
		got = c.Session(s.ID)
		return got.Activity == api.ActivityWaiting && got.WaitingFor == api.WaitingPermission
	})
	if got.ActivitySource != api.SourceHook || got.Waiting == nil || got.Waiting.Tool != "Bash" || got.Waiting.Input != cmd || got.Waiting.Request == "" {
		t.Fatalf("waiting session: source %q waiting %+v", got.ActivitySource, got.Waiting)
	}
	// From Claude's permission request (its hook's report) to a client
	// that follows the events: within a second.
	ev, at := stream.wait(t, api.EventSessionWaiting, 10*time.Second)
	if ev.Session == nil || ev.Session.ActivitySince == nil || at.Sub(*ev.Session.ActivitySince) > time.Second {
		t.Fatalf("session.waiting arrived at %v for a wait since %v: more than 1 s", at, ev.Session.ActivitySince)
	}
	for _, r := range c.srv.Requests() {
		if strings.HasPrefix(r.Reply, "tool:") {
			t.Logf("the fake served the tool call at %s; Claude asked %s later", r.Time.Format(time.StampMilli), got.ActivitySince.Sub(r.Time).Round(time.Millisecond))
		}
	}
	t.Cleanup(func() {
		if _, err := os.Stat(userHook); err != nil {
			t.Errorf("the user's own Stop hook did not run next to agentctl's: %v", err)
		}
	})
	return c, s, stream
}

// lastToolResult is the body of the latest model request that carries a
// tool result, "" when none does yet.
func lastToolResult(srv *fakemodel.Server) string {
	out := ""
	for _, r := range srv.Requests() {
		if r.Step > 0 && strings.Contains(string(r.Body), "tool_result") {
			out = string(r.Body)
		}
	}
	return out
}

// The real Claude Code, interactive, in its default permission mode, under
// agentctl's pty: its permission prompt is answered with agentctl approve;
// the tool runs, the fake model receives its result, and the session goes
// busy, then waits at its prompt for the next instruction.
func TestClaudePermissionApprove(t *testing.T) {
	t.Parallel()
	c, s, _ := claudeAttention(t, "touch approved-file && echo approved-output-42")
	c.MustRun("approve", s.ID)
	WaitFor(t, 60*time.Second, "the tool result at the fake model", func() bool {
		return strings.Contains(lastToolResult(c.srv), "approved-output-42")
	})
	WaitFor(t, 30*time.Second, "the turn to end at the prompt", func() bool {
		got := c.Session(s.ID)
		return got.Activity == api.ActivityWaiting && got.WaitingFor == api.WaitingInput
	})
	var types []string
	WaitFor(t, 10*time.Second, "the events", func() bool {
		types = eventTypes(c.events(t, s.ID))
		return len(types) >= 4
	})
	want := []string{api.EventSessionWaiting, api.EventSessionResumed, api.EventSessionBusy, api.EventSessionWaiting}
	j := 0
	for _, typ := range types {
		if j < len(want) && typ == want[j] {
			j++
		}
	}
	if j < len(want) {
		t.Fatalf("events %v do not hold %v in order", types, want)
	}
	b, err := os.ReadFile(filepath.Join(c.SessionDir(s.ID), "decisions.jsonl"))
	if err != nil || !strings.Contains(string(b), `"action":"approve"`) || !strings.Contains(string(b), `"delivered":"hook"`) || !strings.Contains(string(b), "approved-output-42") {
		t.Fatalf("decisions.jsonl: %q %v", b, err)
	}
}

// deny: the fake model receives the denial with the reason, and the
// command never ran.
func TestClaudePermissionDeny(t *testing.T) {
	t.Parallel()
	c, s, _ := claudeAttention(t, "touch denied-file")
	c.MustRun("deny", s.ID, "--reason", "not in this repository")
	WaitFor(t, 60*time.Second, "the denial at the fake model", func() bool {
		return strings.Contains(lastToolResult(c.srv), "not in this repository")
	})
	if _, err := os.Stat(filepath.Join(c.proj, "denied-file")); err == nil {
		t.Fatal("the denied command ran")
	}
	WaitFor(t, 30*time.Second, "the turn to end at the prompt", func() bool {
		got := c.Session(s.ID)
		return got.Activity == api.ActivityWaiting && got.WaitingFor == api.WaitingInput
	})
	// Nothing is pending any more: a second answer is refused.
	if _, errOut, code := c.Run("approve", s.ID); code == 0 || !strings.Contains(errOut, "cannot approve") {
		t.Fatalf("a second approve: exit %d, %s", code, errOut)
	}
}

// Codex's own TUI, run as a plain command under agentctl's pty with its
// terminal notifications on: the OSC 9 it prints when a turn completes makes
// the session wait (source terminal) with the agent's last message; typing
// the next instruction ends the wait.
func TestCodexTUINotificationWaits(t *testing.T) {
	t.Parallel()
	c := newCodexEnv(t)
	tui := fmt.Sprintf(`
[tui]
notifications = true
notification_method = "osc9"
notification_condition = "always"

[projects.%q]
trust_level = "trusted"
`, c.proj)
	f, err := os.OpenFile(filepath.Join(c.codexHome, "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(tui)
	f.Close()
	s := c.Start("--cwd", c.proj, "--", "codex", "say [[text: codex-turn-done]]")
	var got api.Session
	WaitFor(t, 90*time.Second, "the session to wait after its turn", func() bool {
		got = c.Session(s.ID)
		return got.Activity == api.ActivityWaiting
	})
	if got.ActivitySource != api.SourceTerminal || got.Waiting == nil || got.Waiting.Kind != "osc9" || !strings.Contains(got.Waiting.Text, "codex-turn-done") {
		t.Fatalf("waiting session: source %q waiting %+v", got.ActivitySource, got.Waiting)
	}
	c.MustRun("answer", s.ID, "again [[text: second-turn]]")
	WaitFor(t, 60*time.Second, "the second turn's notification", func() bool {
		got = c.Session(s.ID)
		return got.Waiting != nil && strings.Contains(got.Waiting.Text, "second-turn")
	})
}

// The webhook and the metrics say a session waits: a receiver on
// 127.0.0.1 gets session.waiting with the reason, then session.resumed, and
// the gauge counts the waiting session by reason.
func TestWaitingWebhookAndGauge(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	type post struct {
		event string
		body  map[string]any
	}
	posts := make(chan post, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		posts <- post{r.Header.Get("X-Agentctl-Event"), body}
	}))
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := fmt.Sprintf(`{"webhook_url": %q, "metrics_port": %d, "notify": {"desktop": false}}`, srv.URL, port)
	if err := os.MkdirAll(e.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.Home, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s := e.Start("--", "sh", "-c", `printf '\033]777;notify;deploy;approve the release?\007'; read x; sleep 60`)
	next := func(want string) post {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case p := <-posts:
				if p.event == want {
					return p
				}
			case <-timeout:
				t.Fatalf("no %s webhook", want)
			}
		}
	}
	p := next(api.EventSessionWaiting)
	meta, _ := p.body["meta"].(map[string]any)
	if p.body["hook_type"] != api.EventSessionWaiting || p.body["session_id"] != s.ID || meta["reason"] != api.WaitingInput || meta["text"] != "deploy: approve the release?" || meta["source"] != api.SourceTerminal {
		t.Fatalf("session.waiting webhook: %v", p.body)
	}
	metrics := func() string {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	WaitFor(t, 10*time.Second, "the waiting gauge", func() bool {
		return strings.Contains(metrics(), `agentctl_sessions_waiting{reason="input"} 1`)
	})
	e.MustRun("answer", s.ID, "yes")
	next(api.EventSessionResumed)
	if m := metrics(); !strings.Contains(m, `agentctl_sessions_waiting{reason="input"} 0`) {
		t.Fatalf("after the answer the gauge says:\n%s", m)
	}
}

// The real OpenCode TUI (launch -i), configured to ask before bash: its
// server's permission request makes the session wait (source native) with
// the command; approve lets the command run, deny keeps it from running.
func TestOpencodePermissionApproveDeny(t *testing.T) {
	t.Parallel()
	o := newOpencodeEnv(t)
	config := filepath.Join(o.data, "..", "..", ".config", "opencode", "opencode.json")
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	json.Unmarshal(b, &cfg)
	cfg["permission"] = map[string]any{"bash": "ask"}
	b, _ = json.Marshal(cfg)
	if err := os.WriteFile(config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		action, file string
		ran          bool
	}{
		{"approve", "approved.txt", true},
		{"deny", "denied.txt", false},
	} {
		var s api.Session
		o.JSON(&s, "launch", "opencode", "-i", "--json", "--cwd", o.proj, "--model", "fake/fake-model", "-p", "do [[bash: touch "+tc.file+"]]")
		var got api.Session
		WaitFor(t, 90*time.Second, "the session to wait for permission", func() bool {
			got = o.Session(s.ID)
			return got.Activity == api.ActivityWaiting && got.WaitingFor == api.WaitingPermission
		})
		if got.ActivitySource != api.SourceNative || got.Waiting == nil || got.Waiting.Tool != "bash" || got.Waiting.Input != "touch "+tc.file || got.Waiting.Request == "" {
			t.Fatalf("%s: waiting session: source %q waiting %+v", tc.action, got.ActivitySource, got.Waiting)
		}
		o.MustRun(tc.action, s.ID)
		WaitFor(t, 60*time.Second, "the turn to end", func() bool {
			got = o.Session(s.ID)
			return got.Activity == api.ActivityWaiting && got.WaitingFor == api.WaitingInput
		})
		if _, err := os.Stat(filepath.Join(o.proj, tc.file)); (err == nil) != tc.ran {
			t.Fatalf("%s: %s exists: %v, want %v", tc.action, tc.file, err == nil, tc.ran)
		}
		d, _ := os.ReadFile(filepath.Join(o.SessionDir(s.ID), "decisions.jsonl"))
		if !strings.Contains(string(d), `"action":"`+tc.action+`"`) || !strings.Contains(string(d), `"delivered":"server"`) {
			t.Fatalf("%s: decisions.jsonl %q", tc.action, d)
		}
		o.MustRun("stop", s.ID)
	}
}
