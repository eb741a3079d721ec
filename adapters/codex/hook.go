package codex

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

// HookTurnComplete is the one notification Codex's notify program gets:
// the end of a turn.
const HookTurnComplete = "agent-turn-complete"

// titleTurnPrompt opens the prompt of the turn Codex 0.169's TUI runs, in a
// thread of its own, to name a new thread; its end is notified like a
// session's turn.
const titleTurnPrompt = "Generate a concise, single-line task title"

// notifyReport is the JSON Codex gives its notify program (the last
// argument), which agentctl's entry passes on as it is.
type notifyReport struct {
	Type                 string   `json:"type"`
	ThreadID             string   `json:"thread-id"`
	TurnID               string   `json:"turn-id"`
	Cwd                  string   `json:"cwd"`
	Client               string   `json:"client"`
	InputMessages        []string `json:"input-messages"`
	LastAssistantMessage *string  `json:"last-assistant-message"`
}

// Hook events: those of Codex's own hooks engine (hooks.json) agentctl
// reads (`agentctl integrate codex` installs all but SessionStart, which
// the daemon runs with the first prompt). Codex 0.169 runs them, like its
// notify program, from the store's shared app-server daemon (or from the
// TUI itself under --no-daemon), with a JSON object on stdin.
const (
	HookSessionStart      = "SessionStart"
	HookUserPromptSubmit  = "UserPromptSubmit"
	HookPermissionRequest = "PermissionRequest"
	HookPostToolUse       = "PostToolUse"
	HookStop              = "Stop"
)

// hookInput is the part of a Codex hook's JSON input agentctl reads.
type hookInput struct {
	Event     string          `json:"hook_event_name"`
	SessionID string          `json:"session_id"`
	TurnID    string          `json:"turn_id"`
	Cwd       string          `json:"cwd"`
	Prompt    string          `json:"prompt"`
	Tool      string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	LastText  *string         `json:"last_assistant_message"`
}

// maxHookInput bounds the tool input a report carries (a whole patch may
// be one).
const maxHookInput = 300

// ReadHook reads one report of agentctl's integration: a notification of
// Codex's notify program (event agent-turn-complete), or the input of one
// of Codex's hooks.
func (a *Adapter) ReadHook(event string, payload []byte) (adapters.HookFacts, error) {
	if event != HookTurnComplete {
		return readCodexHook(event, payload)
	}
	var r notifyReport
	if err := adapters.DecodeHookPayload(payload, &r); err != nil {
		return adapters.HookFacts{}, err
	}
	if r.Type != event {
		return adapters.HookFacts{}, fmt.Errorf("notification of type %q sent as %q", text.Ellipsis(r.Type, 60), text.Ellipsis(event, 60))
	}
	if event != HookTurnComplete {
		return adapters.HookFacts{}, fmt.Errorf("notification %q is not one Codex 0.169 sends", text.Ellipsis(event, 60))
	}
	if !uuidOnly().MatchString(r.ThreadID) {
		return adapters.HookFacts{}, fmt.Errorf("notification's thread id %q is not a Codex thread id", text.Ellipsis(r.ThreadID, 60))
	}
	if len(r.InputMessages) == 1 && strings.HasPrefix(r.InputMessages[0], titleTurnPrompt) {
		return adapters.HookFacts{}, errors.New("a turn of Codex's own title generation (a thread of its own), not of a session")
	}
	if !filepath.IsAbs(r.Cwd) || strings.ContainsRune(r.Cwd, 0) {
		return adapters.HookFacts{}, fmt.Errorf("notification's cwd %q is not an absolute path", text.Ellipsis(r.Cwd, 200))
	}
	f := adapters.HookFacts{
		Event:    event,
		NativeID: strings.ToLower(r.ThreadID),
		Cwd:      filepath.Clean(r.Cwd),
		State:    adapters.NativeIdle,
	}
	if r.LastAssistantMessage != nil {
		f.Text = text.Truncate(*r.LastAssistantMessage, adapters.MaxHookText)
	}
	// The end of a turn of the TUI: it waits at its prompt. `codex exec`
	// exits instead.
	if !strings.Contains(r.Client, "exec") {
		f.WaitingFor = adapters.WaitingInput
	}
	return f, nil
}

// readCodexHook reads the input of one of Codex's hooks, run for event.
func readCodexHook(event string, payload []byte) (adapters.HookFacts, error) {
	var h hookInput
	if err := adapters.DecodeHookPayload(payload, &h); err != nil {
		return adapters.HookFacts{}, err
	}
	switch event {
	case HookSessionStart, HookUserPromptSubmit, HookPostToolUse, HookPermissionRequest, HookStop:
	default:
		return adapters.HookFacts{}, fmt.Errorf("hook event %q is not one agentctl reads for Codex", text.Ellipsis(event, 60))
	}
	if h.Event != event {
		return adapters.HookFacts{}, fmt.Errorf("hook input of event %q sent as %q", text.Ellipsis(h.Event, 60), text.Ellipsis(event, 60))
	}
	if !uuidOnly().MatchString(h.SessionID) {
		return adapters.HookFacts{}, fmt.Errorf("hook input's session id %q is not a Codex thread id", text.Ellipsis(h.SessionID, 60))
	}
	if !filepath.IsAbs(h.Cwd) || strings.ContainsRune(h.Cwd, 0) {
		return adapters.HookFacts{}, fmt.Errorf("hook input's cwd %q is not an absolute path", text.Ellipsis(h.Cwd, 200))
	}
	f := adapters.HookFacts{Event: event, NativeID: strings.ToLower(h.SessionID), Cwd: filepath.Clean(h.Cwd)}
	switch event {
	case HookSessionStart:
		f.State = adapters.NativeIdle
	case HookUserPromptSubmit:
		if strings.HasPrefix(h.Prompt, titleTurnPrompt) {
			return adapters.HookFacts{}, errors.New("a turn of Codex's own title generation (a thread of its own), not of a session")
		}
		f.State = adapters.NativeBusy
	case HookPostToolUse:
		f.State = adapters.NativeBusy
	case HookPermissionRequest:
		if h.Tool == "" {
			return adapters.HookFacts{}, errors.New("a permission request without its tool")
		}
		f.WaitingFor, f.Tool, f.Input = adapters.WaitingPermission, text.Truncate(h.Tool, maxHookInput), toolInput(h.ToolInput)
		// Codex waits for this hook's decision: agentctl can carry one.
		// One request at a time per turn: the turn names it.
		f.Request = h.TurnID
		if f.Request == "" {
			f.Request = event
		}
	case HookStop:
		f.State = adapters.NativeIdle
		if h.LastText != nil {
			f.Text = text.Truncate(*h.LastText, adapters.MaxHookText)
		}
		// The end of a turn: the TUI waits at its prompt.
		f.WaitingFor = adapters.WaitingInput
	}
	return f, nil
}

// toolInput is the short form of a tool's input a person reads: its
// command, else its JSON.
func toolInput(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var in struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(raw, &in) == nil && in.Command != "" {
		return text.Truncate(in.Command, maxHookInput)
	}
	return text.Truncate(string(raw), maxHookInput)
}
