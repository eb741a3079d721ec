package e2e

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/agentctl/agentctl/api"
)

// ptyOutput collects what a program writes to its terminal.
type ptyOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (p *ptyOutput) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.Write(b)
}

func (p *ptyOutput) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// attachViewer runs `agentctl attach` under a real pty, as a person would.
func attachViewer(t *testing.T, e *Env, id string) (*os.File, *ptyOutput, chan error) {
	t.Helper()
	cmd := e.Command("attach", id)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := &ptyOutput{}
	go io.Copy(out, tty)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		tty.Close()
		cmd.Process.Kill()
	})
	return tty, out, done
}

func TestAttachInputOutputDetach(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	s := e.Start("--", "sh", "-c", `stty -echo; echo ready; while read l; do echo "echo:$l"; done`)
	WaitFor(t, 10*time.Second, "the session to be ready", func() bool {
		return strings.Contains(e.MustRun("logs", "-n", "0", s.ID), "ready")
	})
	tty1, out1, done1 := attachViewer(t, e, s.ID)
	_, out2, done2 := attachViewer(t, e, s.ID)
	WaitFor(t, 10*time.Second, "both viewers to attach", func() bool {
		return strings.Contains(out1.String(), "attached") && strings.Contains(out2.String(), "attached")
	})
	tty1.Write([]byte("hello agent\r"))
	WaitFor(t, 10*time.Second, "the echo to reach both viewers", func() bool {
		return strings.Contains(out1.String(), "echo:hello agent") && strings.Contains(out2.String(), "echo:hello agent")
	})
	tty1.Write([]byte{0x1d}) // Ctrl-]
	select {
	case err := <-done1:
		if err != nil {
			t.Fatalf("attach after detach: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("attach did not return after the detach key")
	}
	if got := e.Session(s.ID); got.Status != api.StatusRunning {
		t.Fatalf("after detaching the session is %s, want running", got.Status)
	}
	// The second viewer sees the end of the session.
	e.MustRun("stop", s.ID)
	select {
	case <-done2:
	case <-time.After(10 * time.Second):
		t.Fatal("the second viewer did not notice the session end")
	}
	if !strings.Contains(out2.String(), "ended") {
		t.Errorf("second viewer output %q lacks the end notice", out2.String())
	}
}

// A viewer whose service goes away (daemon restart) says so and exits 1;
// the session goes on.
func TestAttachThatLosesItsServiceSaysSo(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	s := e.Start("--", "sh", "-c", "echo ready; sleep 300")
	_, out, done := attachViewer(t, e, s.ID)
	WaitFor(t, 10*time.Second, "the viewer to attach", func() bool { return strings.Contains(out.String(), "attached") })
	e.MustRun("daemon", "restart")
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("attach after the service restarted: %v, want exit status 1", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("attach did not return after the service restarted")
	}
	if !strings.Contains(out.String(), "connection to the agentctl service ended") {
		t.Errorf("attach said %q", out.String())
	}
	if st := e.Session(s.ID).Status; st != api.StatusRunning {
		t.Fatalf("the session is %s after the service restarted", st)
	}
}
