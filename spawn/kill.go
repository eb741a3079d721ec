package spawn

import (
	"context"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/cgroup"
	"github.com/agentctl/agentctl/proc"
)

// killBound bounds how long a stop keeps killing a session's processes.
const killBound = 10 * time.Second

// StopWithoutShim ends a session (in folder dir) whose monitor is gone (it
// was killed) or does not answer (stopped, hung): the stop signal to the
// agent's group, then SIGKILL to every process of the session after the
// grace period (its whole cgroup, where it has one), and to a monitor that
// is still there. The processes are looked up before the first signal, so
// none escapes by leaving the group when its leader dies. Nobody is left to
// write exit.json, so the session reads as lost: its exit code is unknown.
// It returns how many processes the session had; one that survived is
// named in a *SurvivorsError.
func StopWithoutShim(ctx context.Context, dir string, rec Record, opts StopOptions) (int, error) {
	t := Tree{Leader: rec.Process, PGID: rec.PGID, ID: rec.ID}
	cg, err := ReadCgroup(dir)
	if err != nil {
		return 0, err
	}
	table, err := proc.Table()
	if err != nil {
		return 0, err
	}
	seen := t.Members(table)
	count := map[int]bool{}
	for _, p := range seen {
		count[p.PID] = true
	}
	for _, pid := range cgroup.Procs(cg) {
		count[pid] = true
	}
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
	left := cgroup.Kill(ctx, cg, killBound)
	survivors, err := KillTree(ctx, t, killBound, seen)
	if err != nil {
		return len(count), err
	}
	if proc.Alive(rec.Shim) {
		// It did not answer; what it would have done is done.
		unix.Kill(rec.Shim.PID, unix.SIGKILL)
		unix.Kill(rec.Shim.PID, unix.SIGCONT)
		WaitExitBounded(ctx, rec.Shim, 5*time.Second)
	}
	for _, pid := range pidsOf(survivors) {
		if !slices.Contains(left, pid) {
			left = append(left, pid)
		}
	}
	if len(left) > 0 {
		return len(count), &SurvivorsError{PIDs: left}
	}
	// Its monitor is gone: nobody else removes the session's cgroup.
	cgroup.Remove(cg)
	return len(count), nil
}

// RemoveLeftCgroup removes the cgroup of the ended session of folder dir,
// where its monitor could not (it was killed) and no stop did, and says
// whether there was one to remove. A session whose start is under way (no
// launch record yet), whose monitor or agent still runs, or whose cgroup
// still holds a process is left alone.
func RemoveLeftCgroup(dir string) (bool, error) {
	cg, err := ReadCgroup(dir)
	if err != nil || cg.Empty() || !cg.Exists() {
		return false, err
	}
	rec, err := ReadRecord(dir)
	if err != nil || proc.Alive(rec.Shim) || proc.Alive(rec.Process) || len(cgroup.Procs(cg)) > 0 {
		return false, nil
	}
	if err := cgroup.Remove(cg); err != nil {
		return false, fmt.Errorf("session %s: %w", rec.ID, err)
	}
	return true, nil
}

// WaitExitBounded waits up to d for id's process to exit.
func WaitExitBounded(ctx context.Context, id proc.Identity, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	proc.WaitExit(ctx, id)
}
