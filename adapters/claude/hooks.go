package claude

import (
	"encoding/json"

	"github.com/agentctl/agentctl/internal/text"
)

// hookEvents are the Claude Code hook events agentctl listens to, and the
// time limit (seconds) Claude gives each: a permission request waits for a
// person, so it may wait long; Claude shows its own dialog meanwhile, and a
// person who answers there moves the session on.
var hookEvents = []struct {
	name    string
	timeout int
}{
	{"PermissionRequest", 86400},
	{"Notification", 10},
	{"Stop", 10},
	{"UserPromptSubmit", 10},
	{"PreToolUse", 10},
	{"PostToolUse", 10},
	{"PostToolUseFailure", 10},
}

// hookSettings is the JSON given to --settings: each event runs
// `agentctl hook ... claude`. Claude merges the hooks of every settings
// source, so the user's own hooks (in ~/.claude/settings.json and the
// project's) run as before, next to these.
func hookSettings(hookCommand []string, interactive bool) (string, error) {
	argv := append([]string(nil), hookCommand...)
	if interactive {
		argv = append(argv, "--interactive")
	}
	argv = append(argv, Binary)
	command := text.ShellLine(argv)
	type hook struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	type matcher struct {
		Hooks []hook `json:"hooks"`
	}
	hooks := map[string][]matcher{}
	for _, ev := range hookEvents {
		hooks[ev.name] = []matcher{{Hooks: []hook{{Type: "command", Command: command + " --event " + ev.name, Timeout: ev.timeout}}}}
	}
	b, err := json.Marshal(map[string]any{"hooks": hooks})
	return string(b), err
}
