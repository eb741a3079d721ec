package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/fakemodel"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
)

// opencodeBin finds the opencode CLI installed by scripts/install-agents.sh,
// or skips the test loudly.
func opencodeBin(t *testing.T) string { return agenttest.Bin(t, "opencode") }

// opencodeEnv is an agentctl installation whose opencode reaches a fake
// model server: opencode on PATH, a throwaway HOME with XDG folders and an
// offline opencode.json, and a project folder.
type opencodeEnv struct {
	*Env
	srv  *fakemodel.Server
	data string
	proj string
}

func newOpencodeEnv(t *testing.T) *opencodeEnv {
	t.Helper()
	bin := opencodeBin(t)
	srv := agenttest.FakeModel(t)
	e := NewEnv(t)
	home := t.TempDir()
	o := &opencodeEnv{Env: e, srv: srv, data: filepath.Join(home, ".local", "share")}
	o.proj, _ = filepath.EvalSymlinks(t.TempDir())
	config := filepath.Join(home, ".config", "opencode", "opencode.json")
	if err := os.MkdirAll(filepath.Dir(config), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := json.Marshal(map[string]any{
		"$schema": "https://opencode.ai/config.json", "model": "fake/fake-model", "small_model": "fake/fake-model",
		"autoupdate": false, "share": "disabled",
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
	e.Setenv("HOME", home)
	e.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	e.Setenv("XDG_DATA_HOME", o.data)
	e.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	e.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	// Offline: without it every start looks up the models catalogue.
	e.Setenv("OPENCODE_DISABLE_MODELS_FETCH", "1")
	e.Setenv("OPENCODE_DISABLE_AUTOUPDATE", "1")
	e.Setenv("OPENCODE_DISABLE_SHARE", "1")
	e.Setenv("PATH", filepath.Dir(bin)+":"+os.Getenv("PATH"))
	return o
}

func (o *opencodeEnv) launch(prompt string) api.Session {
	o.T.Helper()
	var s api.Session
	o.JSON(&s, "launch", "opencode", "--json", "--cwd", o.proj, "--model", "fake/fake-model", "-p", prompt)
	return s
}
