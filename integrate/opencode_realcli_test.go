package integrate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/fakemodel"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
)

// opencodeScratch configures OpenCode in s for the fake model, asking
// before each bash command.
func opencodeScratch(t *testing.T, s *scratch) ([]string, *fakemodel.Server) {
	t.Helper()
	bin := agenttest.Bin(t, "opencode")
	srv := agenttest.FakeModel(t)
	config := filepath.Join(s.home, ".config", "opencode", "opencode.json")
	if err := os.MkdirAll(filepath.Dir(config), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := json.Marshal(map[string]any{
		"$schema": "https://opencode.ai/config.json", "model": "fake/fake-model", "small_model": "fake/fake-model",
		"autoupdate": false, "share": "disabled", "permission": map[string]any{"bash": "ask"},
		"provider": map[string]any{"fake": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "Fake",
			"options": map[string]any{"baseURL": srv.URL() + "/v1", "apiKey": "sk-fake"},
			"models":  map[string]any{"fake-model": map[string]any{"name": "Fake Model", "tool_call": true}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	s.env = append(s.env,
		"XDG_CONFIG_HOME="+filepath.Join(s.home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(s.home, ".local", "share"),
		"XDG_STATE_HOME="+filepath.Join(s.home, ".local", "state"),
		"XDG_CACHE_HOME="+filepath.Join(s.home, ".cache"),
		"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_SHARE=1")
	return []string{bin, "--model", "fake/fake-model"}, srv
}

// The OpenCode plugin in a real OpenCode TUI: its session's status
// reaches the service with its session id and folder, from a child of
// the OpenCode process; a permission OpenCode asks for is reported, and
// the service's allow lets the command run without a key pressed in
// OpenCode.
func TestOpenCodePluginReports(t *testing.T) {
	t.Parallel()
	s := newScratch(t)
	argv, _ := opencodeScratch(t, s)
	env := s.hookEnv()
	if _, err := opencode().Install(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	svc := serve(t, s.agentctlHome, serveAnswer)
	svc.decide = func(r report) string {
		if r.Event == "permission.asked" {
			return `{"behavior":"allow"}`
		}
		return "{}"
	}
	tm := newTerm(t, s.env)
	win, pid := tm.start(s.proj, argv...)
	tm.waitDrawn(win)
	typed := time.Now()
	tm.typeLine(win, "hello [[text: first answer]]")
	busy := svc.waitReport("session.status busy", 60*time.Second, func(r report) bool {
		return r.Agent == "opencode" && r.Event == "session.status" && strings.Contains(string(r.Body), `"busy"`)
	})
	t.Logf("busy reported %s after the prompt was typed", busy.At.Sub(typed).Round(time.Millisecond))
	saveCapture(t, busy)
	p := payloadOf(t, busy)
	if p["directory"] != s.proj {
		t.Errorf("report's directory %v, want %s", p["directory"], s.proj)
	}
	ev, _ := p["event"].(map[string]any)
	props, _ := ev["properties"].(map[string]any)
	sid, _ := props["sessionID"].(string)
	if !strings.HasPrefix(sid, "ses_") {
		t.Fatalf("report without an OpenCode session id: %s", busy.Body)
	}
	// The session's creation is reported too, with its id alone: the
	// first sign of it, which ties the process as soon as OpenCode makes
	// the session.
	created := svc.waitReport("session.created", 60*time.Second, func(r report) bool {
		return r.Agent == "opencode" && r.Event == "session.created" && strings.Contains(string(r.Body), sid)
	})
	t.Logf("session.created reported %s after the prompt was typed", created.At.Sub(typed).Round(time.Millisecond))
	saveCapture(t, created)
	if strings.Contains(string(created.Body), `"info"`) {
		t.Errorf("session.created with the session's record: %s", created.Body)
	}
	// A second TUI in the same folder: its first prompt ties its own
	// session to its own process.
	win2, pid2 := tm.start(s.proj, argv...)
	tm.waitDrawn(win2)
	typed2 := time.Now()
	tm.typeLine(win2, "hello [[text: second answer]]")
	busy2 := svc.waitReport("the second TUI's session.status busy", 60*time.Second, func(r report) bool {
		return r.Event == "session.status" && strings.Contains(string(r.Body), `"busy"`) && !strings.Contains(string(r.Body), sid)
	})
	t.Logf("the second TUI's busy reported %s after its prompt was typed", busy2.At.Sub(typed2).Round(time.Millisecond))
	idle := svc.waitReport("session.idle", 60*time.Second, func(r report) bool {
		return r.Event == "session.idle" && strings.Contains(string(r.Body), sid)
	})
	svc.checkFrom("the first TUI's reports", func(r report) bool { return strings.Contains(string(r.Body), sid) }, pid, pid2)
	svc.checkFrom("the second TUI's reports", func(r report) bool {
		return strings.Contains(string(r.Body), `"ses_`) && !strings.Contains(string(r.Body), sid)
	}, pid2, pid)
	saveCapture(t, idle)

	tm.typeLine(win, "run it [[bash: echo integ > allowed.txt]]")
	asked := svc.waitReport("permission.asked", 60*time.Second, func(r report) bool {
		return r.Event == "permission.asked" && strings.Contains(string(r.Body), sid)
	})
	saveCapture(t, asked)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(s.proj, "allowed.txt")); err == nil && strings.TrimSpace(string(b)) == "integ" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command allowed through the plugin never ran; OpenCode shows:\n%s", tm.screen(win))
		}
		time.Sleep(100 * time.Millisecond)
	}
	replied := svc.waitReport("permission.replied", 30*time.Second, func(r report) bool {
		return r.Event == "permission.replied" && strings.Contains(string(r.Body), sid)
	})
	saveCapture(t, replied)

	// Removed while OpenCode runs: the file goes, the user's config stays.
	cfg, _ := os.ReadFile(filepath.Join(s.home, ".config", "opencode", "opencode.json"))
	if _, err := opencode().Remove(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.home, ".config", "opencode", "plugin", "agentctl.js")); err == nil {
		t.Error("remove left the plugin")
	}
	if after, _ := os.ReadFile(filepath.Join(s.home, ".config", "opencode", "opencode.json")); string(after) != string(cfg) {
		t.Error("remove changed opencode.json")
	}
}
