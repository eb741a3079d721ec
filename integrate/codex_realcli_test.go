package integrate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/fakemodel"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
)

// codexScratch configures Codex in s for the fake model, with a user's
// own notify program and comments in its config.toml, and returns Codex's
// argv and the file the user's program writes its argument to.
func codexScratch(t *testing.T, s *scratch) ([]string, string, *fakemodel.Server) {
	t.Helper()
	bin := agenttest.Bin(t, "codex")
	srv := agenttest.FakeModel(t)
	codexHome := filepath.Join(s.home, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	got := filepath.Join(s.home, "user-notify.json")
	userProg := filepath.Join(s.home, "user-notify.sh")
	if err := os.WriteFile(userProg, []byte("#!/bin/sh\nprintf '%s' \"$2\" > \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`# my codex settings
model = "fake-model"   # the fake one
model_provider = "fake"
check_for_update_on_startup = false
notify = [
  %q, # my own notifier
  %q,
]

%s
[projects.%q]
trust_level = "trusted"
`, userProg, got, agenttest.CodexProvider(srv.URL()), s.proj)
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	s.env = append(s.env, "FAKE_API_KEY=sk-fake")
	t.Cleanup(func() {
		// A Codex TUI starts the store's app-server daemon and its
		// updater, which outlive it.
		cmd := exec.Command(bin, "app-server", "daemon", "stop")
		cmd.Env, cmd.Dir = s.env, s.proj
		cmd.Run()
		b, err := os.ReadFile(filepath.Join(codexHome, "app-server-daemon", "daemon-updater.pid"))
		if err != nil {
			return
		}
		var p struct {
			PID int `json:"pid"`
		}
		if json.Unmarshal(b, &p) != nil || p.PID <= 1 {
			return
		}
		if argv, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID)); err == nil && strings.Contains(string(argv), codexHome) {
			syscall.Kill(p.PID, syscall.SIGTERM)
		}
	})
	return []string{bin}, got, srv
}

// The notify entry and the hooks in a real Codex TUI: the end of its turn
// reaches the service with the thread id and folder, from a child of the
// Codex process, and the user's own notify program still runs with the
// JSON; the hooks run without Codex asking the user to trust them (the
// install trusted them as Codex hashes them), and report the prompt and
// the end of the turn of the same thread.
func TestCodexNotifyReports(t *testing.T) {
	t.Parallel()
	s := newScratch(t)
	argv, userGot, srv := codexScratch(t, s)
	if _, err := codex().Install(context.Background(), s.hookEnv()); err != nil {
		t.Fatal(err)
	}
	svc := serve(t, s.agentctlHome, serveAnswer)
	tm := newTerm(t, s.env)
	win, pid := tm.start(s.proj, argv...)
	tm.waitDrawn(win)
	tm.typeLine(win, "hello [[text: codex-integ-answer]]")
	for i := 0; i < 30 && len(srv.Requests()) == 0; i++ {
		time.Sleep(time.Second)
		if i%5 == 4 {
			// The TUI may take the first Enter as part of a paste.
			tm.tmux("send-keys", "-t", win, "Enter")
		}
	}
	done := svc.waitReport("agent-turn-complete", 90*time.Second, func(r report) bool {
		return r.Agent == "codex" && r.Event == "agent-turn-complete" && strings.Contains(string(r.Body), `"input-messages":["hello [[text: codex-integ-answer]]"]`)
	})
	var thread struct {
		ID string `json:"thread-id"`
	}
	json.Unmarshal(done.Body, &thread)
	for _, ev := range []string{"UserPromptSubmit", "Stop"} {
		svc.waitReport(ev, 30*time.Second, func(r report) bool {
			return r.Agent == "codex" && r.Event == ev && strings.Contains(string(r.Body), `"session_id":"`+thread.ID+`"`)
		})
	}
	svc.checkFrom("Codex's reports", func(r report) bool { return strings.Contains(string(r.Body), thread.ID) }, pid)
	for _, r := range svc.reports() {
		saveCapture(t, r)
	}
	var p map[string]any
	if err := json.Unmarshal(done.Body, &p); err != nil {
		t.Fatalf("report is not JSON: %v: %s", err, done.Body)
	}
	if p["type"] != "agent-turn-complete" || p["cwd"] != s.proj || len(fmt.Sprint(p["thread-id"])) != 36 {
		t.Errorf("report without its type, folder or thread id: %s", done.Body)
	}
	// Codex wrote to config.toml itself meanwhile (its [tui] state):
	// remove takes out agentctl's entry and gives back the user's program.
	if _, err := codex().Remove(context.Background(), s.hookEnv()); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(s.home, ".codex", "config.toml"))
	n, err := findNotify(cfg)
	if err != nil || !n.found {
		t.Fatalf("no notify after remove (%v):\n%s", err, cfg)
	}
	if user, ours := userNotify(n.argv); ours || len(user) != 2 || user[1] != userGot || !strings.Contains(string(cfg), "# my codex settings\n") {
		t.Errorf("after remove notify is %q:\n%s", n.argv, cfg)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(userGot)
		if err == nil && strings.Contains(string(b), `"agent-turn-complete"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the user's notify program did not run with the JSON: %v %q", err, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
