package integrate

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A user's settings with their own hooks, keys in an order of their own,
// odd spacing and numbers as they wrote them.
const userSettings = `{
    "model":   "opus",
    "permissions": {"allow": ["Bash(npm test)"], "deny": []},
    "hooks": {
        "Stop": [ { "hooks": [ { "type": "command", "command": "notify-send done", "timeout": 1.50 } ] } ],
        "PreToolUse": [ { "matcher": "Bash", "hooks": [ { "type": "command", "command": "~/bin/guard" } ] } ]
    },
    "cleanupPeriodDays": 30
}
`

func writeSettings(t *testing.T, env Env, content string) string {
	t.Helper()
	path := claudeSettings(env)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	return path
}

// settings decodes path as Claude reads it.
func settings(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s is not JSON any more: %v\n%s", path, err, b)
	}
	return m
}

// commands lists the hook commands of event.
func commands(m map[string]any, event string) []string {
	var out []string
	hooks, _ := m["hooks"].(map[string]any)
	groups, _ := hooks[event].([]any)
	for _, g := range groups {
		hs, _ := g.(map[string]any)["hooks"].([]any)
		for _, h := range hs {
			c, _ := h.(map[string]any)["command"].(string)
			out = append(out, c)
		}
	}
	return out
}

// Install merges agentctl's hooks with the user's: their keys, values and
// hooks stay, every event gets one agentctl hook; a second install changes
// nothing; --remove gives the file back byte for byte.
func TestClaudeInstallKeepsTheUsersSettingsAndRemoveRestoresThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := testEnv(t, "/opt/agent ctl/agentctl")
	path := writeSettings(t, env, userSettings)
	ch, err := Claude{}.Install(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Files) != 1 || len(ch.Backups) != 1 {
		t.Fatalf("install: %+v", ch)
	}
	m := settings(t, path)
	if m["model"] != "opus" || m["cleanupPeriodDays"] != float64(30) || m["permissions"] == nil {
		t.Errorf("the user's keys: %v", m)
	}
	want := "'/opt/agent ctl/agentctl' hook --home '/some where' claude --integration --event "
	for _, ev := range claudeEvents {
		cmds := commands(m, ev.name)
		n := 0
		for _, c := range cmds {
			if c == want+ev.name {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: hooks %q, want one %q", ev.name, cmds, want+ev.name)
		}
	}
	if c := commands(m, "Stop"); c[0] != "notify-send done" {
		t.Errorf("the user's Stop hook: %q", c)
	}
	if c := commands(m, "PreToolUse"); c[0] != "~/bin/guard" {
		t.Errorf("the user's PreToolUse hook: %q", c)
	}
	b, _ := os.ReadFile(path)
	if strings.Index(string(b), `"model"`) > strings.Index(string(b), `"permissions"`) || !strings.Contains(string(b), "1.50") || !strings.HasPrefix(string(b), "{\n    \"model\"") {
		t.Errorf("the user's order, numbers or indent changed:\n%s", b)
	}
	st, err := Claude{}.Status(ctx, env)
	if err != nil || !st.Installed || st.Detail == "" || !strings.Contains(st.Detail, "no longer exists") {
		t.Errorf("status: %+v %v (the hook's binary does not exist)", st, err)
	}

	if ch, err := (Claude{}).Install(ctx, env); err != nil || len(ch.Files) != 0 {
		t.Errorf("a second install: %+v %v, want no change", ch, err)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, b) {
		t.Errorf("a second install changed the file:\n%s", again)
	}

	ch, err = Claude{}.Remove(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if string(after) != userSettings {
		t.Errorf("after --remove:\n%s\nwant the file as it was:\n%s", after, userSettings)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the file's own 0640", fi.Mode().Perm())
	}
	if st, _ := (Claude{}).Status(ctx, env); st.Installed {
		t.Errorf("status after remove: %+v", st)
	}
}

// A file changed since agentctl wrote it keeps the change: --remove takes
// out only agentctl's hooks.
func TestClaudeRemoveAfterTheUserChangedTheFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := testEnv(t, "/opt/agent ctl/agentctl")
	path := writeSettings(t, env, userSettings)
	if _, err := (Claude{}).Install(ctx, env); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	changed := strings.Replace(string(b), `"opus"`, `"sonnet"`, 1)
	if err := os.WriteFile(path, []byte(changed), 0o640); err != nil {
		t.Fatal(err)
	}
	ch, err := Claude{}.Remove(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Notes) == 0 || !strings.Contains(ch.Notes[0], "only agentctl's entry") {
		t.Errorf("notes %q", ch.Notes)
	}
	m := settings(t, path)
	if m["model"] != "sonnet" {
		t.Errorf("the user's change was lost: %v", m["model"])
	}
	for _, ev := range claudeEvents {
		for _, c := range commands(m, ev.name) {
			if strings.Contains(c, "--integration") {
				t.Errorf("%s: agentctl's hook left: %q", ev.name, c)
			}
		}
	}
	if c := commands(m, "Stop"); len(c) != 1 || c[0] != "notify-send done" {
		t.Errorf("the user's Stop hook: %q", c)
	}
	if _, ok := m["hooks"].(map[string]any)["SessionStart"]; ok {
		t.Errorf("an event list agentctl added and emptied is left: %v", m["hooks"])
	}
}

// Without settings, install creates them and remove takes them away; a
// file that is not a JSON object is left alone with an error.
func TestClaudeInstallWithoutSettingsAndOnBrokenOnes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := testEnv(t, "/opt/agent ctl/agentctl")
	if _, err := (Claude{}).Install(ctx, env); err != nil {
		t.Fatal(err)
	}
	path := claudeSettings(env)
	if len(commands(settings(t, path), "PermissionRequest")) != 1 {
		t.Fatal("no PermissionRequest hook in the new settings")
	}
	if _, err := (Claude{}).Remove(ctx, env); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the settings agentctl created are still there: %v", err)
	}

	broken := `{"model": "opus",` // cut short
	writeSettings(t, env, broken)
	if _, err := (Claude{}).Install(ctx, env); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("install into broken settings: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != broken {
		t.Errorf("the broken settings were changed: %s", b)
	}
}

// The registry holds Claude's integration.
func TestRegistry(t *testing.T) {
	t.Parallel()
	if Lookup("claude") == nil || Lookup("nope") != nil {
		t.Errorf("Lookup: claude %v, nope %v", Lookup("claude"), Lookup("nope"))
	}
}
