package spawn

import (
	"context"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/proc"
)

// killBound bounds how long a stop keeps killing a session's processes.
const killBound = 10 * time.Second

// StopWithoutShim ends a session whose monitor is gone (it was killed) or
// does not answer (stopped, hung): the stop signal to the agent's group,
// then SIGKILL to every process of the session after the grace period, and
// to a monitor that is still there. The processes are looked up before the
// first signal, so none escapes by leaving the group when its leader dies.
// Nobody is left to write exit.json, so the session reads as lost: its exit
// code is unknown. A process that survived is named in a *SurvivorsError.
func StopWithoutShim(ctx context.Context, rec Record, opts StopOptions) error {
	t := Tree{Leader: rec.Process, PGID: rec.PGID, ID: rec.ID}
	table, err := proc.Table()
	if err != nil {
		return err
	}
	seen := t.Members(table)
	if !opts.Force && proc.Alive(rec.Process) {
		sig := unix.SIGTERM
		if n := unix.SignalNum(opts.Signal); n != 0 {
			sig = n
		}
		unix.Kill(-rec.PGID, sig)
		grace := opts.Grace
		if grace <= 0 {
			grace = DefaultGrace
		}
		WaitExitBounded(ctx, rec.Process, grace)
	}
	survivors, err := KillTree(ctx, t, killBound, seen)
	if err != nil {
		return err
	}
	if proc.Alive(rec.Shim) {
		// It did not answer; what it would have done is done.
		unix.Kill(rec.Shim.PID, unix.SIGKILL)
		unix.Kill(rec.Shim.PID, unix.SIGCONT)
		WaitExitBounded(ctx, rec.Shim, 5*time.Second)
	}
	if len(survivors) > 0 {
		return &SurvivorsError{PIDs: pidsOf(survivors)}
	}
	return nil
}

// WaitExitBounded waits up to d for id's process to exit.
func WaitExitBounded(ctx context.Context, id proc.Identity, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	proc.WaitExit(ctx, id)
}
