// Package serve holds the two foreground entry points the agentctl binary
// runs as a server rather than as a client: the service itself (`daemon
// run`) and a session's monitor (`shim`). It is the only part of the CLI
// that links the service.
package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/registry"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/config"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/envvar"
	"github.com/agentctl/agentctl/session"
	"github.com/agentctl/agentctl/spawn"
	"github.com/agentctl/agentctl/supervisor"
	"github.com/agentctl/agentctl/web"
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
	book := session.NewBook()
	return supervisor.Run(ctx, supervisor.Options{
		Home:     h,
		Version:  version,
		Logger:   logger,
		Book:     book,
		Adapters: adapters.NewSet(registry.Local(string(h), nil, registry.Options{Watch: watch, Logger: logger, Hooks: book})...),
		Watch:    status,
		Web:      func(cfg config.Web) (supervisor.Dashboard, error) { return dashboard(h, cfg, logger) },
	})
}

// dashboard is the web dashboard config.json's "web" asks the service to
// serve: a client of the service's own socket (never starting a service),
// with the token file `agentctl web` shares. Sessions started from its
// form get the service's environment, as it is the one launching them.
func dashboard(h home.Home, cfg config.Web, logger *slog.Logger) (supervisor.Dashboard, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s, err := web.New(web.Config{
		Client: client.New(h, "", false), Home: h, Listen: cfg.Listen, AllowHosts: cfg.AllowHosts,
		TLSCert: cfg.TLSCert, TLSKey: cfg.TLSKey, TLSGenerate: cfg.TLSGenerate, Expose: cfg.Expose,
		Socket: cfg.Socket, Env: os.Environ(), Log: logger.With("part", "web"), InConfig: true,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
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
// An agent's command line is built there by its adapter (the spec names
// the adapter, the prompt and the model), as the service builds a local
// one; dir is then the session folder of a home (HOME/sessions/ID).
func ShimInContainer(dir, specPath string) int {
	return spawn.RunContainer(dir, specPath, spawn.ContainerHooks{
		Prepare: func(spec *spawn.Spec, dir string) (func(spawn.Record), error) {
			core := podCore(context.Background(), dir, spec.Env)
			learn, err := core.PodLaunch(spec, dir)
			if err != nil || learn == nil {
				return nil, err
			}
			return func(rec spawn.Record) {
				ctx, cancel := context.WithTimeout(context.Background(), podNativeIDTimeout)
				defer cancel()
				learn(ctx, rec)
			}, nil
		},
		NativeID: session.LearnedNativeID,
	})
}

// podNativeIDTimeout bounds the search for a native id in a pod, as the
// service bounds its own.
const podNativeIDTimeout = 2 * time.Minute

// PodSession writes, as JSON on w, the session of folder dir in a cluster's
// pod as the agentctl there derives it (api.InPod): its record, the
// agent's liveness and the agent's own files, read with the agent's
// environment (the container's and the spec's in specPath). transcript > 0
// adds that many messages; explain adds the evidence.
func PodSession(ctx context.Context, w io.Writer, dir, specPath string, transcript int, explain bool) error {
	b, err := os.ReadFile(specPath)
	if err != nil {
		return fmt.Errorf("read the launch spec: %w", err)
	}
	var spec spawn.Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("parse the launch spec %s: %w", specPath, err)
	}
	env := envvar.Merge(os.Environ(), spec.Env...)
	out, err := podCore(ctx, dir, env).InPod(ctx, filepath.Base(dir), transcript, explain)
	if err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(out)
}

// podCore is the session core of the home that holds session folder dir
// in a pod, reading the agents' stores with the agent's environment env.
func podCore(ctx context.Context, dir string, env []string) *session.Core {
	h := home.Home(filepath.Dir(filepath.Dir(dir)))
	exe, _ := os.Executable()
	getenv := func(k string) string { return envvar.Value(env, k) }
	return session.New(ctx, session.Options{
		Home: h, Exe: exe, Adapters: adapters.NewSet(registry.Local(string(h), getenv, registry.Options{})...),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}
