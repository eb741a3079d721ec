// Package openclaw reads an OpenClaw gateway's sessions over its WebSocket
// protocol (version 4): discovery with sessions.list, transcripts with
// chat.history, stop with sessions.abort, and live changes with
// sessions.subscribe. Status comes from the gateway's own status and
// hasActiveRun fields, never from timestamps. Gateway sessions have no local
// process: no pid, no cwd.
package openclaw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

// Name is the adapter's name.
const Name = "openclaw"

// Environment variables the adapter reads (OpenClaw's own names).
const (
	EnvURL      = "OPENCLAW_GATEWAY_URL"
	EnvPort     = "OPENCLAW_GATEWAY_PORT"
	EnvToken    = "OPENCLAW_GATEWAY_TOKEN"
	EnvPassword = "OPENCLAW_GATEWAY_PASSWORD"
)

const (
	// listPageSize is the sessions.list page; the gateway's default is 100.
	listPageSize = 200
	// historyPageSize is chat.history's maximum page.
	historyPageSize = 1000
	// maxPages bounds any paging loop against a gateway that never says
	// "no more".
	maxPages = 10000
)

// ErrNoActiveRun means a stop found nothing to abort.
var ErrNoActiveRun = fmt.Errorf("no active run: %w", adapters.ErrNotRunning)

// ErrNotFound means the gateway has no session with that key.
var ErrNotFound = fmt.Errorf("no such openclaw session: %w", adapters.ErrNoSession)

// The capabilities the openclaw adapter implements (adapters/capabilities.go).
var (
	_ adapters.Adapter         = (*Adapter)(nil)
	_ adapters.Stopper         = (*Adapter)(nil)
	_ adapters.ChangeWatcher   = (*Adapter)(nil)
	_ adapters.NativeIDChecker = (*Adapter)(nil)
)

// Adapter is the OpenClaw gateway adapter.
type Adapter struct {
	cfg Config
}

// New returns an adapter for the gateway cfg names.
func New(cfg Config) *Adapter { return &Adapter{cfg: cfg} }

// ConfigFromEnv builds the configuration from OpenClaw's environment
// variables; the device key lives under agentctlHome. Without a URL, a
// port (which the gateway's exec tool passes to its commands) means the
// gateway on loopback at that port.
func ConfigFromEnv(agentctlHome string, getenv func(string) string) Config {
	url := getenv(EnvURL)
	if port := getenv(EnvPort); url == "" && port != "" {
		url = "ws://127.0.0.1:" + port
	}
	return Config{
		URL:          url,
		Token:        getenv(EnvToken),
		Password:     getenv(EnvPassword),
		IdentityPath: filepath.Join(agentctlHome, IdentityFile),
	}
}

// Configured reports whether the user pointed agentctl at a gateway (a URL,
// a token or a password). An adapter that is not configured still works
// against the default URL; a caller may choose not to ask it.
func (a *Adapter) Configured() bool {
	return a.cfg.URL != "" || a.cfg.Token != "" || a.cfg.Password != ""
}

// Name implements adapters.Adapter.
func (a *Adapter) Name() string { return Name }

// URL is the gateway URL the adapter talks to.
func (a *Adapter) URL() string { return a.cfg.url() }

// dial opens a connection with the given scopes, bounded by the configured
// timeout when ctx has no deadline of its own.
func (a *Adapter) dial(ctx context.Context, scopes ...string) (*Conn, error) {
	if err := checkURL(a.cfg.url()); err != nil {
		return nil, err
	}
	return Dial(ctx, a.cfg, scopes)
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("openclaw gateway URL %q: %w", raw, err)
	}
	switch u.Scheme {
	case "ws", "wss", "http", "https":
		return nil
	}
	return fmt.Errorf("openclaw gateway URL %q: scheme must be ws:// or wss://", raw)
}

func (a *Adapter) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, a.cfg.timeout())
}

// Discover lists every session the gateway has, all pages. An error means the
// gateway could not be asked (down, wrong token, protocol mismatch): the
// caller marks nothing as stopped.
func (a *Adapter) Discover(ctx context.Context) ([]adapters.NativeSession, error) {
	ctx, cancel := a.withTimeout(ctx)
	defer cancel()
	c, err := a.dial(ctx, ScopeRead)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return listAll(ctx, c, a.cfg.pageSize(), a.cfg.url())
}

// caller is what listing needs of a connection.
type caller interface {
	Call(ctx context.Context, method string, params, out any) error
}

// listAll pages through sessions.list. The list is sorted by last update,
// so a session updated while paging can move into the pages already read;
// when the pages add up to fewer sessions than the gateway counted, one more
// pass picks such rows up.
func listAll(ctx context.Context, c caller, pageSize int, source string) ([]adapters.NativeSession, error) {
	var out []adapters.NativeSession
	seen := make(map[string]bool)
	for pass := 0; pass < 2; pass++ {
		total, err := listPass(ctx, c, pageSize, source, seen, &out)
		if err != nil {
			return nil, err
		}
		if total < 0 || len(seen) >= total {
			break
		}
	}
	return out, nil
}

// listPass reads all pages once, appending unseen sessions to out, and
// returns the gateway's totalCount (-1 when it does not say).
func listPass(ctx context.Context, c caller, pageSize int, source string, seen map[string]bool, out *[]adapters.NativeSession) (int, error) {
	offset, total := 0, -1
	for page := 0; ; page++ {
		if page >= maxPages {
			return 0, fmt.Errorf("sessions.list: still more after %d pages", maxPages)
		}
		var res listResult
		if err := c.Call(ctx, "sessions.list", listParams{Limit: pageSize, Offset: offset, IncludeDerivedTitles: true}, &res); err != nil {
			return 0, err
		}
		if res.TotalCount != nil {
			total = *res.TotalCount
		}
		for _, raw := range res.Sessions {
			ns, ok := decodeRow(raw, res.Defaults.Model, source)
			if !ok || seen[ns.NativeID] {
				continue
			}
			seen[ns.NativeID] = true
			*out = append(*out, ns)
		}
		if !res.HasMore {
			return total, nil
		}
		if res.NextOffset == nil || *res.NextOffset <= offset {
			return 0, fmt.Errorf("sessions.list: gateway says there is more but gave no next offset after %d", offset)
		}
		offset = *res.NextOffset
	}
}

// decodeRow maps one row; a row whose fields cannot be read but whose key
// can is kept with a warning, and a row without a key is dropped (nothing
// could refer to it).
func decodeRow(raw json.RawMessage, defaultModel, source string) (adapters.NativeSession, bool) {
	var r sessionRow
	if err := json.Unmarshal(raw, &r); err != nil {
		var k struct {
			Key string `json:"key"`
		}
		if json.Unmarshal(raw, &k) != nil || k.Key == "" {
			return adapters.NativeSession{}, false
		}
		return adapters.NativeSession{
			Adapter:  Name,
			NativeID: k.Key,
			Path:     source,
			Warnings: []string{"gateway session row could not be read: " + err.Error()},
		}, true
	}
	if r.Key == "" {
		return adapters.NativeSession{}, false
	}
	return toNative(r, defaultModel, source), true
}

// historyParams are the chat.history parameters agentctl sends.
type historyParams struct {
	SessionKey string `json:"sessionKey"`
	Limit      int    `json:"limit"`
	Offset     int    `json:"offset,omitempty"`
}

type historyResult struct {
	Messages   []historyMessage `json:"messages"`
	HasMore    bool             `json:"hasMore"`
	NextOffset *int             `json:"nextOffset"`
}

type historyMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Timestamp *int64          `json:"timestamp"`
}

type contentPart struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Transcript returns the last n messages of the session with key nativeID
// (n <= 0: all), oldest first, from chat.history. chat.history pages from
// the newest end: offset counts messages back from the latest.
func (a *Adapter) Transcript(ctx context.Context, nativeID string, n int) ([]adapters.Message, error) {
	ctx, cancel := a.withTimeout(ctx)
	defer cancel()
	c, err := a.dial(ctx, ScopeRead)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := requireSession(ctx, c, nativeID); err != nil {
		return nil, err
	}
	return history(ctx, c, nativeID, n)
}

// requireSession turns an unknown key into ErrNotFound: chat.history
// answers an empty page for it, which would read as "no messages yet".
func requireSession(ctx context.Context, c caller, key string) error {
	var res struct {
		Previews []struct {
			Key    string `json:"key"`
			Status string `json:"status"`
		} `json:"previews"`
	}
	if err := c.Call(ctx, "sessions.preview", map[string]any{"keys": []string{key}, "limit": 1, "maxChars": 20}, &res); err != nil {
		return err
	}
	for _, p := range res.Previews {
		if p.Key == key && p.Status == "missing" {
			return fmt.Errorf("%w: %s", ErrNotFound, key)
		}
	}
	return nil
}

func history(ctx context.Context, c caller, key string, n int) ([]adapters.Message, error) {
	var pages [][]adapters.Message
	got, offset := 0, 0
	for page := 0; ; page++ {
		if page >= maxPages {
			return nil, fmt.Errorf("chat.history: still more after %d pages", maxPages)
		}
		limit := historyPageSize
		if n > 0 {
			limit = min(n-got, historyPageSize)
		}
		var res historyResult
		if err := c.Call(ctx, "chat.history", historyParams{SessionKey: key, Limit: limit, Offset: offset}, &res); err != nil {
			return nil, err
		}
		msgs := make([]adapters.Message, 0, len(res.Messages))
		for _, m := range res.Messages {
			msgs = append(msgs, toMessage(m))
		}
		pages = append(pages, msgs)
		got += len(msgs)
		if !res.HasMore || (n > 0 && got >= n) || len(msgs) == 0 {
			break
		}
		if res.NextOffset == nil || *res.NextOffset <= offset {
			return nil, fmt.Errorf("chat.history: gateway says there is more but gave no next offset after %d", offset)
		}
		offset = *res.NextOffset
	}
	out := make([]adapters.Message, 0, got)
	for i := len(pages) - 1; i >= 0; i-- {
		out = append(out, pages[i]...)
	}
	if n > 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}

// toMessage flattens a transcript entry: text parts joined, a tool call
// shown as its name and arguments.
func toMessage(m historyMessage) adapters.Message {
	role := m.Role
	switch m.Role {
	case "toolResult", "tool":
		role = "tool"
	}
	return adapters.Message{Role: role, Text: contentText(m.Content), Time: msTime(m.Timestamp)}
}

func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []contentPart
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "toolCall", "tool_use", "toolUse":
			args := strings.TrimSpace(string(p.Arguments))
			if len(args) > 500 {
				args = args[:500] + "…"
			}
			texts = append(texts, strings.TrimSpace("tool call: "+p.Name+" "+args))
		}
	}
	return strings.Join(texts, "\n")
}

// abortResult is the sessions.abort answer.
type abortResult struct {
	OK           bool    `json:"ok"`
	Status       string  `json:"status"`
	AbortedRunID *string `json:"abortedRunId"`
}

// ErrNotOwner means the gateway lets only the run's owner (the device or
// connection that started it) or an operator.admin client abort it.
var ErrNotOwner = fmt.Errorf("not the run's owner: %w", adapters.ErrForbidden)

// Stop aborts the session's active run (sessions.abort). That needs the
// operator.write scope, and the gateway lets only the run's owner or an
// operator.admin client abort a run: a run someone else started is tried
// again with operator.admin, asked for only then. Errors: ErrMissingScope
// when write is not granted, ErrNotOwner when admin is not either,
// ErrNoActiveRun when nothing runs, ErrNotFound for an unknown key.
func (a *Adapter) Stop(ctx context.Context, nativeID string) error {
	ctx, cancel := a.withTimeout(ctx)
	defer cancel()
	err := a.abort(ctx, nativeID, false)
	if errors.Is(err, ErrNotOwner) {
		err = a.abort(ctx, nativeID, true)
	}
	if err != nil {
		return fmt.Errorf("stop openclaw session %s: %w", nativeID, err)
	}
	return nil
}

func (a *Adapter) abort(ctx context.Context, key string, asAdmin bool) error {
	scopes := []string{ScopeRead, ScopeWrite}
	if asAdmin {
		scopes = append(scopes, ScopeAdmin)
	}
	c, err := a.dial(ctx, scopes...)
	if err != nil {
		return err
	}
	defer c.Close()
	if !c.HasScope(ScopeWrite) {
		return fmt.Errorf("%w: the gateway granted %v; aborting a run needs %s (use a token that grants it, or approve the scope with `openclaw devices`)",
			ErrMissingScope, c.Scopes(), ScopeWrite)
	}
	if asAdmin && !c.HasScope(ScopeAdmin) {
		return fmt.Errorf("%w: the run was started by another client, and the gateway lets only its owner or an %s client abort it; it granted %v",
			ErrNotOwner, ScopeAdmin, c.Scopes())
	}
	if err := requireSession(ctx, c, key); err != nil {
		return err
	}
	var res abortResult
	if err := c.Call(ctx, "sessions.abort", map[string]any{"key": key}, &res); err != nil {
		// The owner check answers a bare "unauthorized" with no detail
		// code, so the message is all there is to go on.
		var ge *GatewayError
		if errors.As(err, &ge) && ge.Code == "INVALID_REQUEST" && ge.DetailCode == "" && ge.Message == "unauthorized" {
			return fmt.Errorf("%w: %w", ErrNotOwner, err)
		}
		return err
	}
	switch res.Status {
	case "aborted":
		return nil
	case "no-active-run":
		return ErrNoActiveRun
	}
	if res.OK {
		return nil
	}
	return fmt.Errorf("sessions.abort: gateway answered status %q", res.Status)
}

// EventKind says what a watch event reports.
type EventKind string

const (
	// EventConnected: the watch (re)connected and subscribed. Changes made
	// while it was away were not seen: re-list.
	EventConnected EventKind = "connected"
	// EventChanged: a session appeared or its state changed; Session holds
	// the gateway's row after the change.
	EventChanged EventKind = "changed"
	// EventDisconnected: the connection failed or ended; Err says why. The
	// watch retries by itself.
	EventDisconnected EventKind = "disconnected"
)

// Event is one change seen on the gateway.
type Event struct {
	Kind    EventKind
	Key     string
	Reason  string // the gateway's reason or lifecycle phase
	Session *adapters.NativeSession
	Time    time.Time
	Err     error
}

// changedPayload is the sessions.changed event.
type changedPayload struct {
	SessionKey string          `json:"sessionKey"`
	Reason     string          `json:"reason"`
	Phase      string          `json:"phase"`
	TS         *int64          `json:"ts"`
	Session    json.RawMessage `json:"session"`
}

const (
	watchBuffer     = 64
	connEventBuffer = 1024
	minBackoff      = 500 * time.Millisecond
	maxBackoff      = 30 * time.Second
)

// Watch follows the gateway's session events until ctx ends, then closes
// the channel. It reports a session when it first appears and whenever its
// state changes, so a run starting, finishing or being aborted arrives as
// it happens; reconnects with backoff when the gateway goes away. The error
// is only for what retrying cannot fix (an unusable device key).
func (a *Adapter) Watch(ctx context.Context) (<-chan Event, error) {
	if err := checkURL(a.cfg.url()); err != nil {
		return nil, err
	}
	if _, err := LoadOrCreateIdentity(a.cfg.IdentityPath); err != nil {
		return nil, err
	}
	out := make(chan Event, watchBuffer)
	go a.watch(ctx, out)
	return out, nil
}

func (a *Adapter) watch(ctx context.Context, out chan<- Event) {
	defer close(out)
	send := func(ev Event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	last := make(map[string]adapters.NativeState)
	backoff := minBackoff
	for ctx.Err() == nil {
		err := a.watchOnce(ctx, last, send, func() { backoff = minBackoff })
		if ctx.Err() != nil {
			return
		}
		if !send(Event{Kind: EventDisconnected, Err: err, Time: time.Now()}) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// watchOnce runs one connection: subscribe, then forward changes until the
// connection ends.
func (a *Adapter) watchOnce(ctx context.Context, last map[string]adapters.NativeState, send func(Event) bool, connected func()) error {
	dialCtx, cancel := a.withTimeout(ctx)
	c, err := Dial(dialCtx, a.cfg, []string{ScopeRead}, WithEvents(connEventBuffer))
	cancel()
	if err != nil {
		return err
	}
	defer c.Close()
	callCtx, cancel := a.withTimeout(ctx)
	err = c.Call(callCtx, "sessions.subscribe", map[string]any{}, nil)
	cancel()
	if err != nil {
		return err
	}
	connected()
	if !send(Event{Kind: EventConnected, Time: time.Now()}) {
		return ctx.Err()
	}
	source := a.cfg.url()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-c.Events():
			if !ok {
				return c.Err()
			}
			if ev.Name != "sessions.changed" {
				continue
			}
			var p changedPayload
			if err := json.Unmarshal(ev.Payload, &p); err != nil || p.SessionKey == "" || len(p.Session) == 0 {
				continue
			}
			ns, ok := decodeRow(p.Session, "", source)
			if !ok {
				continue
			}
			if prev, seen := last[ns.NativeID]; seen && prev == ns.State {
				continue
			}
			last[ns.NativeID] = ns.State
			reason := p.Reason
			if reason == "" {
				reason = p.Phase
			}
			t := msTime(p.TS)
			if t.IsZero() {
				t = time.Now()
			}
			if !send(Event{Kind: EventChanged, Key: ns.NativeID, Reason: reason, Session: &ns, Time: t}) {
				return ctx.Err()
			}
		}
	}
}

// WatchChanges implements adapters.ChangeWatcher over Watch.
func (a *Adapter) WatchChanges(ctx context.Context) (<-chan adapters.Change, error) {
	events, err := a.Watch(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan adapters.Change, watchBuffer)
	go func() {
		defer close(out)
		for ev := range events {
			var c adapters.Change
			switch ev.Kind {
			case EventChanged:
				if ev.Session == nil {
					continue
				}
				c.Session = ev.Session
			case EventDisconnected:
				c.Err = ev.Err
				if c.Err == nil {
					c.Err = errors.New("gateway connection closed")
				}
			default:
				continue
			}
			select {
			case out <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
