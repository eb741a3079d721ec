package proc

import (
	"context"
	"os/exec"
	"slices"
	"testing"
)

// A snapshot reads a process's argv and identity once: asked again after the
// process is gone, it answers what it read.
func TestSnapshotReadsEachProcessOnce(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	s := NewSnapshot()
	pids, err := s.PIDs()
	if err != nil || !slices.Contains(pids, pid) {
		t.Fatalf("PIDs() = %d pids, %v; want one of them %d", len(pids), err, pid)
	}
	argv, err := s.Cmdline(pid)
	if err != nil || !slices.Equal(argv, []string{"sleep", "30"}) {
		t.Fatalf("Cmdline = %q, %v", argv, err)
	}
	info, err := s.Lookup(pid)
	if err != nil || info.PID != pid || info.Start == 0 {
		t.Fatalf("Lookup = %+v, %v", info, err)
	}

	cmd.Process.Kill()
	cmd.Wait()
	if _, err := Lookup(pid); err == nil {
		t.Skip("the pid was reused at once")
	}
	if again, err := s.Cmdline(pid); err != nil || !slices.Equal(again, argv) {
		t.Errorf("second Cmdline = %q, %v; want the first answer", again, err)
	}
	if again, err := s.Lookup(pid); err != nil || again != info {
		t.Errorf("second Lookup = %+v, %v; want the first answer", again, err)
	}
	if fresh, err := NewSnapshot().Cmdline(pid); err == nil {
		t.Errorf("a new snapshot read argv %q of a process that is gone", fresh)
	}
}

func TestSnapshotFromContext(t *testing.T) {
	s := NewSnapshot()
	if got := SnapshotFrom(WithSnapshot(context.Background(), s)); got != s {
		t.Error("the context's snapshot was not returned")
	}
	if got := SnapshotFrom(context.Background()); got == nil || got == s {
		t.Error("a context without a snapshot should give a new one")
	}
}
