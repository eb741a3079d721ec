package integrate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/adapters/claude"
)

// Claude is Claude Code's integration: a hook for each event agentctl
// reads, in the user's settings (~/.claude/settings.json), which Claude
// merges with the project's and with the --settings of the sessions
// agentctl launches (whose hooks report; these stay quiet there).
type Claude struct{}

var _ Integration = Claude{}

// claudeEvents are the hooks installed, with the time limit (seconds)
// Claude gives each. A permission request waits for a person as long as
// config.json's integrate.permission_wait says (the hook itself keeps to
// it); the others return within milliseconds, and a hook binary that hangs
// is cut by Claude after a few seconds.
var claudeEvents = []struct {
	name    string
	timeout int
}{
	{"SessionStart", 5},
	{"UserPromptSubmit", 5},
	{"PreToolUse", 5},
	{"PostToolUse", 5},
	{"PermissionRequest", 86400},
	{"Notification", 5},
	{"Stop", 5},
	{"StopFailure", 5},
	{"SessionEnd", 5},
}

// Agent implements Integration.
func (Claude) Agent() string { return "claude" }

// claudeSettings is the user's settings file, in the folder Claude reads
// ($CLAUDE_CONFIG_DIR, else ~/.claude).
func claudeSettings(env Env) string {
	return filepath.Join(claude.ConfigDir(env.UserHome, env.getenv), "settings.json")
}

// Install implements Integration: merges agentctl's hooks into the user's
// settings, keeping their keys (in their order) and their own hooks.
func (c Claude) Install(ctx context.Context, env Env) (Change, error) {
	if len(env.Hook) == 0 {
		return Change{}, fmt.Errorf("install the claude integration: no hook command")
	}
	return EditFile(env, c.Agent(), claudeSettings(env), func(old []byte) ([]byte, error) {
		return addClaudeHooks(old, env)
	})
}

// Remove implements Integration.
func (c Claude) Remove(ctx context.Context, env Env) (Change, error) {
	return RestoreFile(env, c.Agent(), claudeSettings(env), removeClaudeHooks)
}

// Status implements Integration.
func (c Claude) Status(ctx context.Context, env Env) (State, error) {
	path := claudeSettings(env)
	b, existed, _, err := readConfig(path)
	if err != nil || !existed {
		return State{Files: []string{path}}, err
	}
	root, err := settingsObject(b)
	if err != nil {
		return State{Files: []string{path}}, fmt.Errorf("read %s: %w", path, err)
	}
	st := State{Files: []string{path}}
	found := map[string]string{}
	for _, cmd := range ourHooks(root) {
		found[cmd.event] = cmd.command
	}
	var missing []string
	for _, ev := range claudeEvents {
		if _, ok := found[ev.name]; !ok {
			missing = append(missing, ev.name)
		}
	}
	switch {
	case len(found) == 0:
	case len(missing) > 0:
		st.Installed = true
		st.Detail = "installed in part: no hook for " + strings.Join(missing, ", ") + " (agentctl integrate claude adds them)"
	default:
		st.Installed = true
		for _, cmd := range found {
			if exe := firstWord(cmd); exe != "" && filepath.IsAbs(exe) {
				if _, err := os.Stat(exe); err != nil {
					st.Detail = "installed, but the hook names " + exe + ", which no longer exists (agentctl integrate claude updates it)"
				}
			}
			break
		}
	}
	return st, nil
}

// settingsObject parses Claude's settings: a JSON object (an empty file is
// an empty one).
func settingsObject(b []byte) (*object, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return &object{}, nil
	}
	v, err := parseOrdered(b)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	o, ok := v.(*object)
	if !ok {
		return nil, fmt.Errorf("not a JSON object")
	}
	return o, nil
}

// isOurs says whether a hook command is agentctl's integration hook (of
// any agentctl binary: one that moved is replaced).
func isOurs(command string) bool {
	return strings.Contains(command, " hook ") && strings.Contains(command, " claude ") && strings.Contains(command, "--integration")
}

type ourHook struct{ event, command string }

// ourHooks lists agentctl's hook commands in root's "hooks".
func ourHooks(root *object) []ourHook {
	hv, _ := root.get("hooks")
	hooks, ok := hv.(*object)
	if !ok {
		return nil
	}
	var out []ourHook
	for _, m := range hooks.members {
		groups, _ := m.val.([]any)
		for _, g := range groups {
			for _, h := range hooksOf(g) {
				if cmd := commandOf(h); isOurs(cmd) {
					out = append(out, ourHook{m.key, cmd})
				}
			}
		}
	}
	return out
}

func hooksOf(group any) []any {
	g, ok := group.(*object)
	if !ok {
		return nil
	}
	hv, _ := g.get("hooks")
	hs, _ := hv.([]any)
	return hs
}

func commandOf(hook any) string {
	h, ok := hook.(*object)
	if !ok {
		return ""
	}
	c, _ := h.get("command")
	s, _ := c.(string)
	return s
}

// addClaudeHooks adds agentctl's hook for each event to old (Claude's
// settings), taking out agentctl's earlier ones; the same bytes when they
// are there already.
func addClaudeHooks(old []byte, env Env) ([]byte, error) {
	hooks := make([]hookEntry, 0, len(claudeEvents))
	for _, ev := range claudeEvents {
		hooks = append(hooks, hookEntry{ev.name, hookCommandLine(env, "claude", "--integration", "--event", ev.name), ev.timeout})
	}
	return addHooks(old, isOurs, hooks)
}

// hookEntry is one command hook agentctl installs for an event, in
// Claude's settings or Codex's hooks.json (the same shape).
type hookEntry struct {
	event, command string
	timeout        int
}

// addHooks adds hooks to old (a settings file with a "hooks" object),
// each in a group of its own after the user's, taking out the earlier ones
// ours says are agentctl's; the same bytes when they are there already.
func addHooks(old []byte, ours func(command string) bool, add []hookEntry) ([]byte, error) {
	root, err := settingsObject(old)
	if err != nil {
		return nil, err
	}
	cleaned := takeOutHooks(root, ours)
	hv, ok := root.get("hooks")
	hooks, isObj := hv.(*object)
	switch {
	case !ok:
		hooks = &object{}
		root.set("hooks", hooks)
	case !isObj:
		return nil, fmt.Errorf(`"hooks" is not a JSON object`)
	}
	for _, h := range add {
		groups, _ := hooks.get(h.event)
		list, ok := groups.([]any)
		if groups != nil && !ok {
			return nil, fmt.Errorf(`"hooks".%q is not a JSON array`, h.event)
		}
		hook := &object{members: []member{
			{"type", "command"},
			{"command", h.command},
			{"timeout", h.timeout},
		}}
		list = append(list, &object{members: []member{{"hooks", []any{hook}}}})
		hooks.set(h.event, list)
	}
	out, err := encodeOrdered(root, indentOf(old))
	if err != nil {
		return nil, err
	}
	if cleaned {
		// Ours were there: unchanged when they were the same.
		if again, err := settingsObject(old); err == nil {
			if prev, err := encodeOrdered(again, indentOf(old)); err == nil && bytes.Equal(prev, out) {
				return old, nil
			}
		}
	}
	return out, nil
}

// takeOutOurs removes agentctl's hooks from root, with the groups and
// event lists they leave empty; it reports whether it removed any.
func takeOutOurs(root *object) bool { return takeOutHooks(root, isOurs) }

// takeOutHooks removes the hooks whose command ours says is agentctl's
// from root's "hooks" (Claude's settings, Codex's hooks.json: the same
// shape), with the groups and event lists they leave empty; it reports
// whether it removed any.
func takeOutHooks(root *object, ours func(command string) bool) bool {
	hv, _ := root.get("hooks")
	hooks, ok := hv.(*object)
	if !ok {
		return false
	}
	removed := false
	for _, m := range append([]member(nil), hooks.members...) {
		groups, ok := m.val.([]any)
		if !ok {
			continue
		}
		var keep []any
		for _, g := range groups {
			hs := hooksOf(g)
			var left []any
			for _, h := range hs {
				if ours(commandOf(h)) {
					removed = true
					continue
				}
				left = append(left, h)
			}
			if len(left) == len(hs) {
				keep = append(keep, g)
				continue
			}
			if len(left) > 0 {
				g.(*object).set("hooks", left)
				keep = append(keep, g)
			}
		}
		if len(keep) == 0 && len(groups) > 0 {
			hooks.remove(m.key)
		} else if len(keep) != len(groups) {
			hooks.set(m.key, keep)
		}
	}
	if removed && len(hooks.members) == 0 {
		root.remove("hooks")
	}
	return removed
}

// removeClaudeHooks takes agentctl's hooks out of cur, leaving the rest.
func removeClaudeHooks(cur []byte) ([]byte, error) {
	root, err := settingsObject(cur)
	if err != nil {
		return nil, err
	}
	if !takeOutOurs(root) {
		return cur, nil
	}
	return encodeOrdered(root, indentOf(cur))
}

// firstWord is the program of a shell command line (unquoted).
func firstWord(cmd string) string {
	cmd = strings.TrimSpace(cmd)
	if strings.HasPrefix(cmd, "'") {
		if end := strings.Index(cmd[1:], "'"); end >= 0 {
			return cmd[1 : end+1]
		}
	}
	if i := strings.IndexByte(cmd, ' '); i >= 0 {
		return cmd[:i]
	}
	return cmd
}
