package claude

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/internal/text"
)

var (
	_ adapters.HookReader = (*Adapter)(nil)
)

// hookInput is the part of a Claude Code hook's JSON input agentctl reads.
type hookInput struct {
	Event            string          `json:"hook_event_name"`
	SessionID        string          `json:"session_id"`
	Cwd              string          `json:"cwd"`
	Tool             string          `json:"tool_name"`
	ToolInput        json.RawMessage `json:"tool_input"`
	ToolUseID        string          `json:"tool_use_id"`
	NotificationType string          `json:"notification_type"`
	Message          string          `json:"message"`
	Error            string          `json:"error"`
	ErrorType        string          `json:"error_type"`
}

// maxHookText bounds the text a hook's facts carry (a tool's input can be
// a whole file).
const maxHookText = 300

// ReadHook implements adapters.HookReader for Claude Code's hooks (those
// agentctl gives a launched session through --settings, and those
// `agentctl integrate claude` adds to ~/.claude/settings.json). event is
// the --event the hook was run with; the input's hook_event_name, when
// present, must agree with it.
func (a *Adapter) ReadHook(event string, payload []byte) (adapters.HookFacts, error) {
	return readHook(event, payload)
}

func readHook(event string, payload []byte) (adapters.HookFacts, error) {
	var h hookInput
	if t := bytes.TrimSpace(payload); len(t) == 0 || t[0] != '{' {
		return adapters.HookFacts{}, fmt.Errorf("claude hook input: not a JSON object")
	}
	if err := json.Unmarshal(payload, &h); err != nil {
		return adapters.HookFacts{}, fmt.Errorf("claude hook input: %w", err)
	}
	switch {
	case h.Event == "":
		h.Event = event
	case event != "" && event != h.Event:
		return adapters.HookFacts{}, fmt.Errorf("claude hook input: event %q, but the hook was run for %q", trunc(h.Event), trunc(event))
	}
	if h.Event == "" {
		return adapters.HookFacts{}, fmt.Errorf("claude hook input: no hook_event_name and no --event")
	}
	if h.SessionID != "" && !validID(h.SessionID) {
		return adapters.HookFacts{}, fmt.Errorf("claude hook input: session_id %q is not a Claude session id", trunc(h.SessionID))
	}
	if h.Cwd != "" && (!filepath.IsAbs(h.Cwd) || strings.ContainsRune(h.Cwd, 0)) {
		return adapters.HookFacts{}, fmt.Errorf("claude hook input: cwd %q is not an absolute path", trunc(h.Cwd))
	}
	f := adapters.HookFacts{Event: h.Event, NativeID: h.SessionID, Cwd: h.Cwd}
	switch h.Event {
	case "SessionStart":
		f.State = adapters.NativeIdle
	case "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionDenied":
		f.State = adapters.NativeBusy
	case "PermissionRequest":
		f.WaitingFor, f.Tool, f.Input = adapters.WaitingPermission, trunc(h.Tool), hookToolInput(h.ToolInput)
		// Claude waits for this hook's answer: agentctl can carry one.
		f.Request = h.ToolUseID
		if f.Request == "" {
			f.Request = h.Event
		}
	case "Notification":
		f.Text = trunc(h.Message)
		switch h.NotificationType {
		case "permission_prompt":
			f.WaitingFor = adapters.WaitingPermission
		case "idle_prompt":
			f.WaitingFor = adapters.WaitingInput
		case "elicitation_dialog":
			f.WaitingFor = "question"
		}
	case "Stop":
		f.State = adapters.NativeIdle
	case "StopFailure":
		// The turn ended on an error it cannot retry: a usage limit,
		// billing or authentication.
		f.State = adapters.NativeIdle
		f.Text = trunc(strings.TrimSpace(h.ErrorType + " " + h.Error))
		if strings.Contains(strings.ToLower(h.ErrorType+" "+h.Error), "rate") {
			f.WaitingFor = "limit"
		}
	case "SessionEnd":
		f.Ended = true
	}
	return f, nil
}

// hookToolInput is the short form of a tool's input a person reads: a
// command, a file, else the JSON.
func hookToolInput(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		for _, k := range []string{"command", "file_path", "path", "url", "pattern"} {
			if v, ok := m[k].(string); ok && v != "" {
				return trunc(v)
			}
		}
	}
	return trunc(string(raw))
}

func trunc(s string) string { return text.Truncate(s, maxHookText) }

// WaitsAtPrompt says whether event ends a turn (Stop, StopFailure) of a
// Claude Code running its TUI (argv without -p): a person's turn then,
// waiting for input, as a launched interactive session reads after its
// Stop hook.
func (a *Adapter) WaitsAtPrompt(event string, argv []string) bool {
	return (event == "Stop" || event == "StopFailure") && len(argv) > 0 && interactiveArgv(argv)
}

// IsAgentProcess says whether argv runs Claude Code: the service walks a
// hook's parents to the first such process, the agent the hook speaks for.
func (a *Adapter) IsAgentProcess(argv []string) bool { return claudeArgv(argv) }
