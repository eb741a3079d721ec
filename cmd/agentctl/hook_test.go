package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

// noHang bounds a hook run that must not wait for the service: far above
// what it takes (it is measured and logged), far below any wait a person
// configures (10 min by default).
const noHang = 10 * time.Second

// shortHome is a home whose socket path fits the limit of one.
func shortHome(t *testing.T) home.Home {
	t.Helper()
	dir, err := os.MkdirTemp("", "ac")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return home.Home(dir)
}

// runHookCLI runs `agentctl hook` with stdin, in-process, and returns its
// output and how long it took; a run past noHang fails the test.
func runHookCLI(t *testing.T, h home.Home, env map[string]string, stdin []byte, args ...string) (stdout, stderr string, took time.Duration) {
	t.Helper()
	f := newFakeCLI(t, h, env)
	f.cli.in = bytes.NewReader(stdin)
	done := make(chan int, 1)
	begun := time.Now()
	go func() { done <- run(context.Background(), f.cli, append([]string{"hook"}, args...)) }()
	select {
	case code := <-done:
		took = time.Since(begun)
		if code != 0 {
			t.Errorf("agentctl hook exited %d, want 0 always", code)
		}
	case <-time.After(noHang):
		t.Fatalf("agentctl hook %q still runs after %s: the agent would hang", args, noHang)
	}
	return f.stdout.String(), f.stderr.String(), took
}

func claudePermission() []byte {
	return []byte(`{"hook_event_name":"PermissionRequest","session_id":"0b4c3a8e-2f1d-4e5a-9c7b-6d8e9f0a1b2c","cwd":"/","tool_name":"Bash","tool_input":{"command":"ls"}}`)
}

// An integration's hook fails open and fast: with no service (no socket,
// or nobody listening), and with a frozen one (it accepts into its backlog
// and never answers, as a SIGSTOPped service does), the hook exits 0 with
// nothing on stdout (no decision: the agent asks as usual) at once, even
// for a permission request whose configured wait is ten minutes.
func TestHookFailsOpenFast(t *testing.T) {
	t.Parallel()
	down := shortHome(t)
	refused := shortHome(t)
	l, err := net.Listen("unix", refused.Socket())
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the socket file stays, nobody listens: ECONNREFUSED
	frozen := shortHome(t)
	fl, err := net.Listen("unix", frozen.Socket())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fl.Close() }) // never accepts
	for _, c := range []struct {
		name  string
		h     home.Home
		event string
		in    []byte
	}{
		{"no socket, Stop", down, "Stop", []byte(`{"hook_event_name":"Stop"}`)},
		{"no socket, PermissionRequest", down, "PermissionRequest", claudePermission()},
		{"refused, PermissionRequest", refused, "PermissionRequest", claudePermission()},
		{"frozen, Stop", frozen, "Stop", []byte(`{"hook_event_name":"Stop"}`)},
		{"frozen, PermissionRequest", frozen, "PermissionRequest", claudePermission()},
	} {
		out, errOut, took := runHookCLI(t, c.h, nil, c.in, "claude", "--integration", "--event", c.event)
		if out != "" {
			t.Errorf("%s: stdout %q, want nothing", c.name, out)
		}
		t.Logf("%s: returned in %s (%s)", c.name, took.Round(100*time.Microsecond), strings.TrimSpace(errOut))
	}
}

// A service stopped by a signal (SIGSTOP), as its lock file names it, is
// not even asked: the hook says so and returns.
func TestHookSkipsAStoppedService(t *testing.T) {
	t.Parallel()
	h := shortHome(t)
	l, err := net.Listen("unix", h.Socket())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() }) // never accepts
	svc := exec.Command("sleep", "600")
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Process.Kill(); svc.Wait() })
	if err := svc.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(noHang); ; time.Sleep(time.Millisecond) {
		if p, err := proc.Lookup(svc.Process.Pid); err == nil && p.Stopped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stand-in service did not stop")
		}
	}
	if err := os.WriteFile(h.LockFile(), []byte(strconv.Itoa(svc.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, took := runHookCLI(t, h, nil, claudePermission(), "claude", "--integration", "--event", "PermissionRequest")
	if out != "" || !strings.Contains(errOut, "is stopped: nothing reported") {
		t.Errorf("stdout %q, stderr %q", out, errOut)
	}
	t.Logf("returned in %s", took.Round(100*time.Microsecond))
}

// fakeHookService answers integration reports on h's socket with reply, and
// counts the connections it got.
func fakeHookService(t *testing.T, h home.Home, reply string) *atomic.Int64 {
	t.Helper()
	l, err := net.Listen("unix", h.Socket())
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/hooks/") {
				http.Error(w, "not a report", http.StatusNotFound)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(reply))
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				n.Add(1)
			}
		},
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return &n
}

// What the hook prints of a decision: Claude's decision JSON for Claude's
// and Codex's PermissionRequest (Codex reads Claude's shape), one line {"behavior":…} for any other agent, nothing
// without a decision.
func TestHookPrintsTheDecision(t *testing.T) {
	t.Parallel()
	h := shortHome(t)
	fakeHookService(t, h, `{"behavior":"deny","message":"not on main"}`)
	out, _, _ := runHookCLI(t, h, nil, claudePermission(), "claude", "--integration", "--event", "PermissionRequest")
	if want := `{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"not on main"},"hookEventName":"PermissionRequest"}}` + "\n"; out != want {
		t.Errorf("claude: %q, want %q", out, want)
	}
	codexAsks := []byte(`{"hook_event_name":"PermissionRequest","session_id":"01a21a8e-4a49-7e53-8d8e-e66c61baddd2","turn_id":"t","cwd":"/","tool_name":"Bash","tool_input":{"command":"ls"}}`)
	out, _, _ = runHookCLI(t, h, nil, codexAsks, "codex", "--integration", "--event", "PermissionRequest")
	if want := `{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"not on main"},"hookEventName":"PermissionRequest"}}` + "\n"; out != want {
		t.Errorf("codex: %q, want %q", out, want)
	}
	out, _, _ = runHookCLI(t, h, nil, []byte(`{"id":"per_1","type":"bash"}`), "opencode", "--event", "permission.asked")
	if want := `{"behavior":"deny","message":"not on main"}` + "\n"; out != want {
		t.Errorf("opencode: %q, want %q", out, want)
	}
	none := shortHome(t)
	fakeHookService(t, none, `{}`)
	if out, _, _ := runHookCLI(t, none, nil, []byte(`{"hook_event_name":"Stop"}`), "claude", "--integration", "--event", "Stop"); out != "" {
		t.Errorf("no decision: %q, want nothing", out)
	}
}

// A session agentctl launched reports through its own hooks: the user's
// integration hook, run there too, sends nothing (nothing counted twice).
// A report beyond the size bound is not sent either, and says so.
func TestHookSendsNothingTwiceNorTooMuch(t *testing.T) {
	t.Parallel()
	h := shortHome(t)
	conns := fakeHookService(t, h, `{}`)
	launched := map[string]string{home.SessionEnv: "k3x9abcd"}
	runHookCLI(t, h, launched, []byte(`{"hook_event_name":"Stop"}`), "claude", "--integration", "--event", "Stop")
	if n := conns.Load(); n != 0 {
		t.Errorf("the integration's hook in a launched session made %d connections, want none", n)
	}
	huge := append([]byte(`{"hook_event_name":"Stop","x":"`), bytes.Repeat([]byte("x"), api.MaxHookReport)...)
	_, errOut, _ := runHookCLI(t, h, nil, huge, "claude", "--integration", "--event", "Stop")
	if n := conns.Load(); n != 0 || !strings.Contains(errOut, "is not sent") {
		t.Errorf("a report over the bound: %d connections, stderr %q", n, errOut)
	}
	// Without the marker, the launched session's own hook reports.
	runHookCLI(t, h, launched, []byte(`{"hook_event_name":"Stop"}`), "claude", "--event", "Stop")
	if n := conns.Load(); n != 1 {
		t.Errorf("the launched session's own hook made %d connections, want 1", n)
	}
}

// Pi's tool_call waits for a decision when the extension says it asks
// (AGENTCTL_PI_ASK_SECONDS): the service holds such a report until a
// person decides, beyond the bound of a plain report, and the hook waits
// for it as for any permission request; a tool_call that does not ask
// stays bounded (no decision).
func TestHookWaitsForPiToolCallThatAsks(t *testing.T) {
	t.Parallel()
	h := shortHome(t)
	l, err := net.Listen("unix", h.Socket())
	if err != nil {
		t.Fatal(err)
	}
	// The service's way: the headers at once (the report is taken), the
	// decision well after a plain report's bound.
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		select {
		case <-time.After(4 * hookAnswer):
		case <-r.Context().Done():
			return
		}
		w.Write([]byte(`{"behavior":"deny","message":"not by hand"}`))
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	for _, tt := range []struct {
		ask  bool
		want string
	}{
		{true, `{"behavior":"deny","message":"not by hand"}` + "\n"},
		{false, ""},
	} {
		payload := `{"type":"tool_call","sessionId":"01a21a2d-4f43-77b5-a098-e609ead05832","cwd":"/","toolName":"bash","toolCallId":"call_1","input":{"command":"ls"},"ask":` + strconv.FormatBool(tt.ask) + `}`
		out, _, _ := runHookCLI(t, h, nil, []byte(payload), "pi", "--integration", "--event", "tool_call")
		if out != tt.want {
			t.Errorf("ask %v: %q, want %q", tt.ask, out, tt.want)
		}
	}
}
