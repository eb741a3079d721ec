package spawn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
)

// Terminal is terminal.json: what the session's monitor saw on its
// terminal that says whether the program asks for a person.
type Terminal struct {
	// Notification is the last terminal notification, cleared or not.
	Notification *TermNotification `json:"notification,omitempty"`
	// Title is the last window title set (OSC 0 or 2).
	Title   string     `json:"title,omitempty"`
	TitleAt *time.Time `json:"title_at,omitempty"`
	// PrintedAt is when the program first printed text a person sees
	// (its first drawing), beyond escape sequences: a TUI's terminal
	// queries at start are not its prompt.
	PrintedAt *time.Time `json:"printed_at,omitempty"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// TermNotification is one notification seen in the output.
type TermNotification struct {
	Kind string    `json:"kind"` // NotifyOSC9, NotifyOSC777, NotifyOSC99, NotifyBell
	Text string    `json:"text,omitempty"`
	At   time.Time `json:"at"`
	// ClearedAt is when later output or input ended it, and ClearedBy
	// which ("output" or "input"); nil while it stands.
	ClearedAt *time.Time `json:"cleared_at,omitempty"`
	ClearedBy string     `json:"cleared_by,omitempty"`
}

// Pending reports whether the notification still stands.
func (n *TermNotification) Pending() bool { return n != nil && n.ClearedAt == nil }

// ReadTerminal reads a session folder's terminal.json; nil without error
// when the monitor saw nothing yet.
func ReadTerminal(dir string) (*Terminal, error) {
	b, err := os.ReadFile(filepath.Join(dir, home.TerminalFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", home.TerminalFile, err)
	}
	var t Terminal
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Join(dir, home.TerminalFile), err)
	}
	return &t, nil
}

// redrawSettle is how long output after a notification still counts as
// part of the same redraw rather than as the program moving on.
const redrawSettle = 250 * time.Millisecond

// titleFlush is how often a changing title is written at most (some
// programs animate theirs).
const titleFlush = time.Second

// terminalWatch follows the notifications and titles in a session's
// output, keeps terminal.json, and tells the service when a notification
// begins or ends.
type terminalWatch struct {
	dir    string
	id     string
	socket string
	logger *slog.Logger
	poke   chan struct{}

	mu      sync.Mutex
	scan    termScanner
	state   Terminal
	titleAt time.Time // when the title was last written
	timer   *time.Timer
}

func newTerminalWatch(dir, id string, logger *slog.Logger) *terminalWatch {
	w := &terminalWatch{
		dir: dir, id: id, logger: logger,
		socket: home.Home(filepath.Dir(filepath.Dir(dir))).Socket(),
		poke:   make(chan struct{}, 1),
	}
	return w
}

// output scans one chunk of the agent's output (from the read loop).
func (w *terminalWatch) output(chunk []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now().UTC()
	changed, title := false, false
	printed := w.scan.feed(chunk, func(ev termEvent) {
		switch ev.Kind {
		case termTitle:
			if ev.Text != w.state.Title {
				w.state.Title, w.state.TitleAt, title = ev.Text, &now, true
			}
		default:
			n := w.state.Notification
			if n.Pending() && n.Kind == ev.Kind && n.Text == ev.Text {
				return // the same, again (a bell rung twice)
			}
			w.state.Notification = &TermNotification{Kind: ev.Kind, Text: ev.Text, At: now}
			changed = true
		}
	})
	if !changed && printed {
		if n := w.state.Notification; n.Pending() && now.Sub(n.At) > redrawSettle {
			n.ClearedAt, n.ClearedBy = &now, "output"
			changed = true
		}
	}
	first := printed && w.state.PrintedAt == nil
	if first {
		w.state.PrintedAt = &now
	}
	switch {
	case first && !changed:
		w.writeLocked(now) // once: a send waits for it (the agent's first drawing)
	case changed:
		w.writeLocked(now)
		w.tell()
	case title:
		if now.Sub(w.titleAt) >= titleFlush {
			w.writeLocked(now)
		} else if w.timer == nil {
			w.timer = time.AfterFunc(titleFlush, func() {
				w.mu.Lock()
				defer w.mu.Unlock()
				w.timer = nil
				w.writeLocked(time.Now().UTC())
			})
		}
	}
}

// input notes that a person (or agentctl on their behalf) typed into the
// terminal: a standing notification is answered.
func (w *terminalWatch) input() {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.state.Notification
	if !n.Pending() {
		return
	}
	now := time.Now().UTC()
	n.ClearedAt, n.ClearedBy = &now, "input"
	w.writeLocked(now)
	w.tell()
}

func (w *terminalWatch) writeLocked(now time.Time) {
	w.state.UpdatedAt = now
	w.titleAt = now
	if err := atomicfile.WriteJSON(filepath.Join(w.dir, home.TerminalFile), w.state, 0o600); err != nil {
		w.logger.Warn("record terminal notification", "err", err)
	}
}

// tell asks the reporter to let the service know, without waiting.
func (w *terminalWatch) tell() {
	select {
	case w.poke <- struct{}{}:
	default:
	}
}

// report tells the service, each time something changed, that this
// session's terminal evidence did: it re-reads terminal.json and announces
// the change. A service that is down hears nothing; it reads the file when
// it next derives the session.
func (w *terminalWatch) report(ctx context.Context) {
	hc := &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", w.socket)
		}},
	}
	defer hc.CloseIdleConnections()
	body, _ := json.Marshal(api.AttentionReport{Source: api.SourceTerminal})
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.poke:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://agentctl/v1/sessions/"+w.id+"/attention", bytes.NewReader(body))
		if err != nil {
			continue
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			continue // no service: the file says it
		}
		resp.Body.Close()
	}
}

// stop ends a pending title write.
func (w *terminalWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}
