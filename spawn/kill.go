package spawn

import (
	"context"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/proc"
)

// killBound bounds how long a stop keeps killing a session's processes.
const killBound = 10 * time.Second

// StopWithoutShim ends a session whose monitor is gone (it was killed): the
// stop signal to the agent's group, then SIGKILL to every process of the
// session after the grace period. The processes are looked up before the
// first signal, so none escapes by leaving the group when its leader dies.
// Nobody is left to write exit.json, so the session reads as lost: its exit
// code is unknown. A process that survived is named in a *SurvivorsError.
func StopWithoutShim(ctx context.Context, rec Record, opts StopOptions) error {
	t := Tree{Leader: rec.Process, PGID: rec.PGID}
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
		wctx, cancel := context.WithTimeout(ctx, grace)
		proc.WaitExit(wctx, rec.Process)
		cancel()
	}
	survivors, err := KillTree(ctx, t, killBound, seen)
	if err != nil {
		return err
	}
	if len(survivors) > 0 {
		return &SurvivorsError{PIDs: pidsOf(survivors)}
	}
	return nil
}
