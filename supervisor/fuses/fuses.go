// Package fuses keeps one timer per directory ("fuse"): when it runs out,
// a script runs in the directory and/or a webhook is posted. Fuses live in
// fuses.json with their deadlines, so they survive a service restart with
// their remaining time; one that ran out while the service was down fires
// when it starts. Each fuse fires at most once.
package fuses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/supervisor/hooks"
	"github.com/agentctl/agentctl/supervisor/locks"
	"github.com/agentctl/agentctl/supervisor/webhook"

	"github.com/agentctl/agentctl/internal/text"
)

// DefaultScriptTimeout bounds an on-expire script, as in the tool agentctl
// replaces.
const DefaultScriptTimeout = 120 * time.Second

// ErrNoFuse is returned for a directory without a fuse.
var ErrNoFuse = errors.New("no active fuse")

// ErrInvalid marks a request that can never succeed as asked (a ttl that is
// not positive, a webhook that is not an http URL).
var ErrInvalid = errors.New("invalid fuse request")

// invalidf is an ErrInvalid with a message of its own.
func invalidf(format string, args ...any) error {
	return invalidError(fmt.Sprintf(format, args...))
}

type invalidError string

func (e invalidError) Error() string        { return string(e) }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

// Action is what a fuse does when it expires.
type Action struct {
	Script  string `json:"script,omitempty"`
	Webhook string `json:"webhook,omitempty"`
}

// Fuse is one timer. The JSON keys are those of the tool agentctl
// replaces, so `fuses --json` consumers keep working.
type Fuse struct {
	Directory string    `json:"directory"`
	TTLMs     int64     `json:"ttlMs"`
	ExpiresAt time.Time `json:"expiresAt"`
	SessionID string    `json:"sessionId,omitempty"`
	OnExpire  *Action   `json:"onExpire,omitempty"`
	Label     string    `json:"label,omitempty"`
	SetAt     time.Time `json:"setAt"`
}

// TTL is the fuse's length, the one extend re-arms with by default.
func (f Fuse) TTL() time.Duration { return time.Duration(f.TTLMs) * time.Millisecond }

// ChangeKind says what happened to a fuse.
type ChangeKind string

const (
	Set       ChangeKind = "set"
	Extended  ChangeKind = "extended"
	Cancelled ChangeKind = "cancelled"
	// Expired: the fuse ran out; its actions start right after.
	Expired ChangeKind = "expired"
	// ScriptDone: the on-expire script finished; Change.Script says how.
	ScriptDone ChangeKind = "script-done"
)

// Change is reported to Options.OnChange.
type Change struct {
	Kind ChangeKind
	Fuse Fuse
	// At is when the change happened: for Expired, the moment it was
	// handled (later than ExpiresAt for a fuse that expired while the
	// service was down).
	At     time.Time
	Script *hooks.Result
}

// WebhookSender queues webhook deliveries (a *webhook.Sender).
type WebhookSender interface {
	Send(webhook.Delivery) bool
}

// Options configures an Engine.
type Options struct {
	// OnChange is called for set, extended, cancelled and expired in order
	// while the engine is locked (quick, no calls back into the engine), and
	// for script-done from the goroutine that ran the script.
	OnChange func(Change)
	// Webhook posts a fuse's own --on-expire-webhook; signed with
	// WebhookSecret when set.
	Webhook       WebhookSender
	WebhookSecret string
	// ScriptTimeout bounds on-expire scripts (DefaultScriptTimeout when 0).
	ScriptTimeout time.Duration
	// ScriptLog receives the scripts' output.
	ScriptLog string
	// ScriptEnv is the environment scripts start from.
	ScriptEnv []string
	Clock     func() time.Time
	Logger    *slog.Logger
}

// Engine owns the fuses. It is safe for concurrent use.
type Engine struct {
	path string
	opts Options

	mu    sync.Mutex
	fuses map[string]*entry
	// gen numbers armings across all fuses, so a timer that fired just
	// before its fuse was re-armed, cancelled or replaced finds it stale.
	gen     uint64
	started bool
	closed  bool
	// actions counts running on-expire actions; ctx cancels them on Close.
	actions sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
}

type entry struct {
	fuse  Fuse
	timer *time.Timer
	gen   uint64 // the arming of timer
}

type fileFormat struct {
	Version int    `json:"version"`
	Fuses   []Fuse `json:"fuses"`
}

const fileVersion = 1

// Open loads the fuses from path without arming them (Start does). A file
// in the old tool's format (a bare array) is read too, except its
// lifecycle fuses, which only guarded the old daemon's own bookkeeping; a
// file that cannot be parsed is moved aside. Warnings say what was done.
func Open(path string, opts Options) (*Engine, []string, error) {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ScriptTimeout <= 0 {
		opts.ScriptTimeout = DefaultScriptTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{path: path, opts: opts, fuses: map[string]*entry{}, ctx: ctx, cancel: cancel}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return e, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read fuses: %w", err)
	}
	list, old, err := parse(b)
	if err != nil {
		aside := fmt.Sprintf("%s.corrupt-%d", path, opts.Clock().Unix())
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, nil, fmt.Errorf("fuses file %s is unreadable (%v) and could not be moved aside: %w", path, err, rerr)
		}
		return e, []string{fmt.Sprintf("fuses file %s is unreadable (%v); moved to %s, starting with no fuses", path, err, aside)}, nil
	}
	var warnings []string
	skipped := 0
	for _, f := range list {
		if old && strings.HasPrefix(f.Label, "lifecycle:") && f.OnExpire == nil {
			skipped++
			continue
		}
		dir, err := locks.Canonical(f.Directory)
		if err != nil || f.Directory == "" || f.ExpiresAt.IsZero() {
			warnings = append(warnings, fmt.Sprintf("fuses: skipped a fuse with a bad directory or deadline: %q", f.Directory))
			continue
		}
		f.Directory = dir
		e.fuses[dir] = &entry{fuse: f}
	}
	if old {
		if err := os.Rename(path, path+".old"); err != nil {
			return nil, nil, fmt.Errorf("migrate fuses %s: %w", path, err)
		}
		if err := e.save(); err != nil {
			return nil, nil, fmt.Errorf("migrate fuses: %w", err)
		}
		warnings = append(warnings, fmt.Sprintf("fuses: read %d fuse(s) from the old format (skipped %d lifecycle fuse(s) of the old daemon); the original is %s.old", len(e.fuses), skipped, path))
	}
	return e, warnings, nil
}

func parse(b []byte) ([]Fuse, bool, error) {
	if strings.HasPrefix(strings.TrimSpace(string(b)), "[") {
		var list []Fuse
		if err := json.Unmarshal(b, &list); err != nil {
			return nil, true, err
		}
		return list, true, nil
	}
	var f fileFormat
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, false, err
	}
	if f.Version != fileVersion {
		return nil, false, fmt.Errorf("unknown version %d", f.Version)
	}
	return f.Fuses, false, nil
}

// save writes every fuse; the caller holds mu (or is Open).
func (e *Engine) save() error {
	list := make([]Fuse, 0, len(e.fuses))
	for _, en := range e.fuses {
		list = append(list, en.fuse)
	}
	sortFuses(list)
	return atomicfile.WriteJSON(e.path, fileFormat{Version: fileVersion, Fuses: list}, 0o600)
}

func sortFuses(list []Fuse) {
	slices.SortFunc(list, func(a, b Fuse) int {
		if c := a.ExpiresAt.Compare(b.ExpiresAt); c != 0 {
			return c
		}
		return strings.Compare(a.Directory, b.Directory)
	})
}

// Start arms every loaded fuse; those past their deadline fire now.
func (e *Engine) Start() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started || e.closed {
		return
	}
	e.started = true
	for _, en := range e.fuses {
		e.armLocked(en)
	}
}

// armLocked (re)starts en's timer for its deadline.
func (e *Engine) armLocked(en *entry) {
	if en.timer != nil {
		en.timer.Stop()
	}
	e.gen++
	en.gen = e.gen
	gen, dir := en.gen, en.fuse.Directory
	en.timer = time.AfterFunc(max(en.fuse.ExpiresAt.Sub(e.opts.Clock()), 0), func() { e.fire(dir, gen) })
}

// SetRequest sets a fuse.
type SetRequest struct {
	Dir       string
	TTL       time.Duration
	SessionID string
	Label     string
	Script    string
	Webhook   string
}

// Set sets dir's fuse, replacing the one it had.
func (e *Engine) Set(req SetRequest) (Fuse, error) {
	dir, err := locks.Canonical(req.Dir)
	if err != nil {
		return Fuse{}, err
	}
	if req.TTL <= 0 {
		return Fuse{}, invalidf("set fuse on %s: the ttl must be positive, got %s", dir, req.TTL)
	}
	if req.Webhook != "" {
		if u, err := url.Parse(req.Webhook); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Fuse{}, invalidf("set fuse on %s: webhook %s must be an http or https URL", dir, text.Quote(req.Webhook))
		}
	}
	now := e.opts.Clock().UTC()
	f := Fuse{Directory: dir, TTLMs: req.TTL.Milliseconds(), ExpiresAt: now.Add(req.TTL), SessionID: req.SessionID, Label: req.Label, SetAt: now}
	if req.Script != "" || req.Webhook != "" {
		f.OnExpire = &Action{Script: req.Script, Webhook: req.Webhook}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return Fuse{}, errors.New("set fuse: the fuse engine is closed")
	}
	prev, had := e.fuses[dir]
	en := &entry{fuse: f}
	e.fuses[dir] = en
	if err := e.save(); err != nil {
		if had {
			e.fuses[dir] = prev
		} else {
			delete(e.fuses, dir)
		}
		return Fuse{}, fmt.Errorf("set fuse on %s: %w", dir, err)
	}
	if had && prev.timer != nil {
		prev.timer.Stop()
	}
	if e.started {
		e.armLocked(en)
	}
	e.notify(Change{Kind: Set, Fuse: f, At: now})
	return f, nil
}

// Extend re-arms dir's fuse for ttl from now (its own TTL when ttl is 0).
func (e *Engine) Extend(dir string, ttl time.Duration) (Fuse, error) {
	dir, err := locks.Canonical(dir)
	if err != nil {
		return Fuse{}, err
	}
	if ttl < 0 {
		return Fuse{}, invalidf("extend fuse on %s: the ttl must be positive, got %s", dir, ttl)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	en, ok := e.fuses[dir]
	if !ok {
		return Fuse{}, fmt.Errorf("extend fuse on %s: %w", dir, ErrNoFuse)
	}
	prev := en.fuse
	if ttl == 0 {
		ttl = en.fuse.TTL()
	}
	now := e.opts.Clock().UTC()
	en.fuse.TTLMs, en.fuse.ExpiresAt = ttl.Milliseconds(), now.Add(ttl)
	if err := e.save(); err != nil {
		en.fuse = prev
		return Fuse{}, fmt.Errorf("extend fuse on %s: %w", dir, err)
	}
	if e.started {
		e.armLocked(en)
	}
	e.notify(Change{Kind: Extended, Fuse: en.fuse, At: now})
	return en.fuse, nil
}

// Cancel removes dir's fuse without firing it.
func (e *Engine) Cancel(dir string) (Fuse, error) {
	dir, err := locks.Canonical(dir)
	if err != nil {
		return Fuse{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	en, ok := e.fuses[dir]
	if !ok {
		return Fuse{}, fmt.Errorf("cancel fuse on %s: %w", dir, ErrNoFuse)
	}
	delete(e.fuses, dir)
	if err := e.save(); err != nil {
		e.fuses[dir] = en
		return Fuse{}, fmt.Errorf("cancel fuse on %s: %w", dir, err)
	}
	if en.timer != nil {
		en.timer.Stop()
	}
	e.notify(Change{Kind: Cancelled, Fuse: en.fuse, At: e.opts.Clock().UTC()})
	return en.fuse, nil
}

// List returns the fuses, soonest first.
func (e *Engine) List() []Fuse {
	e.mu.Lock()
	out := make([]Fuse, 0, len(e.fuses))
	for _, en := range e.fuses {
		out = append(out, en.fuse)
	}
	e.mu.Unlock()
	sortFuses(out)
	return out
}

// Count returns the number of fuses.
func (e *Engine) Count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.fuses)
}

// fire expires dir's fuse if gen is still its arming. The fuse leaves the
// file before its actions start: a crash in between skips the actions
// rather than repeating them.
func (e *Engine) fire(dir string, gen uint64) {
	e.mu.Lock()
	en, ok := e.fuses[dir]
	if !ok || en.gen != gen || e.closed {
		e.mu.Unlock()
		return
	}
	delete(e.fuses, dir)
	if err := e.save(); err != nil {
		e.opts.Logger.Warn("fuses file not saved after expiry", "dir", dir, "err", err)
	}
	f := en.fuse
	now := e.opts.Clock().UTC()
	e.opts.Logger.Info("fuse expired", "dir", dir, "label", f.Label, "late", now.Sub(f.ExpiresAt).Round(time.Millisecond))
	e.notify(Change{Kind: Expired, Fuse: f, At: now})
	if f.OnExpire != nil {
		e.actions.Add(1)
		go e.act(f, now)
	}
	e.mu.Unlock()
}

// act runs the fuse's actions.
func (e *Engine) act(f Fuse, expiredAt time.Time) {
	defer e.actions.Done()
	if f.OnExpire.Webhook != "" && e.opts.Webhook != nil {
		body, err := json.Marshal(webhook.FuseOwnPayload(webhook.FuseExpiry{Directory: f.Directory, SessionID: f.SessionID, Label: f.Label, TTL: f.TTL(), ExpiredAt: expiredAt}))
		if err == nil {
			e.opts.Webhook.Send(webhook.Delivery{URL: f.OnExpire.Webhook, Secret: e.opts.WebhookSecret, Event: webhook.HookFuseExpired, ID: "fuse-" + f.Directory + "-" + f.ExpiresAt.Format(time.RFC3339Nano), Body: body})
		}
	}
	if f.OnExpire.Script != "" {
		res := hooks.Run(e.ctx, hooks.Command{
			Phase:   "fuse",
			Script:  f.OnExpire.Script,
			Dir:     f.Directory,
			Env:     e.opts.ScriptEnv,
			Vars:    hooks.Vars{SessionID: f.SessionID, Cwd: f.Directory},
			Timeout: e.opts.ScriptTimeout,
			LogPath: e.opts.ScriptLog,
		})
		if !res.OK() {
			e.opts.Logger.Warn("fuse script failed", "dir", f.Directory, "result", res.Describe())
		}
		e.notify(Change{Kind: ScriptDone, Fuse: f, At: res.EndedAt, Script: &res})
	}
}

func (e *Engine) notify(c Change) {
	if e.opts.OnChange != nil {
		e.opts.OnChange(c)
	}
}

// Close stops the timers (the fuses stay in the file, to be re-armed by
// the next Start) and waits for running actions until ctx ends, then
// cancels them.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	for _, en := range e.fuses {
		if en.timer != nil {
			en.timer.Stop()
		}
	}
	e.mu.Unlock()
	done := make(chan struct{})
	go func() { e.actions.Wait(); close(done) }()
	select {
	case <-done:
		e.cancel()
		return nil
	case <-ctx.Done():
	}
	e.cancel()
	<-done
	return fmt.Errorf("fuse actions cut short: %w", ctx.Err())
}
