package integrate

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/fakemodel"
)

// failOpenAgent is one agent of TestTurnWithoutTheService.
type failOpenAgent struct {
	integration Integration
	setup       func(t *testing.T, s *scratch) ([]string, *fakemodel.Server)
	// prompt is a turn that runs what the integration reports (Pi's tool
	// call; OpenCode's status changes; Codex's end of turn).
	prompt func(answer string) string
}

var failOpenAgents = []failOpenAgent{
	{integration: opencode(), setup: opencodeScratch, prompt: func(a string) string { return "hello [[text: " + a + "]]" }},
	{integration: pi(), setup: piScratch, prompt: func(a string) string { return "run [[bash: echo tool-ran]] [[text: " + a + "]]" }},
	{integration: codex(), setup: func(t *testing.T, s *scratch) ([]string, *fakemodel.Server) {
		argv, _, srv := codexScratch(t, s)
		return argv, srv
	}, prompt: func(a string) string { return "hello [[text: " + a + "]]" }},
}

// The agent never pays for the integration: a turn of each real agent
// takes no longer with the hook binary missing, or with a hook binary that
// never returns, than without the integration at all. (A service stopped,
// or frozen with SIGSTOP, is timed against the real service by e2e's
// Test*IntegrationByHand.) The turn is
// timed from the model's first request to its answer on the screen; the
// numbers are logged. The bound is loose (a wedge is tens of seconds); the
// machine is shared.
func TestTurnWithoutTheService(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs each agent's TUI three times")
	}
	modes := []string{"none", "missing", "hung"}
	for _, ag := range failOpenAgents {
		t.Run(ag.integration.Agent(), func(t *testing.T) {
			t.Parallel()
			took := map[string]time.Duration{}
			for _, mode := range modes {
				took[mode] = failOpenTurn(t, ag, mode)
			}
			var line []string
			for _, m := range modes {
				line = append(line, fmt.Sprintf("%s %s", m, took[m].Round(time.Millisecond)))
			}
			t.Logf("%s turn: %s", ag.integration.Agent(), strings.Join(line, ", "))
			for _, m := range modes[1:] {
				if took[m] > took["none"]+5*time.Second {
					t.Errorf("with the service %s the turn took %s, without the integration %s", m, took[m], took["none"])
				}
			}
		})
	}
}

// failOpenTurn runs one turn of ag's TUI with the integration in mode and
// returns how long it took.
func failOpenTurn(t *testing.T, ag failOpenAgent, mode string) time.Duration {
	t.Helper()
	s := newScratch(t)
	argv, srv := ag.setup(t, s)
	env := s.hookEnv()
	switch mode {
	case "missing":
		env = s.hookEnv(filepath.Join(s.home, "no-such-agentctl"), "hook")
	case "hung":
		env = s.hookEnv(executable(t, s.home, "hung-agentctl", "exec sleep 3600\n"), "hook")
	case "frozen":
		serve(t, s.agentctlHome, serveFrozen)
	}
	if mode != "none" {
		if _, err := ag.integration.Install(context.Background(), env); err != nil {
			t.Fatal(err)
		}
	}
	tm := newTerm(t, s.env)
	win, _ := tm.start(s.proj, argv...)
	tm.waitDrawn(win)
	answer := "answer-" + mode
	before := len(srv.Requests())
	tm.typeLine(win, ag.prompt(answer))
	var start time.Time
	deadline := time.Now().Add(120 * time.Second)
	entered := time.Now()
	for {
		tm.failIfExited(win, mode)
		if start.IsZero() {
			if reqs := srv.Requests(); len(reqs) > before {
				start = reqs[before].Time
			} else if time.Since(entered) > 5*time.Second {
				// A TUI may take the first Enter as part of a paste.
				tm.tmux("send-keys", "-t", win, "Enter")
				entered = time.Now()
			}
		}
		if !start.IsZero() && strings.Count(tm.screen(win), answer) >= 2 {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the turn did not end; the screen:\n%s", mode, tm.screen(win))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
