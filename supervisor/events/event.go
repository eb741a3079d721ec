// Package events carries what happens in the service to whoever listens:
// a broadcaster with per-subscriber bounded buffers, backed by a bounded
// on-disk journal with sequence numbers, so a consumer that reconnects with
// the last sequence number it saw misses nothing and sees nothing twice.
package events

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/api"
)

// Event types. The session.* names and the event's JSON shape are those of
// the tool agentctl replaces, so existing consumers keep working.
const (
	SessionStarted = "session.started"
	// SessionStopped: the session ended; its session object carries the
	// exit code or signal.
	SessionStopped = "session.stopped"
	SessionIdle    = "session.idle"
	SessionBusy    = "session.busy"
	// SessionLost: the session's process is gone and no exit record says how.
	SessionLost = "session.lost"

	LockAcquired = "lock.acquired"
	LockReleased = "lock.released"

	FuseSet       = "fuse.set"
	FuseExtended  = "fuse.extended"
	FuseCancelled = "fuse.cancelled"
	FuseExpired   = "fuse.expired"

	HookFailed = "hook.failed"
)

// Types lists every event type, in a stable order.
func Types() []string {
	return []string{
		SessionStarted, SessionStopped, SessionIdle, SessionBusy, SessionLost,
		LockAcquired, LockReleased,
		FuseSet, FuseExtended, FuseCancelled, FuseExpired,
		HookFailed,
	}
}

// Event is one thing that happened. Seq numbers events in the order they
// were published, without gaps, across service restarts.
type Event struct {
	Seq       uint64       `json:"seq"`
	Type      string       `json:"type"`
	Adapter   string       `json:"adapter,omitempty"`
	SessionID string       `json:"sessionId,omitempty"`
	Timestamp time.Time    `json:"timestamp"`
	Session   *api.Session `json:"session,omitempty"`
	// Meta holds what the type adds: a lock's directory and holder, a
	// fuse's deadline, a hook's exit code.
	Meta map[string]any `json:"meta,omitempty"`
}

// Filter selects event types: an exact type ("session.stopped"), a family
// ("lock" or "lock.*"). An empty filter selects everything.
type Filter []string

// ParseFilter checks each pattern against the known types, so a typo is an
// error rather than a silent empty stream.
func ParseFilter(patterns []string) (Filter, error) {
	types := Types()
	for _, p := range patterns {
		f := Filter{p}
		if !slices.ContainsFunc(types, f.Match) {
			return nil, fmt.Errorf("unknown event type %q (known: %s; a family such as \"lock.*\" selects all its types)", p, strings.Join(types, ", "))
		}
	}
	return Filter(patterns), nil
}

// Match reports whether typ is selected.
func (f Filter) Match(typ string) bool {
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

// Since says where a replay starts: after a sequence number, or at a time.
type Since struct {
	Seq  uint64
	Time time.Time
}

// ParseSince reads a --since value: a sequence number (events after it), a
// duration ("10m": events of the last ten minutes) or an RFC 3339 time.
func ParseSince(s string, now time.Time) (Since, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return Since{Seq: n}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return Since{}, fmt.Errorf("--since %q: a duration looks back and cannot be negative", s)
		}
		return Since{Time: now.Add(-d)}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return Since{Time: t}, nil
	}
	return Since{}, fmt.Errorf("--since %q: want a sequence number (42), a duration (10m) or an RFC 3339 time (2006-01-02T15:04:05Z)", s)
}
