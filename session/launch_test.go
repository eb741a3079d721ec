package session

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/claude"
	"github.com/agentctl/agentctl/adapters/codex"
	"github.com/agentctl/agentctl/adapters/opencode"
	"github.com/agentctl/agentctl/adapters/pi"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
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
	c := New(context.Background(), Options{Home: h, Exe: os.Args[0], Adapters: adapters.NewSet(claude.New(env), codex.New(env), opencode.New(env), pi.New(env))})
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

// recordingGate is a Gate that notes what it is asked.
type recordingGate struct {
	mu    sync.Mutex
	calls []string
}

func (g *recordingGate) note(s string) { g.mu.Lock(); g.calls = append(g.calls, s); g.mu.Unlock() }
func (g *recordingGate) Reserve(id, dir, adapter string, req api.RunRequest) error {
	g.note("reserve " + adapter)
	return nil
}
func (g *recordingGate) Started(id, adapter string, process proc.Identity, took time.Duration) {
	g.note("started")
}
func (g *recordingGate) Abandon(id string) { g.note("abandon") }

// The core holds a launch to the launch contract before it makes anything
// (no folder, no reservation), and a launch that fails once its folder is
// made and its directory reserved takes both back.
func TestLaunchRefusesAndCleansUp(t *testing.T) {
	t.Parallel()
	h := home.Home(t.TempDir())
	if err := h.Ensure(); err != nil {
		t.Fatal(err)
	}
	env := adapters.Env{Home: t.TempDir()}
	empty := t.TempDir()
	tests := []struct {
		name  string
		req   api.RunRequest
		kind  error
		gate  []string // what the gate was asked
		wants string
	}{
		{"a bad hook timeout", api.RunRequest{Adapter: "claude", Prompt: "p", Cwd: empty, HookTimeout: "soon"}, ErrInvalid, nil, "hook timeout"},
		{"a command without its command", api.RunRequest{Adapter: "", Cwd: empty}, ErrInvalid, nil, "no command given"},
		{"agent options for a command", api.RunRequest{Command: []string{"true"}, Cwd: empty, PermissionMode: "plan"}, ErrInvalid, nil, "are for agents"},
		{"a label with a newline", api.RunRequest{Adapter: "claude", Prompt: "p", Cwd: empty, Labels: map[string]string{"k": "a\nb"}}, ErrInvalid, nil, "label"},
		{"an agent not installed", api.RunRequest{Adapter: "claude-code", Prompt: "p", Cwd: empty, Env: []string{"PATH=" + empty}}, ErrSpawn, []string{"reserve claude", "abandon"}, "not installed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gate := &recordingGate{}
			c := New(context.Background(), Options{Home: h, Exe: os.Args[0], Adapters: adapters.NewSet(claude.New(env)), Gate: gate})
			_, err := c.Launch(context.Background(), tt.req)
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.wants) {
				t.Fatalf("launch: %v, want %v saying %q", err, tt.kind, tt.wants)
			}
			if !slices.Equal(gate.calls, tt.gate) {
				t.Errorf("the gate was asked %q, want %q", gate.calls, tt.gate)
			}
			if ents, _ := os.ReadDir(h.Sessions()); len(ents) != 0 {
				t.Errorf("a failed launch left %d session folders", len(ents))
			}
		})
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
