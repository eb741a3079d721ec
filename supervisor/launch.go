package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/spawn"
)

// ExecAdapter is the name of the plain-command adapter.
const ExecAdapter = "exec"

// nativeIDTimeout bounds how long the service looks for a native id that
// the adapter could not pre-assign.
const nativeIDTimeout = 2 * time.Minute

// launch starts a session and returns it once the command is confirmed
// started.
func (s *Server) launch(ctx context.Context, req api.RunRequest) (api.Session, error) {
	if req.Cwd == "" || !filepath.IsAbs(req.Cwd) {
		return api.Session{}, api.Errorf(api.CodeInvalid, "working directory %q must be an absolute path", req.Cwd)
	}
	for _, kv := range req.EnvOverrides {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return api.Session{}, api.Errorf(api.CodeInvalid, "--env %q: want KEY=VALUE", kv)
		}
	}
	// PWD follows the session's cwd, not the caller's: some agents
	// (OpenCode) work in $PWD rather than in their real working directory.
	env := spawn.MergeEnv(spawn.MergeEnv(req.Env, "PWD="+req.Cwd), req.EnvOverrides...)
	now := time.Now().UTC()
	id := NewID(now)
	dir := s.opts.Home.SessionDir(id)
	rec := spawn.Record{
		ID: id, Adapter: req.Adapter, Name: req.Name, Group: req.Group, Labels: req.Labels,
		Cwd: req.Cwd, Prompt: req.Prompt, Model: req.Model, ResumeOf: req.ResumeOf,
		CreatedAt: now, Rows: req.Rows, Cols: req.Cols,
		StopSignal: "SIGTERM",
	}
	rec.Adapter = canonicalAdapter(rec.Adapter)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return api.Session{}, fmt.Errorf("create session folder: %w", err)
	}
	if err := s.ops.reserve(id, dir, rec.Adapter, req); err != nil {
		os.RemoveAll(dir)
		return api.Session{}, err
	}
	ok := false
	defer func() {
		if !ok {
			s.ops.abandon(id)
		}
	}()
	spec := spawn.Spec{Env: env, ServiceLock: s.opts.Home.LockFile()}
	var finder adapters.NativeIDFinder
	if rec.Adapter == ExecAdapter {
		if len(req.Command) == 0 {
			os.RemoveAll(dir)
			return api.Session{}, api.Errorf(api.CodeInvalid, "no command given: agentctl run -- COMMAND [ARGS...]")
		}
		rec.Argv = req.Command
	} else {
		ls, f, err := s.adapterSpec(req, &rec, env, dir)
		if err != nil {
			os.RemoveAll(dir)
			return api.Session{}, err
		}
		rec.Argv, spec.Env, spec.Stdin, rec.NativeID = ls.Argv, ls.Env, ls.Stdin, ls.NativeID
		finder = f
	}
	rec.EnvKeys = spawn.EnvKeys(spec.Env)
	sort.Strings(rec.EnvKeys)
	spec.Record = rec

	began := time.Now()
	started, err := spawn.Start(ctx, s.opts.Exe, dir, spec, nil)
	if err != nil {
		if errors.Is(err, spawn.ErrStart) {
			os.RemoveAll(dir)
			return api.Session{}, api.Errorf(api.CodeSpawnFailed, "%s", strings.TrimPrefix(err.Error(), spawn.ErrStart.Error()+": "))
		}
		return api.Session{}, err
	}
	ok = true
	s.ops.started(id, started, time.Since(began))
	sess, err := s.records.get(id)
	if err != nil {
		return api.Session{}, err
	}
	s.notifyStarted(sess)
	s.watch(id)
	if started.NativeID == "" && finder != nil {
		s.learnNativeID(id, finder, started)
	}
	return sess, nil
}

// canonicalAdapter maps the names the old tool used onto today's, and ""
// onto the plain-command adapter.
func canonicalAdapter(name string) string {
	switch name {
	case "":
		return ExecAdapter
	case "claude-code":
		return "claude"
	}
	return name
}

// adapterSpec builds an agent's argv and environment through its adapter.
func (s *Server) adapterSpec(req api.RunRequest, rec *spawn.Record, env []string, dir string) (adapters.LaunchSpec, adapters.NativeIDFinder, error) {
	a := s.disc.adapter(rec.Adapter)
	launcher, ok := a.(adapters.Launcher)
	if !ok {
		return adapters.LaunchSpec{}, nil, api.Errorf(api.CodeInvalid, "unknown adapter %q (known: %s)", rec.Adapter, strings.Join(s.launchers(), ", "))
	}
	lreq := adapters.LaunchRequest{Prompt: req.Prompt, Model: req.Model, Cwd: req.Cwd, Env: env, SessionDir: dir}
	var ls adapters.LaunchSpec
	var err error
	if req.ResumeOf != "" {
		prev, perr := s.records.get(req.ResumeOf)
		if perr != nil {
			return ls, nil, perr
		}
		if prev.NativeID == "" {
			return ls, nil, api.Errorf(api.CodeInvalid, "session %s has no native session id yet, so it cannot be resumed", prev.ID)
		}
		lreq.NativeID = prev.NativeID
		ls, err = launcher.Resume(lreq)
		if err == nil && ls.NativeID == "" {
			ls.NativeID = prev.NativeID
		}
	} else {
		if req.Prompt == "" {
			return ls, nil, api.Errorf(api.CodeInvalid, "no prompt given: agentctl launch %s -p PROMPT", rec.Adapter)
		}
		ls, err = launcher.Launch(lreq)
	}
	if err != nil {
		return ls, nil, api.Errorf(api.CodeInvalid, "%s: %v", rec.Adapter, err)
	}
	if len(ls.Argv) == 0 {
		return ls, nil, fmt.Errorf("adapter %s built no command", rec.Adapter)
	}
	// The agent itself must be there, also when a wrapper (a shell passing a
	// prompt file) comes first in argv.
	for _, bin := range []string{ls.Argv[0], launcher.Binary()} {
		if bin == "" {
			continue
		}
		if _, err := spawn.LookPath(bin, ls.Env, req.Cwd); err != nil {
			return ls, nil, api.Errorf(api.CodeSpawnFailed, "start %s: %s is not installed or not on PATH (%v); install it: %s", rec.Adapter, bin, err, launcher.InstallHint())
		}
	}
	rec.StopSignal = unix.SignalName(launcher.StopSignal())
	finder, _ := a.(adapters.NativeIDFinder)
	return ls, finder, nil
}

func (s *Server) launchers() []string {
	names := []string{ExecAdapter}
	for _, a := range s.opts.Adapters {
		if _, ok := a.(adapters.Launcher); ok {
			names = append(names, a.Name())
		}
	}
	return names
}

// learnNativeID asks the adapter for the native id of a just-started agent
// and records it once found.
func (s *Server) learnNativeID(id string, finder adapters.NativeIDFinder, rec spawn.Record) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, nativeIDTimeout)
		defer cancel()
		nid, err := finder.FindNativeID(ctx, rec.Process.PID, rec.Cwd, rec.CreatedAt)
		if err != nil || nid == "" {
			s.log.Warn("native session id not found", "session", id, "adapter", rec.Adapter, "err", err)
			return
		}
		if err := s.records.setNativeID(id, nid); err != nil {
			s.log.Warn("record native session id", "session", id, "err", err)
		}
	}()
}
