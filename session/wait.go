package session

import (
	"context"
	"os"
	"path/filepath"

	"github.com/fsnotify/fsnotify"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/spawn"
)

// WaitEnded follows a session this service started to its end without
// polling, and returns it ended: it waits for the agent's exit (pidfd),
// then for the monitor's exit record to appear (a file watch) or the
// monitor to die without writing one, whichever comes first: the monitor
// lingers after writing it (in-flight answers), and the end must not wait
// for that.
func (c *Core) WaitEnded(ctx context.Context, id string) (api.Session, error) {
	dir := c.opts.Home.SessionDir(id)
	rec, err := spawn.ReadRecord(dir)
	if err != nil {
		return api.Session{}, err
	}
	if err := proc.WaitExit(ctx, rec.Process); err != nil {
		return api.Session{}, err
	}
	if err := waitExitRecord(ctx, dir, rec.Shim); err != nil {
		return api.Session{}, err
	}
	sess, err := c.records.get(id)
	if err == nil && sess.Status == api.StatusLost {
		if err := c.endLeftovers(ctx, id); err != nil {
			c.log.Warn("end what a lost session left running", "session", id, "err", err)
		}
	}
	return sess, err
}

// Process is the process a session this service started runs as, as its
// monitor recorded it.
func (c *Core) Process(id string) (proc.Identity, error) {
	rec, err := spawn.ReadRecord(c.opts.Home.SessionDir(id))
	if err != nil {
		return proc.Identity{}, err
	}
	return rec.Process, nil
}

// waitExitRecord returns once dir holds an exit record or the shim is gone.
// The file watch lives only between the agent's exit and the record, so
// live sessions hold no inotify instance.
func waitExitRecord(ctx context.Context, dir string, shim proc.Identity) error {
	var changed <-chan fsnotify.Event
	var errs <-chan error
	if w, err := fsnotify.NewWatcher(); err == nil {
		defer w.Close()
		if w.Add(dir) == nil {
			changed, errs = w.Events, w.Errors
		}
	}
	if _, err := os.Stat(filepath.Join(dir, home.ExitFile)); err == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	shimGone := make(chan error, 1)
	go func() { shimGone <- proc.WaitExit(ctx, shim) }()
	for {
		select {
		case ev, ok := <-changed:
			if !ok {
				changed = nil
				continue
			}
			if filepath.Base(ev.Name) == home.ExitFile && ev.Has(fsnotify.Create) {
				return nil
			}
		case <-errs:
			// An overflowed queue may have lost the create: look.
			if _, err := os.Stat(filepath.Join(dir, home.ExitFile)); err == nil {
				return nil
			}
		case err := <-shimGone:
			return err
		}
	}
}
