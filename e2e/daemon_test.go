package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `daemon start` with a service running says so and starts no second one:
// the running service's log shows one start, and `daemon stop` then waits
// for that one service to be gone.
func TestDaemonStartWhenRunningStartsNoSecondService(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	first := e.MustRun("daemon", "start")
	pid := e.DaemonPID()
	second := e.MustRun("daemon", "start")
	if !strings.Contains(second, "already running") || e.DaemonPID() != pid {
		t.Fatalf("second start said %q (first %q), pid %d then %d; want the running one reported", second, first, pid, e.DaemonPID())
	}
	log, err := os.ReadFile(filepath.Join(e.Home, "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "agentctl service started"); n != 1 {
		t.Errorf("daemon.log holds %d starts, want 1:\n%s", n, log)
	}
	if strings.Contains(string(log), "already running") {
		t.Errorf("a second service was spawned and refused:\n%s", log)
	}
	e.MustRun("daemon", "stop")
	if alive(pid) {
		t.Errorf("daemon stop returned with the service (pid %d) still alive", pid)
	}
}

// A stopped service (SIGSTOP: the kernel still accepts connections) makes
// a command fail fast with a message naming the service and the fix, not
// hang; once continued, everything works again.
func TestFrozenServiceIsNamedNotWaitedFor(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	e.MustRun("daemon", "start")
	pid := e.DaemonPID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	began := time.Now()
	_, stderr, code := e.Run("list")
	took := time.Since(began)
	if code != 1 || !strings.Contains(stderr, "not answering") || !strings.Contains(stderr, fmt.Sprintf("kill -CONT %d", pid)) {
		t.Fatalf("list against a stopped service: exit %d after %s, %q; want exit 1 naming pid %d and the fix", code, took, stderr, pid)
	}
	t.Logf("answered in %s", took)
	syscall.Kill(pid, syscall.SIGCONT)
	e.MustRun("list")
}

// What runs elsewhere on the machine does not change what a test counts:
// an agent-like process outside the installation (a "claude --session-id"
// of another HOME) may be discovered, but the sessions this installation
// launched are counted alone.
func TestCountsIgnoreAgentsElsewhere(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	other := &exec.Cmd{Path: sh, Args: []string{"claude", "-c", "sleep 60; true", "claude", "--session-id", "0b6c1b1e-0000-4000-8000-0000000000aa"}, Dir: t.TempDir()}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	e := NewEnv(t)
	s := e.Start("--", "sleep", "30")
	all := e.List("-a")
	t.Logf("list -a shows %d sessions, %d of them launched here", len(all.Sessions), countLaunched(all))
	if l := e.Launched(); len(l) != 1 || l[0].ID != s.ID {
		t.Errorf("launched sessions = %+v, want only %s", l, s.ID)
	}
	// That claude runs under the machine's HOME, not this service's: it is
	// another store's, and not listed here.
	for _, x := range all.Sessions {
		if x.NativeID == "0b6c1b1e-0000-4000-8000-0000000000aa" || (x.PID == other.Process.Pid && x.PID != 0) {
			t.Errorf("a claude of another HOME is listed: %+v", x)
		}
	}
}
