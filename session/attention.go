package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/logs"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/spawn"
)

// ErrNotWaiting: an answer was given to a session that asks nothing that
// agentctl can answer.
var ErrNotWaiting = errors.New("the session is not waiting for that")

// ErrChanged: an answer named a request that another one replaced since.
var ErrChanged = errors.New("the request changed")

// hookEvidence is attention.json: the last state a session's hooks
// reported, written by the service.
type hookEvidence struct {
	Activity string       `json:"activity"`
	Waiting  *api.Waiting `json:"waiting,omitempty"`
	Since    time.Time    `json:"since"`
	// Event is the hook event that decided it.
	Event string `json:"event"`
	// Source is api.SourceHook (the default) or api.SourceNative (the
	// agent's own server reported it).
	Source string `json:"source,omitempty"`
}

// readHookEvidence reads a session folder's attention.json (nil when the
// session's hooks never reported).
func readHookEvidence(dir string) (*hookEvidence, error) {
	b, err := os.ReadFile(filepath.Join(dir, home.AttentionFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", home.AttentionFile, err)
	}
	var h hookEvidence
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Join(dir, home.AttentionFile), err)
	}
	return &h, nil
}

// applyAttention is the one rule for a running launched session's
// activity: the newest first-hand evidence wins, between the agent's hooks
// (attention.json) and a terminal notification that still stands
// (terminal.json). What neither says stays as it is (the agent's own
// store may still say busy or idle); nothing is guessed.
func applyAttention(dir string, s *api.Session) {
	term, terr := spawn.ReadTerminal(dir)
	hook, herr := readHookEvidence(dir)
	for _, err := range []error{terr, herr} {
		if err != nil {
			s.Warnings = append(s.Warnings, "attention: "+err.Error())
		}
	}
	if term != nil {
		s.Title = term.Title
	}
	var n *spawn.TermNotification
	if term != nil && term.Notification.Pending() {
		n = term.Notification
	}
	switch {
	case n != nil && (hook == nil || n.At.After(hook.Since)):
		at := n.At
		s.Activity, s.ActivitySource, s.ActivitySince = api.ActivityWaiting, api.SourceTerminal, &at
		s.WaitingFor = api.WaitingInput
		s.Waiting = &api.Waiting{For: api.WaitingInput, Text: n.Text, Kind: n.Kind}
	case hook != nil && hook.Activity != "":
		at := hook.Since
		src := hook.Source
		if src == "" {
			src = api.SourceHook
		}
		s.Activity, s.ActivitySource, s.ActivitySince = hook.Activity, src, &at
		if hook.Activity == api.ActivityWaiting && hook.Waiting != nil {
			w := *hook.Waiting
			s.WaitingFor, s.Waiting = w.For, &w
		}
	}
}

// pendingRequest is a permission request whose hook waits for a decision.
type pendingRequest struct {
	id      string
	waiting api.Waiting
	reply   chan api.HookReply // buffered 1; written once
}

// attention holds the live part of the attention state: the requests
// whose hooks wait for an answer right now. Everything else is on disk.
type attention struct {
	mu      sync.Mutex
	pending map[string]*pendingRequest // by session id
	// writes serialises attention.json writes per service.
	writes sync.Mutex
}

func newAttention() *attention { return &attention{pending: map[string]*pendingRequest{}} }

// release ends a session's pending request without a decision (the agent
// moved on: the person answered in its terminal).
func (a *attention) release(id string) {
	a.mu.Lock()
	p := a.pending[id]
	delete(a.pending, id)
	a.mu.Unlock()
	if p != nil {
		p.reply <- api.HookReply{}
	}
}

// HookEvent is one report of an agent's hook, as the hook command
// parsed it.
type HookEvent struct {
	// Agent is the adapter whose hook reported ("claude").
	Agent string
	// Event is the agent's hook event name ("PermissionRequest").
	Event string
	// Interactive: the session has a person at its prompt between turns.
	Interactive bool
	// Payload is the hook's own JSON input.
	Payload json.RawMessage
}

// Hook takes one hook report for session id and returns what the hook
// answers the agent. The session's adapter reads the payload
// (adapters.HookReader). A permission request waits here until the person
// decides (approve, deny), the agent moves on, or ctx ends (the hook was
// killed or timed out): without a decision the agent asks in its own
// terminal as usual.
func (c *Core) Hook(ctx context.Context, id string, ev HookEvent) (api.HookReply, error) {
	sess, err := c.records.get(id)
	if err != nil {
		return api.HookReply{}, err
	}
	if sess.Status != api.StatusRunning {
		return api.HookReply{}, faultf(ErrNotRunning, "session %s is %s", id, sess.Status)
	}
	reader, ok := c.adapters.Get(ev.Agent).(adapters.HookReader)
	if !ok {
		return api.HookReply{}, faultf(ErrInvalid, "hooks of agent %s are not known", text.Quote(ev.Agent))
	}
	f, err := reader.ReadHook(ev.Event, ev.Payload)
	if err != nil {
		return api.HookReply{}, faultf(ErrInvalid, "hook input: %v", err)
	}
	now := time.Now().UTC()
	next := hookEvidence{Since: now, Event: f.Event}
	var pending *pendingRequest
	switch {
	case f.Ended:
		return api.HookReply{}, nil // the session's end is its monitor's to tell
	case f.WaitingFor != "" && f.Request != "":
		c.attn.release(id)
		w := api.Waiting{For: f.WaitingFor, Request: newRequestID(), Tool: f.Tool, Input: f.Input, Text: f.Text, Kind: f.Event}
		next.Activity, next.Waiting = api.ActivityWaiting, &w
		pending = &pendingRequest{id: w.Request, waiting: w, reply: make(chan api.HookReply, 1)}
		c.attn.mu.Lock()
		c.attn.pending[id] = pending
		c.attn.mu.Unlock()
	case f.WaitingFor != "":
		w := api.Waiting{For: f.WaitingFor, Text: f.Text, Kind: f.Event}
		if w.For == api.WaitingPermission {
			// The request the hook waits on says more (tool, input).
			c.attn.mu.Lock()
			if p := c.attn.pending[id]; p != nil {
				w = p.waiting
			}
			c.attn.mu.Unlock()
		}
		next.Activity, next.Waiting = api.ActivityWaiting, &w
		if prev, _ := readHookEvidence(c.opts.Home.SessionDir(id)); prev != nil && prev.Activity == api.ActivityWaiting && prev.Waiting != nil && prev.Waiting.For == w.For {
			next.Since = prev.Since // the same wait, reminded
		}
	case f.State == adapters.NativeBusy:
		c.attn.release(id)
		next.Activity = api.ActivityBusy
	case f.State == adapters.NativeIdle:
		c.attn.release(id)
		next.Activity = api.ActivityIdle
		if ev.Interactive {
			next.Activity = api.ActivityWaiting
			next.Waiting = &api.Waiting{For: api.WaitingInput, Kind: f.Event}
		}
	default:
		return api.HookReply{}, nil
	}
	if err := c.writeHookEvidence(id, next); err != nil {
		if pending != nil {
			c.attn.release(id)
		}
		return api.HookReply{}, err
	}
	c.observe(id)
	if pending == nil {
		return api.HookReply{}, nil
	}
	select {
	case r := <-pending.reply:
		return r, nil
	case <-ctx.Done():
		c.attn.mu.Lock()
		if c.attn.pending[id] == pending {
			delete(c.attn.pending, id)
		}
		c.attn.mu.Unlock()
		return api.HookReply{}, ctx.Err()
	}
}

func (c *Core) writeHookEvidence(id string, h hookEvidence) error {
	c.attn.writes.Lock()
	defer c.attn.writes.Unlock()
	if err := atomicfile.WriteJSON(filepath.Join(c.opts.Home.SessionDir(id), home.AttentionFile), h, 0o600); err != nil {
		return fmt.Errorf("record hook report of %s: %w", id, err)
	}
	return nil
}

// Observe re-derives one session after its evidence changed (its monitor
// saw a terminal notification) and announces the transition, if any.
func (c *Core) Observe(id string) error {
	if _, err := c.records.get(id); err != nil {
		return err
	}
	c.observe(id)
	return nil
}

func (c *Core) observe(id string) {
	sess, err := c.records.get(id)
	if err != nil {
		return
	}
	c.notify(c.moves.observe(&sess))
}

// Decide answers a waiting session on behalf of caller: approve or deny
// its pending permission request, or type an answer into its terminal.
// Only the owner (or root) may, never a process of the session itself nor
// of a session of its principal (started from it, or it from them), and
// only while the caller still runs. An approval names the request it
// answers (d.Request): a request that replaced the one the person saw is
// not approved by that answer. A decision relayed for a process
// (WithRelayed) is refused unless that process could make it too. Every
// decision is appended to the session's decisions.jsonl.
func (c *Core) Decide(ctx context.Context, prefix string, caller *proc.Caller, d api.Decision) (api.Session, error) {
	if err := checkDecision(d); err != nil {
		return api.Session{}, err
	}
	sess, _, err := c.lookup(ctx, prefix)
	if err != nil {
		return api.Session{}, err
	}
	if sess.Origin != api.OriginLaunched {
		return c.decideNative(ctx, sess, caller, d)
	}
	dir := c.opts.Home.SessionDir(sess.ID)
	if sess.Status != api.StatusRunning {
		return api.Session{}, faultf(ErrNotRunning, "session %s is %s: there is nothing to answer", sess.ID, sess.Status)
	}
	if caller == nil {
		caller = proc.UnknownCaller()
	}
	if !proc.OwnerOrRoot(caller.UID) {
		return api.Session{}, api.Errorf(api.CodeForbidden, "uid %d may not answer session %s (only its owner, uid %d, or root)", caller.UID, sess.ID, os.Getuid())
	}
	if err := c.mayDecide(ctx, caller, sess); err != nil {
		return api.Session{}, err
	}
	rec := api.DecisionRecord{Time: time.Now().UTC(), Action: d.Action, UID: caller.UID, PID: caller.PID, Reason: d.Reason, Text: d.Text, Via: d.Via}
	if r := relayedOf(ctx); r != nil {
		rec.Relayed = r.record()
	}
	if sess.Waiting != nil {
		rec.For, rec.Tool, rec.Input, rec.Request = sess.Waiting.For, sess.Waiting.Tool, sess.Waiting.Input, sess.Waiting.Request
	}
	switch d.Action {
	case api.DecisionApprove, api.DecisionDeny:
		p, err := c.attn.take(sess.ID, sess.ID, d)
		if err != nil {
			return api.Session{}, err
		}
		if p == nil && sess.Waiting != nil && sess.Waiting.Kind == "permission.asked" {
			if err := sameRequest(sess.ID, d, *sess.Waiting); err != nil {
				return api.Session{}, err
			}
			// The agent's own server holds the request (OpenCode).
			if err := replyServer(ctx, dir, sess.Waiting, d); err != nil {
				return api.Session{}, faultf(ErrNotWaiting, "cannot %s session %s: %v", d.Action, sess.ID, err)
			}
			rec.Delivered = "server"
			if err := appendDecision(dir, rec); err != nil {
				return api.Session{}, err
			}
			c.observe(sess.ID)
			return c.records.get(sess.ID)
		}
		if p == nil {
			why := "it is not waiting for a permission"
			if sess.WaitingFor == api.WaitingPermission {
				why = "its permission prompt has no hook waiting for agentctl's answer (answer it in its terminal: agentctl attach " + sess.ID + ")"
			}
			return api.Session{}, faultf(ErrNotWaiting, "cannot %s session %s: %s", d.Action, sess.ID, why)
		}
		reply := api.HookReply{Behavior: "allow"}
		if d.Action == api.DecisionDeny {
			reply = api.HookReply{Behavior: "deny", Message: d.Reason}
			if reply.Message == "" {
				reply.Message = "denied by the user through agentctl"
			}
		}
		rec.Request, rec.For, rec.Tool, rec.Input = p.id, p.waiting.For, p.waiting.Tool, p.waiting.Input
		rec.Delivered = "hook"
		if err := appendDecision(dir, rec); err != nil {
			p.reply <- api.HookReply{} // unrecorded: the agent asks as usual
			return api.Session{}, err
		}
		p.reply <- reply
		// The agent runs on: busy until its hooks say otherwise.
		if err := c.writeHookEvidence(sess.ID, hookEvidence{Activity: api.ActivityBusy, Since: rec.Time, Event: "agentctl " + d.Action}); err != nil {
			return api.Session{}, err
		}
	case api.DecisionAnswer:
		rec.Delivered = "terminal"
		if err := appendDecision(dir, rec); err != nil {
			return api.Session{}, err
		}
		// Typed, then Enter on its own: a TUI reads a burst ending in CR
		// as a paste and keeps the line open.
		if _, err := c.Input(ctx, sess.ID, []byte(d.Text)); err != nil {
			return api.Session{}, err
		}
		time.Sleep(50 * time.Millisecond)
		if _, err := c.Input(ctx, sess.ID, []byte("\r")); err != nil {
			return api.Session{}, err
		}
	}
	c.observe(sess.ID)
	return c.records.get(sess.ID)
}

// mayDecide is mayAnswer for caller and, when the request is relayed
// (WithRelayed), for the process it is relayed for, who must also be of
// the owner or root: a relay can only add a refusal, never lift one.
func (c *Core) mayDecide(ctx context.Context, caller *proc.Caller, target api.Session) error {
	if err := c.mayAnswer(caller, target); err != nil {
		return err
	}
	r := relayedOf(ctx)
	if r == nil {
		return nil
	}
	if err := c.mayAnswer(r.caller, target); err != nil {
		return r.refusal(err)
	}
	if !proc.OwnerOrRoot(r.caller.UID) {
		return r.refusal(api.Errorf(api.CodeForbidden, "uid %d may not answer session %s (only its owner, uid %d, or root)", r.caller.UID, target.ID, os.Getuid()))
	}
	return nil
}

// mayAnswer refuses a caller that cannot be proven (it exited since it
// connected), or that is of target's principal: a process of target, of a
// session started from it, or of one it was started from.
func (c *Core) mayAnswer(caller *proc.Caller, target api.Session) error {
	mine, err := c.principal(caller)
	if err != nil {
		if errors.Is(err, proc.ErrUnproven) {
			return api.Errorf(api.CodeForbidden, "%v: session %s is not answered", err, target.ID)
		}
		return err
	}
	switch shared := sharedPrincipal(mine, target); {
	case shared == "":
		return nil
	case shared == target.ID:
		return api.Errorf(api.CodeForbidden, "pid %d belongs to session %s, or to a session started from inside it: a session cannot answer its own prompt", caller.PID, target.ID)
	default:
		return api.Errorf(api.CodeForbidden, "pid %d and session %s are of one principal (session %s and the sessions started from inside it): a session cannot answer its own prompt, nor that of a session started from it or that started it", caller.PID, target.ID, shared)
	}
}

// maxRequestID bounds a request id (agentctl's are 16 hex digits, an
// agent server's a few dozen characters).
const maxRequestID = 128

// maxVia bounds a decision's Via ("web from" and an address).
const maxVia = 256

// CheckVia refuses a relay's name (api.Decision.Via, api.Relayed.Via)
// that is not one: too long, or with control characters.
func CheckVia(via string) error {
	if len(via) > maxVia || hasControl(via) {
		return faultf(ErrInvalid, "via %q is not a relay's name (at most %d characters, no control characters)", text.Truncate(via, 32), maxVia)
	}
	return nil
}

// checkDecision refuses a decision that no session could take: an unknown
// action, an answer without text, a request id that cannot be one.
func checkDecision(d api.Decision) error {
	switch d.Action {
	case api.DecisionApprove, api.DecisionDeny, api.DecisionAnswer:
	default:
		return faultf(ErrInvalid, "unknown decision %s (approve, deny, answer)", text.Quote(d.Action))
	}
	if len(d.Request) > maxRequestID || hasControl(d.Request) {
		return faultf(ErrInvalid, "request %q is not a request id (at most %d characters, no control characters)", text.Truncate(d.Request, 32), maxRequestID)
	}
	if err := CheckVia(d.Via); err != nil {
		return err
	}
	if d.Action == api.DecisionAnswer && d.Text == "" {
		return faultf(ErrInvalid, "an answer needs text")
	}
	return nil
}

// take removes and returns the request pending under key (nil when none)
// if d answers that very request; session id names it in the error.
func (a *attention) take(key, id string, d api.Decision) (*pendingRequest, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pending[key]
	if p == nil {
		return nil, nil
	}
	if err := sameRequest(id, d, p.waiting); err != nil {
		return nil, err
	}
	delete(a.pending, key)
	return p, nil
}

// sameRequest refuses an approval or denial of a request that is not the
// one pending now, and an approval that names none: what the person saw is
// what is approved, never a request that replaced it. A denial that names
// none denies what is pending.
func sameRequest(id string, d api.Decision, now api.Waiting) error {
	what := now.Tool
	if now.Input != "" {
		what += ": " + now.Input
	}
	if what == "" {
		what = now.For
	}
	switch {
	case d.Action == api.DecisionApprove && d.Request == "":
		return faultf(ErrInvalid, "an approval names the request it answers: session %s asks %s (request %s): agentctl approve %s --request %s",
			id, what, now.Request, id, now.Request)
	case d.Request == "" || d.Request == now.Request:
		return nil
	}
	return faultf(ErrChanged, "cannot %s request %s of session %s: it is no longer pending; the session now asks %s (request %s): look at it, then agentctl %s %s --request %s",
		d.Action, d.Request, id, what, now.Request, d.Action, id, now.Request)
}

// appendDecision adds one line to the session's decisions.jsonl, synced.
func appendDecision(dir string, rec api.DecisionRecord) error {
	return appendRecord(filepath.Join(dir, home.DecisionsFile), rec)
}

// appendDecisionTo adds the decision on session id to the decisions.jsonl
// at path, which holds those of several sessions.
func appendDecisionTo(path, id string, rec api.DecisionRecord) error {
	return appendRecord(path, struct {
		Session string `json:"session"`
		api.DecisionRecord
	}{id, rec})
}

// appendRecord adds one JSON line to the file at path, synced.
func appendRecord(path string, rec any) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := logs.OpenAppend(path)
	if err != nil {
		return fmt.Errorf("record decision: %w", err)
	}
	_, werr := f.Write(append(b, '\n'))
	serr := f.Sync()
	if err := errors.Join(werr, serr, f.Close()); err != nil {
		return fmt.Errorf("record decision in %s: %w", path, err)
	}
	return nil
}

func newRequestID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// sortByWaiting orders waiting sessions longest waiting first (those whose
// start is unknown last), keeping the order of ties.
func sortByWaiting(ss []api.Session) {
	slices.SortStableFunc(ss, func(a, b api.Session) int {
		switch {
		case a.ActivitySince == nil && b.ActivitySince == nil:
			return 0
		case a.ActivitySince == nil:
			return 1
		case b.ActivitySince == nil:
			return -1
		}
		return a.ActivitySince.Compare(*b.ActivitySince)
	})
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, unicode.IsControl)
}
