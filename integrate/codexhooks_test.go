package integrate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The hashes Codex 0.169 wrote into config.toml when its TUI was told to
// trust these hooks (each `/tmp/cxh/hook.sh EVENT`, timeout 5): agentctl
// computes the same, or Codex would ask the user again.
func TestCodexHookHash(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ event, label, hash string }{
		{"PreToolUse", "pre_tool_use", "sha256:61bfa93fc546efa75e534bc218af8b68e03cef644ba0750d26b725bcc290db3d"},
		{"PermissionRequest", "permission_request", "sha256:7fa71ae538633f36df1427acbe15c2961b69adcd54a327ae255e571c31f278f2"},
		{"PostToolUse", "post_tool_use", "sha256:7fbe539665978a735f6c7dd0458841667797d1673c8cac82bccdd2035ad7472b"},
		{"SessionStart", "session_start", "sha256:306a5cba837c3ad1fdf4f4028dee3b4f6769d82d197cf0e1099084887b275dbf"},
		{"UserPromptSubmit", "user_prompt_submit", "sha256:16cd467ebc5ec1870af8c53c980d61b88d6ee0ac7bf49bbcc329763c85d80ce6"},
		{"Stop", "stop", "sha256:c40f9261088ab3ba8a7464dd79fdf017165d1b7a2acbe3b11da383f2be62851f"},
	} {
		if got, ok := codexHookHash(tt.label, "/tmp/cxh/hook.sh "+tt.event, 5); !ok || got != tt.hash {
			t.Errorf("%s: %s %v, want %s", tt.event, got, ok, tt.hash)
		}
	}
	// What JSON encoders may write differently gets no hash: Codex asks.
	for _, cmd := range []string{"a\tb", "a\u2028b", "a\xffb"} {
		if h, ok := codexHookHash("stop", cmd, 5); ok {
			t.Errorf("%q hashed to %s", cmd, h)
		}
	}
}

// Codex's hooks.json and config.toml as a user has them: agentctl's hooks
// go after the user's own, each trusted in config.toml under the slot
// Codex names it by; a second install changes nothing; remove gives both
// files back byte for byte, and, once Codex rewrote config.toml, takes
// out only agentctl's notify and trust entries. CODEX_HOME is where they go.
func TestCodexHooksInstallRemove(t *testing.T) {
	t.Parallel()
	env := testEnv(t, "/usr/bin/agentctl")
	env.CodexPermissionWait = 90 * time.Second
	codexHome := filepath.Join(t.TempDir(), "codex home")
	env.Getenv = func(k string) string {
		if k == "CODEX_HOME" {
			return codexHome
		}
		return ""
	}
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	keyPath := codexKeyPath(env)
	userHooks := `{
    "description": "mine",
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "say done", "timeout": 3}]}],
        "PreToolUse": [{"matcher": "^Bash$", "hooks": [{"type": "command", "command": "audit"}]}]
    }
}
`
	userTrust := `[hooks.state."` + keyPath + `:stop:0:0"]` + "\ntrusted_hash = \"sha256:" + strings.Repeat("a", 64) + "\"\n"
	userConfig := "model = \"o4\"\n\n[hooks.state]\n\n" + userTrust
	cfg, hooksPath := filepath.Join(codexHome, "config.toml"), filepath.Join(codexHome, "hooks.json")
	for p, b := range map[string]string{cfg: userConfig, hooksPath: userHooks} {
		if err := os.WriteFile(p, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	ch, err := codex().Install(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Files) != 2 {
		t.Errorf("install wrote %q, want config.toml and hooks.json", ch.Files)
	}
	hooks, _ := os.ReadFile(hooksPath)
	var parsed struct {
		Description string
		Hooks       map[string][]struct {
			Matcher string
			Hooks   []struct {
				Type, Command string
				Timeout       int
			}
		}
	}
	if err := json.Unmarshal(hooks, &parsed); err != nil {
		t.Fatalf("hooks.json after install: %v\n%s", err, hooks)
	}
	if parsed.Description != "mine" || parsed.Hooks["Stop"][0].Hooks[0].Command != "say done" || parsed.Hooks["PreToolUse"][0].Matcher != "^Bash$" {
		t.Errorf("the user's hooks changed:\n%s", hooks)
	}
	config, _ := os.ReadFile(cfg)
	if !strings.HasPrefix(string(config), "notify = [\"/bin/sh\"") && !strings.Contains(string(config), "\nnotify = [\"/bin/sh\"") {
		t.Errorf("no notify entry:\n%s", config)
	}
	if !strings.Contains(string(config), userTrust) {
		t.Errorf("the user's trust entry changed:\n%s", config)
	}
	for _, ev := range codexHookEvents {
		groups := parsed.Hooks[ev.name]
		g := len(groups) - 1
		h := groups[g].Hooks[0]
		// Codex shows its own prompt once the permission hook is done: its
		// limit is the configured wait's more, the others' 2 s.
		limit := 2
		if ev.name == "PermissionRequest" {
			limit = 92
		}
		if h.Type != "command" || h.Command != "/usr/bin/agentctl hook --home '/some where' codex --integration --event "+ev.name || h.Timeout != limit {
			t.Errorf("%s: agentctl's hook %+v", ev.name, h)
		}
		hash, _ := codexHookHash(ev.label, h.Command, h.Timeout)
		want := "\n[hooks.state." + mustJSON(t, keyPath+":"+ev.label+":"+itoa(g)+":0") + "]\ntrusted_hash = \"" + hash + "\"\n"
		if !strings.Contains(string(config), want) {
			t.Errorf("%s: no trust entry %q in\n%s", ev.name, want, config)
		}
	}
	if ch, err := codex().Install(ctx, env); err != nil || len(ch.Files) != 0 {
		t.Errorf("a second install changed %v (%v)", ch.Files, err)
	}
	if st, err := codex().Status(ctx, env); err != nil || !st.Installed || !strings.Contains(st.Detail, "does not exist") {
		t.Errorf("status %+v (%v)", st, err)
	}
	// Take a hook out by hand: the status says which.
	installedHooks := hooks
	os.WriteFile(hooksPath, []byte(userHooks), 0o600)
	if st, _ := codex().Status(ctx, env); !st.Installed || !strings.Contains(st.Detail, "no hook for UserPromptSubmit, PermissionRequest, PostToolUse, Stop") {
		t.Errorf("status without the hooks: %+v", st)
	}
	os.WriteFile(hooksPath, installedHooks, 0o600)

	if _, err := codex().Remove(ctx, env); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{cfg: userConfig, hooksPath: userHooks} {
		if got, _ := os.ReadFile(p); string(got) != want {
			t.Errorf("%s after remove:\n%s\nwant byte for byte\n%s", p, got, want)
		}
	}

	// Codex rewrites config.toml (its own state) meanwhile.
	if _, err := codex().Install(ctx, env); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("\n[tui.model_availability_nux]\n\"gpt\" = 1\n")
	f.Close()
	if _, err := codex().Remove(ctx, env); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(cfg)
	if want := userConfig + "\n[tui.model_availability_nux]\n\"gpt\" = 1\n"; string(got) != want {
		t.Errorf("config.toml after remove:\n%s\nwant\n%s", got, want)
	}
	if got, _ := os.ReadFile(hooksPath); string(got) != userHooks {
		t.Errorf("hooks.json after remove:\n%s", got)
	}
}

func mustJSON(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func itoa(n int) string { return strconv.Itoa(n) }
