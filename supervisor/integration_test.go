package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/claude"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/session"
)

// hookReport is the test binary as an integration's hook (`agentctl hook
// claude` without a session): it sends its stdin as one report of event
// to the service at socket, n times (args[0]), and writes each answer as a
// JSON line {"behavior":…,"err":…} to the file args[1] once done, else to
// stdout.
func hookReport(socket, event string, args []string) int {
	n := 1
	if len(args) > 0 {
		n, _ = strconv.Atoi(args[0])
	}
	var out bytes.Buffer
	defer func() {
		if len(args) < 2 {
			os.Stdout.Write(out.Bytes())
			return
		}
		os.WriteFile(args[1]+".part", out.Bytes(), 0o600)
		os.Rename(args[1]+".part", args[1])
	}()
	payload, _ := io.ReadAll(os.Stdin)
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r, err := client.ReportHook(ctx, client.HookReport{Socket: socket, Agent: "claude", Event: event, Payload: payload, Connect: time.Second, Answer: 10 * time.Second})
		cancel()
		line := map[string]string{"behavior": r.Behavior}
		if err != nil {
			line["err"] = err.Error()
		}
		b, _ := json.Marshal(line)
		fmt.Fprintln(&out, string(b))
	}
	return 0
}

// hookApprove is the test binary as `agentctl approve` run by a process
// below the agent: it approves the session and request named on its stdin
// ("ID REQUEST"), and writes what the service said to the file out.
func hookApprove(socket, out string) int {
	var id, req string
	fmt.Fscan(os.Stdin, &id, &req)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := client.New(home.Home(filepath.Dir(socket)), "", false).Decide(ctx, id, api.Decision{Action: api.DecisionApprove, Request: req})
	res := "approved"
	if err != nil {
		res = err.Error()
	}
	os.WriteFile(out+".part", []byte(res), 0o600)
	os.Rename(out+".part", out)
	return 0
}

// lockedLog is a log the service writes while the test reads it.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// fakeClaude is a process whose argv names it claude (as the adapter
// recognises Claude Code), working in dir, that runs the test binary as its
// hook for each line "EVENT PAYLOAD-FILE [bg]" written to it: the hook's
// parent is then that process, as Claude Code's hooks' parent is Claude.
type fakeClaude struct {
	t    *testing.T
	cmd  *exec.Cmd
	fifo *os.File
	dir  string
	n    int
}

func startFakeClaude(t *testing.T, socket, dir string, args ...string) *fakeClaude {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	fifo := filepath.Join(tmp, "in")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Each hook is a child of this very process (a simple command, forked
	// and exec'd), as Claude's hooks are Claude's.
	script := `while read -r ev file n bg; do
  if [ "$ev" = APPROVE ]; then "$0" hook-approve "$1" "$file.out" <"$file"
  elif [ -n "$bg" ]; then "$0" hook-report "$1" "$ev" "$n" "$file.out" <"$file" &
  else "$0" hook-report "$1" "$ev" "$n" "$file.out" <"$file"; fi
done <"$2"; true`
	// args go after the script's own ($3 on): only its argv shows them.
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, exe, socket, fifo}, args...)...)
	cmd.Args[0] = "claude"
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fc := &fakeClaude{t: t, cmd: cmd, fifo: f, dir: tmp}
	t.Cleanup(func() {
		f.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return fc
}

// report has the fake Claude run its hook with payload, n times, and
// returns the file its answers land in (when done).
func (f *fakeClaude) report(event string, payload []byte, n int, background bool) string {
	f.t.Helper()
	f.n++
	file := filepath.Join(f.dir, fmt.Sprintf("p%d", f.n))
	if err := os.WriteFile(file, payload, 0o600); err != nil {
		f.t.Fatal(err)
	}
	line := fmt.Sprintf("%s %s %d", event, file, n)
	if background {
		line += " bg"
	}
	if _, err := fmt.Fprintln(f.fifo, line); err != nil {
		f.t.Fatal(err)
	}
	return file + ".out"
}

// answers waits for the answers in out.
func answers(t *testing.T, out string) []map[string]string {
	t.Helper()
	var b []byte
	eventually(t, 30*time.Second, "the hook's answers in "+out, func() bool {
		var err error
		b, err = os.ReadFile(out)
		return err == nil
	})
	var got []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		m := map[string]string{}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("hook output %q: %v", line, err)
		}
		got = append(got, m)
	}
	return got
}

func hookPayload(event, sessionID, cwd string, extra map[string]any) []byte {
	m := map[string]any{"hook_event_name": event, "session_id": sessionID, "cwd": cwd, "transcript_path": "/dev/null"}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}

// integrationService is a service whose claude adapter reads a store of
// its own and the service's book of integration evidence, logging to log.
func integrationService(t *testing.T, log io.Writer) *service {
	book := session.NewBook()
	cl := claude.New(adapters.Env{Home: t.TempDir(), Hooks: book})
	return startServiceOpts(t, Options{Home: newHome(t), Adapters: adapters.NewSet(cl), Book: book,
		Logger: slog.New(slog.NewTextHandler(log, nil))})
}

const (
	sessA = "11111111-1111-4111-8111-111111111111"
	sessB = "22222222-2222-4222-8222-222222222222"
)

// A hand-started Claude's PermissionRequest, reported by its integration,
// reads waiting: permission (source integration) on the session its report
// names, tied to the proven process before any store file exists;
// `approve` lets the tool run (the hook answers allow); the record of the
// decision is kept.
func TestIntegrationPermissionIsAnsweredForASessionStartedByHand(t *testing.T) {
	t.Parallel()
	var log lockedLog
	svc := integrationService(t, &log)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	fc := startFakeClaude(t, svc.home.Socket(), dir)
	if got := answers(t, fc.report("SessionStart", hookPayload("SessionStart", sessA, dir, nil), 1, false)); got[0]["err"] != "" {
		t.Fatalf("SessionStart: %v\n%s", got, log.String())
	}
	ctx := context.Background()
	s, err := svc.client.Get(ctx, sessA)
	if err != nil {
		t.Fatalf("the session its report named: %v", err)
	}
	if s.Status != api.StatusRunning || s.PID != fc.cmd.Process.Pid || s.Activity != api.ActivityIdle || s.ActivitySource != api.SourceIntegration {
		t.Fatalf("after SessionStart: %s pid %d (the agent is %d), activity %q from %q", s.Status, s.PID, fc.cmd.Process.Pid, s.Activity, s.ActivitySource)
	}
	waiting := make(chan api.Event, 8)
	ectx, ecancel := context.WithCancel(ctx)
	t.Cleanup(ecancel)
	streaming := make(chan struct{})
	go svc.client.Events(ectx, client.EventOptions{Types: []string{api.EventSessionWaiting}}, func(uint64) { close(streaming) }, func(e api.Event) error {
		if e.SessionID == sessA {
			waiting <- e
		}
		return nil
	})
	select {
	case <-streaming:
	case <-time.After(10 * time.Second):
		t.Fatal("the event stream did not open")
	}
	out := fc.report("PermissionRequest", hookPayload("PermissionRequest", sessA, dir, map[string]any{"tool_name": "Bash", "tool_input": map[string]string{"command": "make deploy"}}), 1, true)
	var req string
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := os.ReadFile(out + "")
			t.Logf("last seen: %s %s/%s %q from %q %+v warnings %q; hook: %s\nlog:\n%s", s.Status, s.ID, s.Activity, s.WaitingFor, s.ActivitySource, s.Waiting, s.Warnings, out, log.String())
		}
	})
	eventually(t, 10*time.Second, "the session to wait for a permission", func() bool {
		s, err = svc.client.Get(ctx, sessA)
		if err == nil && s.Waiting != nil && s.Waiting.Request != "" {
			req = s.Waiting.Request
			return true
		}
		return false
	})
	if s.WaitingFor != api.WaitingPermission || s.ActivitySource != api.SourceIntegration || s.Waiting.Tool != "Bash" || s.Waiting.Input != "make deploy" {
		t.Fatalf("waiting: %q from %q, %+v", s.WaitingFor, s.ActivitySource, s.Waiting)
	}
	select {
	case e := <-waiting:
		if e.Meta["reason"] != api.WaitingPermission || e.Meta["source"] != api.SourceIntegration {
			t.Errorf("session.waiting of the hand-started session: %+v", e.Meta)
		}
	case <-time.After(10 * time.Second):
		t.Error("no session.waiting event for the hand-started session")
	}
	// A process of the session itself (below its agent) may not answer.
	self := fc.report("APPROVE", []byte(sessA+" "+req), 1, false)
	eventually(t, 30*time.Second, "the session's own approval to be answered", func() bool {
		_, err := os.Stat(self)
		return err == nil
	})
	if b, _ := os.ReadFile(self); !strings.Contains(string(b), "a session cannot answer its own prompt") {
		t.Errorf("an approval from below the session's agent: %s", b)
	}
	if _, err := svc.client.Decide(ctx, sessA, api.Decision{Action: api.DecisionApprove, Request: req}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	if got := answers(t, out); got[0]["behavior"] != "allow" {
		t.Fatalf("the hook got %v, want allow", got)
	}
	b, err := os.ReadFile(svc.home.IntegrationDecisions())
	if err != nil || !strings.Contains(string(b), sessA) || !strings.Contains(string(b), "make deploy") {
		t.Fatalf("the decision's record: %v %s", err, b)
	}
}

// Reports that claim what the proven process does not show are refused,
// each with a log line saying why: from a process that is no agent's hook,
// huge, malformed, naming another folder, naming the session another
// process's reports hold. A flood from one process is cut (429).
func TestIntegrationRefusesHostileReports(t *testing.T) {
	t.Parallel()
	var log lockedLog
	svc := integrationService(t, &log)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	a := startFakeClaude(t, svc.home.Socket(), dir)
	b := startFakeClaude(t, svc.home.Socket(), dir)
	if got := answers(t, a.report("SessionStart", hookPayload("SessionStart", sessA, dir, nil), 1, false)); got[0]["err"] != "" {
		t.Fatalf("a's SessionStart: %v\n%s", got, log.String())
	}
	exe, _ := os.Executable()
	notUnder := func(payload []byte) string {
		cmd := exec.Command(exe, "hook-report", svc.home.Socket(), "Stop")
		cmd.Stdin = bytes.NewReader(payload)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	huge := hookPayload("Stop", sessB, dir, map[string]any{"pad": strings.Repeat("x", api.MaxHookReport)})
	cases := []struct {
		name, want, logged string
		send               func() string
	}{
		{"not below an agent", "not run by a live agent process", "not run by a live agent process", func() string {
			return notUnder(hookPayload("Stop", sessA, dir, nil))
		}},
		{"huge", "more than 1048576 bytes", "more than 1048576 bytes", func() string {
			return readAnswers(t, b.report("Stop", huge, 1, false))
		}},
		{"malformed", "not a JSON object", "not a JSON object", func() string {
			return readAnswers(t, b.report("Stop", []byte("[1,2"), 1, false))
		}},
		{"bad session id", "is not a Claude session id", "is not a Claude session id", func() string {
			return readAnswers(t, b.report("Stop", hookPayload("Stop", "../../etc", dir, nil), 1, false))
		}},
		{"another folder", "names folder", "names folder", func() string {
			return readAnswers(t, b.report("Stop", hookPayload("Stop", sessB, "/", nil), 1, false))
		}},
		{"another process's session", "reports hold", "which pid " + strconv.Itoa(a.cmd.Process.Pid) + "'s reports hold", func() string {
			return readAnswers(t, b.report("Stop", hookPayload("Stop", sessA, dir, nil), 1, false))
		}},
	}
	for _, c := range cases {
		out := c.send()
		if !strings.Contains(out, c.want) {
			t.Errorf("%s: the hook got %s, want %q", c.name, out, c.want)
		}
		if !strings.Contains(log.String(), c.logged) {
			t.Errorf("%s: no log line saying %q:\n%s", c.name, c.logged, log.String())
		}
	}
	if !strings.Contains(log.String(), "integration report refused") {
		t.Errorf("no refusal logged:\n%s", log.String())
	}
	// The session stays a's.
	if s, err := svc.client.Get(context.Background(), sessA); err != nil || s.PID != a.cmd.Process.Pid {
		t.Errorf("session a after the hostile reports: pid %d, %v", s.PID, err)
	}
	// A flood: the burst passes, what is beyond the rate is refused.
	flood := answers(t, b.report("Stop", hookPayload("Stop", sessB, dir, nil), 300, false))
	refused := 0
	for _, r := range flood {
		if strings.Contains(r["err"], "more than") {
			refused++
		}
	}
	if refused == 0 || refused == len(flood) {
		t.Errorf("a flood of %d reports: %d refused, want some (those beyond the rate)", len(flood), refused)
	}
}

func readAnswers(t *testing.T, out string) string {
	b, _ := json.Marshal(answers(t, out))
	return string(b)
}

// A hand-started Claude's end of turn reads what a launched one's does:
// its TUI waits for the next instruction (waiting: input, from the
// integration, on the Stop hook); a `claude -p` is idle, nobody being at
// its prompt.
func TestIntegrationClaudeEndOfTurnWaitsForInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		args     []string
		activity string
		waiting  string
	}{
		{"TUI", nil, api.ActivityWaiting, api.WaitingInput},
		{"print", []string{"-p"}, api.ActivityIdle, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var log lockedLog
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := ln.Addr().(*net.TCPAddr).Port
			ln.Close()
			h := newHome(t)
			if err := os.WriteFile(filepath.Join(string(h), "config.json"), []byte(fmt.Sprintf(`{"metrics_port": %d}`, port)), 0o600); err != nil {
				t.Fatal(err)
			}
			book := session.NewBook()
			svc := startServiceOpts(t, Options{Home: h, Adapters: adapters.NewSet(claude.New(adapters.Env{Home: t.TempDir(), Hooks: book})), Book: book,
				Logger: slog.New(slog.NewTextHandler(&log, nil))})
			dir, _ := filepath.EvalSymlinks(t.TempDir())
			fc := startFakeClaude(t, svc.home.Socket(), dir, tc.args...)
			ctx := context.Background()
			var s api.Session
			for _, ev := range []string{"SessionStart", "UserPromptSubmit", "Stop"} {
				if got := answers(t, fc.report(ev, hookPayload(ev, sessA, dir, nil), 1, false)); got[0]["err"] != "" {
					t.Fatalf("%s: %v\n%s", ev, got, log.String())
				}
				var err error
				if s, err = svc.client.Get(ctx, sessA); err != nil {
					t.Fatal(err)
				}
				if ev == "UserPromptSubmit" && s.Activity != api.ActivityBusy {
					t.Errorf("after %s: activity %q, want busy", ev, s.Activity)
				}
			}
			if s.Status != api.StatusRunning || s.Activity != tc.activity || s.WaitingFor != tc.waiting || s.ActivitySource != api.SourceIntegration {
				t.Errorf("after Stop: %s, activity %q waiting %q from %q; want %q waiting %q from the integration", s.Status, s.Activity, s.WaitingFor, s.ActivitySource, tc.activity, tc.waiting)
			}
			if tc.waiting != "" && (s.Waiting == nil || s.Waiting.Kind != "Stop") {
				t.Errorf("waiting %+v, want of the Stop hook", s.Waiting)
			}
			// The waiting gauge counts it, though agentctl did not launch it.
			want := `agentctl_sessions_waiting{reason="input"} 0`
			if tc.waiting != "" {
				want = `agentctl_sessions_waiting{reason="input"} 1`
			}
			eventually(t, 10*time.Second, "the waiting gauge to say "+want, func() bool {
				resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return strings.Contains(string(b), want)
			})
		})
	}
}
