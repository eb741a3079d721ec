package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/fakemodel"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
)

// The interactive scenarios: the real agents' own TUIs, started by agentctl
// without a prompt, under its ptys, against the fake model.

// tuiAgent is one agent's interactive setup: an installation whose agent
// answers at its prompt without asking anything first, the flags that
// launch it, and what a person types to quit it.
type tuiAgent struct {
	name  string
	setup func(t *testing.T) (e *Env, srv *fakemodel.Server, proj string, flags []string)
	quit  string
}

var tuiAgents = []tuiAgent{
	{name: "claude", quit: "/exit", setup: func(t *testing.T) (*Env, *fakemodel.Server, string, []string) {
		c := newClaudeEnv(t)
		c.seedInteractive()
		return c.Env, c.srv, c.proj, nil
	}},
	{name: "codex", quit: "/quit", setup: func(t *testing.T) (*Env, *fakemodel.Server, string, []string) {
		c := newCodexEnv(t)
		c.interactiveConfig()
		return c.Env, c.srv, c.proj, nil
	}},
	{name: "opencode", quit: "/exit", setup: func(t *testing.T) (*Env, *fakemodel.Server, string, []string) {
		o := newOpencodeEnv(t)
		return o.Env, o.srv, o.proj, []string{"--model", "fake/fake-model"}
	}},
	{name: "pi", quit: "/quit", setup: func(t *testing.T) (*Env, *fakemodel.Server, string, []string) {
		p := newPiEnv(t)
		return p.Env, p.srv, p.proj, []string{"--model", "fakeopenai/fake-model"}
	}},
}

// seedInteractive writes the three ~/.claude.json keys without which the
// interactive Claude stops at a dialog: onboarding done, the project
// trusted, the API key approved.
func (c *claudeEnv) seedInteractive() {
	key := "sk-ant-fake"
	seed := fmt.Sprintf(`{"hasCompletedOnboarding": true, "projects": {%q: {"hasTrustDialogAccepted": true}},
		"customApiKeyResponses": {"approved": [%q], "rejected": []}}`, c.proj, key[len(key)-min(20, len(key)):])
	if err := os.WriteFile(filepath.Join(c.home, ".claude.json"), []byte(seed), 0o600); err != nil {
		c.T.Fatal(err)
	}
}

// interactiveConfig trusts the project and lets the TUI run commands
// without asking (its sandbox needs namespaces a container may not give).
func (c *codexEnv) interactiveConfig() {
	b, err := os.ReadFile(filepath.Join(c.codexHome, "config.toml"))
	if err != nil {
		c.T.Fatal(err)
	}
	// Top-level keys go before the first table.
	cfg := string(b)
	i := strings.Index(cfg, "\n[")
	top, tables := cfg[:i], cfg[i:]
	top += "\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\""
	extra := fmt.Sprintf("\n[projects.%q]\ntrust_level = \"trusted\"\n", c.proj)
	if err := os.WriteFile(filepath.Join(c.codexHome, "config.toml"), []byte(top+tables+extra), 0o600); err != nil {
		c.T.Fatal(err)
	}
}

// stopDaemon ends the store's app-server daemon, which a Codex TUI of the
// test started and which outlives it (reparented to PID 1), through Codex's
// own command, and its updater, by the pid Codex recorded. Nothing is done
// when no TUI started one.
func (c *codexEnv) stopDaemon() {
	dir := filepath.Join(c.codexHome, "app-server-daemon")
	if _, err := os.Stat(filepath.Join(dir, "daemon.pid")); err != nil {
		return
	}
	cmd := exec.Command(codexBin(c.T), "app-server", "daemon", "stop")
	cmd.Env = c.Vars
	cmd.Dir = c.proj
	if out, err := cmd.CombinedOutput(); err != nil {
		c.T.Logf("codex app-server daemon stop: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "daemon-updater.pid"))
	if err != nil {
		return
	}
	var p struct {
		PID int `json:"pid"`
	}
	if json.Unmarshal(b, &p) == nil && p.PID > 0 && alive(p.PID) {
		if argv, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID)); err == nil && strings.Contains(string(argv), c.codexHome) {
			killPID(c.T, p.PID, syscall.SIGTERM)
		}
	}
}

// launchTUI starts the agent without a prompt and waits until its TUI is
// drawn and takes keys.
func launchTUI(e *Env, agent, proj string, flags []string) api.Session {
	e.T.Helper()
	var s api.Session
	e.JSON(&s, append([]string{"launch", agent, "--json", "--cwd", proj}, flags...)...)
	WaitForAgent(e.T, s.PID, agent+"'s prompt to be drawn", func() bool {
		out, _, _ := e.Run("logs", "-n", "0", s.ID)
		return len(strings.TrimSpace(out)) > 0 && e.Session(s.ID).Status == api.StatusRunning
	})
	time.Sleep(3 * time.Second) // the input box takes keys once drawn
	return s
}

// Two TUIs of one agent in one folder, started without a prompt: each is
// its own session with its own native id, busy while its turn runs and
// idle (or waiting for input) at its prompt after; one quits, and it has
// ended within 2 s of its exit while the other still runs; each is listed
// once.
func TestInteractiveTwoTUIsInOneFolder(t *testing.T) {
	t.Parallel()
	for _, ag := range tuiAgents {
		t.Run(ag.name, func(t *testing.T) {
			t.Parallel()
			e, srv, proj, flags := ag.setup(t)
			other := startElsewhere(t, e, ag.name, proj)
			a := launchTUI(e, ag.name, proj, flags)
			// Agents lock their folder; a second one there is on purpose.
			b := launchTUI(e, ag.name, proj, append(flags, "--force"))

			e.MustRun("send", a.ID, "work [[sleep: 6]]")
			WaitFor(t, 60*time.Second, "a busy while its tool runs", func() bool {
				return e.Session(a.ID).Activity == api.ActivityBusy
			})
			// A headless run beside the TUIs, while a works.
			var c api.Session
			e.JSON(&c, append(append([]string{"launch", ag.name, "--json", "--cwd", proj, "--force"}, flags...), "-p", "hello [[text: headless answer]]")...)
			e.MustRun("send", b.ID, "hello [[text: from b]]")
			WaitForAgent(t, c.PID, "the headless run to exit", func() bool {
				c = e.Session(c.ID)
				return c.Status == api.StatusExited
			})
			if c.ExitCode == nil || *c.ExitCode != 0 {
				t.Errorf("the headless run beside the TUIs ended %+v, want exit 0", c)
			}
			// A quick run's id may be learned a moment after its end (Codex's,
			// from the rollout it wrote).
			WaitFor(t, 10*time.Second, "the headless run's native id", func() bool { return e.Session(c.ID).NativeID != "" })
			idle := func(id string) func() bool {
				return func() bool {
					s := e.Session(id)
					return s.Status == api.StatusRunning && s.NativeID != "" &&
						(s.Activity == api.ActivityIdle || s.Activity == api.ActivityWaiting)
				}
			}
			WaitFor(t, 90*time.Second, "a idle at its prompt, with its native id", idle(a.ID))
			WaitFor(t, 90*time.Second, "b idle at its prompt, with its native id", idle(b.ID))
			sa, sb := e.Session(a.ID), e.Session(b.ID)
			if sa.NativeID == sb.NativeID || c.NativeID == sa.NativeID || c.NativeID == sb.NativeID {
				t.Fatalf("sessions share a native session: TUIs %s and %s, headless %s", sa.NativeID, sb.NativeID, c.NativeID)
			}
			if len(srv.Requests()) == 0 {
				t.Fatal("the model was never asked")
			}
			checkListedOnce(t, e, sa, sb)

			e.MustRun("send", a.ID, ag.quit)
			waitGone(t, a.PID, 30*time.Second)
			gone := time.Now()
			WaitFor(t, 2*time.Second, "a ended within 2 s of its exit", func() bool { return e.Session(a.ID).Status.Ended() })
			t.Logf("%s ended %s after its process", ag.name, time.Since(gone).Round(time.Millisecond))
			if s := e.Session(b.ID); s.Status != api.StatusRunning || s.NativeID != sb.NativeID {
				t.Errorf("after a quit, b is %s (native %s), want running with %s", s.Status, s.NativeID, sb.NativeID)
			}
			checkListedOnce(t, e, e.Session(a.ID), e.Session(b.ID))

			// b's terminal is closed while its tool runs: it has ended, and
			// nothing of its native session reads running or unknown.
			tool := fmt.Sprintf("40.%d", 11+len(ag.name))
			e.MustRun("send", b.ID, "work [[sleep: "+tool+"]]")
			WaitFor(t, 60*time.Second, "b's tool to run", func() bool { return liveArgv("sleep", tool) })
			killPID(t, b.PID, syscall.SIGHUP)
			waitGone(t, b.PID, 30*time.Second)
			WaitFor(t, 2*time.Second, "b ended within 2 s of its exit", func() bool { return e.Session(b.ID).Status.Ended() })
			WaitFor(t, 10*time.Second, "b's native session to read ended", func() bool {
				for _, r := range e.List("-a").Sessions {
					if r.NativeID == sb.NativeID && !r.Status.Ended() {
						return false
					}
				}
				return true
			})

			// The same agent under another HOME, in the same folder, is
			// another store's: not listed here.
			for _, r := range e.List("-a").Sessions {
				if r.PID == other {
					t.Errorf("%s of another HOME (pid %d) is listed: %+v", ag.name, other, r)
				}
			}
		})
	}
}

// startElsewhere starts the agent's TUI in dir under its own terminal, with
// a HOME of its own (no configuration: it sits at a dialog or its prompt),
// for the length of the test, and returns its pid.
func startElsewhere(t *testing.T, e *Env, agent, dir string) int {
	t.Helper()
	bin := agenttest.Bin(t, agent)
	h := t.TempDir()
	var args []string
	if agent == "codex" {
		args = []string{"--no-daemon"} // no daemon left behind in that HOME
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + h, "PATH=" + os.Getenv("PATH"), "TERM=xterm-256color", "PI_OFFLINE=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	ptmx, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, ptmx)
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // its own session and group
		cmd.Wait()
		ptmx.Close()
	})
	return cmd.Process.Pid
}

// checkListedOnce fails unless each session's native id appears in one row
// of list -a, its own.
func checkListedOnce(t *testing.T, e *Env, ss ...api.Session) {
	t.Helper()
	rows := e.List("-a").Sessions
	for _, s := range ss {
		var ids []string
		for _, r := range rows {
			if r.NativeID == s.NativeID || (r.PID == s.PID && r.PID != 0 && r.Status == api.StatusRunning) {
				ids = append(ids, r.ID+"/"+r.Origin)
			}
		}
		if len(ids) != 1 || !strings.HasPrefix(ids[0], s.ID+"/") {
			t.Errorf("session %s (native %s) is listed as %v, want once, as itself", s.ID, s.NativeID, ids)
		}
	}
}

// `run -- codex` is Codex's TUI as the user runs it: its turns and their
// tools run in the store's shared app-server daemon, not under the TUI.
// The session's row is the TUI's (its pid, not the daemon's), with the
// native id of the thread it works on; stop mid-tool ends the turn and
// its tool in the daemon, and the model is asked nothing more; the daemon
// stays for the store's other TUIs.
func TestInteractiveCodexStopEndsTheDaemonsTurn(t *testing.T) {
	t.Parallel()
	c := newCodexEnv(t)
	c.interactiveConfig()
	s := c.startDaemonTUI()
	c.MustRun("send", s.ID, "long [[sleep: 117.61]]")
	WaitFor(t, 90*time.Second, "the tool to run", func() bool { return liveArgv("sleep", "117.61") })
	var row api.Session
	WaitFor(t, 30*time.Second, "the TUI's row to carry its thread", func() bool {
		for _, r := range c.List("-a").Sessions {
			if r.ID == s.ID {
				row = r
			}
		}
		return row.NativeID != ""
	})
	if row.PID != s.PID {
		t.Errorf("the row's pid is %d, want the TUI's %d", row.PID, s.PID)
	}
	for _, r := range c.List("-a").Sessions {
		if r.ID != s.ID && (r.NativeID == row.NativeID || r.PID == s.PID) {
			t.Errorf("the TUI's session is listed twice: %s (%s, pid %d)", r.ID, r.Origin, r.PID)
		}
	}
	var final api.Session
	c.JSON(&final, "stop", "--json", s.ID)
	stopped := time.Now()
	if !final.Status.Ended() || alive(s.PID) {
		t.Fatalf("after stop: %s, pid alive %v", final.Status, alive(s.PID))
	}
	// The daemon has ended the tool when the stop returns; its process may
	// take a moment to be reaped.
	WaitFor(t, 3*time.Second, "the tool (sleep 117.61) to be gone", func() bool { return !liveArgv("sleep", "117.61") })

	// Meanwhile, another TUI of the store quits with /quit: its thread stays
	// loaded in the daemon for a minute or so, but its session has ended
	// within 2 s of the TUI's exit.
	b := c.startDaemonTUI()
	// The daemon writes a thread's rollout with its first message.
	c.MustRun("send", b.ID, "hello [[text: second tui]]")
	var thread string
	WaitFor(t, 60*time.Second, "the second TUI's row to carry its thread", func() bool {
		thread = nativeOf(c.Env, b.ID)
		return thread != ""
	})
	WaitFor(t, 60*time.Second, "the second TUI's answer", func() bool {
		for _, r := range c.srv.Requests() {
			if strings.Contains(r.Prompt, "second tui") {
				return true
			}
		}
		return false
	})
	c.MustRun("send", b.ID, "/quit")
	waitGone(t, b.PID, 30*time.Second)
	WaitFor(t, 2*time.Second, "its thread to read ended within 2 s of the TUI's exit", func() bool {
		for _, r := range c.List("-a").Sessions {
			if r.NativeID == thread && !r.Status.Ended() {
				return false
			}
		}
		return true
	})

	// Codex polls a running tool every 30 s (the fake's write_stdin): a turn
	// left running would ask again within that.
	time.Sleep(time.Until(stopped.Add(35 * time.Second)))
	for _, r := range c.srv.Requests() {
		if r.Time.After(stopped) && strings.Contains(r.Prompt, "117.61") {
			t.Errorf("the model was asked after the stop (%s, %s): the turn went on in the daemon", r.Time.Format(time.StampMilli), r.Reply)
		}
	}
}

// startDaemonTUI runs Codex's TUI as a person would (`run -- codex`), and
// waits until it takes keys: the daemon holds a new thread for it (its
// writer lock), which the TUI opens once connected.
func (c *codexEnv) startDaemonTUI() api.Session {
	c.T.Helper()
	locks := func() []string {
		m, _ := filepath.Glob(filepath.Join(c.codexHome, "thread-writer-locks", "*-*-*-*-*.lock"))
		return m
	}
	before := locks()
	s := c.Start("--cwd", c.proj, "--", "codex")
	WaitFor(c.T, 90*time.Second, "codex's TUI to open its thread in the daemon", func() bool {
		for _, l := range locks() {
			if !slices.Contains(before, l) {
				return c.Session(s.ID).Status == api.StatusRunning
			}
		}
		return false
	})
	time.Sleep(2 * time.Second) // the composer takes keys once drawn
	return s
}

// nativeOf is the native id list shows for session id, "" when none.
func nativeOf(e *Env, id string) string {
	for _, r := range e.List("-a").Sessions {
		if r.ID == id {
			return r.NativeID
		}
	}
	return ""
}

// Two Pi TUIs started by hand in one folder (`run -- pi`), prompted at
// once: Pi holds no file open, overwrites its argv and carries no marker
// agentctl set, so which process holds which session may stay open while
// both live, but each session runs (issue 24: both read unknown for their
// whole life): never unknown, never ended while both live. Once one quits,
// its session has ended as soon as the survivor writes (which one the
// quitter took is open only until then), and the survivor's session is
// tied to it: `run -- pi` is listed once, with its native id; once none
// lives, all have ended.
func TestInteractivePiTUIsByHandRunAndEndApart(t *testing.T) {
	t.Parallel()
	p := newPiEnv(t)
	start := func() api.Session {
		s := p.Start("--cwd", p.proj, "--", "pi", "--provider", "fakeopenai", "--model", "fake-model")
		WaitFor(t, 60*time.Second, "pi's prompt to be drawn", func() bool {
			out, _, _ := p.Run("logs", "-n", "0", s.ID)
			return len(strings.TrimSpace(out)) > 0
		})
		time.Sleep(3 * time.Second)
		return s
	}
	a, b := start(), start()
	p.MustRun("send", a.ID, "hello [[text: from a]]")
	p.MustRun("send", b.ID, "hello [[text: from b]]")
	var last []api.Session
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range last {
				t.Logf("last seen: %s %s pid %d native %s prompt %q warnings %q", r.ID, r.Status, r.PID, r.NativeID, r.Prompt, r.Warnings)
			}
		}
	})
	// The rows of the folder's Pi sessions: a `run` row tied to its
	// session (its native id merged in), or the session's own row.
	rows := func() []api.Session {
		var out []api.Session
		for _, r := range p.List("-a").Sessions {
			if r.Adapter == "pi" && r.Cwd == p.proj || (r.ID == a.ID || r.ID == b.ID) && r.NativeID != "" {
				out = append(out, r)
			}
		}
		last = out
		return out
	}
	session := func(rs []api.Session, words string) (api.Session, bool) {
		for _, r := range rs {
			if r.NativeID != "" && strings.Contains(r.Prompt, words) {
				return r, true
			}
		}
		return api.Session{}, false
	}
	var sa, sb api.Session
	WaitFor(t, 90*time.Second, "both sessions written and running", func() bool {
		rs := rows()
		var oka, okb bool
		sa, oka = session(rs, "from a")
		sb, okb = session(rs, "from b")
		return oka && okb && sa.Status == api.StatusRunning && sb.Status == api.StatusRunning
	})
	for range 20 {
		for _, r := range rows() {
			if r.NativeID != "" && r.Status != api.StatusRunning {
				t.Fatalf("while both Pis live, %s (native %s) reads %s", r.ID, r.NativeID, r.Status)
			}
		}
	}
	p.MustRun("send", a.ID, "/quit")
	waitGone(t, a.PID, 30*time.Second)
	// Seen gone: which session a took with it is open until b writes.
	for _, r := range rows() {
		if r.NativeID != "" && r.Status == api.StatusRunning && r.ID != b.ID {
			t.Errorf("with a gone and b not written since, %s (native %s) reads running", r.ID, r.NativeID)
		}
	}
	// b writes after a's end was seen: the session written is b's, tied to
	// it, and a's has ended.
	p.MustRun("send", b.ID, "again [[text: b again]]")
	WaitFor(t, 60*time.Second, "a's session ended, b's tied to b", func() bool {
		rs := rows()
		ra, oka := session(rs, "from a")
		return oka && ra.NativeID == sa.NativeID && ra.Status == api.StatusEnded && nativeOf(p.Env, b.ID) == sb.NativeID
	})
	p.MustRun("send", b.ID, "/quit")
	waitGone(t, b.PID, 30*time.Second)
	WaitFor(t, 5*time.Second, "every Pi session of the folder ended once no Pi lives", func() bool {
		for _, r := range p.List("-a").Sessions {
			if r.Cwd == p.proj && !r.Status.Ended() {
				return false
			}
		}
		return true
	})
}

// A send right after the launch of a TUI, before the agent takes input, is
// not lost (today it returns 0 and the text sits unsent, or vanishes): it
// waits for the agent's prompt, or fails saying why, and the agent gets
// the text. Every agent where it applies.
func TestSendBeforeTheTUITakesInputIsLost(t *testing.T) {
	t.Parallel()
	for _, ag := range tuiAgents {
		t.Run(ag.name, func(t *testing.T) {
			t.Parallel()
			e, srv, proj, flags := ag.setup(t)
			var s api.Session
			e.JSON(&s, append([]string{"launch", ag.name, "--json", "--cwd", proj}, flags...)...)
			// It waits for the prompt, or fails saying why (an agent slow to
			// start under load); either way nothing is lost: sent again
			// after such a failure, the text arrives once.
			for try := 1; ; try++ {
				_, stderr, code := e.Run("send", s.ID, "early [[text: early-answer]]")
				if code == 0 {
					break
				}
				if !strings.Contains(stderr, "not at its prompt; nothing was sent") || try == 3 {
					t.Fatalf("send %d: exit %d: %s", try, code, stderr)
				}
			}
			WaitFor(t, 90*time.Second, "the early text to reach the model", func() bool {
				for _, r := range srv.Requests() {
					if strings.Contains(r.Prompt, "early-answer") {
						return true
					}
				}
				return false
			})
		})
	}
}
