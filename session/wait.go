package session

import (
	"context"
	"os"
	"path/filepath"
	"time"

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
		if _, err := c.endLeftovers(ctx, id); err != nil {
			c.log.Warn("end what a lost session left running", "session", id, "err", err)
		}
	}
	return sess, err
}

// Process is the process a session this service started runs as, as its
// monitor recorded it.
func (c *reader) Process(id string) (proc.Identity, error) {
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

// exitRecordWait bounds how long a read of a session waits for its
// monitor's exit record once the agent has ended: the monitor reaps the
// agent and writes the record within milliseconds, and a status read in
// between must say how it ended, not that it does not know yet.
const exitRecordWait = 2 * time.Second

// settleEnd re-derives a session whose agent has ended while its monitor
// still lives until the monitor's exit record is there, the monitor is
// gone, or exitRecordWait passes. A monitor stopped by a signal (SIGSTOP)
// writes nothing until resumed: that session is not waited for, and stays
// unknown. The checks start 1 ms apart and back off: the window is short
// and rare, and nothing else here costs a file descriptor.
func settleEnd(dir string, st spawn.State) spawn.State {
	deadline := time.Now().Add(exitRecordWait)
	for pause := time.Millisecond; ending(st) && time.Now().Before(deadline); pause = min(2*pause, 50*time.Millisecond) {
		if p, err := proc.Lookup(st.Record.Shim.PID); err == nil && p.Stopped {
			return st
		}
		time.Sleep(pause)
		next, err := spawn.Derive(dir, st.Record)
		if err != nil {
			return st
		}
		st = next
	}
	return st
}

// ending says the agent is gone and its monitor, alive, has not written
// the exit record yet.
func ending(st spawn.State) bool { return st.Exit == nil && !st.Running && st.ShimAlive }
