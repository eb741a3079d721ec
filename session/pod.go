package session

import (
	"context"
	"fmt"
	"sort"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/envvar"
	"github.com/agentctl/agentctl/spawn"
)

// PodLaunch completes, in a cluster's pod, the spec of an agent whose
// command line the caller left to the place it runs: the agent's adapter
// builds it here, where the agent and its store are, as the service builds
// a local one. A resume continues spec.Record.NativeID. The spec's session
// folder dir must be this core's (its home's sessions/ID). The returned
// learn, when not nil, looks for the native id the adapter could not
// pre-assign once the agent runs, and records it; it returns when found or
// when ctx ends.
func (c *launcher) PodLaunch(spec *spawn.Spec, dir string) (learn func(ctx context.Context, started spawn.Record), err error) {
	rec := &spec.Record
	rec.Adapter = api.CanonicalAdapter(rec.Adapter)
	if rec.Adapter == api.ExecAdapter || len(rec.Argv) > 0 {
		return nil, nil
	}
	if rec.ResumeOf != "" && rec.NativeID == "" {
		return nil, faultf(ErrInvalid, "resume of %s: no native session id to continue", rec.ResumeOf)
	}
	req := api.RunRequest{Adapter: rec.Adapter, Prompt: rec.Prompt, Model: rec.Model, Cwd: rec.Cwd,
		ResumeOf: rec.ResumeOf, Interactive: spec.Interactive}
	// No hook command: no service in the pod hears an agent's hooks.
	ls, finder, err := c.agentSpec(req, rec, spec.Env, dir, rec.NativeID, nil)
	if err != nil {
		return nil, err
	}
	rec.Argv, spec.Env, spec.Stdin, spec.Path = ls.Argv, ls.Env, ls.Stdin, ls.Path
	if ls.NativeID != "" {
		rec.NativeID = ls.NativeID
	}
	rec.EnvKeys = envvar.Keys(spec.Env)
	sort.Strings(rec.EnvKeys)
	if rec.NativeID != "" || finder == nil || ls.Server != "" {
		return nil, nil
	}
	return func(ctx context.Context, started spawn.Record) {
		nid, err := finder.FindNativeID(ctx, adapters.Started{PID: started.Process.PID, Cwd: started.Cwd, Since: started.CreatedAt, Prompt: started.Prompt})
		if err != nil || nid == "" {
			c.log.Warn("native session id not found", "session", started.ID, "adapter", started.Adapter, "err", err)
			return
		}
		if err := c.records.setNativeID(started.ID, nid); err != nil {
			c.log.Warn("record native session id", "session", started.ID, "err", err)
		}
	}, nil
}

// InPod is a session as the agentctl in its pod derives it (the record,
// liveness, and the agent's own files there), with its transcript and the
// evidence when asked: what `agentctl pod-session` prints.
func (c *Core) InPod(ctx context.Context, id string, transcript int, explain bool) (api.InPod, error) {
	var out api.InPod
	var err error
	if explain {
		ex, err := c.Explain(ctx, id)
		if err != nil {
			return out, err
		}
		out.Session, out.Explanation = ex.Session, &ex
	} else if out.Session, err = c.Get(ctx, id); err != nil {
		return out, err
	}
	if transcript > 0 {
		t, err := c.Transcript(ctx, id, transcript)
		if err != nil {
			return out, fmt.Errorf("transcript of %s: %w", id, err)
		}
		out.Transcript = &t
	}
	return out, nil
}
