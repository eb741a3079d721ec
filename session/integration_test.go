package session

import (
	"os/exec"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/proc"
)

// liveProcess starts a process that lives for the test.
func liveProcess(t *testing.T) proc.Info {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	p, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// One agent process is one entry of the book however often it reports: its
// burst passes, what goes beyond its rate is refused (CodeTooMany) until
// time refills it; another process has a bucket of its own.
func TestBookRateIsPerProcess(t *testing.T) {
	t.Parallel()
	b := NewBook()
	p, q := liveProcess(t), liveProcess(t)
	now := time.Now()
	kp := bookKey{pid: p.PID, start: p.Start}
	first, err := b.admit(kp, "claude", now)
	if err != nil {
		t.Fatal(err)
	}
	passed := 1
	for range 2 * int(hookBurst) {
		e, err := b.admit(kp, "claude", now)
		if err != nil {
			if api.CodeOf(err) != api.CodeTooMany {
				t.Fatalf("refused with %v, want %s", err, api.CodeTooMany)
			}
			continue
		}
		if e != first {
			t.Fatal("a second entry for one process")
		}
		passed++
	}
	if passed != int(hookBurst) || len(b.procs) != 1 {
		t.Errorf("%d reports passed at once, want the burst %v; %d entries", passed, hookBurst, len(b.procs))
	}
	if _, err := b.admit(kp, "claude", now.Add(time.Second)); err != nil {
		t.Errorf("a second later: %v", err)
	}
	if _, err := b.admit(bookKey{pid: q.PID, start: q.Start}, "claude", now); err != nil {
		t.Errorf("another process: %v", err)
	}
	if _, err := b.admit(kp, "codex", now.Add(time.Hour)); err == nil {
		t.Error("a process that reported as claude reports as codex")
	}
}

// The book's entries die with their process: a tie of an ended process is
// neither listed nor holds its session against another.
func TestBookForgetsEndedProcesses(t *testing.T) {
	t.Parallel()
	b := NewBook()
	live := liveProcess(t)
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, k := range []bookKey{{pid: live.PID, start: live.Start}, {pid: ended.Process.Pid, start: 1}} {
		e, err := b.admit(k, "claude", now)
		if err != nil {
			t.Fatal(err)
		}
		e.tie.NativeID = "0b4c3a8e-2f1d-4e5a-9c7b-6d8e9f0a1b2c"
		if k.pid == live.PID {
			e.tie.NativeID = "1b4c3a8e-2f1d-4e5a-9c7b-6d8e9f0a1b2c"
		}
	}
	if _, held := b.holder("claude", "0b4c3a8e-2f1d-4e5a-9c7b-6d8e9f0a1b2c", bookKey{pid: live.PID, start: live.Start}); held {
		t.Error("an ended process holds its session still")
	}
	ties := b.HookTies("claude")
	if len(ties) != 1 || ties[0].PID != live.PID || len(b.procs) != 1 {
		t.Errorf("ties %+v, entries %d: want the live process's alone", ties, len(b.procs))
	}
	if ties := b.HookTies("codex"); len(ties) != 0 {
		t.Errorf("codex's ties: %+v", ties)
	}
}
