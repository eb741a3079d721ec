package spawn

import (
	"context"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/proc"
)

// StopWithoutShim ends a session whose shim is gone (it was killed): the
// stop signal to the agent's group, then SIGKILL to every process still in
// its group or session after the grace period. Nobody is left to write
// exit.json, so the session will read as lost: its exit code is unknown.
func StopWithoutShim(ctx context.Context, rec Record, opts StopOptions) error {
	if !proc.Alive(rec.Process) {
		return killSession(rec)
	}
	if !opts.Force {
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
		WaitExit(wctx, rec.Process)
		cancel()
	}
	return killSession(rec)
}

// killSession SIGKILLs what remains of the agent's group and session and
// their descendants, until nothing is left or 10 s pass.
func killSession(rec Record) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		table, err := proc.Table()
		if err != nil {
			return err
		}
		seen := map[int]bool{}
		var targets []proc.Info
		for _, p := range table {
			if !p.Zombie && (p.PGID == rec.PGID || p.SID == rec.PGID) {
				targets = append(targets, p)
				seen[p.PID] = true
			}
		}
		for _, root := range append([]proc.Info(nil), targets...) {
			for _, d := range proc.Descendants(table, root.PID) {
				if !d.Zombie && !seen[d.PID] {
					targets = append(targets, d)
					seen[d.PID] = true
				}
			}
		}
		if len(targets) == 0 {
			return nil
		}
		for _, p := range targets {
			unix.Kill(p.PID, unix.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}
