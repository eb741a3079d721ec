package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/synth/claude"
	"github.com/agentctl/agentctl/internal/synth/codex"
	"github.com/agentctl/agentctl/internal/synth/opencode"
	"github.com/agentctl/agentctl/internal/synth/pi"
)

// The first list after a service start over a large store (1,000 Claude
// sessions and 1,000 of the other agents) lists every session, without a
// warning: cold, then after `daemon restart` from the discovery cache, and
// with that cache corrupt (ignored, with a line in the service's log).
// agentctl-bench --first reports the times.
func TestFirstListIsComplete(t *testing.T) {
	e := NewEnv(t)
	var userHome string
	for _, kv := range e.Vars {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			userHome = v
		}
	}
	want := map[string]int{"claude": 1000, "codex": 334, "pi": 333, "opencode": 333}
	for name, gen := range map[string]func() error{
		"claude": func() error { return claude.GenerateStore(userHome, want["claude"], 1) },
		"codex":  func() error { return codex.GenerateStore(filepath.Join(userHome, ".codex"), want["codex"], 2) },
		"pi":     func() error { return pi.GenerateStore(userHome, want["pi"], 3) },
		"opencode": func() error {
			return opencode.GenerateStore(filepath.Join(userHome, ".local", "share"), want["opencode"], 4)
		},
	} {
		if err := gen(); err != nil {
			t.Fatalf("generate the %s store: %v", name, err)
		}
	}
	complete := func(when string) {
		t.Helper()
		l := e.List("-a", "--since", "87600h")
		if len(l.Warnings) > 0 {
			t.Errorf("%s: the first list warned: %q", when, l.Warnings)
		}
		got := map[string]int{}
		for _, s := range l.Sessions {
			if s.Origin == api.OriginDiscovered {
				got[s.Adapter]++
			}
		}
		for name, n := range want {
			if got[name] != n {
				t.Errorf("%s: the first list has %d %s sessions, want %d", when, got[name], name, n)
			}
		}
	}
	complete("after a cold start") // the list starts the service
	cache := filepath.Join(e.Home, "cache", "claude-summaries.gob")
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("no discovery cache after the first list: %v", err)
	}
	e.MustRun("daemon", "restart")
	complete("after daemon restart")

	if err := os.WriteFile(cache, []byte("not a cache"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.MustRun("daemon", "restart")
	complete("with a corrupt cache file")
	logged, _ := os.ReadFile(filepath.Join(e.Home, "daemon.log"))
	if !strings.Contains(string(logged), "claude-summaries.gob ignored") {
		t.Errorf("the service's log does not say the corrupt cache was ignored:\n%s", logged)
	}
}
