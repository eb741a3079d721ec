package session

import (
	"context"
	"path/filepath"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/spawn"
)

// A plain command that is an agent (`run -- claude -p hi`, `run -- codex
// exec …`) is that agent's native session for its whole life: once a
// discovery ties the command's process (pid and start stamp) to a native
// session, the pair is recorded in the command's folder (native.json, with
// the agent's name), so the session keeps its native facts in status,
// explain and peek, and is not listed a second time once it has ended.

// agentOfCommand is the adapter whose binary argv runs, nil when none.
func (c *base) agentOfCommand(argv []string) adapters.Adapter {
	if len(argv) == 0 {
		return nil
	}
	base := filepath.Base(argv[0])
	for _, a := range c.adapters.All() {
		if l, ok := a.(adapters.Launcher); ok && l.Binary() == base {
			return a
		}
	}
	return nil
}

// tieCommand records the native session of found that the live process p
// runs as the native session of command id; it reports whether one did.
func (c *base) tieCommand(id string, p proc.Identity, found discovered) (nativeRecord, bool) {
	for _, ss := range found.sessions {
		for i := range ss {
			ns := &ss[i]
			if ns.Process == nil || ns.Process.PID != p.PID || ns.Process.Start != p.Start || !proc.Alive(p) {
				continue
			}
			n := nativeRecord{NativeID: ns.NativeID, Adapter: ns.Adapter}
			if err := c.records.setNative(id, n); err != nil {
				c.log.Warn("record the native session of a command", "session", id, "err", err)
				return n, false
			}
			return n, true
		}
	}
	return nativeRecord{}, false
}

// learnCommandAgent ties a running command that is an agent, with no
// native session yet, to the one its process runs, now.
func (c *base) learnCommandAgent(ctx context.Context, sess *api.Session) {
	a := c.agentOfCommand(sess.Command)
	if a == nil {
		return
	}
	rec, err := spawn.ReadRecord(c.opts.Home.SessionDir(sess.ID))
	if err != nil {
		return
	}
	if n, ok := c.tieCommand(sess.ID, rec.Process, c.disc.runOf(ctx, []adapters.Adapter{a})); ok {
		sess.NativeID, sess.Agent = n.NativeID, n.Adapter
	}
}

// commandAgentPoll is how often, at first, a command that is an agent is
// looked for in its agent's store after its start; the pause doubles up
// to commandAgentPollMax.
const (
	commandAgentPoll    = 200 * time.Millisecond
	commandAgentPollMax = 2 * time.Second
)

// followCommandAgent looks for the native session a just-started command
// that is an agent runs, while it runs (up to nativeIDTimeout): a one-shot
// (`claude -p`) may end before anyone lists it, and its native session is
// only tied to its process while that process lives.
func (c *base) followCommandAgent(id string, a adapters.Adapter, p proc.Identity) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.ctx, nativeIDTimeout)
		defer cancel()
		pause := commandAgentPoll
		for proc.Alive(p) {
			if _, ok := c.tieCommand(id, p, c.disc.runOf(ctx, []adapters.Adapter{a})); ok {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, commandAgentPollMax)
		}
	}()
}
