package pi

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/internal/text"
)

var _ adapters.HookReader = (*Adapter)(nil)

// hookReport is what agentctl's Pi extension sends (integrate/pi.go): the
// event's type and, of the event, only what agentctl reads (a turn's
// messages stay in Pi), with the session's id and folder from the
// extension's context.
type hookReport struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	// HasUI says Pi runs its TUI (a person at its prompt), not -p.
	HasUI bool `json:"hasUI"`
	// tool_call's.
	ToolName   string          `json:"toolName"`
	ToolCallID string          `json:"toolCallId"`
	Input      json.RawMessage `json:"input"`
	// Ask says the extension waits for a decision before the tool runs.
	Ask bool `json:"ask"`
	// Sent is when the extension saw the event (ms since the epoch).
	Sent int64 `json:"sent"`
}

// ReadHook reads one report of agentctl's Pi extension: event is Pi's own
// name of the event.
func (a *Adapter) ReadHook(event string, payload []byte) (adapters.HookFacts, error) {
	var r hookReport
	if err := adapters.DecodeHookPayload(payload, &r); err != nil {
		return adapters.HookFacts{}, err
	}
	if r.Type != event {
		return adapters.HookFacts{}, fmt.Errorf("report of a %q event sent as %q", text.Ellipsis(r.Type, 60), text.Ellipsis(event, 60))
	}
	if _, err := uuid.Parse(r.SessionID); err != nil || len(r.SessionID) != 36 {
		return adapters.HookFacts{}, fmt.Errorf("%s report's session id %q is not a Pi session id", event, text.Ellipsis(r.SessionID, 60))
	}
	if !filepath.IsAbs(r.Cwd) || strings.ContainsRune(r.Cwd, 0) {
		return adapters.HookFacts{}, fmt.Errorf("%s report's cwd %q is not an absolute path", event, text.Ellipsis(r.Cwd, 200))
	}
	f := adapters.HookFacts{Event: event, NativeID: strings.ToLower(r.SessionID), Cwd: filepath.Clean(r.Cwd), Sent: adapters.SentAt(r.Sent)}
	switch event {
	case "session_start", "turn_end":
		// The session and its process, no state: reports run in parallel
		// and this one may arrive after the next event's.
	case "agent_start":
		f.State = adapters.NativeBusy
	case "agent_end":
		f.State = adapters.NativeIdle
		if r.HasUI {
			f.WaitingFor = adapters.WaitingInput
		}
	case "session_shutdown":
		f.Ended = true
	case "tool_call":
		if r.ToolName == "" || r.ToolCallID == "" {
			return adapters.HookFacts{}, errors.New("tool_call report without its tool or call id")
		}
		f.State = adapters.NativeBusy
		f.Tool = text.Truncate(r.ToolName, 200)
		f.Input = text.Truncate(toolInput(r.Input), adapters.MaxHookText)
		if r.Ask {
			f.WaitingFor = adapters.WaitingPermission
			f.Request = text.Truncate(r.ToolCallID, 200)
		}
	default:
		return adapters.HookFacts{}, fmt.Errorf("event %q is not one agentctl's Pi extension reports", text.Ellipsis(event, 60))
	}
	return f, nil
}

// toolInput is a tool call's input as a person reads it: bash's command,
// else the input's JSON.
func toolInput(raw json.RawMessage) string {
	var in struct {
		Command string `json:"command"`
	}
	if len(raw) > 0 && json.Unmarshal(raw, &in) == nil && in.Command != "" {
		return in.Command
	}
	return string(raw)
}
