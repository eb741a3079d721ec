package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tmuxServer is a real terminal: a tmux server on a socket of its own,
// whose panes run with the environment given, killed with the test. The
// scenarios by hand, the live view and Codex's TUIs each drive one.
type tmuxServer struct {
	t    *testing.T
	sock string
	env  []string
}

// newTmuxServer skips the test, saying why it needs a terminal, when tmux
// is not installed. The server starts with the first session made on it.
func newTmuxServer(t *testing.T, env []string, why string) *tmuxServer {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skipf("tmux is not installed (.ci/run installs it): %s", why)
	}
	// A short folder: a socket's path is limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "tm")
	if err != nil {
		t.Fatal(err)
	}
	ts := &tmuxServer{t: t, sock: filepath.Join(dir, "s"), env: append(append([]string(nil), env...), "TERM=xterm-256color")}
	t.Cleanup(func() {
		ts.run("kill-server")
		os.RemoveAll(dir)
	})
	return ts
}

// run runs one tmux command against the server.
func (ts *tmuxServer) run(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-S", ts.sock, "-f", "/dev/null"}, args...)...)
	cmd.Env = ts.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// tmux runs one tmux command and fails the test if it fails.
func (ts *tmuxServer) tmux(args ...string) string {
	ts.t.Helper()
	out, err := ts.run(args...)
	if err != nil {
		ts.t.Fatal(err)
	}
	return out
}

// panePID is the pid of the process pane target runs.
func (ts *tmuxServer) panePID(target string) int {
	ts.t.Helper()
	out := ts.tmux("display-message", "-p", "-t", target, "#{pane_pid}")
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		ts.t.Fatalf("pid of pane %s: %q: %v", target, out, err)
	}
	return pid
}

// capture is what pane target shows now ("" if it is gone).
func (ts *tmuxServer) capture(target string) string {
	out, _ := ts.run("capture-pane", "-p", "-t", target)
	return out
}

// typeLine types text as a person would, then Enter: a TUI takes a burst
// of keys as a paste (Codex's), in which an Enter is a newline.
func (ts *tmuxServer) typeLine(target, text string) {
	ts.t.Helper()
	ts.tmux("send-keys", "-t", target, "-l", text)
	time.Sleep(500 * time.Millisecond)
	ts.tmux("send-keys", "-t", target, "Enter")
}
