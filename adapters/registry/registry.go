// Package registry lists the adapters the service reads native stores with:
// the one place a new adapter is added.
package registry

import (
	"os"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/claude"
	"github.com/agentctl/agentctl/adapters/codex"
	"github.com/agentctl/agentctl/adapters/openclaw"
	"github.com/agentctl/agentctl/adapters/opencode"
	"github.com/agentctl/agentctl/adapters/pi"
)

// Local returns the adapters for the agents on this machine, reading their
// files under the user's home and the given environment. agentctlHome holds
// state an adapter keeps (the OpenClaw device key). The OpenClaw adapter is
// included only when a gateway is configured, so machines without one see
// no warning about it. watch, when not nil, tells the adapters which of
// their folders changed, so a query re-reads only those.
func Local(agentctlHome string, getenv func(string) string, watch adapters.FolderWatch) []adapters.Adapter {
	if getenv == nil {
		getenv = os.Getenv
	}
	home, _ := os.UserHomeDir()
	if h := getenv("HOME"); h != "" {
		home = h
	}
	env := adapters.Env{Home: home, Getenv: getenv, Folders: watch}
	out := []adapters.Adapter{
		claude.New(env),
		codex.New(env),
		opencode.New(env),
		pi.New(env),
		pi.NewRust(env),
	}
	if oc := openclaw.New(openclaw.ConfigFromEnv(agentctlHome, getenv)); oc.Configured() {
		out = append(out, oc)
	}
	return out
}
