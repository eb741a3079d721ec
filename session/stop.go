package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/spawn"
)

// settle bounds how long a stop waits for the session's view to show the
// end it caused (the exit record, the adapter's own view).
const settle = 5 * time.Second

// interruptTimeout bounds the agent's own interrupt of a turn that runs
// outside the session's process, so a frozen agent server cannot hold a
// stop.
const interruptTimeout = 15 * time.Second

// Stop ends a session and returns its final state. A session this service
// started is stopped through its monitor, or without it when the monitor is
// gone; one only an adapter knows, through its adapter. The stop goes on
// when the caller goes away: a half-done stop helps nobody.
func (c *Core) Stop(ctx context.Context, id string, req api.StopRequest) (api.Session, error) {
	ctx = context.WithoutCancel(ctx)
	grace := spawn.DefaultGrace
	if req.Timeout != "" {
		d, err := time.ParseDuration(req.Timeout)
		if err != nil || d < 0 {
			return api.Session{}, faultf(ErrInvalid, "timeout %s: want a duration such as 10s (0 kills at once)", text.Quote(req.Timeout))
		}
		grace = d
	}
	// No grace is no grace: kill at once.
	force := req.Force || grace == 0
	sess, _, err := c.lookup(ctx, id)
	if err != nil {
		return api.Session{}, err
	}
	if sess.Status == api.StatusQueued {
		// A queued session is cancelled: it never starts. One whose
		// start was claimed first runs, and is stopped as it.
		cancelled, err := c.cancelQueued(sess.ID)
		if err != nil {
			return sess, err
		}
		if cancelled {
			return c.records.get(sess.ID)
		}
		if sess, _, err = c.lookup(ctx, sess.ID); err != nil {
			return api.Session{}, err
		}
	}
	if sess.Status.Ended() {
		if sess.Origin == api.OriginLaunched && sess.Status == api.StatusLost {
			n, err := c.endLeftovers(ctx, sess.ID)
			if err != nil {
				return sess, fmt.Errorf("end the processes left of a lost session: %w", err)
			}
			sess.StoppedProcesses = &n
		}
		return sess, nil
	}
	if sess.Origin != api.OriginLaunched {
		return c.stopNative(ctx, sess)
	}
	// A turn that runs outside the session's process tree (Codex's shared
	// app-server) is ended first, through the agent's own means: the
	// signal that follows would not reach it.
	ierr := c.interruptTurn(ctx, sess)
	got, err := c.stopLaunched(ctx, sess.ID, spawn.StopOptions{Grace: grace, Force: force})
	if err == nil && ierr != nil {
		err = fmt.Errorf("interrupt its turn: %w", ierr)
	}
	return got, err
}

// interruptTurn asks the adapters that can end a turn outside the
// session's process (adapters.TurnInterrupter) to end the session's. A
// plain command that is an agent (`run -- codex`) is that agent's session
// when discovery tied its process to one: that is where its native id
// comes from.
func (c *Core) interruptTurn(ctx context.Context, sess api.Session) error {
	var interrupters []adapters.TurnInterrupter
	for _, a := range c.adapters.All() {
		if ti, ok := a.(adapters.TurnInterrupter); ok && (sess.Adapter == api.ExecAdapter || a.Name() == sess.Adapter) {
			interrupters = append(interrupters, ti)
		}
	}
	if len(interrupters) == 0 {
		return nil
	}
	nativeID := sess.NativeID
	if nativeID == "" && sess.Adapter == api.ExecAdapter {
		rows, _, err := c.view(ctx, func(s *api.Session) bool { return s.ID == sess.ID }, nil)
		if err != nil {
			return err
		}
		for _, r := range rows {
			nativeID = r.NativeID
		}
	}
	if nativeID == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, interruptTimeout)
	defer cancel()
	var errs []error
	for _, ti := range interrupters {
		if err := ti.InterruptTurn(ctx, nativeID); err != nil {
			c.log.Warn("interrupt the session's turn", "session", sess.ID, "native", nativeID, "err", err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stopLaunched ends a session this service started and returns its final
// state once no process of it remains; a process that survived is named in
// the error.
func (c *Core) stopLaunched(ctx context.Context, id string, opts spawn.StopOptions) (api.Session, error) {
	dir := c.opts.Home.SessionDir(id)
	rec, err := spawn.ReadRecord(dir)
	if err != nil {
		return api.Session{}, err
	}
	opts.Signal = rec.StopSignal
	stopped, err := spawn.Stop(ctx, dir, opts)
	if err != nil {
		// A monitor of a protocol this service does not speak is not
		// asked; a kill (forced) ends the session without it.
		refused := errors.Is(err, spawn.ErrProtocol) && opts.Force
		if !refused && !errors.Is(err, spawn.ErrShimGone) && !errors.Is(err, spawn.ErrShimNotAnswering) {
			return api.Session{}, err
		}
		// The monitor is gone (killed), frozen or not spoken to: end the
		// processes ourselves, from the identities recorded at the start.
		c.log.Warn("stopping a session without its monitor", "session", id, "reason", err)
		// A forced stop sends SIGKILL first: an agent alive now ends by
		// it, which agentctl then knows first-hand and records, as the
		// monitor would have.
		killed := opts.Force && proc.Alive(rec.Process)
		if stopped.Processes, err = spawn.StopWithoutShim(ctx, dir, rec, opts); err != nil {
			return api.Session{}, fmt.Errorf("end its processes without its monitor: %w", err)
		}
		if killed && goneWithin(rec.Process, settle) {
			if err := spawn.RecordKill(dir, "agentctl stop"); err != nil {
				c.log.Warn("record the kill of a session whose monitor did not answer", "session", id, "err", err)
			}
		}
	}
	// The monitor answers after exit.json is written; without a monitor the
	// session is lost. Either way it has ended now.
	deadline := time.Now().Add(settle)
	for {
		sess, err := c.records.get(id)
		if err != nil {
			return api.Session{}, err
		}
		if sess.Status.Ended() || time.Now().After(deadline) {
			sess.StoppedProcesses = &stopped.Processes
			return sess, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// goneWithin says whether the process p ends within d: a SIGKILLed process
// on a loaded machine takes a moment to be gone.
func goneWithin(p proc.Identity, d time.Duration) bool {
	for deadline := time.Now().Add(d); proc.Alive(p); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// endLeftovers ends what a lost session left running: its monitor died,
// so nobody did what the monitor does when an agent ends. It returns how
// many processes it ended.
func (c *Core) endLeftovers(ctx context.Context, id string) (int, error) {
	dir := c.opts.Home.SessionDir(id)
	rec, err := spawn.ReadRecord(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil // a queued start that never started: nothing runs
	}
	if err != nil {
		return 0, err
	}
	return spawn.StopWithoutShim(ctx, dir, rec, spawn.StopOptions{Force: true})
}

// stopNative stops a session agentctl did not start, through its adapter
// (an OpenClaw gateway run is aborted on the gateway), and returns its state
// afterwards as the adapter reports it.
func (c *Core) stopNative(ctx context.Context, sess api.Session) (api.Session, error) {
	stopper, ok := c.adapters.Get(sess.Adapter).(adapters.Stopper)
	if !ok {
		return sess, faultf(ErrInvalid, "session %s was not started by agentctl and the %s adapter cannot stop it; %s", sess.ID, sess.Adapter, c.whereItRuns(ctx, sess))
	}
	if err := stopper.Stop(ctx, sess.NativeID); err != nil {
		return sess, err // the adapter says what failed; the service maps its kind
	}
	// The adapter's own view settles shortly after an abort.
	deadline := time.Now().Add(settle)
	for {
		got, _, err := c.lookup(ctx, sess.ID)
		if err != nil {
			return sess, nil
		}
		if got.Status != api.StatusRunning || time.Now().After(deadline) {
			return got, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// whereItRuns says which process to stop for a session agentctl cannot
// stop itself: its pid, or the live processes that may run it when
// nothing ties one to it (never "pid 0").
func (c *Core) whereItRuns(ctx context.Context, sess api.Session) string {
	if sess.PID > 0 {
		return fmt.Sprintf("stop it where it runs (pid %d)", sess.PID)
	}
	var pids []int
	var ns adapters.NativeSession
	var err error
	if a := c.adapters.Get(sess.Adapter); a != nil {
		ns, err = c.disc.one(ctx, a, sess.NativeID)
	}
	if err == nil {
		for _, e := range ns.Evidence {
			if e.Kind == adapters.EvidenceContender && e.PID > 0 && !slices.Contains(pids, e.PID) {
				pids = append(pids, e.PID)
			}
		}
	}
	if len(pids) == 0 {
		return fmt.Sprintf("no live process of it is known (it is %s): if it runs, stop it in its terminal", sess.Status)
	}
	slices.Sort(pids)
	list := make([]string, len(pids))
	for i, p := range pids {
		list[i] = strconv.Itoa(p)
	}
	return fmt.Sprintf("it may run in %s pid %s (nothing says which; see `agentctl explain %s`): stop it there", sess.Adapter, strings.Join(list, " or "), sess.ID)
}
