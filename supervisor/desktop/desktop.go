// Package desktop tells the person at a graphical session that an agent
// waits for them: freedesktop notifications over the D-Bus session bus,
// sent only after a session has waited a while, so a quick answer does
// not ping, and withdrawn when it no longer waits.
package desktop

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
)

// The freedesktop notification service.
const (
	dest  = "org.freedesktop.Notifications"
	path  = "/org/freedesktop/Notifications"
	iface = "org.freedesktop.Notifications"
)

// Note is what to show for one waiting session.
type Note struct {
	SessionID string
	Summary   string
	Body      string
}

// Notifier schedules and sends the notifications. The zero value is not
// usable; Open makes one.
type Notifier struct {
	conn  *dbus.Conn
	after time.Duration
	log   *slog.Logger

	mu      sync.Mutex
	timers  map[string]*time.Timer
	shown   map[string]uint32 // notification ids by session
	closed  bool
	pending sync.WaitGroup
}

// Open connects to the session bus at address (the service's
// DBUS_SESSION_BUS_ADDRESS when empty). Without a session bus there is no
// one to tell: the error says so, and the caller goes on without.
func Open(address string, after time.Duration, log *slog.Logger) (*Notifier, error) {
	var conn *dbus.Conn
	var err error
	if address == "" {
		conn, err = dbus.ConnectSessionBus()
	} else {
		conn, err = dbus.Connect(address)
	}
	if err != nil {
		return nil, fmt.Errorf("connect to the D-Bus session bus: %w", err)
	}
	return &Notifier{conn: conn, after: after, log: log, timers: map[string]*time.Timer{}, shown: map[string]uint32{}}, nil
}

// Waiting schedules a notification for a session that began waiting; it
// is sent once the session has waited the configured time, unless
// Resumed comes first. A new wait of the same session replaces the old.
func (n *Notifier) Waiting(note Note) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	if t := n.timers[note.SessionID]; t != nil {
		t.Stop()
	}
	n.pending.Add(1)
	var t *time.Timer
	t = time.AfterFunc(n.after, func() {
		defer n.pending.Done()
		n.mu.Lock()
		if n.timers[note.SessionID] != t || n.closed {
			n.mu.Unlock()
			return
		}
		delete(n.timers, note.SessionID)
		replaces := n.shown[note.SessionID]
		n.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		id, err := n.send(ctx, replaces, note)
		if err != nil {
			n.log.Warn("desktop notification not sent", "session", note.SessionID, "err", err)
			return
		}
		n.mu.Lock()
		n.shown[note.SessionID] = id
		n.mu.Unlock()
	})
	n.timers[note.SessionID] = t
}

// Resumed cancels a scheduled notification and withdraws a shown one.
func (n *Notifier) Resumed(sessionID string) {
	n.mu.Lock()
	if t := n.timers[sessionID]; t != nil {
		if t.Stop() {
			n.pending.Done()
		}
		delete(n.timers, sessionID)
	}
	id, shown := n.shown[sessionID]
	delete(n.shown, sessionID)
	n.mu.Unlock()
	if shown {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if call := n.conn.Object(dest, path).CallWithContext(ctx, iface+".CloseNotification", 0, id); call.Err != nil {
			n.log.Debug("withdraw desktop notification", "session", sessionID, "err", call.Err)
		}
	}
}

func (n *Notifier) send(ctx context.Context, replaces uint32, note Note) (uint32, error) {
	hints := map[string]dbus.Variant{
		"urgency":       dbus.MakeVariant(byte(1)),
		"category":      dbus.MakeVariant("im.received"),
		"desktop-entry": dbus.MakeVariant("agentctl"),
	}
	call := n.conn.Object(dest, path).CallWithContext(ctx, iface+".Notify", 0,
		"agentctl", replaces, "dialog-question", note.Summary, note.Body, []string{}, hints, int32(-1))
	if call.Err != nil {
		return 0, fmt.Errorf("notify: %w", call.Err)
	}
	var id uint32
	if err := call.Store(&id); err != nil {
		return 0, fmt.Errorf("notify: %w", err)
	}
	return id, nil
}

// Close stops every scheduled notification and leaves the bus.
func (n *Notifier) Close() error {
	n.mu.Lock()
	n.closed = true
	for id, t := range n.timers {
		if t.Stop() {
			n.pending.Done()
		}
		delete(n.timers, id)
	}
	n.mu.Unlock()
	n.pending.Wait()
	return n.conn.Close()
}
