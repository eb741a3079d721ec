package session

import (
	"context"
	"time"

	"github.com/agentctl/agentctl/spawn"
)

// cgroupSweepEvery is how often the service looks for the cgroups that
// ended sessions left behind.
const cgroupSweepEvery = 10 * time.Minute

// SweepCgroups removes the cgroups that ended sessions left behind (a
// monitor killed with SIGKILL removes nothing, and a session nobody stops
// or looks at again is never cleaned up otherwise): once now, then every
// cgroupSweepEvery until ctx ends. Wait waits for it.
func (c *Core) SweepCgroups(ctx context.Context) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(cgroupSweepEvery)
		defer t.Stop()
		for {
			c.sweepCgroups(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// sweepCgroups removes the left cgroups of every session folder, and
// says how many it removed.
func (c *base) sweepCgroups(ctx context.Context) int {
	ids, err := c.records.ids()
	if err != nil {
		c.log.Warn("look for the cgroups of ended sessions", "err", err)
		return 0
	}
	n := 0
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		removed, err := spawn.RemoveLeftCgroup(c.opts.Home.SessionDir(id))
		if err != nil {
			c.log.Warn("remove the cgroup an ended session left", "session", id, "err", err)
		}
		if removed {
			n++
			c.log.Info("removed the cgroup an ended session left", "session", id)
		}
	}
	return n
}
