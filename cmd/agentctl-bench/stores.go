package main

import (
	"path/filepath"

	"github.com/agentctl/agentctl/internal/synth/claude"
	"github.com/agentctl/agentctl/internal/synth/codex"
	"github.com/agentctl/agentctl/internal/synth/opencode"
	"github.com/agentctl/agentctl/internal/synth/pi"
)

// store generates one agent's synthetic native store under a home
// directory, in the agent's default location there.
type store struct {
	name     string
	generate func(home string, n int, seed int64) error
}

// stores are the agents whose synthetic stores make up the mixed store:
// adding an agent is one line here.
func stores() []store {
	return []store{
		{"codex", func(home string, n int, seed int64) error {
			return codex.GenerateStore(filepath.Join(home, ".codex"), n, seed)
		}},
		{"pi", pi.GenerateStore},
		{"claude", claude.GenerateStore},
		{"opencode", func(home string, n int, seed int64) error {
			return opencode.GenerateStore(filepath.Join(home, ".local", "share"), n, seed)
		}},
	}
}
