package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/spawn"
)

// Restart runs a launched session again as a new session linked to it
// (restart_of): the same command, working directory, adapter, prompt,
// model, name, group and labels, in the caller's environment (the old
// environment's values are not kept). A running session is stopped first.
func (c *Core) Restart(ctx context.Context, id string, req api.RestartRequest) (api.Session, error) {
	ctx = context.WithoutCancel(ctx)
	sess, _, err := c.lookup(ctx, id)
	if err != nil {
		return api.Session{}, err
	}
	if sess.Origin != api.OriginLaunched {
		return api.Session{}, faultf(ErrInvalid, "session %s was not started by agentctl; restart it with its own CLI", sess.ID)
	}
	if sess.Status == api.StatusQueued {
		return api.Session{}, faultf(ErrInvalid, "session %s is queued and has not started: there is nothing to restart (it starts when admission lets it; `agentctl stop %s` cancels it)", sess.ID, sess.Handle)
	}
	dir := c.opts.Home.SessionDir(sess.ID)
	rec, err := spawn.ReadRecord(dir)
	if err != nil {
		return api.Session{}, fmt.Errorf("restart %s: %w", sess.ID, err)
	}
	prompt := rec.Prompt
	if rec.PromptCut {
		b, err := os.ReadFile(filepath.Join(dir, home.PromptFile))
		if err != nil {
			return api.Session{}, fmt.Errorf("restart %s: read its whole prompt: %w", sess.ID, err)
		}
		prompt = string(b)
	}
	kept, err := keptEnv(dir)
	if err != nil {
		return api.Session{}, fmt.Errorf("restart %s: %w", sess.ID, err)
	}
	run := api.RunRequest{
		Adapter: rec.Adapter, Prompt: prompt, Model: rec.Model, Cwd: rec.Cwd, Env: req.Env, EnvOverrides: kept,
		Name: sess.Name, Group: rec.Group, Labels: rec.Labels, Rows: rec.Rows, Cols: rec.Cols,
		ResumeOf: rec.ResumeOf, RestartOf: rec.ID, PermissionMode: rec.PermissionMode, AgentArgs: rec.AgentArgs,
		OnLimit: rec.OnLimit,
	}
	if api.CanonicalAdapter(rec.Adapter) == api.ExecAdapter {
		run.Command = rec.Argv
	}
	if l := rec.Limits; l != nil {
		run.Limits = &api.Limits{MemoryMaxBytes: l.MemoryMax, CPUs: l.CPUs, PidsMax: l.PidsMax}
	}
	if !sess.Status.Ended() {
		if _, err := c.Stop(ctx, sess.ID, req.Stop); err != nil {
			return api.Session{}, fmt.Errorf("restart %s: stop it first: %w", sess.ID, err)
		}
	}
	return c.Launch(ctx, run)
}

// Remove deletes a launched session's folder (records and output log). A
// running session is refused unless force, which stops it first (SIGKILL at
// once).
func (c *Core) Remove(ctx context.Context, id string, req api.RemoveRequest) (api.Session, error) {
	ctx = context.WithoutCancel(ctx)
	sess, _, err := c.lookup(ctx, id)
	if err != nil {
		return api.Session{}, err
	}
	if sess.Origin != api.OriginLaunched {
		return sess, faultf(ErrInvalid, "session %s was not started by agentctl, so it has no folder here; its agent's own store keeps it", sess.ID)
	}
	if sess.Status == api.StatusQueued {
		// Removing a queued session cancels it first: it never starts.
		if sess, err = c.Stop(ctx, sess.ID, api.StopRequest{}); err != nil {
			return sess, fmt.Errorf("remove %s: cancel it first: %w", sess.ID, err)
		}
	}
	if !sess.Status.Ended() {
		if !req.Force {
			return sess, faultf(ErrRunning, "session %s is %s: stop it first, or use --force to stop and remove it", sess.ID, sess.Status)
		}
		if sess, err = c.Stop(ctx, sess.ID, api.StopRequest{Force: true}); err != nil {
			return sess, fmt.Errorf("remove %s: stop it first: %w", sess.ID, err)
		}
	}
	if err := c.RemoveFolder(sess.ID); err != nil {
		return sess, err
	}
	return sess, nil
}

// RemoveFolder deletes the folder of a launched session that has ended
// (records and output log) and forgets it. The service may be writing into
// it as it goes (the end's claim just after a forced stop): a file made
// between RemoveAll's listing and its last rmdir leaves the folder not
// empty, so it is tried again, a bounded number of times.
func (c *Core) RemoveFolder(id string) error {
	dir := c.opts.Home.SessionDir(id)
	if err := removeAllSettled(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	c.Forget(id)
	return nil
}

// removeAllSettled is os.RemoveAll, tried again while a file appears in
// the folder as it is removed.
func removeAllSettled(dir string) error {
	var err error
	for range 20 {
		err = os.RemoveAll(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}

// ResumeAfterLimit starts a new run that continues the native session of
// id, a launched agent session a usage limit ended, with prompt: the
// agent's own resume (adapters.Launcher.Resume), as `agentctl resume`
// does, with the session's model, group, labels, options and --env values
// kept, in env (the service's: no caller is there). The new run keeps its
// on_limit, so a limit hit again holds and resumes it in turn.
func (c *Core) ResumeAfterLimit(ctx context.Context, id, prompt string, env []string) (api.Session, error) {
	ctx = context.WithoutCancel(ctx)
	dir := c.opts.Home.SessionDir(id)
	rec, err := spawn.ReadRecord(dir)
	if err != nil {
		return api.Session{}, fmt.Errorf("resume %s after its limit: %w", id, err)
	}
	if api.CanonicalAdapter(rec.Adapter) == api.ExecAdapter || rec.NativeID == "" {
		return api.Session{}, faultf(ErrInvalid, "resume %s after its limit: not an agent session with a native session to continue", id)
	}
	kept, err := keptEnv(dir)
	if err != nil {
		return api.Session{}, fmt.Errorf("resume %s after its limit: %w", id, err)
	}
	run := api.RunRequest{
		Adapter: rec.Adapter, Prompt: prompt, Model: rec.Model, Cwd: rec.Cwd, Env: env, EnvOverrides: kept,
		Group: rec.Group, Labels: rec.Labels, Rows: rec.Rows, Cols: rec.Cols,
		ResumeOf: rec.ID, PermissionMode: rec.PermissionMode, AgentArgs: rec.AgentArgs, OnLimit: rec.OnLimit,
	}
	if l := rec.Limits; l != nil {
		run.Limits = &api.Limits{MemoryMaxBytes: l.MemoryMax, CPUs: l.CPUs, PidsMax: l.PidsMax}
	}
	return c.Launch(ctx, run)
}
