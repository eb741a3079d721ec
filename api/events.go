package api

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/text"
)

// Event types. The session.* names and the event's JSON shape are those of
// the tool agentctl replaces, so existing consumers keep working.
const (
	// EventSessionQueued: admission held a launch back and it was queued
	// (status queued); its session object says where and why. Its
	// session.started follows when it starts.
	EventSessionQueued  = "session.queued"
	EventSessionStarted = "session.started"
	// EventSessionStopped: the session ended; its session object carries the
	// exit code or signal.
	EventSessionStopped = "session.stopped"
	EventSessionIdle    = "session.idle"
	EventSessionBusy    = "session.busy"
	// EventSessionLost: the session's process is gone and no exit record says how.
	EventSessionLost = "session.lost"
	// EventSessionWaiting: a running session waits for a person; its
	// session object says for what (waiting_for, waiting).
	EventSessionWaiting = "session.waiting"
	// EventSessionResumed: a waiting session no longer waits.
	EventSessionResumed = "session.resumed"
	// EventSessionLimited: a usage limit of the agent's provider ended the
	// session's last turn (its Waiting.Limit says which, and until when):
	// the session.waiting of a limit, for a running session or one that
	// ended on it.
	EventSessionLimited = "session.limited"
	// EventSessionOOM: the kernel's OOM killer ended a process of the
	// session at its memory limit (after its session.stopped when that
	// ended it); meta holds the limit.
	EventSessionOOM = "session.oom"

	EventLockAcquired = "lock.acquired"
	EventLockReleased = "lock.released"

	EventFuseSet       = "fuse.set"
	EventFuseExtended  = "fuse.extended"
	EventFuseCancelled = "fuse.cancelled"
	EventFuseExpired   = "fuse.expired"

	EventHookFailed = "hook.failed"

	// EventGap is the line an event stream writes where events are missing
	// (rotated out of the journal before a slow or late reader got them);
	// its meta holds the missing sequence numbers, from and to.
	EventGap = "events.gap"
)

// HeaderEventsAfter, on an event stream's answer, is the sequence number
// the stream starts after: reconnect with it to miss nothing.
const HeaderEventsAfter = "X-Agentctl-Events-After"

// EventTypes lists every event type, in a stable order.
func EventTypes() []string {
	return []string{
		EventSessionQueued, EventSessionStarted, EventSessionStopped, EventSessionIdle, EventSessionBusy, EventSessionLost,
		EventSessionWaiting, EventSessionResumed, EventSessionLimited, EventSessionOOM,
		EventLockAcquired, EventLockReleased,
		EventFuseSet, EventFuseExtended, EventFuseCancelled, EventFuseExpired,
		EventHookFailed,
	}
}

// Event is one thing that happened. Seq numbers events in the order they
// were published, without gaps, across service restarts.
type Event struct {
	Seq uint64 `json:"seq"`
	// Host names the host the event comes from, in a stream merged over
	// several (set by the CLI, never by a service).
	Host      string    `json:"host,omitempty"`
	Type      string    `json:"type"`
	Adapter   string    `json:"adapter,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	Timestamp time.Time `json:"timestamp"`
	Session   *Session  `json:"session,omitempty"`
	// Meta holds what the type adds: a lock's directory and holder, a
	// fuse's deadline, a hook's exit code.
	Meta map[string]any `json:"meta,omitempty"`
}

// EventFilter selects event types: an exact type ("session.stopped"), a family
// ("lock" or "lock.*"). An empty filter selects everything.
type EventFilter []string

// ParseEventFilter checks each pattern against the known types, so a typo is an
// error rather than a silent empty stream.
func ParseEventFilter(patterns []string) (EventFilter, error) {
	types := EventTypes()
	for _, p := range patterns {
		f := EventFilter{p}
		if !slices.ContainsFunc(types, f.Match) {
			return nil, fmt.Errorf("unknown event type %s (known: %s; a family such as \"lock.*\" selects all its types)", text.Quote(p), strings.Join(types, ", "))
		}
	}
	return EventFilter(patterns), nil
}

// Match reports whether typ is selected.
func (f EventFilter) Match(typ string) bool {
	if len(f) == 0 {
		return true
	}
	for _, p := range f {
		family, wildcard := strings.CutSuffix(p, ".*")
		if !wildcard && strings.Contains(p, ".") {
			if typ == p {
				return true
			}
			continue
		}
		if strings.HasPrefix(typ, family+".") {
			return true
		}
	}
	return false
}

// EventsSince says where a replay starts: after a sequence number, or at a time.
type EventsSince struct {
	Seq  uint64
	Time time.Time
}

// ParseEventsSince reads a --since value: a sequence number (events after it), a
// duration ("10m": events of the last ten minutes) or an RFC 3339 time.
func ParseEventsSince(s string, now time.Time) (EventsSince, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return EventsSince{Seq: n}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return EventsSince{}, fmt.Errorf("--since %s: a duration looks back and cannot be negative", text.Quote(s))
		}
		return EventsSince{Time: now.Add(-d)}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return EventsSince{Time: t}, nil
	}
	return EventsSince{}, fmt.Errorf("--since %s: want a sequence number (42), a duration (10m) or an RFC 3339 time (2006-01-02T15:04:05Z)", text.Quote(s))
}
