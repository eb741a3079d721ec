package codex

import (
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

// ReadHook reads one notification of Codex's notify program.
func (a *Adapter) ReadHook(event string, payload []byte) (adapters.HookFacts, error) {
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
