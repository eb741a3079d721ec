package session

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/claude"
	"github.com/agentctl/agentctl/adapters/codex"
	"github.com/agentctl/agentctl/adapters/opencode"
	"github.com/agentctl/agentctl/adapters/pi"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
)

// An agent that is not installed fails its launch at once, naming it and
// how to install it, also when its prompt would go through a wrapper (the
// binary is resolved once, by the core, before the adapter builds argv).
func TestLaunchOfAMissingAgentNamesIt(t *testing.T) {
	h := home.Home(t.TempDir())
	if err := h.Ensure(); err != nil {
		t.Fatal(err)
	}
	env := adapters.Env{Home: t.TempDir()}
	c := New(context.Background(), Options{Home: h, Exe: os.Args[0], Adapters: []adapters.Adapter{claude.New(env), codex.New(env), opencode.New(env), pi.New(env)}})
	empty := t.TempDir()
	for _, name := range []string{"claude", "codex", "opencode", "pi"} {
		for _, prompt := range []string{"say hi", strings.Repeat("x", 200_000)} {
			_, err := c.Launch(context.Background(), api.RunRequest{Adapter: name, Prompt: prompt, Cwd: empty, Env: []string{"PATH=" + empty}})
			if !errors.Is(err, ErrSpawn) || !strings.Contains(err.Error(), name+" is not installed") || !strings.Contains(err.Error(), "install it:") {
				t.Errorf("launch %s (%d-byte prompt) without it installed: %v", name, len(prompt), err)
			}
		}
	}
	if ents, _ := os.ReadDir(h.Sessions()); len(ents) != 0 {
		t.Errorf("failed launches left %d session folders", len(ents))
	}
}

// A limit, asked for or an adapter's in the configuration, is refused with
// the reason when the service gives sessions no cgroups: a session believed
// bounded must be. Negative limits are refused too.
func TestLaunchRefusesLimitsItCannotEnforce(t *testing.T) {
	h := home.Home(t.TempDir())
	if err := h.Ensure(); err != nil {
		t.Fatal(err)
	}
	c := New(context.Background(), Options{Home: h, Exe: os.Args[0], Limits: map[string]api.Limits{api.ExecAdapter: {PidsMax: 50}}})
	cwd := t.TempDir()
	for name, req := range map[string]api.RunRequest{
		"asked":      {Command: []string{"true"}, Cwd: cwd, Limits: &api.Limits{MemoryMaxBytes: 50 << 20}},
		"configured": {Command: []string{"true"}, Cwd: cwd},
		"negative":   {Command: []string{"true"}, Cwd: cwd, Limits: &api.Limits{CPUs: -1}},
	} {
		_, err := c.Launch(context.Background(), req)
		want := "limits need a cgroup per session"
		if name == "negative" {
			want = "cannot be negative"
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want refused: %s", name, err, want)
		}
	}
	if ents, _ := os.ReadDir(h.Sessions()); len(ents) != 0 {
		t.Errorf("refused launches left %d session folders", len(ents))
	}
}
