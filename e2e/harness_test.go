// Package e2e drives the real agentctl binary: a real service on a real
// unix socket, real sessions under real ptys.
package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/proc"
)

// agentctlBin is the binary built once for the whole package by TestMain.
var agentctlBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentctl-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	agentctlBin = filepath.Join(dir, "agentctl")
	buildArgs := []string{"build", "-o", agentctlBin}
	if raceBuild {
		buildArgs = append(buildArgs, "-race")
	}
	build := exec.Command("go", append(buildArgs, "../cmd/agentctl")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build agentctl:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Env is one isolated agentctl installation: its own AGENTCTL_HOME (short,
// so socket paths stay under the system limit), its own service, and a HOME
// of its own, so no agent store of the machine's user is read.
type Env struct {
	T    *testing.T
	Home string
	Bin  string
	// Vars is the environment every command runs with.
	Vars []string
}

// NewEnv makes an installation that is torn down with the test: every
// session still running is force-stopped and the service shut down.
func NewEnv(t *testing.T) *Env {
	t.Helper()
	home, err := os.MkdirTemp("", "ac")
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{T: t, Home: home, Bin: agentctlBin}
	userHome := t.TempDir()
	e.Vars = append(isolatedEnviron(), "AGENTCTL_HOME="+home, "HOME="+userHome)
	if raceBuild && os.Getenv("GORACE") == "" {
		// A race-detector build sleeps 1 s before it exits (time for
		// other goroutines to report); every CLI command of every test
		// paid it.
		e.Setenv("GORACE", "atexit_sleep_ms=50")
	}
	t.Cleanup(e.teardown)
	return e
}

// storeVars point agents (and so agentctl's adapters) at a store other
// than the one under HOME; a test environment must not inherit them.
var storeVars = []string{"CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "PI_CODING_AGENT_DIR", "OPENCODE_CONFIG_DIR"}

// isolatedEnviron is this process's environment less what points at the
// machine user's agent stores.
func isolatedEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(storeVars, k) && !strings.HasPrefix(k, "AGENTCTL_") {
			out = append(out, kv)
		}
	}
	return out
}

func (e *Env) teardown() {
	var list api.SessionList
	if out, _, code := e.Run("list", "--json"); code == 0 && json.Unmarshal([]byte(out), &list) == nil {
		for _, s := range list.Sessions {
			if s.Origin == api.OriginLaunched && s.Status == api.StatusRunning {
				e.Run("stop", "--force", s.ID)
			}
		}
	}
	e.Run("daemon", "stop")
	if !e.T.Failed() {
		os.RemoveAll(e.Home)
	} else {
		e.T.Logf("kept AGENTCTL_HOME %s for inspection", e.Home)
	}
}

// Setenv adds or replaces a variable in the commands' environment.
func (e *Env) Setenv(k, v string) {
	e.Vars = append(e.Vars, k+"="+v)
}

// Command builds an agentctl command without running it.
func (e *Env) Command(args ...string) *exec.Cmd {
	cmd := exec.Command(e.Bin, args...)
	cmd.Env = e.Vars
	return cmd
}

// Run runs agentctl and returns its stdout, stderr and exit code.
func (e *Env) Run(args ...string) (string, string, int) {
	e.T.Helper()
	cmd := e.Command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if ok := asExitError(err, &ee); !ok {
			e.T.Fatalf("run agentctl %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return out.String(), errb.String(), code
}

func asExitError(err error, target **exec.ExitError) bool {
	ee, ok := err.(*exec.ExitError)
	if ok {
		*target = ee
	}
	return ok
}

// MustRun runs agentctl, fails the test unless it exits 0, and returns
// stdout with surrounding space trimmed.
func (e *Env) MustRun(args ...string) string {
	e.T.Helper()
	out, errOut, code := e.Run(args...)
	if code != 0 {
		e.T.Fatalf("agentctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return strings.TrimSpace(out)
}

// JSON runs agentctl with args and decodes its stdout into v.
func (e *Env) JSON(v any, args ...string) {
	e.T.Helper()
	out := e.MustRun(args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		e.T.Fatalf("agentctl %v: decode %q: %v", args, out, err)
	}
}

// Start runs `agentctl run --json [flags] -- argv...` and returns the session.
func (e *Env) Start(flagsAndArgv ...string) api.Session {
	e.T.Helper()
	var s api.Session
	e.JSON(&s, append([]string{"run", "--json"}, flagsAndArgv...)...)
	return s
}

// Session returns `agentctl status --json ID`.
func (e *Env) Session(id string) api.Session {
	e.T.Helper()
	var s api.Session
	e.JSON(&s, "status", "--json", id)
	return s
}

// Launched returns the sessions of `agentctl list --json` (with extra
// flags) that this installation started: what a test counts. Sessions the
// adapters discover depend on what else runs on the machine.
func (e *Env) Launched(flags ...string) []api.Session {
	e.T.Helper()
	var out []api.Session
	for _, s := range e.List(flags...).Sessions {
		if s.Origin == api.OriginLaunched {
			out = append(out, s)
		}
	}
	return out
}

// List returns `agentctl list --json` with extra flags.
func (e *Env) List(flags ...string) api.SessionList {
	e.T.Helper()
	var l api.SessionList
	e.JSON(&l, append([]string{"list", "--json"}, flags...)...)
	return l
}

// WaitFor polls cond until it is true or timeout passes.
func WaitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// WaitForAgent polls cond, what an agent shows once it is up (its first
// screen) or done (its session ended), while pid (the agent) works. A busy
// machine gives an agent less CPU per second, so the bound is on the CPU
// time pid and its descendants have used (agentCPU, far more than any
// agent takes to draw or to answer a turn of the fake model) rather than
// on the time passed; agentCeiling bounds an agent stuck without using
// any, and agentGrace what follows pid's end.
func WaitForAgent(t *testing.T, pid int, what string, cond func() bool) {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("no pid to wait for %s", what)
	}
	begun, looked := time.Now(), time.Now()
	var ended time.Time
	for !cond() {
		if time.Since(looked) >= time.Second {
			looked = time.Now()
			used, alive := treeCPU(pid)
			if !alive && ended.IsZero() {
				ended = time.Now()
			}
			switch {
			case !ended.IsZero() && time.Since(ended) > agentGrace:
				t.Fatalf("pid %d ended %s ago, waiting for %s", pid, time.Since(ended).Round(time.Second), what)
			case used > agentCPU || time.Since(begun) > agentCeiling:
				t.Fatalf("timed out after %s (pid %d used %s of CPU) waiting for %s", time.Since(begun).Round(time.Second), pid, used.Round(time.Millisecond), what)
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// agentCPU is the CPU time an agent may use before what WaitForAgent waits
// for; the slowest, OpenCode, draws after a few seconds of it.
// agentCeiling bounds the wait whatever the CPU used, agentGrace the wait
// after the agent's end.
const (
	agentCPU     = 60 * time.Second
	agentCeiling = 5 * time.Minute
	agentGrace   = 10 * time.Second
)

// treeCPU is the CPU time pid and its descendants have used, and whether
// pid is alive.
func treeCPU(pid int) (time.Duration, bool) {
	t, err := proc.Table()
	if err != nil {
		return 0, true
	}
	var used time.Duration
	alive := false
	for _, p := range t {
		if p.PID == pid {
			used, alive = p.CPU, !p.Zombie
		}
	}
	for _, p := range proc.Descendants(t, pid) {
		used += p.CPU
	}
	return used, alive
}

// WaitStatus waits until the session reaches status and returns it.
func (e *Env) WaitStatus(id string, status api.Status, timeout time.Duration) api.Session {
	e.T.Helper()
	var s api.Session
	WaitFor(e.T, timeout, fmt.Sprintf("session %s to be %s", id, status), func() bool {
		s = e.Session(id)
		return s.Status == status
	})
	return s
}

// DaemonPID returns the running service's pid.
func (e *Env) DaemonPID() int {
	e.T.Helper()
	var st api.DaemonStatus
	e.JSON(&st, "daemon", "status", "--json")
	return st.PID
}

// SessionDir is a session's folder.
func (e *Env) SessionDir(id string) string { return filepath.Join(e.Home, "sessions", id) }

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// killPID sends sig to a process this test started (through agentctl).
func killPID(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
}

// waitGone waits until pid has exited.
func waitGone(t *testing.T, pid int, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, fmt.Sprintf("pid %d to exit", pid), func() bool { return !alive(pid) })
}

// countLaunched counts the sessions of a list this installation started.
func countLaunched(l api.SessionList) int {
	n := 0
	for _, s := range l.Sessions {
		if s.Origin == api.OriginLaunched {
			n++
		}
	}
	return n
}
