package spawn

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

// standbyPID waits for the Starter's standby monitor and returns its pid.
func standbyPID(t *testing.T, s *Starter) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		m := s.standby
		s.mu.Unlock()
		if m != nil {
			return m.pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no standby monitor started")
	return 0
}

func startSession(t *testing.T, s *Starter, argv ...string) (Record, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "s")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Start(context.Background(), dir, Spec{Record: Record{ID: "s", Argv: argv, Cwd: t.TempDir()}, Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, home.ShimLog))
		t.Fatalf("%v; the monitor's log: %s", err, b)
	}
	t.Cleanup(func() { WaitExitBounded(context.Background(), rec.Shim, 10*time.Second) })
	return rec, dir
}

// A session started through the standby is run by the monitor started
// ahead, logs into its own folder, ends as any other; another standby takes
// its place, and none is left once the Starter's context ends.
func TestStarterHandsTheSessionToTheStandby(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := NewStarter(ctx, os.Args[0], true, slog.New(slog.DiscardHandler))
	first := standbyPID(t, s)

	rec, dir := startSession(t, s, "sh", "-c", "echo from-the-standby; exit 3")
	if rec.Shim.PID != first {
		t.Errorf("the session's monitor is pid %d, want the standby %d", rec.Shim.PID, first)
	}
	if _, err := os.Stat(filepath.Join(dir, home.ShimLog)); err != nil {
		t.Errorf("the standby's log in the session folder: %v", err)
	}
	WaitExitBounded(context.Background(), rec.Shim, 10*time.Second)
	exit, err := ReadExit(dir)
	if err != nil || exit == nil || exit.ExitCode == nil || *exit.ExitCode != 3 {
		t.Fatalf("exit record %+v, %v; want exit code 3", exit, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, home.LogFile)); !strings.Contains(string(b), "from-the-standby") {
		t.Errorf("output log %q", b)
	}

	next := standbyPID(t, s)
	if next == first {
		t.Fatal("no new standby after the first was used")
	}
	id, err := proc.Lookup(next)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	s.Wait()
	WaitExitBounded(context.Background(), id.Identity, 10*time.Second)
	if proc.Alive(id.Identity) {
		t.Errorf("the standby %d outlived its Starter by 10 s", next)
	}
}

// A standby that was killed before it was needed costs nothing but a fresh
// start.
func TestStarterFallsBackWhenTheStandbyIsGone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := NewStarter(ctx, os.Args[0], true, slog.New(slog.DiscardHandler))
	pid := standbyPID(t, s)
	id, err := proc.Lookup(pid)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	WaitExitBounded(context.Background(), id.Identity, 10*time.Second)

	rec, dir := startSession(t, s, "true")
	if rec.Shim.PID == pid {
		t.Fatal("the session names the killed standby as its monitor")
	}
	WaitExitBounded(context.Background(), rec.Shim, 10*time.Second)
	if exit, err := ReadExit(dir); err != nil || exit == nil || exit.ExitCode == nil || *exit.ExitCode != 0 {
		t.Fatalf("exit record %+v, %v; want exit code 0", exit, err)
	}
	cancel()
	s.Wait()
}

// Without a standby, every start is a fresh monitor.
func TestStarterWithoutStandby(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := NewStarter(ctx, os.Args[0], false, slog.New(slog.DiscardHandler))
	rec, dir := startSession(t, s, "true")
	WaitExitBounded(context.Background(), rec.Shim, 10*time.Second)
	if exit, err := ReadExit(dir); err != nil || exit == nil {
		t.Fatalf("exit record %+v, %v", exit, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.standby != nil || s.filling {
		t.Error("a Starter without standby started one")
	}
}

// A monitor whose session folder is removed while the agent runs does not
// outlive the agent: it tries to write the exit record for a bounded time,
// then ends, leaving the agent's end to the service.
func TestMonitorOfAVanishedFolderEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := NewStarter(ctx, os.Args[0], false, slog.New(slog.DiscardHandler))
	rec, dir := startSession(t, s, "sleep", "300")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(rec.Process.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Well past exitRetryFor and the monitor's other bounded waits.
	WaitExitBounded(context.Background(), rec.Shim, 60*time.Second)
	if proc.Alive(rec.Shim) {
		syscall.Kill(rec.Shim.PID, syscall.SIGKILL)
		t.Fatalf("the monitor %d still runs 60 s after its agent ended in a removed folder", rec.Shim.PID)
	}
	cancel()
	s.Wait()
}
