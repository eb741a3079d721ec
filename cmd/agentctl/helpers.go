package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/registry"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/supervisor"
)

type apiDaemonStatus = api.DaemonStatus

func contextWithTimeout(cmd *cobra.Command, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), d)
}

// localAdapters are the adapters the service reads native stores with.
func localAdapters(h supervisor.Home) []adapters.Adapter {
	return registry.Local(string(h), nil)
}

func absPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", p, err)
	}
	return abs, nil
}

func signalNumber(name string) int { return int(unix.SignalNum(name)) }
