package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

// A user's Claude settings with a hook of their own and formatting of
// their own, which `agentctl integrate --remove` must give back as they
// were.
const userClaudeSettings = `{
   "cleanupPeriodDays":   30,
   "hooks": { "Stop": [ { "hooks": [ { "type": "command", "command": "true" } ] } ] }
}
`

// Issue 25 with the real Claude Code in a real terminal (tmux): with
// `agentctl integrate claude` installed in a scratch HOME, two TUIs started
// by hand in one folder are each tied to their own session, on the
// integration's evidence, within 1 s of their first prompt; one asking
// permission reads waiting: permission and `agentctl approve` lets the
// tool run; a turn's end reads waiting: input, as a launched Claude's
// does. With the service SIGSTOPped, then stopped, a turn still ends
// (its time is logged beside one with the service up, and one without the
// integration); `--remove` leaves settings.json as it was, byte for byte.
func TestClaudeIntegrationByHand(t *testing.T) {
	t.Parallel()
	c := newClaudeEnv(t)
	c.seedInteractive()
	bin := claudeBin(t)
	settings := filepath.Join(c.home, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(userClaudeSettings), 0o644); err != nil {
		t.Fatal(err)
	}
	c.List() // the service runs: hooks never start it
	if out := c.MustRun("integrate", "claude"); !strings.Contains(out, "claude: installed in "+settings) {
		t.Fatalf("integrate claude: %s", out)
	}
	logRows(t, c.Env, "claude", c.proj)
	h := newHandTerm(t, c.Env)
	var tuis []int
	// Before the terminal goes (and the folders with it): Claude writes
	// its files as it exits.
	t.Cleanup(func() { endAll(tuis) })
	wa, pa := h.start(c.proj, bin, "--permission-mode", "default")
	wb, pb := h.start(c.proj, bin, "--permission-mode", "default")
	tuis = append(tuis, pa, pb)
	h.drawn(wa)
	h.drawn(wb)

	h.typeLine(wa, "hello [[text: from a]]")
	h.typeLine(wb, "hello [[text: from b]]")
	var ra, rb api.Session
	WaitFor(t, time.Second, "both TUIs tied to sessions of their own within 1 s of their first prompt", func() bool {
		var oka, okb bool
		ra, oka = rowOfPID(c.Env, "claude", c.proj, pa)
		rb, okb = rowOfPID(c.Env, "claude", c.proj, pb)
		return oka && okb && ra.Status == api.StatusRunning && rb.Status == api.StatusRunning &&
			ra.NativeID != "" && rb.NativeID != "" && ra.NativeID != rb.NativeID
	})
	for _, r := range []api.Session{ra, rb} {
		if out := c.MustRun("explain", r.ID); !strings.Contains(out, "integration (hook ") {
			t.Errorf("explain %s names no integration evidence:\n%s", r.ID, out)
		}
	}
	if st := c.MustRun("integrate", "--status"); !strings.Contains(st, "claude: installed") || !strings.Contains(st, "last report: ") || strings.Contains(st, "last report: none") {
		t.Errorf("integrate --status:\n%s", st)
	}

	// b's first turn ends: its TUI waits for the next instruction, as a
	// launched Claude's does after its Stop hook.
	WaitFor(t, 60*time.Second, "b to read waiting: input from its integration after its turn", func() bool {
		rb, _ = rowOfPID(c.Env, "claude", c.proj, pb)
		return rb.Activity == api.ActivityWaiting && rb.WaitingFor == api.WaitingInput && rb.ActivitySource == api.SourceIntegration &&
			rb.Waiting != nil && rb.Waiting.Kind == "Stop"
	})
	h.typeLine(wa, "make it [[bash: touch made-by-hand]]")
	WaitFor(t, 60*time.Second, "a to read waiting: permission from its integration", func() bool {
		ra, _ = rowOfPID(c.Env, "claude", c.proj, pa)
		return ra.WaitingFor == api.WaitingPermission && ra.Waiting != nil && ra.Waiting.Request != "" && ra.ActivitySource == api.SourceIntegration
	})
	if _, err := os.Stat(filepath.Join(c.proj, "made-by-hand")); err == nil {
		t.Fatal("the tool ran before it was approved")
	}
	if out := c.MustRun("approve", ra.ID); !strings.Contains(out, "approved") {
		t.Fatalf("approve: %s", out)
	}
	WaitFor(t, 60*time.Second, "the approved tool to run", func() bool {
		_, err := os.Stat(filepath.Join(c.proj, "made-by-hand"))
		return err == nil
	})

	tt := &turnTimer{t: t, h: h}
	turn := tt.turn
	turnsAroundTheService(t, c.Env, tt, wb)

	out := c.MustRun("integrate", "--remove")
	if !strings.Contains(out, "restored byte for byte") {
		t.Errorf("integrate --remove: %s", out)
	}
	if got, _ := os.ReadFile(settings); string(got) != userClaudeSettings {
		t.Errorf("settings.json after --remove:\n%s\nwant as it was:\n%s", got, userClaudeSettings)
	}
	wc, pc := h.start(c.proj, bin, "--permission-mode", "default")
	tuis = append(tuis, pc)
	h.drawn(wc)
	turn(wc, "without the integration")
	turn(wc, "without the integration")
}

// endAll ends the processes pids (SIGTERM, then SIGKILL) and waits until
// they are gone.
func endAll(pids []int) {
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
