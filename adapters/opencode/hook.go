package opencode

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/internal/text"
)

var _ adapters.HookReader = (*Adapter)(nil)

// hookReport is what agentctl's OpenCode plugin sends: the bus event as
// OpenCode gave it to the plugin, and the folder of the OpenCode instance
// (the plugin's input; OpenCode's events do not carry it).
type hookReport struct {
	Directory string    `json:"directory"`
	Event     *busEvent `json:"event"`
	// Sent is when the plugin saw the event (ms since the epoch).
	Sent int64 `json:"sent"`
}

type busEvent struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

// The events the plugin reports, as OpenCode 1.18 names them.
const (
	hookCreated           = "session.created"
	hookStatus            = "session.status"
	hookIdle              = "session.idle"
	hookError             = "session.error"
	hookPermissionAsked   = "permission.asked"
	hookPermissionReplied = "permission.replied"
	hookQuestionAsked     = "question.asked"
)

// ReadHook reads one report of agentctl's OpenCode plugin
// (integrate/opencode.go): event is the bus event's type.
func (a *Adapter) ReadHook(event string, payload []byte) (adapters.HookFacts, error) {
	var r hookReport
	if err := adapters.DecodeHookPayload(payload, &r); err != nil {
		return adapters.HookFacts{}, err
	}
	if r.Event == nil {
		return adapters.HookFacts{}, errors.New("report without its event")
	}
	if r.Event.Type != event {
		return adapters.HookFacts{}, fmt.Errorf("report of a %q event sent as %q", r.Event.Type, event)
	}
	if !filepath.IsAbs(r.Directory) || strings.ContainsRune(r.Directory, 0) {
		return adapters.HookFacts{}, fmt.Errorf("report's directory %q is not an absolute path", r.Directory)
	}
	f := adapters.HookFacts{Event: event, Cwd: filepath.Clean(r.Directory), Sent: adapters.SentAt(r.Sent)}
	var p struct {
		SessionID string `json:"sessionID"`
		ID        string `json:"id"`
		Status    *struct {
			Type string `json:"type"`
		} `json:"status"`
		Permission string          `json:"permission"`
		Patterns   []string        `json:"patterns"`
		Metadata   json.RawMessage `json:"metadata"`
		Questions  []struct {
			Question string `json:"question"`
		} `json:"questions"`
		Error *struct {
			Name string `json:"name"`
			Data *struct {
				Message string `json:"message"`
			} `json:"data"`
		} `json:"error"`
	}
	if len(r.Event.Properties) == 0 {
		return adapters.HookFacts{}, fmt.Errorf("%s event without properties", event)
	}
	if err := json.Unmarshal(r.Event.Properties, &p); err != nil {
		return adapters.HookFacts{}, fmt.Errorf("read %s event: %w", event, err)
	}
	if !sessionIDPattern().MatchString(p.SessionID) {
		return adapters.HookFacts{}, fmt.Errorf("%s event's session id %q is not an OpenCode session id", event, text.Ellipsis(p.SessionID, 60))
	}
	f.NativeID = p.SessionID
	switch event {
	case hookCreated:
		// The session and its process, no state: the plugin reports a
		// root session's creation (its first prompt) before its status.
	case hookStatus:
		if p.Status == nil {
			return adapters.HookFacts{}, errors.New("session.status event without its status")
		}
		switch p.Status.Type {
		case "busy", "retry":
			f.State = adapters.NativeBusy
		case "idle":
			f.State = adapters.NativeIdle
		default:
			return adapters.HookFacts{}, fmt.Errorf("session.status %q is not one OpenCode 1.18 sends", text.Ellipsis(p.Status.Type, 40))
		}
	case hookIdle:
		f.State = adapters.NativeIdle
	case hookPermissionAsked:
		if p.ID == "" || p.Permission == "" {
			return adapters.HookFacts{}, errors.New("permission.asked event without its request id or permission")
		}
		f.WaitingFor = adapters.WaitingPermission
		f.Tool = text.Truncate(p.Permission, adapters.MaxHookText)
		f.Input = text.Truncate(permissionInput(p.Patterns, p.Metadata), adapters.MaxHookText)
		// The plugin waits for the answer and gives it to OpenCode.
		f.Request = text.Truncate(p.ID, 200)
	case hookPermissionReplied:
		// Answered: the turn goes on (or stops, which session.status says).
		f.State = adapters.NativeBusy
	case hookQuestionAsked:
		f.WaitingFor = "question"
		var qs []string
		for _, q := range p.Questions {
			qs = append(qs, q.Question)
		}
		f.Text = text.Truncate(strings.Join(qs, "\n"), adapters.MaxHookText)
	case hookError:
		if p.Error != nil {
			msg := p.Error.Name
			if p.Error.Data != nil && p.Error.Data.Message != "" {
				msg += ": " + p.Error.Data.Message
			}
			f.Text = text.Truncate(msg, adapters.MaxHookText)
		}
	default:
		return adapters.HookFacts{}, fmt.Errorf("event %q is not one agentctl's OpenCode plugin reports", text.Ellipsis(event, 60))
	}
	return f, nil
}

// permissionInput is what a permission asks for: the command of a bash
// permission (its metadata), else the patterns it would allow.
func permissionInput(patterns []string, metadata json.RawMessage) string {
	var md struct {
		Command string `json:"command"`
	}
	if len(metadata) > 0 && json.Unmarshal(metadata, &md) == nil && md.Command != "" {
		return md.Command
	}
	return strings.Join(patterns, ", ")
}
