package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/spawn"
)

// A session and every session started from inside it, at any depth, are
// one principal: none may answer a prompt of another, since each could
// have been told by the other what to ask and what to answer. A session's
// launch record keeps the sessions it was started from (launched_from),
// so the rule holds after they ended, and after the service restarted.

// maxLineage bounds a session's launched_from: nesting deeper is refused
// rather than cut (a cut lineage would forget whose the session is).
const maxLineage = 64

// maxAncestors bounds the walk up a caller's parents.
const maxAncestors = 512

type callerKey struct{}

// WithCaller marks ctx as a request of caller, the process the service
// pinned when the request's connection was accepted. A launch in that
// context records the sessions the caller belongs to as the new session's
// lineage (launched_from).
func WithCaller(ctx context.Context, caller *proc.Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

// CallerOf is the caller WithCaller put in ctx, nil when none did (a
// launch by the service itself).
func CallerOf(ctx context.Context) *proc.Caller {
	c, _ := ctx.Value(callerKey{}).(*proc.Caller)
	return c
}

type relayedKey struct{}

// relayed is a process a relay (the web dashboard) acts for, pinned by the
// service from what the relay said (api.Relayed).
type relayed struct {
	caller *proc.Caller
	via    string
}

// WithRelayed marks ctx as a request relayed for caller, whom via names:
// every rule that holds for the request's caller holds for it too, and a
// launch in ctx records its principal as well.
func WithRelayed(ctx context.Context, caller *proc.Caller, via string) context.Context {
	return context.WithValue(ctx, relayedKey{}, &relayed{caller: caller, via: via})
}

func relayedOf(ctx context.Context) *relayed {
	r, _ := ctx.Value(relayedKey{}).(*relayed)
	return r
}

// record is what decisions.jsonl keeps of r.
func (r *relayed) record() *api.Relayed {
	return &api.Relayed{PID: r.caller.PID, Start: r.caller.Start, UID: r.caller.UID, Via: r.via}
}

// refusal says that err, a refusal, is about the process r relays for.
func (r *relayed) refusal(err error) error {
	var e *api.Error
	if !errors.As(err, &e) {
		return err
	}
	via := r.via
	if via == "" {
		via = "a relay"
	}
	return &api.Error{Code: e.Code, Message: fmt.Sprintf("%s, relayed for pid %d: %s", via, r.caller.PID, e.Message), Err: err}
}

// monitorIndex maps the pid of every running session's monitor to its
// session, so a caller's parents are told cheaply: filled from the session
// folders once, then by each launch. An entry is trusted only with the
// monitor's start stamp; a stale one is dropped when met.
type monitorIndex struct {
	mu     sync.Mutex
	loaded bool
	byPID  map[int]monitorEntry
	// sweepAt is the size at which add drops the entries of monitors that
	// have exited: the index stays the size of what runs.
	sweepAt int
	// launching holds the lineage of each session being launched, until
	// its record is on disk: its command runs, and may ask the service
	// something, before its start is reported.
	launching map[string][]string
}

// begin notes a launch of session id with its lineage; its monitor is
// noted once the starter names it (told), and both stay known once the
// launch is over (end) through the session's record and add.
func (m *monitorIndex) begin(id string, lineage []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.launching == nil {
		m.launching = map[string][]string{}
	}
	m.launching[id] = lineage
}

// told notes the monitor handed session id, before it starts the command.
func (m *monitorIndex) told(id string, monitorPID int) {
	if p, err := proc.Lookup(monitorPID); err == nil {
		m.add(p.Identity, id)
	}
}

func (m *monitorIndex) end(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.launching, id)
}

// lineageOf is the lineage of session id while it is being launched.
func (m *monitorIndex) lineageOf(id string) ([]string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.launching[id]
	return l, ok
}

type monitorEntry struct {
	start uint64
	id    string
}

func (m *monitorIndex) add(shim proc.Identity, id string) {
	if shim.PID <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byPID == nil {
		m.byPID = map[int]monitorEntry{}
	}
	m.byPID[shim.PID] = monitorEntry{start: shim.Start, id: id}
	if len(m.byPID) < m.sweepAt {
		return
	}
	for pid, e := range m.byPID {
		if !proc.Alive(proc.Identity{PID: pid, Start: e.start}) {
			delete(m.byPID, pid)
		}
	}
	m.sweepAt = max(64, 2*len(m.byPID))
}

// session is the session whose monitor p is, "" when none.
func (m *monitorIndex) session(p proc.Info) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.byPID[p.PID]
	if !ok {
		return ""
	}
	if e.start != p.Start {
		delete(m.byPID, p.PID) // that monitor ended; the pid is someone else's
		return ""
	}
	return e.id
}

// monitors is the index, filled from the session folders on first use.
func (c *base) monitors() (*monitorIndex, error) {
	c.mons.mu.Lock()
	loaded := c.mons.loaded
	c.mons.mu.Unlock()
	if loaded {
		return &c.mons, nil
	}
	all, _, err := c.records.all()
	if err != nil {
		return nil, fmt.Errorf("index the sessions' monitors: %w", err)
	}
	for _, s := range all {
		if s.Status != api.StatusRunning {
			continue
		}
		if rec, err := spawn.ReadRecord(c.opts.Home.SessionDir(s.ID)); err == nil {
			c.mons.add(rec.Shim, s.ID)
		}
	}
	c.mons.mu.Lock()
	c.mons.loaded = true
	c.mons.mu.Unlock()
	return &c.mons, nil
}

// principal is the set of sessions caller belongs to, with every session
// they were started from: the sessions whose monitor is among its parents
// (monitors are subreapers: an orphan of a session stays below its
// monitor), and those whose marker variable it or a parent carries. The
// walk stops at the service, which may itself run below a session that
// started it. An error when the caller cannot be proven (it exited, or its
// pid is not known here).
func (c *base) principal(caller *proc.Caller) ([]string, error) {
	if err := caller.Check(); err != nil {
		return nil, err
	}
	idx, err := c.monitors()
	if err != nil {
		return nil, err
	}
	var chain []proc.Info
	for try := 0; ; try++ {
		if chain, err = parents(caller); err == nil {
			break
		}
		if try == 2 {
			return nil, err
		}
	}
	// The parents were read while the caller lived: they are its own.
	if err := caller.Check(); err != nil {
		return nil, err
	}
	found := map[string]bool{}
	var out []string
	note := func(id string) {
		if home.ValidID(id) && !found[id] {
			found[id] = true
			out = append(out, id)
		}
	}
	for _, p := range chain {
		if id := idx.session(p); id != "" {
			note(id) // a monitor's own environment is the service's
			continue
		}
		note(proc.EnvValue(p.PID, home.SessionEnv))
	}
	for _, id := range slices.Clone(out) {
		from, launching := idx.lineageOf(id)
		if s, err := c.records.get(id); err == nil {
			from = s.LaunchedFrom
		} else if !launching {
			continue
		}
		for _, a := range from {
			note(a)
		}
	}
	slices.Sort(out)
	return out, nil
}

// parents is caller and its parents up to the service (or init), read
// twice: a chain that changed in between (a parent exited and its child was
// reparented, or a pid was reused) is an error, tried again by the caller.
func parents(caller *proc.Caller) ([]proc.Info, error) {
	self := os.Getpid()
	var chain []proc.Info
	for pid := caller.PID; pid > 1 && pid != self && len(chain) < maxAncestors; {
		p, err := proc.Lookup(pid)
		if err != nil {
			return nil, fmt.Errorf("%w: the parents of pid %d changed while they were read: %v", proc.ErrUnproven, caller.PID, err)
		}
		if pid == caller.PID && p.Start != caller.Start {
			return nil, fmt.Errorf("%w: the process that connected (pid %d) has exited", proc.ErrUnproven, caller.PID)
		}
		chain = append(chain, p)
		pid = p.PPID
	}
	for _, p := range chain {
		again, err := proc.Lookup(p.PID)
		if err != nil || again.Start != p.Start || again.PPID != p.PPID {
			return nil, fmt.Errorf("%w: the parents of pid %d changed while they were read", proc.ErrUnproven, caller.PID)
		}
	}
	return chain, nil
}

// lineage is what a new session launched in ctx records as launched_from:
// the caller's principal, and the session it resumes or restarts with that
// one's lineage (the same work continues).
func (c *base) lineage(ctx context.Context, req api.RunRequest) ([]string, error) {
	var out []string
	if caller := CallerOf(ctx); caller != nil {
		p, err := c.principal(caller)
		if err != nil {
			return nil, api.Errorf(api.CodeForbidden, "%v: a session is launched only for a process that can be told", err)
		}
		out = p
	}
	// Started through a relay, the session is its process's too: else a
	// session could start one through the dashboard and answer it.
	if r := relayedOf(ctx); r != nil {
		p, err := c.principal(r.caller)
		if err != nil {
			return nil, r.refusal(api.Errorf(api.CodeForbidden, "%v: a session is launched only for a process that can be told", err))
		}
		out = append(out, p...)
	}
	for _, prev := range []string{req.ResumeOf, req.RestartOf} {
		if prev == "" {
			continue
		}
		out = append(out, prev)
		if s, err := c.records.get(prev); err == nil {
			out = append(out, s.LaunchedFrom...)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > maxLineage {
		return nil, faultf(ErrInvalid, "sessions are nested more than %d deep: no more sessions may be started from inside them", maxLineage)
	}
	return out, nil
}

// sharedPrincipal names a session that both the caller's principal and
// target's belong to, "" when none: a caller inside target, inside a
// session started from it, or inside one it was started from.
func sharedPrincipal(mine []string, target api.Session) string {
	for _, id := range append([]string{target.ID}, target.LaunchedFrom...) {
		if slices.Contains(mine, id) {
			return id
		}
	}
	return ""
}

// mayType refuses keystrokes into target's terminal (send, attach) from a
// caller that may not answer its prompts, for keys typed at a permission,
// a question or a dialog are an answer by other means ("1⏎" approves
// Claude's permission prompt). Such a caller is one of target's principal,
// or one that cannot be proven: it may still type while target asks
// nothing (a session telling the one it started what to do next), and may
// never attach (a terminal held open types at whatever is asked later).
// A request with no caller is the service's own.
//
// A relayed request is held to the rule for the process it is relayed for
// as well.
func (c *Core) mayType(ctx context.Context, target api.Session, attach bool) error {
	if err := c.mayTypeAs(CallerOf(ctx), target, attach); err != nil {
		return err
	}
	if r := relayedOf(ctx); r != nil {
		if err := c.mayTypeAs(r.caller, target, attach); err != nil {
			return r.refusal(err)
		}
	}
	return nil
}

func (c *Core) mayTypeAs(caller *proc.Caller, target api.Session, attach bool) error {
	if caller == nil {
		return nil
	}
	var why string
	if mine, err := c.principal(caller); err != nil {
		why = err.Error()
	} else if shared := sharedPrincipal(mine, target); shared != "" {
		why = fmt.Sprintf("pid %d is of session %s's principal (session %s and the sessions started from inside it)", caller.PID, target.ID, shared)
	} else {
		return nil
	}
	switch {
	case attach:
		return api.Errorf(api.CodeForbidden, "%s: it may not attach to session %s, whose prompts it may not answer (watch it with `agentctl logs -f %s`)", why, target.ID, target.ID)
	case asksDecision(target.WaitingFor):
		return api.Errorf(api.CodeForbidden, "%s: session %s waits for a %s, and keys typed now would answer it: a session cannot answer its own prompt", why, target.ID, target.WaitingFor)
	}
	return nil
}

// asksDecision tells the waits whose answer is a decision of the person.
func asksDecision(waitingFor string) bool {
	switch waitingFor {
	case api.WaitingPermission, api.WaitingQuestion, api.WaitingDialog:
		return true
	}
	return false
}
