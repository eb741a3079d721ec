package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
)

// The scenarios of sessions started by hand: the real Pi and OpenCode
// TUIs and one-shots, typed into a real terminal (tmux) with the
// installation's environment, against the fake model; agentctl only
// watches. What list says of each is checked against the pid of the
// process in each window.

// handTerm is a terminal where each process a person starts runs in a
// window of its own, with the installation's environment.
type handTerm struct {
	*tmuxServer
	mu   sync.Mutex
	n    int
	pids map[string]int // of each window
}

func newHandTerm(t *testing.T, e *Env) *handTerm {
	t.Helper()
	h := &handTerm{pids: map[string]int{}, tmuxServer: newTmuxServer(t, append(append([]string{}, e.Vars...), "PI_OFFLINE=1"), "the scenarios by hand need a terminal")}
	// The server's environment is the installation's: every window
	// inherits it.
	h.tmux("new-session", "-d", "-x", "160", "-y", "50", "-s", "hand", "sleep", "3600")
	return h
}

// start runs argv in dir, in a new window, and returns the window and the
// process's pid (tmux runs argv itself, no shell between). PWD is dir, as
// a shell sets it: OpenCode takes its folder from it.
func (h *handTerm) start(dir string, argv ...string) (string, int) {
	h.t.Helper()
	h.mu.Lock()
	h.n++
	win := fmt.Sprintf("hand:w%d", h.n)
	h.mu.Unlock()
	out := h.tmux(append([]string{"new-window", "-d", "-P", "-F", "#{pane_pid}", "-n", strings.TrimPrefix(win, "hand:"), "-c", dir, "-e", "PWD=" + dir, "--"}, argv...)...)
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		h.t.Fatalf("pane pid %q: %v", out, err)
	}
	h.mu.Lock()
	h.pids[win] = pid
	h.mu.Unlock()
	return win, pid
}

// drawn waits until the window shows something, and a moment more: a TUI
// takes keys once its input box is drawn.
func (h *handTerm) drawn(win string) {
	h.t.Helper()
	h.mu.Lock()
	pid := h.pids[win]
	h.mu.Unlock()
	WaitForAgent(h.t, pid, win+" to be drawn", func() bool {
		return strings.TrimSpace(h.capture(win)) != ""
	})
	time.Sleep(3 * time.Second)
}

// handAgent is how a person runs one agent: its TUI, its TUI continuing the
// folder's last session, a one-shot with a prompt, and how to quit the TUI.
type handAgent struct {
	name    string
	env     func(t *testing.T) *Env
	tui     func(bin string) []string
	cont    func(bin string) []string
	oneShot func(bin, prompt string) []string
	flags   []string // launch flags, for a TUI agentctl starts
	quit    string
}

var handAgents = []handAgent{
	{
		name: "pi", quit: "/quit", flags: []string{"--model", "fakeopenai/fake-model"},
		env: func(t *testing.T) *Env { return newPiEnv(t).Env },
		tui: func(bin string) []string { return []string{bin, "--provider", "fakeopenai", "--model", "fake-model"} },
		cont: func(bin string) []string {
			return []string{bin, "-c", "--provider", "fakeopenai", "--model", "fake-model"}
		},
		oneShot: func(bin, prompt string) []string {
			return []string{bin, "-p", prompt, "--provider", "fakeopenai", "--model", "fake-model"}
		},
	},
	{
		name: "opencode", quit: "/exit", flags: []string{"--model", "fake/fake-model"},
		env:  func(t *testing.T) *Env { return newOpencodeEnv(t).Env },
		tui:  func(bin string) []string { return []string{bin, "--model", "fake/fake-model"} },
		cont: func(bin string) []string { return []string{bin, "--continue", "--model", "fake/fake-model"} },
		oneShot: func(bin, prompt string) []string {
			// OpenCode joins its message's words; one argument with spaces
			// would be stored quoted.
			return append([]string{bin, "run", "--model", "fake/fake-model"}, strings.Fields(prompt)...)
		},
	},
}

// handRows are the rows list -a shows of agent's sessions in dir.
func handRows(e *Env, agent, dir string) []api.Session {
	var out []api.Session
	for _, r := range e.List("-a").Sessions {
		if r.Adapter == agent && r.Cwd == dir {
			out = append(out, r)
		}
	}
	return out
}

// rowOfPID is the row of dir that names pid as its process.
func rowOfPID(e *Env, agent, dir string, pid int) (api.Session, bool) {
	for _, r := range handRows(e, agent, dir) {
		if r.PID == pid {
			return r, true
		}
	}
	return api.Session{}, false
}

func rowOfNative(e *Env, agent, dir, id string) (api.Session, bool) {
	for _, r := range handRows(e, agent, dir) {
		if r.NativeID == id {
			return r, true
		}
	}
	return api.Session{}, false
}

// idleRow waits until pid's row runs, idle (or waiting for input) at its
// prompt, with a native id, and returns it.
func idleRow(t *testing.T, e *Env, agent, dir string, pid int, what string) api.Session {
	t.Helper()
	var row api.Session
	WaitFor(t, 120*time.Second, what, func() bool {
		r, ok := rowOfPID(e, agent, dir, pid)
		row = r
		return ok && r.Status == api.StatusRunning && r.NativeID != "" && (r.Activity == api.ActivityIdle || r.Activity == api.ActivityWaiting)
	})
	return row
}

func handProject(t *testing.T) string {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// logRows shows what list said of dir when a scenario fails.
func logRows(t *testing.T, e *Env, agent, dir string) {
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range handRows(e, agent, dir) {
				t.Logf("row %s %s/%s pid %d native %s warnings %q", r.ID, r.Status, r.Activity, r.PID, r.NativeID, r.Warnings)
			}
		}
	})
}

// TestByHand: issue 24's scenarios, per agent: two TUIs started by hand in
// one folder, a one-shot beside a TUI, a TUI continuing the folder's last
// session, and a TUI by hand beside one agentctl launched.
func TestByHand(t *testing.T) {
	t.Parallel()
	for _, ag := range handAgents {
		t.Run(ag.name, func(t *testing.T) {
			t.Parallel()
			env := ag.env(t)
			bin := agenttest.Bin(t, ag.name)
			// Each scenario's commands fail its own test.
			of := func(t *testing.T) *Env { e := *env; e.T = t; return &e }
			t.Run("TwoTUIsInOneFolderRunTiedAndOneQuitting", func(t *testing.T) {
				t.Parallel()
				handTwoTUIs(t, of(t), ag, bin)
			})
			t.Run("OneShotBesideATUIIsTiedByItsPrompt", func(t *testing.T) {
				t.Parallel()
				handOneShot(t, of(t), ag, bin)
			})
			t.Run("ContinueRunsWhileItsTurnRuns", func(t *testing.T) {
				t.Parallel()
				handContinue(t, of(t), ag, bin)
			})
			t.Run("ByHandBesideALaunchedTUI", func(t *testing.T) {
				t.Parallel()
				handBesideLaunched(t, of(t), ag, bin)
			})
		})
	}
}

// Two TUIs of one agent in one folder read unknown for their whole life
// (issue 24): each runs, with its own pid and native id, busy or idle each;
// when one quits, its session ends within 2 s and the other stays running,
// tied to its pid.
func handTwoTUIs(t *testing.T, e *Env, ag handAgent, bin string) {
	dir := handProject(t)
	logRows(t, e, ag.name, dir)
	h := newHandTerm(t, e)
	wa, pa := h.start(dir, ag.tui(bin)...)
	h.drawn(wa)
	h.typeLine(wa, "hello [[text: from a]]")
	sa := idleRow(t, e, ag.name, dir, pa, "a's session running, idle, tied to a")
	wb, pb := h.start(dir, ag.tui(bin)...)
	h.drawn(wb)
	h.typeLine(wb, "hello [[text: from b]]")
	sb := idleRow(t, e, ag.name, dir, pb, "b's session running, idle, tied to b")
	if sa.NativeID == sb.NativeID {
		t.Fatalf("both TUIs tied to one session %s", sa.NativeID)
	}
	h.typeLine(wa, "work [[sleep: 8]]")
	WaitFor(t, 60*time.Second, "a busy and b idle, each tied", func() bool {
		ra, oka := rowOfPID(e, ag.name, dir, pa)
		rb, okb := rowOfPID(e, ag.name, dir, pb)
		return oka && okb && ra.NativeID == sa.NativeID && rb.NativeID == sb.NativeID &&
			ra.Activity == api.ActivityBusy && rb.Activity == api.ActivityIdle
	})
	idleRow(t, e, ag.name, dir, pa, "a idle again after its tool")
	h.typeLine(wb, ag.quit)
	waitGone(t, pb, 30*time.Second)
	gone := time.Now()
	WaitFor(t, 2*time.Second, "b's session ended within 2 s of b's exit, a's still running and tied", func() bool {
		rb, okb := rowOfNative(e, ag.name, dir, sb.NativeID)
		ra, oka := rowOfNative(e, ag.name, dir, sa.NativeID)
		return okb && rb.Status.Ended() && oka && ra.Status == api.StatusRunning && ra.PID == pa
	})
	t.Logf("b's session ended %s after its process", time.Since(gone).Round(time.Millisecond))
}

// A one-shot beside a TUI made both unknown, and the finished one-shot
// stayed unknown until the TUI quit (issue 24): the one-shot's session runs
// with its pid while it lives and ends after; the TUI's stays its own.
func handOneShot(t *testing.T, e *Env, ag handAgent, bin string) {
	dir := handProject(t)
	logRows(t, e, ag.name, dir)
	h := newHandTerm(t, e)
	wt, pt := h.start(dir, ag.tui(bin)...)
	h.drawn(wt)
	h.typeLine(wt, "hello [[text: from the tui]]")
	st := idleRow(t, e, ag.name, dir, pt, "the TUI's session running, idle, tied to it")
	_, po := h.start(dir, ag.oneShot(bin, "one shot [[sleep: 8]]")...)
	var so api.Session
	var seen []api.Session
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range seen {
				t.Logf("last seen with the one-shot: %s %s/%s pid %d native %s warnings %q", r.ID, r.Status, r.Activity, r.PID, r.NativeID, r.Warnings)
			}
		}
	})
	WaitFor(t, 90*time.Second, "the one-shot's session running with its pid, the TUI's still its own", func() bool {
		seen = handRows(e, ag.name, dir)
		r, ok := rowOfPID(e, ag.name, dir, po)
		rt, okt := rowOfPID(e, ag.name, dir, pt)
		so = r
		return ok && r.Status == api.StatusRunning && r.NativeID != "" && r.NativeID != st.NativeID && okt && rt.NativeID == st.NativeID
	})
	waitGone(t, po, 90*time.Second)
	WaitFor(t, 5*time.Second, "the one-shot's session ended, the TUI's still running and tied", func() bool {
		r, ok := rowOfNative(e, ag.name, dir, so.NativeID)
		rt, okt := rowOfNative(e, ag.name, dir, st.NativeID)
		return ok && r.Status.Ended() && okt && rt.Status == api.StatusRunning && rt.PID == pt
	})
}

// `opencode --continue` by hand read ended while its turn ran; `pi -c` with
// one TUI and one session read unknown (issue 24): the continued session
// runs, tied to the TUI, busy while its turn runs.
func handContinue(t *testing.T, e *Env, ag handAgent, bin string) {
	dir := handProject(t)
	logRows(t, e, ag.name, dir)
	first := exec.Command(ag.oneShot(bin, "first [[text: one]]")[0], ag.oneShot(bin, "first [[text: one]]")[1:]...)
	// As a shell sets it: OpenCode takes its folder from PWD.
	first.Dir, first.Env = dir, append(append([]string{}, e.Vars...), "PWD="+dir)
	out, err := first.CombinedOutput()
	if err != nil {
		t.Fatalf("the first one-shot: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the first one-shot said:\n%s", out)
			for _, r := range e.List("-a").Sessions {
				t.Logf("listed: %s %s cwd %s native %s", r.Adapter, r.Status, r.Cwd, r.NativeID)
			}
		}
	})
	var old api.Session
	WaitFor(t, 30*time.Second, "the one-shot's session ended", func() bool {
		rows := handRows(e, ag.name, dir)
		if len(rows) == 1 {
			old = rows[0]
		}
		return len(rows) == 1 && rows[0].Status.Ended()
	})
	h := newHandTerm(t, e)
	wc, pc := h.start(dir, ag.cont(bin)...)
	h.drawn(wc)
	h.typeLine(wc, "again [[sleep: 8]]")
	WaitFor(t, 90*time.Second, "the continued session running and busy, tied to the TUI", func() bool {
		r, ok := rowOfNative(e, ag.name, dir, old.NativeID)
		return ok && r.Status == api.StatusRunning && r.PID == pc && r.Activity == api.ActivityBusy
	})
}

// An agentctl-launched TUI made the hand-started ones in its folder unknown
// although its own session is known (issue 24): each is its own, running.
func handBesideLaunched(t *testing.T, e *Env, ag handAgent, bin string) {
	dir := handProject(t)
	logRows(t, e, ag.name, dir)
	h := newHandTerm(t, e)
	// The launch passes the caller's environment on: PWD is dir, as a
	// shell in dir has it (OpenCode takes its folder from PWD).
	le := *e
	le.Vars = append(append([]string{}, e.Vars...), "PWD="+dir)
	var l api.Session
	le.JSON(&l, append([]string{"launch", ag.name, "--json", "--cwd", dir}, ag.flags...)...)
	wh, ph := h.start(dir, ag.tui(bin)...)
	h.drawn(wh)
	WaitForAgent(t, l.PID, "the launched TUI to be drawn", func() bool {
		out, _, _ := e.Run("logs", "-n", "0", l.ID)
		return len(strings.TrimSpace(out)) > 0
	})
	time.Sleep(3 * time.Second) // the input box takes keys once drawn
	// Both sessions begin after both started: their start times alone
	// cannot tell them apart.
	e.MustRun("send", l.ID, "hello [[text: launched]]")
	h.typeLine(wh, "hello [[text: by hand]]")
	WaitFor(t, 120*time.Second, "the launched session running with its native id", func() bool {
		s := e.Session(l.ID)
		return s.Status == api.StatusRunning && s.NativeID != ""
	})
	sh := idleRow(t, e, ag.name, dir, ph, "the hand-started session running, idle, tied to its pid")
	if sl := e.Session(l.ID); sl.NativeID == sh.NativeID {
		t.Fatalf("the launched and the hand-started TUI share session %s", sl.NativeID)
	}
}
