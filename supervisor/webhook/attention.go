package webhook

import (
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
)

// Hook types of the attention state.
const (
	HookSessionWaiting = api.EventSessionWaiting
	HookSessionResumed = api.EventSessionResumed
	HookSessionLimited = api.EventSessionLimited
)

// SessionAttention builds the payload for a session that began waiting for
// a person (hookType session.waiting: meta says why) or stopped waiting
// (session.resumed).
func SessionAttention(hookType string, s api.Session, now time.Time) Payload {
	p := Payload{
		HookType:  hookType,
		SessionID: s.ID,
		Cwd:       s.Cwd,
		Adapter:   s.Adapter,
		Status:    string(s.Status),
		Summary:   text.TruncateRunes(summaryOf(s), summaryLen),
		Meta:      map[string]any{},
		Timestamp: now.UTC().Format(time.RFC3339Nano),
	}
	if s.ActivitySince != nil {
		p.DurationSeconds = max(int64(now.Sub(*s.ActivitySince).Round(time.Second)/time.Second), 0)
	}
	for k, v := range s.Labels {
		p.Meta[k] = v
	}
	if s.Name != "" {
		p.Meta["name"] = s.Name
	}
	p.Meta["activity"] = s.Activity
	if s.ActivitySource != "" {
		p.Meta["source"] = s.ActivitySource
	}
	if hookType == HookSessionWaiting || hookType == HookSessionLimited {
		p.Meta["reason"] = s.WaitingFor
		if w := s.Waiting; w != nil {
			p.Meta["waiting"] = w.Summary()
			if w.Tool != "" {
				p.Meta["tool"], p.Meta["input"] = w.Tool, w.Input
			}
			if w.Text != "" {
				p.Meta["text"] = w.Text
			}
			if l := w.Limit; l != nil {
				p.Meta["provider"], p.Meta["window"] = l.Provider, l.Window
				if l.ResetsAt != nil {
					p.Meta["resets_at"] = l.ResetsAt.UTC().Format(time.RFC3339)
				}
			}
		}
	}
	return p
}
