package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
	"github.com/agentctl/agentctl/internal/fakemodel"
)

// codexBin finds the codex CLI installed by scripts/install-agents.sh, or
// skips the test loudly.
func codexBin(t *testing.T) string { return agenttest.Bin(t, "codex") }

// codexEnv is an agentctl installation whose codex reaches a fake model
// server: codex on PATH, a throwaway HOME and CODEX_HOME with an offline
// config.toml, and a project folder.
type codexEnv struct {
	*Env
	srv       *fakemodel.Server
	codexHome string
	proj      string
}

func newCodexEnv(t *testing.T) *codexEnv {
	t.Helper()
	bin := codexBin(t)
	srv := agenttest.FakeModel(t)
	e := NewEnv(t)
	home := t.TempDir()
	c := &codexEnv{Env: e, srv: srv, codexHome: filepath.Join(home, ".codex")}
	c.proj, _ = filepath.EvalSymlinks(t.TempDir())
	if err := os.MkdirAll(c.codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	// Offline: a provider on the fake server, no retries, and none of the
	// analytics, feedback or plugin lookups that reach the network.
	config := fmt.Sprintf(`model = "fake-model"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "Fake"
base_url = "%s/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false
[feedback]
enabled = false
[features]
plugins = false
remote_plugin = false
apps = false
`, srv.URL())
	if err := os.WriteFile(filepath.Join(c.codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Setenv("HOME", home)
	e.Setenv("CODEX_HOME", c.codexHome)
	e.Setenv("FAKE_API_KEY", "sk-fake")
	e.Setenv("PATH", filepath.Dir(bin)+":"+os.Getenv("PATH"))
	// A Codex TUI starts the store's app-server daemon, which outlives it.
	t.Cleanup(c.stopDaemon)
	return c
}

func (c *codexEnv) launch(prompt string) api.Session {
	c.T.Helper()
	var s api.Session
	c.JSON(&s, "launch", "codex", "--json", "--cwd", c.proj, "-p", prompt)
	return s
}

func (c *codexEnv) peek(id string, n int) []string {
	c.T.Helper()
	var tr api.Transcript
	c.JSON(&tr, "peek", "--json", "-n", fmt.Sprint(n), id)
	return texts(tr)
}

// A prompt whose tool runs a few seconds: list shows it running with the
// native id learned from the rollout codex opens, peek shows the answer,
// status says exited 0 with the native facts; resume continues the same
// rollout.
func TestCodexLaunchPeekResume(t *testing.T) {
	t.Parallel()
	c := newCodexEnv(t)
	s := c.launch("work [[sleep: 6]]")
	if s.Adapter != "codex" {
		t.Fatalf("launched %+v", s)
	}
	var nativeID string
	WaitFor(t, 90*time.Second, "the session to be listed running with its native id", func() bool {
		for _, l := range c.List().Sessions {
			if l.ID == s.ID && l.Status == api.StatusRunning && l.NativeID != "" {
				nativeID = l.NativeID
				return true
			}
		}
		return false
	})
	if _, err := uuid.Parse(nativeID); err != nil {
		t.Errorf("native id %q is not a Codex session id", nativeID)
	}
	for _, l := range c.List("-a").Sessions {
		if l.NativeID == nativeID && l.ID != s.ID {
			t.Errorf("native session %s listed twice: %s (%s) and %s", nativeID, l.ID, l.Origin, s.ID)
		}
	}
	done := c.WaitStatus(s.ID, api.StatusExited, 120*time.Second)
	if done.ExitCode == nil || *done.ExitCode != 0 {
		t.Fatalf("session ended %+v, want exit 0", done)
	}
	if done.NativeID != nativeID || done.Model != "fake-model" || done.TokensIn == nil || *done.TokensIn <= 0 || !strings.HasPrefix(done.Prompt, "work") {
		t.Errorf("native facts not merged: native %q model %q tokens %v prompt %q", done.NativeID, done.Model, done.TokensIn, done.Prompt)
	}
	if got := c.peek(s.ID, 1); len(got) != 1 || got[0] != "hi from fakellm (after 1 tool calls)" {
		t.Errorf("peek = %q", got)
	}

	var r api.Session
	c.JSON(&r, "resume", "--json", s.ID, "again [[text: resumed ok]]")
	if r.NativeID != nativeID || r.ID == s.ID {
		t.Fatalf("resume: %+v, want a new run of native session %s", r, nativeID)
	}
	if rd := c.WaitStatus(r.ID, api.StatusExited, 120*time.Second); rd.ExitCode == nil || *rd.ExitCode != 0 {
		t.Fatalf("resumed run ended %+v", rd)
	}
	want := []string{"hi from fakellm (after 1 tool calls)", "resumed ok"}
	for _, id := range []string{s.ID, r.ID} {
		if got := c.peek(id, 2); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("peek -n 2 %s = %q, want %q (one native session)", id, got, want)
		}
	}
	files, _ := filepath.Glob(filepath.Join(c.codexHome, "sessions", "*", "*", "*", "rollout-*-"+nativeID+".jsonl"))
	if len(files) != 1 {
		t.Errorf("rollouts of %s: %v", nativeID, files)
	}
}

// A long session stopped: codex (SIGINT, its graceful stop) and its tool
// are gone, and status reports how it ended.
func TestCodexStop(t *testing.T) {
	t.Parallel()
	c := newCodexEnv(t)
	s := c.launch("long [[sleep: 117.43]]")
	WaitFor(t, 90*time.Second, "the tool to run", func() bool { return liveArgv("sleep", "117.43") })
	var final api.Session
	c.JSON(&final, "stop", "--json", s.ID)
	if !final.Status.Ended() {
		t.Fatalf("after stop: %+v", final)
	}
	code := "none"
	if final.ExitCode != nil {
		code = fmt.Sprint(*final.ExitCode)
	}
	t.Logf("after stop: status %s, exit code %s, signal %q", final.Status, code, final.Signal)
	// Codex ends itself on SIGINT with 1 after recording the aborted turn;
	// a kill after the grace period shows as the signal.
	if final.Status == api.StatusExited && (final.ExitCode == nil || *final.ExitCode != 1) {
		t.Errorf("stopped codex exited %v, want 1 (SIGINT) or killed", final.ExitCode)
	}
	if final.Status == api.StatusKilled && final.Signal == "" {
		t.Errorf("killed without a signal: %+v", final)
	}
	if alive(final.PID) {
		t.Errorf("codex (pid %d) survived the stop", final.PID)
	}
	if liveArgv("sleep", "117.43") {
		t.Error("the tool (sleep 117.43) survived the stop")
	}
	for _, l := range c.List("-a").Sessions {
		if l.NativeID != "" && l.NativeID == final.NativeID && l.Status == api.StatusRunning {
			t.Errorf("stopped session still listed running: %+v", l)
		}
	}
}

// The Codex TUI takes a fast burst of keys as a paste, in which an Enter is
// a newline: `send` types the text, then Enter as a person would, and the
// message is submitted (the model is asked).
func TestCodexInteractiveSendSubmits(t *testing.T) {
	t.Parallel()
	c := newCodexEnv(t)
	trust := fmt.Sprintf("\n[projects.%q]\ntrust_level = \"trusted\"\n", c.proj)
	f, err := os.OpenFile(filepath.Join(c.codexHome, "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(trust)
	f.Close()
	s := c.Start("--cwd", c.proj, "--", "codex")
	screen := func() string {
		out, _, _ := c.Run("logs", "-n", "0", s.ID)
		return out
	}
	WaitFor(t, 60*time.Second, "codex's prompt to be drawn", func() bool {
		return len(strings.TrimSpace(screen())) > 0 && c.Session(s.ID).Status == api.StatusRunning
	})
	time.Sleep(2 * time.Second) // the composer takes keys once drawn
	c.MustRun("send", s.ID, "hello [[text: codex-interactive-answer]]")
	deadline := time.Now().Add(60 * time.Second)
	for len(c.srv.Requests()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the message was not submitted: the model was never asked; the screen:\n%s", screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
	var final api.Session
	c.JSON(&final, "stop", "--json", s.ID)
	if !final.Status.Ended() {
		t.Errorf("after stop: %s", final.Status)
	}
}
