package session

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/spawn"
)

// Signal sends one signal to a running session's process group (kill -s):
// no grace period and no SIGKILL after, unlike Stop. Only sessions this
// service started: their group is known first-hand, and checked by the
// agent's pid and start stamp just before the signal.
func (c *Core) Signal(ctx context.Context, id string, req api.SignalRequest) (api.Session, error) {
	sig, err := ParseSignal(req.Signal)
	if err != nil {
		return api.Session{}, err
	}
	sess, _, err := c.lookup(ctx, id)
	if err != nil {
		return api.Session{}, err
	}
	if sess.Origin != api.OriginLaunched {
		return sess, faultf(ErrInvalid, "session %s was not started by agentctl: signal its process where it runs (pid %d)", sess.ID, sess.PID)
	}
	if sess.Status.Ended() {
		return sess, faultf(ErrNotRunning, "session %s is %s: nothing to signal", sess.ID, sess.Status)
	}
	rec, err := spawn.ReadRecord(c.opts.Home.SessionDir(sess.ID))
	if err != nil {
		return sess, fmt.Errorf("signal %s: %w", sess.ID, err)
	}
	if rec.PGID <= 0 || !proc.Alive(rec.Process) {
		return sess, faultf(ErrNotRunning, "session %s: its process (pid %d) has ended: nothing to signal", sess.ID, rec.Process.PID)
	}
	if err := syscall.Kill(-rec.PGID, sig); err != nil {
		return sess, fmt.Errorf("signal %s: send %s to process group %d: %w", sess.ID, unix.SignalName(sig), rec.PGID, err)
	}
	return c.records.get(sess.ID)
}

// ParseSignal reads a signal as kill(1) takes it: HUP, SIGHUP, sighup or
// a number.
func ParseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || unix.SignalName(syscall.Signal(n)) == "" {
			return 0, faultf(ErrInvalid, "signal %d: no such signal", n)
		}
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if n := unix.SignalNum(name); n != 0 {
		return n, nil
	}
	return 0, faultf(ErrInvalid, "signal %q: no such signal (HUP, INT, TERM, KILL, USR1, ... or a number)", s)
}
