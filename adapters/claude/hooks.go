package claude

import (
	"encoding/json"
	"strings"
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
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	command := strings.Join(quoted, " ")
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

// shellQuote quotes s for /bin/sh, which runs Claude's hook commands.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
