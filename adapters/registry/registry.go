// Package registry lists the adapters the service reads native stores with:
// the one place a new adapter is added.
package registry

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/claude"
	"github.com/agentctl/agentctl/adapters/codex"
	"github.com/agentctl/agentctl/adapters/openclaw"
	"github.com/agentctl/agentctl/adapters/opencode"
	"github.com/agentctl/agentctl/adapters/pi"
	"github.com/agentctl/agentctl/home"
)

// Options are what the service hands the adapters beyond the environment.
type Options struct {
	// Watch, when not nil, tells the adapters which of their folders
	// changed, so a query re-reads only those.
	Watch adapters.FolderWatch
	// Logger, when not nil, hears what the adapters log (a discovery
	// cache file ignored).
	Logger *slog.Logger
	// Hooks, when not nil, is the service's book of integration evidence
	// (adapters.Env.Hooks).
	Hooks adapters.HookTies
}

// Local returns the adapters for the agents on this machine, reading their
// files under the user's home and the given environment. agentctlHome holds
// state an adapter keeps (the OpenClaw device key). The OpenClaw adapter is
// included only when a gateway is configured, so machines without one see
// no warning about it. Adapters keep what they read across restarts under
// agentctlHome's cache folder.
func Local(agentctlHome string, getenv func(string) string, o Options) []adapters.Adapter {
	if getenv == nil {
		getenv = os.Getenv
	}
	userHome, _ := os.UserHomeDir()
	if h := getenv("HOME"); h != "" {
		userHome = h
	}
	env := adapters.Env{Home: userHome, Getenv: getenv, Folders: o.Watch, CacheDir: home.Home(agentctlHome).CacheDir(), Hooks: o.Hooks, TotalsLater: true}
	if o.Logger != nil {
		env.Logf = func(format string, args ...any) { o.Logger.Warn(fmt.Sprintf(format, args...)) }
	}
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
