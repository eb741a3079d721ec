package supervisor

import (
	"context"
	"errors"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
)

// stopNative stops a session agentctl did not start, through its adapter
// (an OpenClaw gateway run is aborted on the gateway), and returns its state
// afterwards as the adapter reports it.
func (s *Server) stopNative(ctx context.Context, sess api.Session) (api.Session, error) {
	stopper, ok := s.disc.adapter(sess.Adapter).(adapters.Stopper)
	if !ok {
		return sess, api.Errorf(api.CodeInvalid, "session %s was not started by agentctl and the %s adapter cannot stop it; stop it where it runs (pid %d)", sess.ID, sess.Adapter, sess.PID)
	}
	if err := stopper.Stop(ctx, sess.NativeID); err != nil {
		switch {
		case errors.Is(err, adapters.ErrNotRunning):
			return sess, api.Errorf(api.CodeNotRunning, "%v", err)
		case errors.Is(err, adapters.ErrNoSession):
			return sess, api.Errorf(api.CodeNotFound, "%v", err)
		case errors.Is(err, adapters.ErrForbidden):
			return sess, api.Errorf(api.CodeForbidden, "%v", err)
		}
		return sess, err
	}
	// The adapter's own view settles shortly after an abort.
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, _, err := s.lookup(ctx, sess.ID)
		if err != nil || got.Status != api.StatusRunning || time.Now().After(deadline) {
			if err != nil {
				return sess, nil
			}
			return got, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// followAdapters subscribes to every adapter that pushes changes (the
// OpenClaw gateway), so their sessions' starts, ends and busy/idle changes
// reach the event stream as they happen rather than at the next list.
func (s *Server) followAdapters() {
	for _, a := range s.opts.Adapters {
		w, ok := a.(adapters.ChangeWatcher)
		if !ok {
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			changes, err := w.WatchChanges(s.ctx)
			if err != nil {
				s.log.Warn("adapter changes are not watched", "adapter", a.Name(), "err", err)
				return
			}
			for {
				var c adapters.Change
				select {
				case <-s.ctx.Done():
					return
				case ch, ok := <-changes:
					if !ok {
						return
					}
					c = ch
				}
				if c.Err != nil {
					s.log.Warn("adapter watch interrupted; it reconnects by itself", "adapter", a.Name(), "err", c.Err)
					continue
				}
				if c.Session != nil {
					s.ops.nativeChanged(fromNative(c.Session))
				}
			}
		}()
	}
}
