package webhook

import (
	"strings"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
)

// Hook types, the payload's hook_type.
const (
	HookSessionStopped = "session.stopped"
	HookFuseExpired    = "fuse.expired"
)

// summaryLen is how much of the prompt (or command) the summary keeps, as
// in the tool agentctl replaces.
const summaryLen = 200

// Payload is the JSON body posted to the configured webhook_url. Its
// fields and their meaning are those of the tool agentctl replaces;
// status and signal are additions.
type Payload struct {
	HookType        string `json:"hook_type"`
	SessionID       string `json:"session_id"`
	Cwd             string `json:"cwd,omitempty"`
	Adapter         string `json:"adapter"`
	DurationSeconds int64  `json:"duration_seconds"`
	// ExitStatus is the exit code; 128+n for death by signal n (the shell's
	// convention); null when nobody knows (a session lost without an exit
	// record).
	ExitStatus *int           `json:"exit_status"`
	Status     string         `json:"status,omitempty"`
	Signal     string         `json:"signal,omitempty"`
	Summary    string         `json:"summary"`
	Meta       map[string]any `json:"meta"`
	Timestamp  string         `json:"timestamp"`
}

// SessionEnded builds the payload for a session that ended. Meta carries
// the session's labels (where callers keep receiver-specific keys) and its
// name, group and command.
func SessionEnded(s api.Session, now time.Time) Payload {
	p := Payload{
		HookType:  HookSessionStopped,
		SessionID: s.ID,
		Cwd:       s.Cwd,
		Adapter:   s.Adapter,
		Status:    string(s.Status),
		Signal:    s.Signal,
		Summary:   text.TruncateRunes(summaryOf(s), summaryLen),
		Meta:      map[string]any{},
		Timestamp: now.UTC().Format(time.RFC3339Nano),
	}
	end := now
	if s.EndedAt != nil {
		end = *s.EndedAt
	}
	start := s.CreatedAt
	if s.StartTime != nil {
		start = *s.StartTime
	}
	if !start.IsZero() {
		p.DurationSeconds = max(int64(end.Sub(start).Round(time.Second)/time.Second), 0)
	}
	if code, ok := s.ExitStatus(); ok {
		p.ExitStatus = &code
	}
	for k, v := range s.Labels {
		p.Meta[k] = v
	}
	if s.Name != "" {
		p.Meta["name"] = s.Name
	}
	if s.Group != "" {
		p.Meta["group"] = s.Group
	}
	if s.Model != "" {
		p.Meta["model"] = s.Model
	}
	if len(s.Command) > 0 {
		p.Meta["command"] = s.Command
	}
	return p
}

func summaryOf(s api.Session) string {
	if s.Prompt != "" {
		return s.Prompt
	}
	if s.Name != "" {
		return s.Name
	}
	return strings.Join(s.Command, " ")
}

// FuseExpiry describes an expired fuse for FuseExpired.
type FuseExpiry struct {
	Directory string
	SessionID string
	Label     string
	TTL       time.Duration
	ExpiredAt time.Time
}

// FuseExpired builds the payload posted to the configured webhook_url when
// a fuse expires, in the same shape as a session's.
func FuseExpired(f FuseExpiry) Payload {
	p := Payload{
		HookType:        HookFuseExpired,
		SessionID:       f.SessionID,
		Cwd:             f.Directory,
		DurationSeconds: int64(f.TTL / time.Second),
		Summary:         text.TruncateRunes(f.Label, summaryLen),
		Meta:            map[string]any{"directory": f.Directory},
		Timestamp:       f.ExpiredAt.UTC().Format(time.RFC3339Nano),
	}
	if f.Label != "" {
		p.Meta["label"] = f.Label
	}
	return p
}

// FusePayload is the body posted to a fuse's own --on-expire-webhook, in
// the shape of the tool agentctl replaces.
type FusePayload struct {
	Type      string `json:"type"`
	Directory string `json:"directory"`
	SessionID string `json:"sessionId,omitempty"`
	Label     string `json:"label,omitempty"`
	ExpiredAt string `json:"expiredAt"`
}

// FuseOwnPayload builds the body for a fuse's own webhook.
func FuseOwnPayload(f FuseExpiry) FusePayload {
	return FusePayload{Type: HookFuseExpired, Directory: f.Directory, SessionID: f.SessionID, Label: f.Label, ExpiredAt: f.ExpiredAt.UTC().Format(time.RFC3339Nano)}
}
