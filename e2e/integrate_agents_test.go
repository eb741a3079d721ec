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

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
)

// integratedAgent is how one agent's integration is tried by hand: its
// installation (env: Env with the fake model, project, the user's config
// file that --remove must leave as it was, and the file agentctl installs),
// and its TUI.
type integratedAgent struct {
	name string
	// setup returns the installation, the project folder, the user's own
	// config file (written before integrate) and the integration's file.
	setup func(t *testing.T) (e *Env, proj, userFile, ours string)
	tui   func(bin string) []string
	// permission is a prompt that makes the agent wait for a permission
	// to run `touch made-by-hand`.
	permission string
	// deny says the test denies it (Pi's extension blocks a tool on a
	// deny, and without a decision lets it run), else approves it.
	deny bool
	// rewritten checks userFile after --remove when the agent itself
	// rewrote it meanwhile (nil: it must be as it was, byte for byte).
	rewritten func(t *testing.T, after []byte)
}

// Issue 25 with the real OpenCode and Pi TUIs in a real terminal (tmux),
// as TestClaudeIntegrationByHand does for Claude: with `agentctl integrate
// AGENT` installed in a scratch HOME, two TUIs started by hand in one
// folder are each tied to their own session, on the integration's
// evidence, within 1 s of their first prompt; one asking permission (an
// OpenCode bash permission; a Pi tool call, whose extension waits for a
// decision when AGENTCTL_PI_ASK_SECONDS is set) reads waiting: permission
// and `agentctl approve` lets the tool run. A turn's time with the service
// up, SIGSTOPped, stopped, and without the integration is logged; no
// turn hangs. `--remove` leaves the user's config as it was and takes the
// integration's file out.
func TestOpencodeIntegrationByHand(t *testing.T) {
	t.Parallel()
	integrationByHand(t, integratedAgent{
		name: "opencode",
		setup: func(t *testing.T) (*Env, string, string, string) {
			o := newOpencodeEnv(t)
			home := filepath.Dir(filepath.Dir(o.data))
			cfg := filepath.Join(home, ".config", "opencode", "opencode.json")
			// OpenCode asks before bash runs.
			b, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			b = []byte(strings.Replace(string(b), `{`, "{\n  \"permission\": {\"bash\": \"ask\"},\n  ", 1) + "\n")
			if err := os.WriteFile(cfg, b, 0o600); err != nil {
				t.Fatal(err)
			}
			return o.Env, o.proj, cfg, filepath.Join(home, ".config", "opencode", "plugin", "agentctl.js")
		},
		tui:        func(bin string) []string { return []string{bin, "--model", "fake/fake-model"} },
		permission: "make it [[bash: touch made-by-hand]]",
	})
}

func TestPiIntegrationByHand(t *testing.T) {
	t.Parallel()
	integrationByHand(t, integratedAgent{
		name: "pi",
		setup: func(t *testing.T) (*Env, string, string, string) {
			p := newPiEnv(t)
			// The extension waits for a decision on each tool call.
			p.Setenv("AGENTCTL_PI_ASK_SECONDS", "120")
			models := filepath.Join(p.home, ".pi", "agent", "models.json")
			return p.Env, p.proj, models, filepath.Join(p.home, ".pi", "agent", "extensions", "agentctl.js")
		},
		tui:        func(bin string) []string { return []string{bin, "--provider", "fakeopenai", "--model", "fake-model"} },
		permission: "make it [[bash: touch made-by-hand]]",
		deny:       true,
	})
}

func integrationByHand(t *testing.T, ag integratedAgent) {
	e, proj, userFile, ours := ag.setup(t)
	bin := agenttest.Bin(t, ag.name)
	before, err := os.ReadFile(userFile)
	if err != nil {
		t.Fatal(err)
	}
	e.List() // the service runs: hooks never start it
	if out := e.MustRun("integrate", ag.name); !strings.Contains(out, ag.name+": installed in ") {
		t.Fatalf("integrate %s: %s", ag.name, out)
	}
	if ours != "" {
		if _, err := os.Stat(ours); err != nil {
			t.Fatalf("integrate %s installed no %s: %v", ag.name, ours, err)
		}
	}
	logRows(t, e, ag.name, proj)
	h := newHandTerm(t, e)
	var tuis []int
	t.Cleanup(func() { endAll(tuis) })
	// One after the other: two starting at once in a fresh store may
	// race for its creation.
	wa, pa := h.start(proj, ag.tui(bin)...)
	tuis = append(tuis, pa)
	h.drawn(wa)
	wb, pb := h.start(proj, ag.tui(bin)...)
	tuis = append(tuis, pb)
	h.drawn(wb)

	// Pi's extension reports its session at its start: it may be tied
	// before its first prompt.
	for _, r := range handRows(e, ag.name, proj) {
		if (r.PID == pa || r.PID == pb) && r.Status == api.StatusRunning && r.NativeID != "" {
			t.Logf("pid %d tied to %s before its first prompt", r.PID, r.NativeID)
		}
	}
	h.typeLine(wa, "hello [[text: from a]]")
	typedA := time.Now()
	h.typeLine(wb, "hello [[text: from b]]")
	typedB := time.Now()
	var ra, rb api.Session
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range handRows(e, ag.name, proj) {
				out, _, _ := e.Run("explain", r.ID)
				t.Logf("explain %s:\n%s", r.ID, out)
			}
		}
	})
	// Tied on the integration's evidence: the store alone ties them too,
	// in time (an earlier answer, held since), but not at once. One list
	// a round, and explain only once the rows say so: on a loaded machine
	// each command costs what the tie is measured in.
	explained := map[string]bool{}
	byHook := func(r api.Session) bool {
		if explained[r.ID] {
			return true
		}
		out, _, _ := e.Run("explain", r.ID)
		explained[r.ID] = strings.Contains(out, "integration (hook ")
		return explained[r.ID]
	}
	var seen []string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("rows after the first prompts:\n%s", strings.Join(seen, "\n"))
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(e.Home, "daemon.log"))
			for _, line := range strings.Split(string(b), "\n") {
				if strings.Contains(line, "integration") {
					t.Logf("daemon.log: %s", line)
				}
			}
		}
	})
	var listedA, listedB time.Time
	// The bound is generous for a loaded machine; the times are logged
	// (under a second after each prompt on a quiet one).
	WaitFor(t, 30*time.Second, "both TUIs tied to sessions of their own by their integration", func() bool {
		var oka, okb bool
		ra, rb, oka, okb = api.Session{}, api.Session{}, false, false
		for _, r := range handRows(e, ag.name, proj) {
			switch r.PID {
			case pa:
				ra, oka = r, true
			case pb:
				rb, okb = r, true
			}
		}
		now := time.Now()
		if listedA.IsZero() && oka && ra.Status == api.StatusRunning && ra.NativeID != "" && byHook(ra) {
			listedA = now
		}
		if listedB.IsZero() && okb && rb.Status == api.StatusRunning && rb.NativeID != "" && byHook(rb) {
			listedB = now
		}
		seen = append(seen, fmt.Sprintf("%s: a %v %s %s, b %v %s %s", time.Since(typedB).Round(time.Millisecond), oka, ra.NativeID, ra.Status, okb, rb.NativeID, rb.Status))
		return !listedA.IsZero() && !listedB.IsZero() && ra.NativeID != rb.NativeID
	})
	// Where a tie's time goes: the report's arrival (the agent's event,
	// node spawning the hook, the hook's dial, the service's proof walk,
	// which the service logs) and the list showing it.
	for _, w := range []struct {
		name   string
		pid    int
		typed  time.Time
		listed time.Time
	}{{"a", pa, typedA, listedA}, {"b", pb, typedB, listedB}} {
		at, line := tieLogged(e, w.pid)
		t.Logf("%s: tied in the list %s after its prompt (the first list after it); the service logged its first tie %s after it: %s",
			w.name, w.listed.Sub(w.typed).Round(time.Millisecond), at.Sub(w.typed).Round(time.Millisecond), line)
	}
	for _, line := range refusedLogged(e) {
		t.Logf("daemon.log: %s", line)
	}
	st := e.MustRun("integrate", "--status")
	// The agent's line, then its detail and last report, indented.
	reported, mine := false, false
	for _, line := range strings.Split(st, "\n") {
		if !strings.HasPrefix(line, " ") {
			mine = strings.HasPrefix(line, ag.name+": installed (")
		} else if mine && strings.HasPrefix(strings.TrimSpace(line), "last report: ") {
			reported = !strings.HasPrefix(strings.TrimSpace(line), "last report: none")
		}
	}
	if !reported {
		t.Errorf("integrate --status, want %s installed and reported:\n%s", ag.name, st)
	}
	permissionByHand(t, e, h, ag, proj, wa, pa)
	turnsTimed(t, e, h, ag, proj, bin, userFile, ours, before, wb, &tuis)
}

// refusedLogged are the service's log lines of refused integration
// reports (none is expected from the agents' own integrations).
func refusedLogged(e *Env) []string {
	b, _ := os.ReadFile(filepath.Join(e.Home, "daemon.log"))
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `msg="integration report refused"`) {
			out = append(out, line)
		}
	}
	return out
}

// tieLogged is the service's log line of the first tie of the agent
// process pid, with its time.
func tieLogged(e *Env, pid int) (time.Time, string) {
	b, _ := os.ReadFile(filepath.Join(e.Home, "daemon.log"))
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `msg="integration tie"`) && strings.Contains(line, " pid="+strconv.Itoa(pid)+" ") {
			ts, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
			at, _ := time.Parse(time.RFC3339Nano, ts)
			return at, line
		}
	}
	return time.Time{}, "(no tie logged)"
}

// permissionByHand: a asks permission for a tool, reads waiting:
// permission from its integration, and is answered with approve or deny.
func permissionByHand(t *testing.T, e *Env, h *handTerm, ag integratedAgent, proj, wa string, pa int) {
	ra, _ := rowOfPID(e, ag.name, proj, pa)
	before := ra.ActivitySince
	h.typeLine(wa, ag.permission)
	again := time.Now().Add(20 * time.Second)
	WaitFor(t, 60*time.Second, "a to read waiting: permission from its integration", func() bool {
		ra, _ = rowOfPID(e, ag.name, proj, pa)
		if time.Now().After(again) {
			// Nothing reported since the line was typed and it is on the
			// screen: its Enter was lost on a loaded machine (the turn
			// never began), and a person presses Enter again.
			if before != nil && ra.ActivitySince != nil && ra.ActivitySince.Equal(*before) && strings.Contains(h.capture(wa), ag.permission) {
				h.tmux("send-keys", "-t", wa, "Enter")
			}
			again = time.Now().Add(20 * time.Second)
		}
		return ra.WaitingFor == api.WaitingPermission && ra.Waiting != nil && ra.Waiting.Request != "" && ra.ActivitySource == api.SourceIntegration
	})
	made := filepath.Join(proj, "made-by-hand")
	if _, err := os.Stat(made); err == nil {
		t.Fatal("the tool ran before it was approved")
	}
	if ag.deny {
		if out := e.MustRun("deny", ra.ID, "--reason", "not by hand"); !strings.Contains(out, "denied") {
			t.Fatalf("deny: %s", out)
		}
		WaitFor(t, 60*time.Second, "a's turn to end after the denied tool", func() bool {
			ra, _ = rowOfPID(e, ag.name, proj, pa)
			return ra.WaitingFor != api.WaitingPermission && (ra.Activity == api.ActivityIdle || ra.WaitingFor == api.WaitingInput)
		})
		if _, err := os.Stat(made); err == nil {
			t.Fatal("the denied tool ran")
		}
	} else {
		if out := e.MustRun("approve", ra.ID); !strings.Contains(out, "approved") {
			t.Fatalf("approve: %s", out)
		}
		WaitFor(t, 60*time.Second, "the approved tool to run", func() bool {
			_, err := os.Stat(made)
			return err == nil
		})
	}
}

// turnsTimed logs a turn's time in b with the service up, SIGSTOPped and
// stopped, then, after --remove (checked against the user's file as it
// was before), in a TUI without the integration.
// turnTimer times turns of TUIs in a terminal, each with an answer of
// its own.
type turnTimer struct {
	t *testing.T
	h *handTerm
	n int
}

// turn times one turn of the TUI in win, from Enter to its answer on the
// screen, and logs it as what.
func (tt *turnTimer) turn(win, what string) time.Duration {
	tt.t.Helper()
	tt.n++
	answer := "turn-" + strconv.Itoa(tt.n) + "-done"
	tt.h.tmux("send-keys", "-t", win, "-l", "go [[text: "+answer+"]]")
	time.Sleep(300 * time.Millisecond)
	begun := time.Now()
	tt.h.tmux("send-keys", "-t", win, "Enter")
	WaitFor(tt.t, 60*time.Second, what+": the turn's answer", func() bool {
		// The answer's own line; the prompt's shows it inside [[…]].
		for _, line := range strings.Split(tt.h.tmux("capture-pane", "-p", "-t", win), "\n") {
			if strings.Contains(line, answer) && !strings.Contains(line, answer+"]]") {
				return true
			}
		}
		return false
	})
	took := time.Since(begun)
	tt.t.Logf("%s: a turn took %s", what, took.Round(time.Millisecond))
	return took
}

// turnsAroundTheService times two turns of the TUI in win with the
// service up, two with it SIGSTOPped, and two with it stopped (as it is
// left): an integration's hook must never hold the agent up.
func turnsAroundTheService(t *testing.T, e *Env, tt *turnTimer, win string) {
	tt.turn(win, "service up, integration installed")
	tt.turn(win, "service up, integration installed")
	svc := e.DaemonPID()
	if err := syscall.Kill(svc, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			syscall.Kill(svc, syscall.SIGCONT)
		}
	})
	tt.turn(win, "service SIGSTOPped")
	tt.turn(win, "service SIGSTOPped")
	syscall.Kill(svc, syscall.SIGCONT)
	resumed = true
	e.MustRun("daemon", "stop")
	tt.turn(win, "service stopped")
	tt.turn(win, "service stopped")
}

func turnsTimed(t *testing.T, e *Env, h *handTerm, ag integratedAgent, proj, bin, userFile, ours string, before []byte, wb string, tuis *[]int) {
	tt := &turnTimer{t: t, h: h}
	turn := tt.turn
	turnsAroundTheService(t, e, tt, wb)

	out := e.MustRun("integrate", "--remove", ag.name)
	if !strings.Contains(out, ag.name) {
		t.Errorf("integrate --remove %s: %s", ag.name, out)
	}
	if ours != "" {
		if _, err := os.Stat(ours); !os.IsNotExist(err) {
			t.Errorf("%s after --remove: %v, want it gone", ours, err)
		}
	}
	if got, _ := os.ReadFile(userFile); string(got) != string(before) {
		if ag.rewritten == nil {
			t.Errorf("%s after --remove:\n%s\nwant as it was:\n%s", userFile, got, before)
		} else {
			t.Logf("%s was rewritten by %s itself meanwhile", userFile, ag.name)
			ag.rewritten(t, got)
		}
	}
	wc, pc := h.start(proj, ag.tui(bin)...)
	*tuis = append(*tuis, pc)
	h.drawn(wc)
	turn(wc, "without the integration")
	turn(wc, "without the integration")
}

// Issue 25 with the real Codex TUI (0.169) in a real terminal (tmux).
// Codex runs its notify program and its hooks (hooks.json, which integrate
// installs and trusts) from the store's shared app-server daemon, a child
// of the first TUI that needed it, for the turns of every TUI: a report's
// parentage names the daemon, never the TUI whose turn ended. So the
// integration ties no process (see codex.withNotifies): its reports speak
// of the session the thread id names once the store ties that thread to
// its TUI (a and b, each alone in its folder): the end of a turn reads
// waiting: input, a permission Codex asks (a command to run outside the
// sandbox) reads waiting: permission and `agentctl approve` lets it run.
// Two TUIs in one folder (c and d) are not tied to the first TUI for being
// the daemon's parent. A turn's time with the service up, SIGSTOPped,
// stopped, and without the integration is logged; `--remove` gives back
// the user's notify and takes hooks.json and its trust entries out (Codex
// rewrites config.toml itself, its [tui] state: then only agentctl's
// entries must be gone).
func TestCodexIntegrationByHand(t *testing.T) {
	t.Parallel()
	c := newCodexEnv(t)
	e, proj := c.Env, c.proj
	bin := codexBin(t)
	projB, _ := filepath.EvalSymlinks(t.TempDir())
	projCD, _ := filepath.EvalSymlinks(t.TempDir())
	cfg := filepath.Join(c.codexHome, "config.toml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The user's own notify program, and the folders trusted.
	const userNotify = `notify = ["/bin/true", "mine"]  # my notifier`
	// Codex asks before a command runs outside its sandbox.
	b = []byte("# mine\n" + userNotify + "\napproval_policy = \"on-request\"\n" + string(b))
	for _, d := range []string{proj, projB, projCD} {
		b = fmt.Appendf(b, "\n[projects.%q]\ntrust_level = \"trusted\"\n", d)
	}
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	before := b
	ag := integratedAgent{
		name:       "codex",
		tui:        func(bin string) []string { return []string{bin} },
		permission: "make it [[escalate: touch made-by-hand]]",
		rewritten: func(t *testing.T, after []byte) {
			// Codex rewrites the file in its own layout (it drops blank
			// lines and the notify's comment): the user's argv is what
			// must be back.
			s := string(after)
			back := false
			for _, line := range strings.Split(s, "\n") {
				line = strings.ReplaceAll(line, " ", "")
				back = back || strings.HasPrefix(line, `notify=["/bin/true","mine"]`)
			}
			if strings.Contains(s, "agentctl") || !back {
				t.Errorf("config.toml after --remove, want the user's notify back and no agentctl:\n%s", s)
			}
		},
	}
	// Codex shows its own prompt only once its PermissionRequest hook
	// returns: agentctl answers it only when the user lets the hook wait.
	writeConfig(t, e, `{"integrate": {"codex_permission_wait": "10m"}}`)
	e.List() // the service runs: hooks never start it
	if out := e.MustRun("integrate", "codex"); !strings.Contains(out, "codex: installed in ") {
		t.Fatalf("integrate codex: %s", out)
	}
	for _, d := range []string{proj, projB, projCD} {
		logRows(t, e, "codex", d)
	}
	h := newHandTerm(t, e)
	var tuis []int
	t.Cleanup(func() { endAll(tuis) })
	start := func(dir string) (string, int) {
		w, p := h.start(dir, bin)
		tuis = append(tuis, p)
		h.drawn(w)
		return w, p
	}
	// One after the other: two starting at once in a fresh store may race
	// for its creation.
	wa, pa := start(proj)
	wb, pb := start(projB)
	t.Cleanup(func() {
		if t.Failed() {
			for _, w := range []string{wa, wb} {
				t.Logf("screen of %s:\n%s", w, h.tmux("capture-pane", "-p", "-t", w))
			}
		}
	})
	h.typeLine(wa, "hello [[text: from a]]")
	h.typeLine(wb, "hello [[text: from b]]")
	typed := time.Now()
	var seen []string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("rows after the first prompts:\n%s", strings.Join(seen, "\n"))
		}
	})
	again := time.Now().Add(20 * time.Second)
	WaitFor(t, 90*time.Second, "a and b, each on its own session, to read waiting: input from their integration", func() bool {
		if time.Now().After(again) {
			enterIfUnsent(h.tmuxServer, wa, "hello [[text: from a]]")
			enterIfUnsent(h.tmuxServer, wb, "hello [[text: from b]]")
			again = time.Now().Add(20 * time.Second)
		}
		ra, oka := rowOfPID(e, "codex", proj, pa)
		rb, okb := rowOfPID(e, "codex", projB, pb)
		seen = append(seen, fmt.Sprintf("%s: a %v %s %s %q %q, b %v %s %s %q %q", time.Since(typed).Round(time.Millisecond),
			oka, ra.NativeID, ra.Status, ra.WaitingFor, ra.ActivitySource, okb, rb.NativeID, rb.Status, rb.WaitingFor, rb.ActivitySource))
		ok := func(r api.Session) bool {
			// The waiting is the integration's own (its kind is the
			// event: notify's, or the Stop hook's).
			return r.Status == api.StatusRunning && r.WaitingFor == api.WaitingInput && r.ActivitySource == api.SourceIntegration &&
				r.Waiting != nil && (r.Waiting.Kind == "agent-turn-complete" || r.Waiting.Kind == "Stop")
		}
		return oka && okb && ra.NativeID != rb.NativeID && ok(ra) && ok(rb)
	})
	t.Logf("a and b read waiting: input from their integration %s after their first prompt", time.Since(typed).Round(time.Millisecond))
	st := e.MustRun("integrate", "--status")
	if !strings.Contains(st, "codex: installed (") || strings.Contains(st, "last report: none") || strings.Contains(st, "in part") {
		t.Errorf("integrate --status, want codex installed and reported:\n%s", st)
	}
	permissionByHand(t, e, h, ag, proj, wa, pa)

	// Two TUIs in one folder, begun before either thread: the daemon's
	// reports cannot tell them apart, and must not give either's thread to
	// the daemon's parent.
	wc, pc := start(projCD)
	wd, pd := start(projCD)
	h.typeLine(wc, "hello [[text: from c]]")
	h.typeLine(wd, "hello [[text: from d]]")
	owner := map[string]int{"hello [[text: from c]]": pc, "hello [[text: from d]]": pd}
	var rows []api.Session
	again = time.Now().Add(20 * time.Second)
	WaitFor(t, 90*time.Second, "c's and d's sessions running, their turns ended", func() bool {
		if time.Now().After(again) {
			enterIfUnsent(h.tmuxServer, wc, "hello [[text: from c]]")
			enterIfUnsent(h.tmuxServer, wd, "hello [[text: from d]]")
			again = time.Now().Add(20 * time.Second)
		}
		rows = handRows(e, "codex", projCD)
		n := 0
		for _, r := range rows {
			if _, ok := owner[r.Prompt]; ok && r.Status == api.StatusRunning && r.Activity != api.ActivityBusy {
				n++
			}
		}
		if n != 2 {
			seen = append(seen, fmt.Sprintf("c and d: %+v", rows))
		}
		return n == 2
	})
	for _, r := range rows {
		if want, ok := owner[r.Prompt]; ok && r.PID != 0 && r.PID != want {
			t.Errorf("%s's session %s tied to pid %d (c %d, d %d, a %d)", r.Prompt, r.ID, r.PID, pc, pd, pa)
		}
		t.Logf("two in one folder: %q reads pid %d, waiting %q from %q", r.Prompt, r.PID, r.WaitingFor, r.ActivitySource)
	}
	turnsTimed(t, e, h, ag, proj, bin, cfg, filepath.Join(c.codexHome, "hooks.json"), before, wb, &tuis)
}
