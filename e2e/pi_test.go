package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/fakemodel"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
)

// piBin finds the pi CLI installed by scripts/install-agents.sh, or skips
// the test loudly.
func piBin(t *testing.T) string { return agenttest.Bin(t, "pi") }

// piEnv is an agentctl installation whose HOME has a Pi models.json
// pointing at a fake model server, with pi on PATH, and a project folder.
type piEnv struct {
	*Env
	srv        *fakemodel.Server
	home, proj string
	binDir     string
}

func newPiEnv(t *testing.T) *piEnv {
	t.Helper()
	bin := piBin(t)
	srv := agenttest.FakeModel(t)

	e := NewEnv(t)
	p := &piEnv{Env: e, srv: srv, home: t.TempDir(), binDir: filepath.Dir(bin)}
	p.proj, _ = filepath.EvalSymlinks(t.TempDir())
	agentDir := filepath.Join(p.home, ".pi", "agent")
	if err := os.MkdirAll(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	models := fmt.Sprintf(`{"providers":{"fakeopenai":{"baseUrl":"%s/v1","api":"openai-completions","apiKey":"fake-key",
  "compat":{"supportsDeveloperRole":false,"supportsReasoningEffort":false},"models":[{"id":"fake-model"}]}}}`, srv.URL())
	if err := os.WriteFile(filepath.Join(agentDir, "models.json"), []byte(models), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Setenv("HOME", p.home)
	e.Setenv("PATH", p.binDir+":"+os.Getenv("PATH"))
	return p
}

// launch starts pi through agentctl and returns the session.
func (p *piEnv) launch(prompt string, extra ...string) api.Session {
	p.T.Helper()
	var s api.Session
	args := append([]string{"launch", "pi", "--json", "--cwd", p.proj, "--model", "fakeopenai/fake-model", "-p", prompt}, extra...)
	p.JSON(&s, args...)
	return s
}

func texts(tr api.Transcript) []string {
	var out []string
	for _, m := range tr.Messages {
		out = append(out, m.Text)
	}
	return out
}

// liveArgv reports whether a live process has exactly argv. A Pi tool runs
// as `/bin/bash -c CMD`, and bash execs a simple CMD in place, so the tool
// shows as CMD's own argv. (Pi's argv holds the prompt, which mentions CMD,
// until it overwrites its title seconds after start.)
func liveArgv(argv ...string) bool {
	want := strings.Join(argv, "\x00")
	ents, _ := os.ReadDir("/proc")
	for _, en := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
		if err != nil || strings.TrimRight(string(b), "\x00") != want {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(en.Name(), "%d", &pid); err == nil && alive(pid) {
			return true
		}
	}
	return false
}
