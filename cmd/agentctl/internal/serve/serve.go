// Package serve holds the two foreground entry points the agentctl binary
// runs as a server rather than as a client: the service itself (`daemon
// run`) and a session's monitor (`shim`). It is the only part of the CLI
// that links the service.
package serve

import (
	"context"
	"log/slog"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/registry"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/spawn"
	"github.com/agentctl/agentctl/supervisor"
)

// Service runs the agentctl service for h in the foreground until ctx ends
// or a shutdown is asked for. Sessions are not touched by its exit.
func Service(ctx context.Context, h home.Home, version string, logger *slog.Logger) error {
	// The stores' folders are watched so that a query re-reads only what
	// changed; without a watch every query stats every native file.
	var watch adapters.FolderWatch
	var status func() api.WatchStatus
	if w, err := storeio.NewWatcher(); err != nil {
		if logger != nil {
			logger.Warn("the agents' stores are read by stat on every query", "err", err)
		}
		status = func() api.WatchStatus { return api.WatchStatus{Mode: "stat", Reason: err.Error()} }
	} else {
		defer w.Close()
		watch = w
		status = func() api.WatchStatus { return watchStatus(w.Report()) }
	}
	return supervisor.Run(ctx, supervisor.Options{
		Home:     h,
		Version:  version,
		Logger:   logger,
		Adapters: registry.Local(string(h), nil, registry.Options{Watch: watch, Logger: logger}),
		Watch:    status,
	})
}

// watchStatus is a watcher's report on the wire.
func watchStatus(r storeio.WatchReport) api.WatchStatus {
	st := api.WatchStatus{Mode: "inotify", Folders: r.Folders, Unwatched: r.Unwatched, Overflows: r.Overflows, Limit: r.Limit}
	if !r.LastOverflow.IsZero() {
		t := r.LastOverflow
		st.LastOverflow = &t
	}
	for _, f := range r.Failures {
		st.Failures = append(st.Failures, api.WatchFailure{Folder: f.Folder, Reason: f.Reason})
	}
	return st
}

// Shim runs one session's monitor for the session folder dir and returns
// its exit code.
func Shim(dir string) int { return spawn.RunShim(dir) }

// ShimInContainer runs one session's monitor as a container's entry point,
// with the launch spec in the file specPath, and returns the agent's exit
// code.
func ShimInContainer(dir, specPath string) int { return spawn.RunContainer(dir, specPath) }
