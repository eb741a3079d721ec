package e2e

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/proc"
)

// These tests run `agentctl run --wait` the way OpenClaw's exec tool runs a
// command: a shell that leads its own session and process group, stdout and
// stderr a pipe the tool reads to the end, and on timeout SIGTERM to the
// whole group, then SIGKILL. Whatever happens to that group, the session
// must carry on, and nothing agentctl started may keep the tool's pipe open
// (the exec would never complete, and the gateway's restarts would hang).

// A secret in the caller's environment, as the gateway passes its token to
// every exec: it must never reach disk.
const execSecret = "gateway-secret-5f0c1d"

// execCaller is one exec-tool call.
type execCaller struct {
	cmd  *exec.Cmd
	pgid int
	// inode is the pipe's inode: any process holding either end shows
	// pipe:[inode] in /proc/PID/fd.
	inode uint64
	r     *os.File

	mu  sync.Mutex
	out bytes.Buffer
	eof chan struct{} // closed when every writer has closed the pipe
	at  time.Time     // when that happened
}

// startExec runs `sh -c "PREFIX <agentctl> run --wait ARGS SUFFIX"` as the
// exec tool does.
func startExec(t *testing.T, e *Env, shellPrefix, shellSuffix string, runArgs ...string) *execCaller {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(r.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	quoted := []string{text.ShellQuote(e.Bin), "run", "--wait"}
	for _, a := range runArgs {
		quoted = append(quoted, text.ShellQuote(a))
	}
	script := shellPrefix + strings.Join(quoted, " ") + shellSuffix
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append(append([]string(nil), e.Vars...),
		"OPENCLAW_SHELL=exec", "OPENCLAW_CLI=1", "OPENCLAW_GATEWAY_PORT=18789",
		"OPENCLAW_GATEWAY_TOKEN="+execSecret)
	cmd.Stdin = nil // /dev/null
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close() // only the caller's group holds the write end now
	c := &execCaller{cmd: cmd, pgid: cmd.Process.Pid, inode: st.Ino, r: r, eof: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			c.mu.Lock()
			c.out.Write(buf[:n])
			c.mu.Unlock()
			if err != nil {
				c.mu.Lock()
				c.at = time.Now()
				c.mu.Unlock()
				close(c.eof)
				return
			}
		}
	}()
	t.Cleanup(func() {
		syscall.Kill(-c.pgid, syscall.SIGKILL)
		cmd.Wait()
		r.Close()
	})
	return c
}

func (c *execCaller) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// waitOutput waits until the caller's pipe has carried s.
func (c *execCaller) waitOutput(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, fmt.Sprintf("%q on the exec's pipe", s), func() bool { return strings.Contains(c.output(), s) })
}

// killGroup does what the exec tool does on timeout: SIGTERM to the group,
// SIGKILL after grace if anything of it is left. It returns when the group
// leader has been reaped, with the time the first signal was sent.
func (c *execCaller) killGroup(t *testing.T, first syscall.Signal, grace time.Duration) time.Time {
	t.Helper()
	sent := time.Now()
	syscall.Kill(-c.pgid, first)
	if first != syscall.SIGKILL {
		deadline := time.Now().Add(grace)
		for groupAlive(c.pgid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if groupAlive(c.pgid) {
			syscall.Kill(-c.pgid, syscall.SIGKILL)
		}
	}
	c.cmd.Wait()
	return sent
}

// groupAlive reports whether any live process is in process group pgid.
func groupAlive(pgid int) bool {
	table, err := proc.Table()
	if err != nil {
		return false
	}
	for _, p := range table {
		if p.PGID == pgid && !p.Zombie {
			return true
		}
	}
	return false
}

// holders returns the pids among pids that hold an end of the pipe.
func holders(pids []int, inode uint64) []int {
	want := fmt.Sprintf("pipe:[%d]", inode)
	var out []int
	for _, pid := range pids {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			continue
		}
		for _, en := range ents {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, en.Name())); err == nil && l == want {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// sessionByLabel finds the session a caller started, if it got that far.
func sessionByLabel(t *testing.T, e *Env, label string) *api.Session {
	t.Helper()
	l := e.List("-a", "--label", label)
	switch len(l.Sessions) {
	case 0:
		return nil
	case 1:
		return &l.Sessions[0]
	}
	t.Fatalf("label %s matches %d sessions", label, len(l.Sessions))
	return nil
}

// checkDetached verifies that the session's processes and the service are
// outside the caller's session and process group and hold none of its
// descriptors.
func checkDetached(t *testing.T, e *Env, c *execCaller, s api.Session) {
	t.Helper()
	daemon := e.DaemonPID()
	shim := shimPID(t, e, s.ID)
	pids := append([]int{daemon, shim}, descendantsOf(t, shim)...)
	if h := holders(pids, c.inode); len(h) > 0 {
		t.Errorf("pids %v (service %d, shim %d and its children) hold the exec's pipe", h, daemon, shim)
	}
	for _, pid := range pids {
		info, err := proc.Lookup(pid)
		if err != nil {
			continue
		}
		if info.PGID == c.pgid || info.SID == c.pgid {
			t.Errorf("pid %d is in the exec's process group or session (pgid %d, sid %d)", pid, info.PGID, info.SID)
		}
	}
}

// gatedScript prints ticks until the file gate exists (two minutes at
// most), then exits with code: the test decides when the session ends, so a
// slow machine cannot end it before the checks.
func gatedScript(gate string, code int) string {
	return fmt.Sprintf(`echo session-started; i=0; while [ ! -e %s ] && [ $i -lt 1200 ]; do echo tick $i; i=$((i+1)); sleep 0.1; done; echo session-ending; exit %d`, text.ShellQuote(gate), code)
}

func TestRunWaitFromExecSurvivesGroupKill(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// shellPrefix and shellSuffix run in the caller's shell around
		// agentctl.
		shellPrefix, shellSuffix string
		// killAfter: kill once this text is on the pipe ("" = at once after
		// the delay).
		killAfter string
		delay     time.Duration
		first     syscall.Signal
		// mustStart: the session must exist (the kill came after the start).
		mustStart bool
	}{
		{name: "TERM while the request is in flight", delay: 30 * time.Millisecond, first: syscall.SIGTERM},
		{name: "KILL while the request is in flight", delay: 120 * time.Millisecond, first: syscall.SIGKILL},
		{name: "TERM while streaming", killAfter: "session-started", first: syscall.SIGTERM, mustStart: true},
		{name: "KILL while streaming", killAfter: "tick 3", first: syscall.SIGKILL, mustStart: true},
		// The shell survives TERM and keeps the pipe open, so only the
		// SIGKILL that follows ends the exec.
		{name: "TERM ignored by the shell, then KILL", shellPrefix: "trap '' TERM; ", shellSuffix: "; sleep 30", killAfter: "tick 1", first: syscall.SIGTERM, mustStart: true},
	}
	// And a couple of points picked at random in the request's window.
	for i := range 2 {
		d := time.Duration(rand.Intn(250)) * time.Millisecond
		cases = append(cases, struct {
			name                     string
			shellPrefix, shellSuffix string
			killAfter                string
			delay                    time.Duration
			first                    syscall.Signal
			mustStart                bool
		}{name: fmt.Sprintf("TERM at random point %d (%s)", i, d), delay: d, first: syscall.SIGTERM})
	}
	// One service for all cases; the first call auto-starts it from inside
	// the caller's group, the harshest place to start it from.
	e := NewEnv(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			label := fmt.Sprintf("case=%d-%d", i, time.Now().UnixNano())
			gate := filepath.Join(t.TempDir(), "gate")
			c := startExec(t, e, tc.shellPrefix, tc.shellSuffix, "--label", label, "--label", "origin=openclaw-exec", "--", "sh", "-c", gatedScript(gate, 7))
			if tc.killAfter != "" {
				c.waitOutput(t, tc.killAfter, 30*time.Second)
				// The scan must see the caller's own hold on the pipe, or
				// finding no holder later would prove nothing.
				if h := holders([]int{c.pgid}, c.inode); len(h) != 1 {
					t.Fatalf("pipe scan does not see the caller's shell %d holding pipe:[%d]", c.pgid, c.inode)
				}
			}
			time.Sleep(tc.delay)
			signalled := c.killGroup(t, tc.first, time.Second)

			// The pipe closes as soon as the caller's group is gone: nothing
			// agentctl started holds it.
			select {
			case <-c.eof:
				t.Logf("pipe closed %s after the first signal", c.at.Sub(signalled).Round(time.Millisecond))
			case <-time.After(2 * time.Second):
				t.Fatalf("the exec's pipe is still open 2s after its group died; output so far:\n%s", c.output())
			}

			var s *api.Session
			if tc.mustStart {
				s = sessionByLabel(t, e, label)
				if s == nil {
					t.Fatalf("no session with label %s", label)
				}
			} else {
				// Killed mid-request: either the service never got it, or the
				// session started and must be unharmed. Give a request that was
				// already sent time to finish.
				time.Sleep(500 * time.Millisecond)
				if s = sessionByLabel(t, e, label); s == nil {
					t.Logf("killed before the service took the request: no session, as expected")
					return
				}
			}
			if s.Status != api.StatusRunning {
				t.Fatalf("session %s is %s right after the exec was killed, want running", s.ID, s.Status)
			}
			checkDetached(t, e, c, *s)
			if s.Labels["origin"] != "openclaw-exec" || s.Labels["OPENCLAW_SHELL"] != "exec" {
				t.Errorf("labels %v: want --label origin and the caller's OPENCLAW_SHELL", s.Labels)
			}
			if _, ok := s.Labels["OPENCLAW_GATEWAY_TOKEN"]; ok {
				t.Error("the gateway token was recorded as a label")
			}
			// It keeps producing output with nobody attached.
			ticks := func() int {
				b, _ := os.ReadFile(filepath.Join(e.SessionDir(s.ID), "output.log"))
				return strings.Count(string(b), "tick ")
			}
			before := ticks()
			WaitFor(t, 30*time.Second, "the session to keep printing", func() bool { return ticks() > before+3 })
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			final := e.WaitStatus(s.ID, api.StatusExited, 30*time.Second)
			if final.ExitCode == nil || *final.ExitCode != 7 {
				t.Fatalf("session ended as %+v, want exit code 7", final)
			}
			log, _ := os.ReadFile(filepath.Join(e.SessionDir(s.ID), "output.log"))
			if !strings.Contains(string(log), "session-ending") {
				t.Errorf("the session did not run to its end; output.log:\n%s", log)
			}
			assertNoSecretOnDisk(t, e.SessionDir(s.ID))
		})
	}
	if pid := e.DaemonPID(); !alive(pid) {
		t.Errorf("service pid %d died with the callers", pid)
	}
}

// A caller that is not killed sees the session's output and its exit code,
// and its pipe closes when the session ends.
func TestRunWaitFromExecPassesExitCode(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	label := fmt.Sprintf("case=wait-%d", time.Now().UnixNano())
	c := startExec(t, e, "", "", "--meta", label, "--", "sh", "-c", "echo out-line; exit 5")
	err := c.cmd.Wait()
	var ee *exec.ExitError
	if !asExitError(err, &ee) || ee.ExitCode() != 5 {
		t.Fatalf("run --wait ended with %v, want exit code 5", err)
	}
	select {
	case <-c.eof:
	case <-time.After(2 * time.Second):
		t.Fatal("the exec's pipe is still open after run --wait exited")
	}
	if out := c.output(); !strings.Contains(out, "out-line") {
		t.Errorf("caller's pipe got %q, want the session's output", out)
	}
	s := sessionByLabel(t, e, label)
	if s == nil || s.Status != api.StatusExited || s.ExitCode == nil || *s.ExitCode != 5 {
		t.Fatalf("session %+v", s)
	}
	if h := holders([]int{e.DaemonPID()}, c.inode); len(h) > 0 {
		t.Error("the service holds the exec's pipe")
	}
	assertNoSecretOnDisk(t, e.SessionDir(s.ID))
}

// assertNoSecretOnDisk fails if the caller's token appears in any file of
// the session's folder.
func assertNoSecretOnDisk(t *testing.T, dir string) {
	t.Helper()
	assertTokenNotOnDisk(t, dir, execSecret)
}

// assertTokenNotOnDisk fails if token appears in any file under dir.
func assertTokenNotOnDisk(t *testing.T, dir, token string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&os.ModeSocket != 0 {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		if bytes.Contains(b, []byte(token)) {
			t.Errorf("%s contains the caller's gateway token", path)
		}
		return nil
	})
}
