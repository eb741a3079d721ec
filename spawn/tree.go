package spawn

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

// Tree names the processes of one session: the agent (leader of its own
// session and process group), everything still in that group or session,
// and everything below them; while the monitor lives, every descendant of
// the monitor too (orphans come back to it, a subreaper).
type Tree struct {
	// Leader is the agent as recorded at its start.
	Leader proc.Identity
	// PGID is the agent's process group and session id (the same: setsid).
	PGID int
	// Root, when not 0, is a process every descendant of which belongs to
	// the session (the monitor), itself excluded.
	Root int
	// Spare, when set, leaves out a process and everything below it (a
	// service auto-started from inside the session is not the session's).
	Spare func(proc.Info) bool
	// ID, when set, adds every process whose environment marks it as the
	// session's (home.SessionEnv): an orphan that left both the group and
	// the tree is still found. What the caller itself started is left out
	// of this match (the service's hooks carry the marker too).
	ID string
}

// Members lists the live processes of the tree in table. The group and
// session id come from a record on disk, so they are trusted only while
// they are the leader's: a live process with the leader's pid and another
// start stamp means the id now names someone else's group.
func (t Tree) Members(table []proc.Info) []proc.Info { return t.MembersIn(proc.NewIndex(table)) }

// MembersIn is Members over an indexed table: the sessions of one query
// share one index.
func (t Tree) MembersIn(ix *proc.Index) []proc.Info {
	trustGroup := t.PGID > 0
	if p, ok := ix.Lookup(t.PGID); ok && t.Leader.Start != 0 && p.Start != t.Leader.Start {
		trustGroup = false
	}
	// A spared process is left out with what the walks find below it.
	spare := func(p proc.Info) bool { return t.Spare != nil && t.Spare(p) }
	self := os.Getpid()
	seen := map[int]bool{}
	var out []proc.Info
	add := func(p proc.Info) {
		if p.Zombie || p.PID == t.Root || p.PID == self || seen[p.PID] || spare(p) {
			return
		}
		seen[p.PID] = true
		out = append(out, p)
	}
	if t.Root > 0 {
		for _, p := range ix.DescendantsExcept(t.Root, spare) {
			add(p)
		}
	}
	if trustGroup {
		inGroup := ix.InGroup(t.PGID)
		for _, p := range inGroup {
			add(p)
		}
		// Their descendants too: a tool that called setsid is in neither.
		for _, p := range inGroup {
			for _, d := range ix.DescendantsExcept(p.PID, spare) {
				add(d)
			}
		}
	}
	if t.ID != "" {
		mine := map[int]bool{}
		for _, d := range ix.DescendantsExcept(self, nil) {
			mine[d.PID] = true
		}
		for _, p := range ix.Table() {
			// Only a process started after the agent can be the session's;
			// reading every process's environment is the costly part.
			if !seen[p.PID] && !mine[p.PID] && !p.Zombie && (t.Leader.Start == 0 || p.Start >= t.Leader.Start) &&
				proc.EnvValue(p.PID, home.SessionEnv) == t.ID {
				add(p)
			}
		}
	}
	return out
}

// Signal sends sig to every member of the tree and returns how many there
// were.
func (t Tree) Signal(sig unix.Signal) (int, error) {
	table, err := proc.Table()
	if err != nil {
		return 0, err
	}
	members := t.Members(table)
	for _, p := range members {
		unix.Kill(p.PID, sig)
	}
	return len(members), nil
}

// WaitEmpty waits up to d for the tree to have no member left.
func (t Tree) WaitEmpty(ctx context.Context, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		table, err := proc.Table()
		if err == nil && len(t.Members(table)) == 0 {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// KillTree sends SIGKILL to every process of the tree until none is left
// or bound passes (a process may fork between a look and the kill), and
// returns the processes that survived: empty when everything is gone. The
// processes in seen, and every member it finds, are followed by identity
// from then on, so one that leaves the group or the tree afterwards (setsid,
// a parent's death) is still killed.
func KillTree(ctx context.Context, t Tree, bound time.Duration, seen []proc.Info) ([]proc.Info, error) {
	known := map[int]proc.Identity{}
	for _, p := range seen {
		known[p.PID] = p.Identity
	}
	deadline := time.Now().Add(bound)
	for {
		table, err := proc.Table()
		if err != nil {
			return nil, fmt.Errorf("read the process table: %w", err)
		}
		targets := t.Members(table)
		listed := map[int]bool{}
		for _, p := range targets {
			listed[p.PID] = true
		}
		for _, p := range table {
			if id, ok := known[p.PID]; ok && !listed[p.PID] && !p.Zombie && p.Start == id.Start {
				targets = append(targets, p)
				listed[p.PID] = true
				for _, d := range proc.Descendants(table, p.PID) {
					if !listed[d.PID] && !d.Zombie {
						targets = append(targets, d)
						listed[d.PID] = true
					}
				}
			}
		}
		if len(targets) == 0 {
			return nil, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return targets, nil
		}
		for _, p := range targets {
			known[p.PID] = p.Identity
			unix.Kill(p.PID, unix.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SurvivorsError names processes of a session that outlived SIGKILL (a
// process in uninterruptible sleep, or one the caller may not signal).
type SurvivorsError struct {
	PIDs []int
}

func (e *SurvivorsError) Error() string {
	pids := make([]string, len(e.PIDs))
	for i, p := range e.PIDs {
		pids[i] = fmt.Sprint(p)
	}
	return fmt.Sprintf("%d process(es) of the session survived SIGKILL: pid %s", len(e.PIDs), strings.Join(pids, ", "))
}

func pidsOf(ps []proc.Info) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.PID
	}
	return out
}
