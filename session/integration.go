package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/proc"
)

// Integration reports: what the agents' user-level integrations (`agentctl
// integrate`) say of the sessions people start by hand. The reporting hook
// is the only witness of which process sent a report, so the service proves
// it: same user, then up the hook's parents to the first process its
// adapter recognises as the agent, pinned with its start stamp. What a
// report says is kept in the Book under that process, and dies with it.

// Bounds of the book and of what one agent process may send.
const (
	// maxBook bounds the processes the book keeps evidence of.
	maxBook = 4096
	// maxHookDepth bounds the walk from a hook up to its agent (the agent
	// runs it through a shell, sometimes a wrapper or two).
	maxHookDepth = 16
	// hookRate and hookBurst bound one agent process's reports (a tool
	// loop reports a few a second; a flood is refused with CodeTooMany).
	hookRate  = 20.0
	hookBurst = 100.0
)

// sharedProcess is an adapter one of whose processes may report for
// many sessions (Codex's app-server daemon runs the turns, and so the
// notify program, of every TUI of its store): the book keeps what such a
// process says per session, and its parentage ties none of them to a TUI.
type sharedProcess interface {
	SharedProcess(argv []string) bool
}

// promptWaiter is an adapter whose process, when argv runs its TUI, waits
// at its prompt for a person once a turn ends (Claude Code without -p):
// the end of a turn its integration reports then reads waiting for input,
// as a launched interactive session's does (HookEvent.Interactive).
type promptWaiter interface {
	WaitsAtPrompt(event string, argv []string) bool
}

// processMatcher is an adapter that recognises its agent's processes by
// their argv (the same test its discovery uses).
type processMatcher interface {
	IsAgentProcess(argv []string) bool
}

// Book is the service's bounded, in-memory evidence of the integrations:
// for each agent process that reported (pid and start stamp), its agent,
// session, folder and last state, plus when each agent last reported. It
// is the adapters' adapters.HookTies. It is safe for concurrent use.
type Book struct {
	mu    sync.Mutex
	procs map[bookKey]*bookEntry
	last  map[string]time.Time
	// observing are the sessions whose transition is being derived, true
	// when a report asked for one more since (observeNative).
	observing map[string]bool
}

// bookKey names an agent process: its pid and start stamp (not the wall
// time of its start, which is derived and may differ between reads); and,
// for a process that reports for many sessions (sharedProcess), the
// session an entry speaks of ("" for its rate bucket).
type bookKey struct {
	pid    int
	start  uint64
	native string
}

func (k bookKey) alive() bool { return proc.Alive(proc.Identity{PID: k.pid, Start: k.start}) }

type bookEntry struct {
	agent string
	tie   adapters.HookTie
	// tokens and refill are the entry's rate bucket.
	tokens float64
	refill time.Time
}

// NewBook returns an empty book.
func NewBook() *Book {
	return &Book{procs: map[bookKey]*bookEntry{}, last: map[string]time.Time{}, observing: map[string]bool{}}
}

var _ adapters.HookTies = (*Book)(nil)

// HookTies implements adapters.HookTies: the live processes of agent with
// evidence. Entries of processes that ended are dropped here.
func (b *Book) HookTies(agent string) []adapters.HookTie {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []adapters.HookTie
	for id, e := range b.procs {
		if !id.alive() {
			delete(b.procs, id)
			continue
		}
		if e.agent == agent && e.tie.NativeID != "" {
			out = append(out, e.tie)
		}
	}
	slices.SortFunc(out, func(a, b adapters.HookTie) int { return a.PID - b.PID })
	return out
}

// LastReports says when each agent's integration last reported.
func (b *Book) LastReports() map[string]time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]time.Time, len(b.last))
	for k, v := range b.last {
		out[k] = v
	}
	return out
}

// admit takes one report of the agent process id from its rate bucket,
// making room for it in the book; false when the process sent too many,
// or the book is full of live processes.
func (b *Book) admit(id bookKey, agent string, now time.Time) (*bookEntry, error) {
	e := b.procs[id]
	if e == nil {
		if err := b.room(); err != nil {
			return nil, err
		}
		e = &bookEntry{agent: agent, tokens: hookBurst, refill: now, tie: adapters.HookTie{PID: id.pid, Start: id.start}}
		b.procs[id] = e
	}
	if e.agent != agent {
		return nil, api.Errorf(api.CodeForbidden, "pid %d reported as %s before, now as %s", id.pid, e.agent, text.Quote(agent))
	}
	e.tokens = min(hookBurst, e.tokens+now.Sub(e.refill).Seconds()*hookRate)
	e.refill = now
	if e.tokens < 1 {
		return nil, api.Errorf(api.CodeTooMany, "pid %d sent more than %.0f reports a second: report refused", id.pid, hookRate)
	}
	e.tokens--
	return e, nil
}

// room makes room for one more entry, dropping those of processes that
// ended; an error when the book is full of live ones.
func (b *Book) room() error {
	if len(b.procs) >= maxBook {
		for k := range b.procs {
			if !k.alive() {
				delete(b.procs, k)
			}
		}
	}
	if len(b.procs) >= maxBook {
		return api.Errorf(api.CodeTooMany, "the service keeps the evidence of %d agent processes, the most it keeps: report refused", maxBook)
	}
	return nil
}

// perSession is the entry of what the shared process id (admitted
// already) says of session nativeID of agent, made when new.
func (b *Book) perSession(id bookKey, agent, nativeID string) (*bookEntry, bookKey, error) {
	id.native = nativeID
	e := b.procs[id]
	if e == nil {
		if err := b.room(); err != nil {
			return nil, id, err
		}
		e = &bookEntry{agent: agent, tie: adapters.HookTie{PID: id.pid, Start: id.start}}
		b.procs[id] = e
	}
	return e, id, nil
}

// holder is the live process other than id whose reports named session
// nativeID of agent, if any.
func (b *Book) holder(agent, nativeID string, id bookKey) (int, bool) {
	for k, e := range b.procs {
		if k != id && e.agent == agent && e.tie.NativeID == nativeID && k.alive() {
			return k.pid, true
		}
	}
	return 0, false
}

// tieOf is the evidence of the process holding session nativeID.
func (b *Book) tieOf(nativeID string) (adapters.HookTie, string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, e := range b.procs {
		if e.tie.NativeID == nativeID && k.alive() {
			return e.tie, e.agent, true
		}
	}
	return adapters.HookTie{}, "", false
}

// IntegrationReports says when each agent's integration last reported.
func (c *Core) IntegrationReports() map[string]time.Time { return c.book.LastReports() }

// HookRefusal is a report the service refused for what it claimed (not
// for a fault of the service): the supervisor logs it with its reason.
type HookRefusal struct {
	// PID is the hook process that sent it, Agent the agent it claimed.
	PID   int
	Agent string
	Err   error
}

func (r *HookRefusal) Error() string { return r.Err.Error() }
func (r *HookRefusal) Unwrap() error { return r.Err }

// IntegrationHook takes one report of an agent's user-level integration,
// sent by the hook process caller, and returns what the hook answers the
// agent. The agent process is proven from caller (see the comment above);
// the payload's own pid is never read. A permission request the hook can
// answer waits here until the person decides (approve, deny), the agent
// moves on, or ctx ends: without a decision the agent asks in its own
// terminal as usual; taken, when not nil, is called before it waits (the
// service then tells the hook its report was taken). Refused reports are
// *HookRefusal errors.
func (c *Core) IntegrationHook(ctx context.Context, caller *proc.Caller, agent, event string, payload []byte, taken func()) (api.HookReply, error) {
	refuse := func(err error) (api.HookReply, error) {
		pid := 0
		if caller != nil {
			pid = caller.PID
		}
		return api.HookReply{}, &HookRefusal{PID: pid, Agent: agent, Err: err}
	}
	a := c.adapters.Get(agent)
	reader, ok := a.(adapters.HookReader)
	matcher, ok2 := a.(processMatcher)
	if a == nil || !ok || !ok2 {
		return refuse(faultf(ErrInvalid, "agent %s has no integration", text.Quote(agent)))
	}
	if caller == nil || caller.UID != os.Getuid() {
		uid := -1
		if caller != nil {
			uid = caller.UID
		}
		return refuse(api.Errorf(api.CodeForbidden, "a report from uid %d: only the service's own user (uid %d) reports its agents", uid, os.Getuid()))
	}
	proving := time.Now()
	agentProc, err := agentOf(caller, matcher)
	proved := time.Since(proving)
	if err != nil {
		return refuse(api.Errorf(api.CodeForbidden, "%v", err))
	}
	now := time.Now().UTC()
	c.book.mu.Lock()
	key := bookKey{pid: agentProc.PID, start: agentProc.Start}
	entry, err := c.book.admit(key, agent, now)
	c.book.mu.Unlock()
	if err != nil {
		return refuse(err)
	}
	facts, err := reader.ReadHook(event, payload)
	if err != nil {
		return refuse(faultf(ErrInvalid, "pid %d's report: %v", caller.PID, err))
	}
	shared := false
	if sp, ok := a.(sharedProcess); ok {
		argv, err := proc.Cmdline(agentProc.PID)
		shared = err == nil && sp.SharedProcess(argv)
	}
	if pw, ok := a.(promptWaiter); ok && facts.State == adapters.NativeIdle && facts.WaitingFor == "" && !facts.Ended {
		if argv, err := proc.Cmdline(agentProc.PID); err == nil && pw.WaitsAtPrompt(facts.Event, argv) {
			facts.WaitingFor = adapters.WaitingInput
		}
	}
	// A shared process works for sessions in any folder: its own folder
	// (and its hook's) says nothing of a report's.
	if !shared {
		if err := sameFolder(facts.Cwd, agentProc.PID, caller.PID); err != nil {
			return refuse(api.Errorf(api.CodeForbidden, "%s pid %d's report names folder %s: %v", agent, agentProc.PID, text.Quote(facts.Cwd), err))
		}
	}
	c.book.mu.Lock()
	if shared && facts.NativeID != "" {
		if entry, key, err = c.book.perSession(key, agent, facts.NativeID); err != nil {
			c.book.mu.Unlock()
			return refuse(err)
		}
	}
	if facts.NativeID != "" {
		if pid, held := c.book.holder(agent, facts.NativeID, key); held {
			c.book.mu.Unlock()
			return refuse(api.Errorf(api.CodeForbidden, "%s pid %d's report names session %s, which pid %d's reports hold", agent, agentProc.PID, facts.NativeID, pid))
		}
	}
	c.book.last[agent] = now
	prev := entry.tie
	next := prev
	next.Event, next.At = facts.Event, now
	if facts.NativeID != "" {
		next.NativeID = facts.NativeID
	}
	if facts.Cwd != "" {
		next.Cwd = facts.Cwd
	} else if next.Cwd == "" {
		next.Cwd, _ = proc.Cwd(agentProc.PID)
	}
	if next.NativeID != prev.NativeID {
		// Another session of the same process (/clear, /resume): nothing
		// of the last one's state holds.
		next.State, next.WaitingFor, next.WaitingSince, next.Tool, next.Input, next.Text, next.Request = "", "", time.Time{}, "", "", "", ""
	}
	var pending *pendingRequest
	release := false
	switch {
	case facts.Ended:
		release = true
		next.State, next.WaitingFor, next.Request = adapters.NativeIdle, "", ""
	case facts.WaitingFor != "":
		if facts.Request != "" {
			release = true
			w := api.Waiting{For: facts.WaitingFor, Request: newRequestID(), Tool: facts.Tool, Input: facts.Input, Text: facts.Text, Kind: facts.Event}
			pending = &pendingRequest{id: w.Request, waiting: w, reply: make(chan api.HookReply, 1)}
			next.Request = w.Request
			next.Tool, next.Input, next.Text = facts.Tool, facts.Input, facts.Text
		} else if !(facts.WaitingFor == prev.WaitingFor && prev.Request != "") {
			// A reminder of the request pending keeps its details.
			next.Request, next.Tool, next.Input, next.Text = "", facts.Tool, facts.Input, facts.Text
		}
		if facts.WaitingFor != prev.WaitingFor || pending != nil {
			next.WaitingSince = now
		}
		next.WaitingFor = facts.WaitingFor
		if facts.State != "" {
			next.State = facts.State
		}
	case facts.State != "":
		release = true
		next.State, next.WaitingFor, next.WaitingSince, next.Request, next.Tool, next.Input, next.Text = facts.State, "", time.Time{}, "", "", "", ""
	}
	entry.tie = next
	c.book.mu.Unlock()
	if next.NativeID != prev.NativeID {
		// One line per process and session: when a tie began, and what the
		// proof of its process cost (the figures of a tie's latency).
		args := []any{"agent", agent, "event", facts.Event, "pid", agentProc.PID, "session", next.NativeID, "proof", proved.Round(time.Microsecond)}
		if !facts.Sent.IsZero() {
			// From the agent's event to here: its plugin's spawn of the
			// hook, the hook's start and dial, the proof.
			args = append(args, "since_event", now.Sub(facts.Sent).Round(time.Millisecond))
		}
		c.log.Info("integration tie", args...)
	}
	if release && prev.NativeID != "" {
		c.attn.release(prev.NativeID)
	}
	if pending != nil && next.NativeID != "" {
		c.attn.mu.Lock()
		c.attn.pending[next.NativeID] = pending
		c.attn.mu.Unlock()
	}
	if next.NativeID != "" {
		c.observeNative(next.NativeID)
	}
	if pending == nil || next.NativeID == "" {
		return api.HookReply{}, nil
	}
	if taken != nil {
		taken()
	}
	select {
	case r := <-pending.reply:
		return r, nil
	case <-ctx.Done():
		c.attn.mu.Lock()
		if c.attn.pending[next.NativeID] == pending {
			delete(c.attn.pending, next.NativeID)
		}
		c.attn.mu.Unlock()
		return api.HookReply{}, ctx.Err()
	}
}

// agentOf walks from the hook process caller up its parents (at most
// maxHookDepth) to the first one m recognises as the agent, and returns it
// once the chain read is checked to be the caller's still.
func agentOf(caller *proc.Caller, m processMatcher) (proc.Info, error) {
	if err := caller.Check(); err != nil {
		return proc.Info{}, err
	}
	var chain []proc.Info
	for pid, n := caller.PID, 0; pid > 1 && n < maxHookDepth; n++ {
		p, err := proc.Lookup(pid)
		if err != nil {
			return proc.Info{}, fmt.Errorf("%w: the parents of pid %d changed while they were read", proc.ErrUnproven, caller.PID)
		}
		chain = append(chain, p)
		if n > 0 { // the hook itself is never the agent
			if argv, err := proc.Cmdline(pid); err == nil && m.IsAgentProcess(argv) {
				// Read while the caller lived, unchanged since: its own.
				for _, q := range chain {
					again, err := proc.Lookup(q.PID)
					if err != nil || again.Start != q.Start || again.PPID != q.PPID {
						return proc.Info{}, fmt.Errorf("%w: the parents of pid %d changed while they were read", proc.ErrUnproven, caller.PID)
					}
				}
				if err := caller.Check(); err != nil {
					return proc.Info{}, err
				}
				return p, nil
			}
		}
		pid = p.PPID
	}
	return proc.Info{}, fmt.Errorf("pid %d is not run by a live agent process (none among its %d nearest parents)", caller.PID, maxHookDepth)
}

// sameFolder checks a report's folder against the agent's own and the
// hook's (the agent runs its hooks in the folder it works in, which may
// have moved below the one it started in): "" is no claim.
func sameFolder(claimed string, agentPID, hookPID int) error {
	if claimed == "" {
		return nil
	}
	want := realPath(claimed)
	var seen []string
	for _, pid := range []int{hookPID, agentPID} {
		cwd, err := proc.Cwd(pid)
		if err != nil {
			continue
		}
		if realPath(cwd) == want {
			return nil
		}
		seen = append(seen, cwd)
	}
	if len(seen) == 0 {
		return errors.New("the folders of the hook and of the agent cannot be read")
	}
	return fmt.Errorf("the agent works in %s", text.Quote(seen[len(seen)-1]))
}

func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// observeNative announces a transition of the hand-started session id, in
// the background: deriving it runs the adapters' discovery, and the hook
// that reported waits for nobody. One derivation runs per session at a
// time; reports meanwhile ask for one more after it (a burst costs two).
func (c *Core) observeNative(id string) {
	c.book.mu.Lock()
	if c.ctx.Err() != nil {
		c.book.mu.Unlock()
		return
	}
	if _, running := c.book.observing[id]; running {
		c.book.observing[id] = true // once more, after this one
		c.book.mu.Unlock()
		return
	}
	c.book.observing[id] = false
	c.book.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
			s, err := c.get(ctx, id)
			cancel()
			if err == nil && s.Origin != api.OriginLaunched {
				c.notify(c.moves.observe(&s))
			}
			c.book.mu.Lock()
			again := c.book.observing[id]
			if !again || c.ctx.Err() != nil {
				delete(c.book.observing, id)
				c.book.mu.Unlock()
				return
			}
			c.book.observing[id] = false
			c.book.mu.Unlock()
		}
	}()
}

// decideNative answers a session started by hand whose integration's hook
// waits for agentctl's answer (Claude Code's PermissionRequest). The rules
// are a launched session's: its owner (or root), never a process of the
// session itself (one below its agent process, or of a session started
// from inside it). The decision is recorded in the integrations'
// decisions.jsonl, the session having no folder here.
func (c *Core) decideNative(ctx context.Context, sess api.Session, caller *proc.Caller, d api.Decision) (api.Session, error) {
	if sess.Status != api.StatusRunning {
		return api.Session{}, faultf(ErrNotRunning, "session %s is %s: there is nothing to answer", sess.ID, sess.Status)
	}
	if caller == nil {
		caller = proc.UnknownCaller()
	}
	if !proc.OwnerOrRoot(caller.UID) {
		return api.Session{}, api.Errorf(api.CodeForbidden, "uid %d may not answer session %s (only its owner, uid %d, or root)", caller.UID, sess.ID, os.Getuid())
	}
	tie, _, tied := c.book.tieOf(sess.NativeID)
	if err := c.mayAnswer(caller, sess); err != nil {
		return api.Session{}, err
	}
	if tied {
		if err := notBelow(caller, proc.Identity{PID: tie.PID, Start: tie.Start}, sess.ID); err != nil {
			return api.Session{}, err
		}
	}
	if d.Action == api.DecisionAnswer {
		return api.Session{}, faultf(ErrInvalid, "session %s was started by hand: agentctl has no terminal of it to type into (answer in its own terminal)", sess.ID)
	}
	p, err := c.attn.take(sess.NativeID, sess.ID, d)
	if err != nil {
		return api.Session{}, err
	}
	if p == nil {
		why := "it is not waiting for a permission"
		if sess.WaitingFor == api.WaitingPermission {
			why = "its permission prompt has no hook waiting for agentctl's answer (answer it in its own terminal)"
		}
		return api.Session{}, faultf(ErrNotWaiting, "cannot %s session %s: %s", d.Action, sess.ID, why)
	}
	rec := api.DecisionRecord{Time: time.Now().UTC(), Action: d.Action, UID: caller.UID, PID: caller.PID, Reason: d.Reason, Text: d.Text, Via: d.Via,
		Request: p.id, For: p.waiting.For, Tool: p.waiting.Tool, Input: p.waiting.Input, Delivered: "integration hook"}
	reply := api.HookReply{Behavior: "allow"}
	if d.Action == api.DecisionDeny {
		reply = api.HookReply{Behavior: "deny", Message: d.Reason}
		if reply.Message == "" {
			reply.Message = "denied by the user through agentctl"
		}
	}
	if err := os.MkdirAll(c.opts.Home.IntegrationsDir(), 0o700); err != nil {
		p.reply <- api.HookReply{}
		return api.Session{}, fmt.Errorf("record decision: %w", err)
	}
	if err := appendDecisionTo(c.opts.Home.IntegrationDecisions(), sess.ID, rec); err != nil {
		p.reply <- api.HookReply{} // unrecorded: the agent asks as usual
		return api.Session{}, err
	}
	p.reply <- reply
	// The agent runs on: busy until its reports say otherwise.
	c.book.mu.Lock()
	for _, e := range c.book.procs {
		if e.tie.NativeID == sess.NativeID && e.tie.Request == p.id {
			e.tie.State, e.tie.WaitingFor, e.tie.WaitingSince, e.tie.Request, e.tie.Event, e.tie.At = adapters.NativeBusy, "", time.Time{}, "", "agentctl "+d.Action, rec.Time
		}
	}
	c.book.mu.Unlock()
	c.observeNative(sess.NativeID)
	return c.get(ctx, sess.ID)
}

// notBelow refuses a caller that runs below the agent process of session
// id: a session cannot answer its own prompt.
func notBelow(caller *proc.Caller, agent proc.Identity, id string) error {
	chain, err := parents(caller)
	if err != nil {
		return api.Errorf(api.CodeForbidden, "%v: session %s is not answered", err, id)
	}
	for _, p := range chain {
		if p.PID == agent.PID && p.Start == agent.Start {
			return api.Errorf(api.CodeForbidden, "pid %d runs below session %s's agent (pid %d): a session cannot answer its own prompt", caller.PID, id, agent.PID)
		}
	}
	return nil
}
