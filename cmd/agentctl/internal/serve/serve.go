// Package serve holds the two foreground entry points the agentctl binary
// runs as a server rather than as a client: the service itself (`daemon
// run`) and a session's monitor (`shim`). It is the only part of the CLI
// that links the service.
package serve

import (
	"context"
	"log/slog"

	"github.com/agentctl/agentctl/adapters/registry"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/spawn"
	"github.com/agentctl/agentctl/supervisor"
)

// Service runs the agentctl service for h in the foreground until ctx ends
// or a shutdown is asked for. Sessions are not touched by its exit.
func Service(ctx context.Context, h home.Home, version string, logger *slog.Logger) error {
	return supervisor.Run(ctx, supervisor.Options{
		Home:     h,
		Version:  version,
		Logger:   logger,
		Adapters: registry.Local(string(h), nil),
	})
}

// Shim runs one session's monitor for the session folder dir and returns
// its exit code.
func Shim(dir string) int { return spawn.RunShim(dir) }

// ShimInContainer runs one session's monitor as a container's entry point,
// with the launch spec in the file specPath, and returns the agent's exit
// code.
func ShimInContainer(dir, specPath string) int { return spawn.RunContainer(dir, specPath) }
