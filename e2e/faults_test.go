package e2e

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/creack/pty"
)

// A session whose monitor is frozen (SIGSTOP) or killed is still stopped,
// within a bound, with nothing of it left running: the service kills the
// tree itself from the identities recorded at the start, including a
// setsid child the group signal would miss. send to a frozen monitor fails
// fast, naming it.
func TestStopWithAFrozenOrDeadMonitor(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	for _, tc := range []struct {
		name  string
		fault syscall.Signal
		flags []string
	}{
		{"frozen monitor, force", syscall.SIGSTOP, []string{"--force"}},
		{"frozen monitor, graceful", syscall.SIGSTOP, []string{"--timeout", "1s"}},
		{"killed monitor", syscall.SIGKILL, []string{"--timeout", "1s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := e.Start("--", "sh", "-c", `setsid sh -c 'trap "" TERM HUP; sleep 300' & echo ready; sleep 300`)
			WaitFor(t, 10*time.Second, "the script to be ready", func() bool {
				b, _ := os.ReadFile(filepath.Join(e.SessionDir(s.ID), "output.log"))
				return bytes.Contains(b, []byte("ready"))
			})
			shim := shimPID(t, e, s.ID)
			tree := descendantsOf(t, shim)
			if len(tree) < 2 {
				t.Fatalf("want the agent and its setsid child under the monitor, got %v", tree)
			}
			killPID(t, shim, tc.fault)
			defer syscall.Kill(shim, syscall.SIGKILL)
			if tc.fault == syscall.SIGSTOP {
				began := time.Now()
				_, stderr, code := e.Run("send", s.ID, "hello")
				if code == 0 || !strings.Contains(stderr, "not answering") || time.Since(began) > 5*time.Second {
					t.Errorf("send to a frozen monitor: exit %d after %s, %q; want a fast failure naming it", code, time.Since(began), stderr)
				}
			}
			began := time.Now()
			var final api.Session
			e.JSON(&final, append(append([]string{"stop", "--json"}, tc.flags...), s.ID)...)
			took := time.Since(began)
			if !final.Status.Ended() {
				t.Errorf("after stop the session is %s", final.Status)
			}
			if took > 20*time.Second {
				t.Errorf("stop took %s", took)
			}
			for _, pid := range append(tree, shim) {
				if alive(pid) {
					t.Errorf("pid %d of the session survived the stop", pid)
				}
			}
		})
	}
}

// send takes input of any size (in pieces the monitor takes one by one).
// The terminal is raw: in canonical mode the line discipline itself drops
// input beyond its buffer, whoever writes it.
func TestSendOfAnySize(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	const size = 5 << 20
	s := e.Start("--", "sh", "-c", "stty raw -echo; echo ready; head -c "+strconv.Itoa(size)+" | wc -c; sleep 1")
	WaitFor(t, 10*time.Second, "the script to be ready", func() bool {
		b, _ := os.ReadFile(filepath.Join(e.SessionDir(s.ID), "output.log"))
		return bytes.Contains(b, []byte("ready"))
	})
	line := strings.Repeat("x", 99) + "\n"
	data := strings.Repeat(line, size/len(line)+1)[:size]
	path := filepath.Join(t.TempDir(), "input")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd := e.Command("send", s.ID, "-")
	cmd.Stdin = in
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("send of %d bytes: %v %s", size, err, out)
	}
	e.WaitStatus(s.ID, api.StatusExited, 30*time.Second)
	out := e.MustRun("logs", s.ID)
	if !strings.Contains(out, strconv.Itoa(size)) {
		t.Errorf("the session read other than %d bytes:\n%s", size, out)
	}
}

// stop --timeout 0 kills at once; a negative grace is a usage error.
func TestStopTimeoutZeroKillsAtOnce(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	s := e.Start("--", "sh", "-c", `trap "" TERM; echo ready; sleep 300`)
	WaitFor(t, 10*time.Second, "the script to be ready", func() bool {
		b, _ := os.ReadFile(filepath.Join(e.SessionDir(s.ID), "output.log"))
		return bytes.Contains(b, []byte("ready"))
	})
	if _, _, code := e.Run("stop", "--timeout", "-1s", s.ID); code != 2 {
		t.Errorf("stop --timeout -1s: exit %d, want 2 (usage)", code)
	}
	began := time.Now()
	var final api.Session
	e.JSON(&final, "stop", "--json", "--timeout", "0", s.ID)
	if took := time.Since(began); took > 3*time.Second || final.Status != api.StatusKilled {
		t.Errorf("stop --timeout 0: %s after %s, want killed at once", final.Status, took)
	}
}

// A signal to an attached client detaches it quietly; the session goes on.
func TestAttachDetachesOnSignals(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	s := e.Start("--", "sh", "-c", `echo ready; sleep 300`)
	WaitFor(t, 10*time.Second, "the session to be ready", func() bool {
		return strings.Contains(e.MustRun("logs", "-n", "0", s.ID), "ready")
	})
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := e.Command("attach", s.ID)
			tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
			if err != nil {
				t.Fatal(err)
			}
			defer tty.Close()
			out := &ptyOutput{}
			go io.Copy(out, tty)
			WaitFor(t, 10*time.Second, "attached", func() bool { return strings.Contains(out.String(), "attached to") })
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("attach after %s: %v (want a clean detach)", sig, err)
				}
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("attach ignored %s", sig)
			}
			if got := e.Session(s.ID); got.Status != api.StatusRunning {
				t.Errorf("the session is %s after its viewer got %s", got.Status, sig)
			}
		})
	}
}

// A running session whose launch.json was truncated stays visible and
// stoppable: its monitor knows its record and it is written again.
func TestDamagedRecordOfARunningSession(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	s := e.Start("--", "sleep", "300")
	record := filepath.Join(e.SessionDir(s.ID), "launch.json")
	if err := os.Truncate(record, 0); err != nil {
		t.Fatal(err)
	}
	got := e.Session(s.ID)
	if got.Status != api.StatusRunning || len(got.Warnings) == 0 || !strings.Contains(strings.Join(got.Warnings, " "), "written again") {
		t.Fatalf("status after launch.json was truncated: %s %q; want running, with a warning", got.Status, got.Warnings)
	}
	if l := e.Launched(); len(l) != 1 {
		t.Errorf("list shows %d sessions, want the damaged one", len(l))
	}
	var final api.Session
	e.JSON(&final, "stop", "--json", s.ID)
	if !final.Status.Ended() {
		t.Errorf("after stop the session is %s", final.Status)
	}
}

// A huge launch.json is not read whole: the list stays fast and says which
// record it skipped.
func TestHugeRecordIsNotReadWhole(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	s := e.Start("--", "true")
	e.WaitStatus(s.ID, api.StatusExited, 10*time.Second)
	dir := filepath.Join(e.Home, "sessions", "01hugerecord00000000000000")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	huge := `{"id":"01hugerecord00000000000000","argv":["x"],"prompt":"` + strings.Repeat("p", 50<<20) + `"}`
	if err := os.WriteFile(filepath.Join(dir, "launch.json"), []byte(huge), 0o600); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	l := e.List("-a")
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("list -a took %s with a 50 MB record", took)
	}
	if n := countLaunched(l); n != 1 || !strings.Contains(strings.Join(l.Warnings, " "), "over the") {
		t.Errorf("list -a: %d sessions, warnings %q; want the good one and a warning naming the huge record", n, l.Warnings)
	}
}
