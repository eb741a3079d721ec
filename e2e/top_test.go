package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tmuxTerm is the live view's terminal: one window running a shell,
// driven with send-keys and read with capture-pane.
type tmuxTerm struct{ *tmuxServer }

func newTmux(t *testing.T, e *Env, width, height int) *tmuxTerm {
	t.Helper()
	tm := &tmuxTerm{newTmuxServer(t, append(append([]string{}, e.Vars...), "PS1=$ "), "the live view's terminal tests need it")}
	tm.tmux("new-session", "-d", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), "-s", "top", "sh")
	return tm
}

// keys sends key names (Enter, Escape, C-]); text sends literal text.
func (tm *tmuxTerm) keys(keys ...string) {
	tm.tmux(append([]string{"send-keys", "-t", "top"}, keys...)...)
}
func (tm *tmuxTerm) text(s string)  { tm.tmux("send-keys", "-t", "top", "-l", s) }
func (tm *tmuxTerm) screen() string { return tm.tmux("capture-pane", "-p", "-t", "top") }
func (tm *tmuxTerm) altScreen() string {
	return strings.TrimSpace(tm.tmux("display-message", "-p", "-t", "top", "#{alternate_on}"))
}

// waitScreen polls the screen until cond holds, within timeout.
func (tm *tmuxTerm) waitScreen(timeout time.Duration, what string, cond func(string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := tm.screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("timed out after %s waiting for %s; the screen:\n%s", timeout, what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (tm *tmuxTerm) waitFor(timeout time.Duration, text string) string {
	tm.t.Helper()
	return tm.waitScreen(timeout, fmt.Sprintf("%q on the screen", text), func(s string) bool { return strings.Contains(s, text) })
}

// rowOf is the table line of the session named name ("" if none).
func rowOf(screen, name string) string {
	for _, l := range strings.Split(screen, "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "›"))
		if len(f) > 2 && f[0] == name {
			return l
		}
	}
	return ""
}

func countRows(screen, name string) int {
	n := 0
	for _, l := range strings.Split(screen, "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "›"))
		if len(f) > 2 && f[0] == name {
			n++
		}
	}
	return n
}

// The live view in a real terminal: what a person sees as sessions start,
// change and end, and what each key does.
func TestTopInTerminal(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	tm := newTmux(t, e, 140, 40)
	// The pager `l` runs keeps what it is given.
	paged := filepath.Join(t.TempDir(), "paged.txt")
	pager := filepath.Join(t.TempDir(), "pager")
	if err := os.WriteFile(pager, []byte("#!/bin/sh\ncat > "+paged+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// No periodic refresh: every change on screen comes from the event
	// stream.
	tm.text(e.Bin + " top --refresh 0 --pager " + pager)
	tm.keys("Enter")
	tm.waitFor(10*time.Second, "agentctl top ·")
	if got := tm.altScreen(); got != "1" {
		t.Fatalf("alternate screen = %q while the view runs, want 1", got)
	}

	// Rows appear when sessions start.
	alpha := e.Start("--name", "alpha", "--", "sh", "-c", "read x; exit 7")
	tm.waitScreen(time.Second, "alpha's row", func(s string) bool { return strings.Contains(rowOf(s, "alpha"), "running") })
	e.Start("--name", "beta", "--", "sleep", "300")
	tm.waitScreen(time.Second, "beta's row", func(s string) bool { return rowOf(s, "beta") != "" })

	// The filter narrows.
	tm.text("/bet")
	// The keys arrive one by one, and "be" already hides alpha: wait for the
	// whole filter before judging the header.
	s := tm.waitScreen(5*time.Second, "the filter to hide alpha", func(s string) bool {
		return rowOf(s, "alpha") == "" && rowOf(s, "beta") != "" && strings.Contains(s, "filter: bet")
	})
	if !strings.Contains(s, `filter "bet": 1 shown`) {
		t.Errorf("the header does not say what the filter keeps:\n%s", s)
	}
	tm.keys("Escape")
	tm.waitScreen(5*time.Second, "esc to clear the filter", func(s string) bool { return rowOf(s, "alpha") != "" })

	// A status change shows within a second of the session's exit.
	tm.text("a") // ended rows shown
	e.MustRun("send", alpha.ID, "go")
	tm.waitScreen(time.Second, "alpha to show exited(7)", func(s string) bool { return strings.Contains(rowOf(s, "alpha"), "exited(7)") })

	// Across a restart of the service the view reconnects: rows are
	// neither lost nor doubled, and new sessions still appear.
	e.MustRun("daemon", "restart")
	e.Start("--name", "gamma", "--", "cat")
	s = tm.waitScreen(5*time.Second, "gamma's row after the restart", func(s string) bool {
		return rowOf(s, "gamma") != "" && !strings.Contains(s, "reconnecting")
	})
	for _, name := range []string{"alpha", "beta", "gamma"} {
		if n := countRows(s, name); n != 1 {
			t.Errorf("%s has %d rows after the restart, want 1:\n%s", name, n, s)
		}
	}

	// Stop asks first, then stops.
	tm.text("/beta")
	tm.keys("Enter")
	tm.waitScreen(5*time.Second, "beta alone", func(s string) bool { return rowOf(s, "alpha") == "" && rowOf(s, "beta") != "" })
	tm.text("s")
	tm.waitFor(5*time.Second, "stop beta (exec, running)? y/n")
	var beta = e.List().Sessions
	for _, v := range beta {
		if v.Name == "beta" && v.Status != "running" {
			t.Fatalf("beta is %s before the answer", v.Status)
		}
	}
	tm.text("y")
	tm.waitFor(15*time.Second, "stopped beta: killed(SIGTERM)")
	tm.waitScreen(time.Second, "beta's row to show killed", func(s string) bool { return strings.Contains(rowOf(s, "beta"), "killed") })

	// Attach, then detach back to the table. (Escape and the next key
	// sent together would read as Alt+key: wait for the escape to land.)
	tm.keys("Escape")
	tm.waitScreen(5*time.Second, "esc to clear the filter", func(s string) bool { return !strings.Contains(s, `filter "beta"`) })
	tm.text("/gamma")
	tm.keys("Enter")
	tm.waitScreen(5*time.Second, "gamma alone", func(s string) bool { return rowOf(s, "beta") == "" && rowOf(s, "gamma") != "" })
	tm.keys("Enter")
	// The attach paints the session's current screen over the view (and
	// over its own banner): the view's footer is gone.
	tm.waitScreen(5*time.Second, "the attached terminal", func(s string) bool { return !strings.Contains(s, "q quit") })
	tm.text("hello-from-tmux")
	tm.keys("Enter")
	tm.waitScreen(5*time.Second, "cat's echo", func(s string) bool { return strings.Count(s, "hello-from-tmux") >= 2 })
	tm.keys("C-]")
	tm.waitFor(5*time.Second, "detached from gamma")
	if got := tm.altScreen(); got != "1" {
		t.Errorf("alternate screen = %q back in the view, want 1", got)
	}
	tm.waitScreen(5*time.Second, "gamma's output in the detail pane", func(s string) bool {
		return strings.Contains(s, "── gamma · exec · running") && strings.Contains(s, "hello-from-tmux")
	})

	// i types a line into the session.
	tm.text("i")
	tm.waitFor(5*time.Second, "send to gamma:")
	tm.text("typed-by-i")
	tm.keys("Enter")
	tm.waitFor(5*time.Second, "sent a line to gamma")
	tm.waitScreen(5*time.Second, "the line in the detail pane", func(s string) bool { return strings.Contains(s, "typed-by-i") })

	// l pages the whole log.
	tm.text("l")
	WaitFor(t, 5*time.Second, "the pager to get the log", func() bool {
		b, _ := os.ReadFile(paged)
		return strings.Contains(string(b), "hello-from-tmux") && strings.Contains(string(b), "typed-by-i")
	})
	tm.waitFor(5*time.Second, "── gamma · exec · running")

	// A narrower terminal: columns drop, nothing wraps, the header and
	// the footer keep their lines.
	tm.tmux("resize-window", "-t", "top", "-x", "70", "-y", "24")
	s = tm.waitScreen(5*time.Second, "the table to reflow to 70 columns", func(s string) bool {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		return len(lines) == 24 && strings.HasPrefix(lines[0], "agentctl top ·") && strings.HasSuffix(lines[23], "q quit") &&
			strings.Contains(s, "SESSION") && !strings.Contains(s, "PROMPT")
	})
	if rowOf(s, "gamma") == "" {
		t.Errorf("gamma's row is gone at 70 columns:\n%s", s)
	}

	// q leaves the terminal as it was: main screen, a shell that answers.
	tm.text("q")
	tm.waitScreen(5*time.Second, "the view to quit", func(string) bool { return tm.altScreen() == "0" })
	tm.text("echo shell-$((6*7))")
	tm.keys("Enter")
	tm.waitFor(5*time.Second, "shell-42")
}

// list -w in a pipe prints a new table when something changes.
func TestListWatchPiped(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	e.MustRun("daemon", "start")
	cmd := e.Command("list", "-w")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 100)
	go func() {
		buf := make([]byte, 64<<10)
		var acc string
		for {
			n, err := out.Read(buf)
			acc += string(buf[:n])
			for {
				i := strings.IndexByte(acc, '\n')
				if i < 0 {
					break
				}
				lines <- acc[:i]
				acc = acc[i+1:]
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	next := func(what string, cond func(string) bool) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("list -w ended before %s", what)
				}
				if cond(l) {
					return
				}
			case <-timeout:
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	next("the first table", func(l string) bool { return l == "no sessions" })
	s := e.Start("--name", "w1", "--", "sleep", "300")
	next("a table with the new session", func(l string) bool {
		return firstField(l) != "" && strings.HasPrefix(s.ID, firstField(l)) && strings.Contains(l, "w1") && strings.Contains(l, "running")
	})
	e.MustRun("stop", "--force", s.ID)
	next("a table without it", func(l string) bool { return l == "no sessions" })
	// Across a restart of the service the watch goes on.
	e.MustRun("daemon", "restart")
	s = e.Start("--name", "w3", "--", "sleep", "300")
	next("a table with the session started after the restart", func(l string) bool {
		return strings.Contains(l, "w3") && firstField(l) != "" && strings.HasPrefix(s.ID, firstField(l))
	})
}

// The view leaves the terminal as it found it however it ends: main
// screen, cursor shown, mouse off, echo and line editing back.
func TestTopRestoresTerminalOnSignal(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			e := NewEnv(t)
			tm := newTmux(t, e, 100, 30)
			shell := strings.TrimSpace(tm.tmux("display-message", "-p", "-t", "top", "#{pane_pid}"))
			tm.text(e.Bin + " top")
			tm.keys("Enter")
			tm.waitFor(10*time.Second, "agentctl top ·")
			children, err := os.ReadFile(fmt.Sprintf("/proc/%s/task/%s/children", shell, shell))
			if err != nil {
				t.Skipf("no /proc children list to find the view's pid: %v", err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(children)))
			if err != nil {
				t.Fatalf("the shell's children: %q", children)
			}
			if err := syscall.Kill(pid, sig); err != nil {
				t.Fatal(err)
			}
			waitGone(t, pid, 5*time.Second)
			state := func() string {
				return strings.TrimSpace(tm.tmux("display-message", "-p", "-t", "top", "alt=#{alternate_on} cursor=#{cursor_flag} mouse=#{mouse_any_flag}"))
			}
			WaitFor(t, 5*time.Second, "the terminal to be restored", func() bool { return state() == "alt=0 cursor=1 mouse=0" })
			tm.text("stty -a | tr ' ;' '\\n\\n' | grep -x -e echo -e icanon -e -echo -e -icanon | tr '\\n' , ; echo")
			tm.keys("Enter")
			tm.waitFor(5*time.Second, "icanon,echo,")
		})
	}
}

// list -w on a terminal redraws the table in place: the header stays on
// the first line as rows come and go.
func TestListWatchInTerminal(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	tm := newTmux(t, e, 160, 20)
	tm.text(e.Bin + " list -w")
	tm.keys("Enter")
	tm.waitFor(10*time.Second, "no sessions")
	s := e.Start("--name", "w2", "--", "sleep", "300")
	screen := tm.waitScreen(5*time.Second, "the new row", func(scr string) bool { return strings.Contains(scr, "w2") })
	if first := strings.SplitN(screen, "\n", 2)[0]; !strings.HasPrefix(first, "ID ") {
		t.Errorf("the table is not drawn from the top of the screen:\n%s", screen)
	}
	if strings.Contains(screen, "no sessions") {
		t.Errorf("the old table is still on the screen:\n%s", screen)
	}
	e.MustRun("stop", "--force", s.ID)
	tm.waitScreen(5*time.Second, "the row to go", func(scr string) bool { return strings.Contains(scr, "no sessions") && !strings.Contains(scr, "w2") })
	tm.keys("C-c")
	tm.waitScreen(5*time.Second, "list -w to end on Ctrl-C", func(string) bool {
		return strings.TrimSpace(tm.tmux("display-message", "-p", "-t", "top", "#{pane_current_command}")) == "sh"
	})
}

// firstField is l's first word ("" for a blank line).
func firstField(l string) string {
	if f := strings.Fields(l); len(f) > 0 {
		return f[0]
	}
	return ""
}
