package session

import (
	"context"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/resources"
	"github.com/agentctl/agentctl/spawn"
)

// statsSettle is how long stats waits to measure the CPU percent of a
// session it has no recent sample of: a percent needs two samples.
const statsSettle = time.Second

// statsFresh is how old the last sample of a session may be for stats
// to measure from it rather than take a first one and wait: a live view
// that refreshes every 2 s measures over its own interval, a stats run
// once over the last second, as docker stats does.
const statsFresh = 3 * time.Second

// maxLabel bounds the label a stats row carries.
const maxLabel = 60

// accounting samples the resources of the sessions this service started.
// A launch record is written once, so each running session's target is
// built from it once.
type accounting struct {
	sampler *resources.Sampler
	mu      sync.Mutex
	targets map[string]resources.Target
}

func newAccounting() *accounting {
	return &accounting{sampler: resources.New(), targets: map[string]resources.Target{}}
}

// target is the sampler's target for a running session of dir.
func (a *accounting) target(id, dir string) (resources.Target, error) {
	a.mu.Lock()
	t, ok := a.targets[id]
	a.mu.Unlock()
	if ok {
		return t, nil
	}
	rec, err := spawn.ReadRecord(dir)
	if err != nil {
		return resources.Target{}, err
	}
	t = resources.Target{ID: id, Dir: dir, Started: rec.Process.StartTime, Members: membersOf(rec)}
	a.mu.Lock()
	a.targets[id] = t
	a.mu.Unlock()
	return t, nil
}

func (a *accounting) forget(id string) {
	a.mu.Lock()
	delete(a.targets, id)
	a.mu.Unlock()
	a.sampler.Forget(id)
}

// membersOf lists a session's processes in an indexed table: its tree as a
// stop walks it, below its monitor while that is the recorded one. The
// monitor is agentctl's, not the session's: a session's cgroup holds the
// agent's tree alone (the monitor leaves it once the agent started), and
// the figures are the same either way. The service is spared, with what it
// started, should it run inside the session.
func membersOf(rec spawn.Record) func(*proc.Index) []proc.Info {
	self := os.Getpid()
	return func(ix *proc.Index) []proc.Info {
		t := spawn.Tree{Leader: rec.Process, PGID: rec.PGID, Spare: func(p proc.Info) bool { return p.PID == self }}
		if p, ok := ix.Lookup(rec.Shim.PID); ok && rec.Shim.PID != self && !p.Zombie && p.Start == rec.Shim.Start {
			t.Root = rec.Shim.PID
		}
		return t.MembersIn(ix)
	}
}

// withResources sets the resources of the sessions in ss this service
// started: sampled now for the running ones; for the ended ones, when
// ended is set, the peak their folder keeps.
func (c *reader) withResources(ctx context.Context, ss []api.Session, o resources.Options, ended bool) {
	var targets []resources.Target
	at := map[string]int{}
	for i := range ss {
		s := &ss[i]
		if s.Origin != api.OriginLaunched {
			continue
		}
		dir := c.opts.Home.SessionDir(s.ID)
		if s.Status != api.StatusRunning {
			if ended && s.Status.Ended() {
				s.Resources = resources.Ended(dir)
			}
			continue
		}
		t, err := c.acct.target(s.ID, dir)
		if err != nil {
			continue
		}
		at[s.ID] = i
		targets = append(targets, t)
	}
	for id, r := range c.acct.sampler.Sample(ctx, targets, o) {
		ss[at[id]].Resources = &r
	}
}

// Stats is what the sessions named by handles cost (every running one
// this service started when none is named), and the machine's load and
// memory. A session that was not sampled recently is sampled twice,
// statsSettle apart, for a CPU percent over an interval.
func (c *reader) Stats(ctx context.Context, names []string) (api.Stats, error) {
	var ss []api.Session
	var warnings []string
	if len(names) == 0 {
		all, w, err := c.records.all()
		if err != nil {
			return api.Stats{}, err
		}
		warnings = w
		for _, s := range all {
			if s.Status == api.StatusRunning {
				ss = append(ss, s)
			}
		}
		ids := make([]string, len(ss))
		for i, s := range ss {
			ids[i] = s.ID
		}
		h := handles(ids, c.knownIDsOf(all))
		for i := range ss {
			ss[i].Handle = h[ss[i].ID]
		}
	} else {
		for _, h := range names {
			s, err := c.get(ctx, h)
			if err != nil {
				return api.Stats{}, err
			}
			ss = append(ss, s)
		}
	}
	sortByCreation(ss)
	o := resources.Options{IO: true}
	settle := false
	for _, s := range ss {
		if s.Origin == api.OriginLaunched && s.Status == api.StatusRunning && !c.acct.sampler.Fresh(s.ID, statsFresh) {
			settle = true
		}
	}
	if settle {
		c.withResources(ctx, ss, o, false)
		select {
		case <-ctx.Done():
			return api.Stats{}, ctx.Err()
		case <-time.After(statsSettle):
		}
	}
	c.withResources(ctx, ss, o, true)
	out := api.Stats{Sessions: make([]api.SessionStats, 0, len(ss)), Warnings: warnings}
	for _, s := range ss {
		out.Sessions = append(out.Sessions, api.SessionStats{
			ID: s.ID, Handle: s.Handle, Name: s.Name, Adapter: s.Adapter, Status: s.Status,
			Label: text.TruncateRunes(statsLabel(s), maxLabel), Resources: s.Resources,
		})
	}
	out.Total = total(ss)
	if m, err := resources.ReadMachine(); err == nil {
		out.Machine = &m
	}
	return out, nil
}

// statsLabel names a session in a row: its name, else its prompt, else
// its command.
func statsLabel(s api.Session) string {
	switch {
	case s.Name != "":
		return s.Name
	case s.Prompt != "":
		return s.Prompt
	}
	return strings.Join(s.Command, " ")
}

// total adds up the running sessions' figures: CPU percent, memory,
// tasks and processes (what each has).
func total(ss []api.Session) *api.Resources {
	var t api.Resources
	var pct float64
	var mem uint64
	var tasks, procs int
	n := 0
	for _, s := range ss {
		r := s.Resources
		if r == nil || s.Status != api.StatusRunning {
			continue
		}
		n++
		if r.CPUPercent != nil {
			pct += *r.CPUPercent
		}
		if r.MemoryBytes != nil {
			mem += *r.MemoryBytes
		}
		if r.PIDs != nil {
			tasks += *r.PIDs
		}
		if r.Processes != nil {
			procs += *r.Processes
		}
	}
	if n == 0 {
		return nil
	}
	t.Source = "sessions"
	t.CPUPercent, t.MemoryBytes, t.PIDs, t.Processes = &pct, &mem, &tasks, &procs
	return &t
}

// Machine is the host's load and memory.
func (c *reader) Machine() (api.Machine, error) { return resources.ReadMachine() }

// Resources samples the running sessions this service started, for the
// metrics: what each costs now, by id and adapter.
func (c *reader) Resources(ctx context.Context) []api.SessionStats {
	all, _, err := c.records.all()
	if err != nil {
		return nil
	}
	var running []api.Session
	for _, s := range all {
		if s.Status == api.StatusRunning {
			running = append(running, s)
		}
	}
	c.withResources(ctx, running, resources.Options{}, false)
	out := make([]api.SessionStats, 0, len(running))
	for _, s := range running {
		if s.Resources != nil {
			out = append(out, api.SessionStats{ID: s.ID, Adapter: s.Adapter, Status: s.Status, Resources: s.Resources})
		}
	}
	return out
}
