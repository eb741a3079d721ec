package integrate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/fakemodel"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
)

// piScratch configures Pi in s for the fake model and returns its argv.
func piScratch(t *testing.T, s *scratch) ([]string, *fakemodel.Server) {
	t.Helper()
	bin := agenttest.Bin(t, "pi")
	srv := agenttest.FakeModel(t)
	agentDir := filepath.Join(s.home, ".pi", "agent")
	if err := os.MkdirAll(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	models := fmt.Sprintf(`{"providers":{"fakeopenai":{"baseUrl":"%s/v1","api":"openai-completions","apiKey":"fake-key",
  "compat":{"supportsDeveloperRole":false,"supportsReasoningEffort":false},"models":[{"id":"fake-model"}]}}}`, srv.URL())
	if err := os.WriteFile(filepath.Join(agentDir, "models.json"), []byte(models), 0o644); err != nil {
		t.Fatal(err)
	}
	s.env = append(s.env, "PI_OFFLINE=1")
	return []string{bin, "--provider", "fakeopenai", "--model", "fake-model"}, srv
}

// The Pi extension in a real Pi TUI: session start, the agent's start and
// end and its tool calls reach the service with the session's id and
// folder, from a child of the Pi process; by default a tool call is only
// reported, and with AGENTCTL_PI_ASK_SECONDS the service's deny blocks it.
func TestPiExtensionReports(t *testing.T) {
	t.Parallel()
	for _, ask := range []bool{false, true} {
		t.Run(fmt.Sprintf("ask=%v", ask), func(t *testing.T) {
			t.Parallel()
			s := newScratch(t)
			argv, _ := piScratch(t, s)
			if ask {
				s.env = append(s.env, "AGENTCTL_PI_ASK_SECONDS=20")
			}
			if _, err := pi().Install(context.Background(), s.hookEnv()); err != nil {
				t.Fatal(err)
			}
			svc := serve(t, s.agentctlHome, serveAnswer)
			svc.decide = func(r report) string {
				if r.Event == "tool_call" {
					return `{"behavior":"deny","message":"not now"}`
				}
				return "{}"
			}
			tm := newTerm(t, s.env)
			win, pid := tm.start(s.proj, argv...)
			start := svc.waitReport("session_start", 120*time.Second, func(r report) bool { return r.Event == "session_start" })
			p := payloadOf(t, start)
			sid, _ := p["sessionId"].(string)
			if len(sid) != 36 || p["cwd"] != s.proj || p["hasUI"] != true {
				t.Fatalf("session_start report without the session id, folder or UI: %s", start.Body)
			}
			// A second TUI in the same folder is told apart at its start:
			// its own session id, from its own process.
			win2, pid2 := tm.start(s.proj, argv...)
			start2 := svc.waitReport("the second TUI's session_start", 120*time.Second, func(r report) bool {
				return r.Event == "session_start" && !strings.Contains(string(r.Body), sid)
			})
			sid2, _ := payloadOf(t, start2)["sessionId"].(string)
			if len(sid2) != 36 {
				t.Fatalf("the second TUI's session_start without its session id: %s", start2.Body)
			}
			saveCapture(t, start)
			tm.waitDrawn(win)
			tm.typeLine(win, "run it [[bash: echo integ > tool.txt]]")
			call := svc.waitReport("tool_call", 60*time.Second, func(r report) bool {
				return r.Event == "tool_call" && strings.Contains(string(r.Body), sid)
			})
			saveCapture(t, call)
			if got := strings.Contains(string(call.Body), `"ask":true`); got != ask {
				t.Errorf("tool_call report asks %v, want %v: %s", got, ask, call.Body)
			}
			end := svc.waitReport("agent_end", 60*time.Second, func(r report) bool {
				return r.Event == "agent_end" && strings.Contains(string(r.Body), sid)
			})
			saveCapture(t, end)
			tm.waitDrawn(win2)
			tm.typeLine(win2, "hello [[text: second answer]]")
			svc.waitReport("the second TUI's agent_end", 60*time.Second, func(r report) bool {
				return r.Event == "agent_end" && strings.Contains(string(r.Body), sid2)
			})
			svc.checkFrom("the first TUI's reports", func(r report) bool { return strings.Contains(string(r.Body), sid) }, pid, pid2)
			svc.checkFrom("the second TUI's reports", func(r report) bool { return strings.Contains(string(r.Body), sid2) }, pid2, pid)
			for _, r := range svc.reports() {
				if r.Event == "turn_end" || r.Event == "agent_start" {
					saveCapture(t, r)
				}
			}
			_, err := os.Stat(filepath.Join(s.proj, "tool.txt"))
			if ran := err == nil; ran == ask {
				t.Errorf("the tool ran %v with ask %v (the service denies it)", ran, ask)
			}
		})
	}
}
