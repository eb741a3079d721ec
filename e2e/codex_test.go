package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/fakemodel"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
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
	config := agenttest.CodexConfig(srv.URL())
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
	// On a busy machine the TUI may still be loading its thread from the
	// app-server daemon when the Enter comes, and keep the text in its
	// composer: a person presses Enter again once it has loaded.
	deadline := time.Now().Add(120 * time.Second)
	again := time.Now().Add(20 * time.Second)
	for len(c.srv.Requests()) == 0 {
		if time.Now().After(again) {
			enter := c.Command("send", "-n", s.ID, "-")
			enter.Stdin = strings.NewReader("\r")
			if out, err := enter.CombinedOutput(); err != nil {
				t.Fatalf("send Enter: %v: %s", err, out)
			}
			again = time.Now().Add(20 * time.Second)
		}
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
