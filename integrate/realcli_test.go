package integrate

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The integrations against the real agents: each is installed into a
// scratch HOME, the agent's TUI runs in a real terminal (tmux) against the
// fake model, and its reports arrive at a unix-socket HTTP server the test
// runs where the service's socket would be. The hook command is this test
// binary standing in for `agentctl hook` (TestHookStub): it posts stdin to
// the socket as `agentctl hook` does, with its bounds.

// TestHookStub is `agentctl hook AGENT --event E` when this test binary is
// run as an integration's hook (the test harness passes "hook" after the
// flags); otherwise it is skipped.
func TestHookStub(t *testing.T) {
	if flag.Arg(0) != "hook" {
		t.Skip("only run as an integration's hook")
	}
	args := flag.Args()[1:]
	var homeDir, agent, event string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--home":
			i++
			homeDir = args[i]
		case "--event":
			i++
			event = args[i]
		case "--integration":
		default:
			agent = args[i]
		}
	}
	payload, _ := io.ReadAll(io.LimitReader(os.Stdin, 4<<20))
	// A report is bounded tight; a question for a person as the user set.
	bound := 200 * time.Millisecond
	if event == "permission.asked" || (agent == "pi" && strings.Contains(string(payload), `"ask":true`)) {
		bound = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	hc := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", filepath.Join(homeDir, "agentctl.sock"))
	}}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://agentctl/v1/hooks/"+agent+"?event="+event, strings.NewReader(string(payload)))
	if resp, err := hc.Do(req); err == nil {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if strings.Contains(string(body), `"behavior"`) {
			fmt.Println(strings.TrimSpace(string(body)))
		}
	}
	os.Exit(0)
}

// report is one request that reached the stand-in service.
type report struct {
	Agent, Event string
	Body         []byte
	// PID is the peer's pid, as the kernel says; Ancestors are its
	// parent, grandparent… read as its connection was accepted. None when
	// it was gone by then: a hook waits for its answer for 200 ms, and a
	// loaded machine may accept later than that.
	PID       int
	Ancestors []int
	At        time.Time
}

// service stands in for agentctl's service at a home's socket.
type service struct {
	t    *testing.T
	mu   sync.Mutex
	seen []report
	// decide answers a report; nil answers nothing.
	decide func(report) string
}

const (
	serveAnswer = iota // answers each report
	serveFrozen        // accepts, reads nothing, answers nothing
)

// serve runs the stand-in at home's socket until the test ends.
func serve(t *testing.T, home string, mode int) *service {
	t.Helper()
	s := &service{t: t}
	ln, err := net.Listen("unix", filepath.Join(home, "agentctl.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if mode == serveFrozen {
		var conns []net.Conn
		var mu sync.Mutex
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
		t.Cleanup(func() {
			ln.Close()
			mu.Lock()
			for _, c := range conns {
				c.Close()
			}
			mu.Unlock()
		})
		return s
	}
	srv := &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			pid := peerPID(c)
			return context.WithValue(ctx, peerKey{}, peer{pid: pid, ancestors: ancestors(pid)})
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
			rep := report{Agent: strings.TrimPrefix(r.URL.Path, "/v1/hooks/"), Event: r.URL.Query().Get("event"), Body: body, At: time.Now()}
			p, _ := r.Context().Value(peerKey{}).(peer)
			rep.PID, rep.Ancestors = p.pid, p.ancestors
			s.mu.Lock()
			s.seen = append(s.seen, rep)
			decide := s.decide
			s.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			if decide != nil {
				io.WriteString(w, decide(rep))
				return
			}
			io.WriteString(w, "{}")
		}),
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

type peerKey struct{}

// peer is a connection's process and its parents, read at accept.
type peer struct {
	pid       int
	ancestors []int
}

func peerPID(c net.Conn) int {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	var pid int
	raw.Control(func(fd uintptr) {
		if cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

func (s *service) reports() []report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]report(nil), s.seen...)
}

// waitReport waits for a report that ok accepts.
func (s *service) waitReport(what string, limit time.Duration, ok func(report) bool) report {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		for _, r := range s.reports() {
			if ok(r) {
				return r
			}
		}
		if time.Now().After(deadline) {
			for _, r := range s.reports() {
				s.t.Logf("report %s %s pid %d: %s", r.Agent, r.Event, r.PID, r.Body)
			}
			s.t.Fatalf("no report: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ancestors are pid's parent, its parent's parent… up to init.
func ancestors(pid int) []int {
	var out []int
	for range 64 {
		if pid <= 1 {
			break
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			break
		}
		rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
		var state string
		var ppid int
		if _, err := fmt.Sscanf(rest, "%s %d", &state, &ppid); err != nil {
			break
		}
		out = append(out, ppid)
		pid = ppid
	}
	return out
}

// descends says whether the report came from a descendant of pid.
func (r report) descends(pid int) bool { return slices.Contains(r.Ancestors, pid) }

// checkFrom checks that the reports that match came from descendants of
// pid, and of none of others. A report whose process was gone before its
// parents could be read proves nothing either way, but one of them must
// have been read.
func (s *service) checkFrom(what string, match func(report) bool, pid int, others ...int) {
	s.t.Helper()
	read := 0
	for _, r := range s.reports() {
		if !match(r) || len(r.Ancestors) == 0 {
			continue
		}
		read++
		if !r.descends(pid) || slices.ContainsFunc(others, r.descends) {
			s.t.Errorf("%s: %s from pid %d (ancestors %v), want a descendant of %d (and of none of %v)", what, r.Event, r.PID, r.Ancestors, pid, others)
		}
	}
	if read == 0 {
		s.t.Errorf("%s: no report's process was there to be read", what)
	}
}

// term is a tmux server of the test's own: each agent runs in a window.
type term struct {
	t    *testing.T
	sock string
	n    int
	pids []int // the windows' processes, each its group's leader
}

func newTerm(t *testing.T, env []string) *term {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	dir, err := os.MkdirTemp("", "it")
	if err != nil {
		t.Fatal(err)
	}
	tm := &term{t: t, sock: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		exec.Command("tmux", "-S", tm.sock, "kill-server").Run()
		// An agent hung up on goes on writing its folders for a moment
		// (OpenCode installs its plugins' packages): the test's folders
		// are removed once its windows' process groups are gone.
		for _, pid := range tm.pids {
			endGroup(pid)
		}
		os.RemoveAll(dir)
	})
	cmd := exec.Command("tmux", "-S", tm.sock, "-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "50", "-s", "it", "sleep", "3600")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("start tmux: %v: %s", err, out)
	}
	// A window whose agent exits stays, with its last screen: the test
	// says how the agent ended instead of "can't find window".
	tm.tmux("set-option", "-g", "remain-on-exit", "on")
	return tm
}

func (tm *term) tmux(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", tm.sock}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

// start runs argv in dir in a new window and returns the window and the
// process's pid.
func (tm *term) start(dir string, argv ...string) (string, int) {
	tm.t.Helper()
	tm.n++
	win := fmt.Sprintf("it:w%d", tm.n)
	out := tm.tmux(append([]string{"new-window", "-d", "-P", "-F", "#{pane_pid}", "-n", strings.TrimPrefix(win, "it:"), "-c", dir, "-e", "PWD=" + dir, "--"}, argv...)...)
	var pid int
	if _, err := fmt.Sscanf(strings.TrimSpace(out), "%d", &pid); err != nil {
		tm.t.Fatalf("pane pid %q: %v", out, err)
	}
	tm.pids = append(tm.pids, pid)
	return win, pid
}

// endGroup waits up to 10 s for the process group pgid to be gone, then
// kills what is left of it and waits up to 5 s more.
func endGroup(pgid int) {
	gone := func(d time.Duration) bool {
		for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
			if syscall.Kill(-pgid, 0) == syscall.ESRCH {
				return true
			}
			if time.Now().After(deadline) {
				return false
			}
		}
	}
	if !gone(10 * time.Second) {
		syscall.Kill(-pgid, syscall.SIGKILL)
		gone(5 * time.Second)
	}
}

func (tm *term) screen(win string) string { return tm.tmux("capture-pane", "-p", "-t", win) }

// exited says how the agent in win ended ("exit status 1", "signal 9"), or
// "" while it runs.
func (tm *term) exited(win string) string {
	tm.t.Helper()
	out := tm.tmux("display-message", "-p", "-t", win, "#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}")
	dead, rest, _ := strings.Cut(strings.TrimSpace(out), ":")
	status, signal, _ := strings.Cut(rest, ":")
	switch {
	case dead != "1":
		return ""
	case signal != "" && signal != "0":
		return "signal " + signal
	case status != "":
		return "exit status " + status
	}
	return "exited"
}

// failIfExited ends the test when the agent in win is gone, with how it
// ended and what it last showed.
func (tm *term) failIfExited(win, doing string) {
	tm.t.Helper()
	if how := tm.exited(win); how != "" {
		// tmux scrolls a dead pane's screen into its history to say so.
		last := tm.tmux("capture-pane", "-p", "-S", "-200", "-t", win)
		tm.t.Fatalf("%s: the agent ended (%s); its last screen:\n%s", doing, how, strings.TrimRight(last, "\n"))
	}
}

func (tm *term) waitDrawn(win string) {
	tm.t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for strings.TrimSpace(tm.screen(win)) == "" {
		tm.failIfExited(win, "before drawing")
		if time.Now().After(deadline) {
			tm.t.Fatalf("%s never drawn", win)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
}

// typeLine types text and Enter, as a person does.
func (tm *term) typeLine(win, text string) {
	tm.t.Helper()
	tm.tmux("send-keys", "-t", win, "-l", text)
	time.Sleep(300 * time.Millisecond)
	tm.tmux("send-keys", "-t", win, "Enter")
}

// scratch is a user's HOME with an agent configured for the fake model,
// an agentctl home, and the environment the agent runs with.
type scratch struct {
	home, state, agentctlHome, proj string
	env                             []string
}

func newScratch(t *testing.T) *scratch {
	t.Helper()
	home := t.TempDir()
	// Short: a unix socket's path is bounded.
	ah, err := os.MkdirTemp("", "ah")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ah) })
	proj, _ := filepath.EvalSymlinks(t.TempDir())
	s := &scratch{home: home, state: filepath.Join(ah, "integrations"), agentctlHome: ah, proj: proj}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "CODEX_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "PI_CODING_AGENT_DIR", "OPENCODE_CONFIG_DIR", "TMUX":
			continue
		}
		if strings.HasPrefix(k, "AGENTCTL_") && k != "AGENTCTL_AGENTS_DIR" {
			continue
		}
		s.env = append(s.env, kv)
	}
	s.env = append(s.env, "HOME="+home, "TERM=xterm-256color", "GORACE=atexit_sleep_ms=0")
	return s
}

// hookEnv is the Env an integration installs with: the hook is this test
// binary as TestHookStub, or bin when given.
func (s *scratch) hookEnv(bin ...string) Env {
	hook := []string{os.Args[0], "-test.run=^TestHookStub$", "hook", "--home", s.agentctlHome}
	if len(bin) > 0 {
		hook = bin
	}
	return Env{UserHome: s.home, StateDir: s.state, Hook: hook}
}

// payloadOf decodes a report's JSON.
func payloadOf(t *testing.T, r report) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("report %s is not JSON: %v: %s", r.Event, err, r.Body)
	}
	return m
}

// saveCapture keeps a real report for the adapters' fuzz seeds when
// AGENTCTL_CAPTURE_HOOKS names a folder.
func saveCapture(t *testing.T, r report) {
	dir := os.Getenv("AGENTCTL_CAPTURE_HOOKS")
	if dir == "" {
		return
	}
	name := fmt.Sprintf("%s-%s-%d.json", r.Agent, r.Event, r.At.UnixNano())
	if err := os.WriteFile(filepath.Join(dir, name), r.Body, 0o644); err != nil {
		t.Log(err)
	}
}
