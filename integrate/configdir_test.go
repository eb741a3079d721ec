package integrate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each integration goes where its agent reads its user configuration,
// with the agent's own variables set in the user's environment (or not):
// install, status and remove all use that file, and nothing is written at
// the default place meanwhile.
func TestInstallWhereTheAgentReads(t *testing.T) {
	t.Parallel()
	tests := []struct {
		agent string
		// vars are the user's variables; "HOME" and "DIR" in a value are
		// the user's home and a scratch folder.
		vars map[string]string
		// want is the file's path, dflt the default one, under the same.
		want, dflt string
	}{
		{"claude", nil, "HOME/.claude/settings.json", ""},
		{"claude", map[string]string{"CLAUDE_CONFIG_DIR": "DIR/claude"}, "DIR/claude/settings.json", "HOME/.claude/settings.json"},
		{"opencode", nil, "HOME/.config/opencode/plugin/agentctl.js", ""},
		{"opencode", map[string]string{"XDG_CONFIG_HOME": "DIR/xdg"}, "DIR/xdg/opencode/plugin/agentctl.js", "HOME/.config/opencode/plugin/agentctl.js"},
		// OpenCode loads OPENCODE_CONFIG_DIR's plugins besides the user's
		// folder's, not instead: the plugin stays in the user's.
		{"opencode", map[string]string{"OPENCODE_CONFIG_DIR": "DIR/extra"}, "HOME/.config/opencode/plugin/agentctl.js", "DIR/extra/plugin/agentctl.js"},
		{"pi", nil, "HOME/.pi/agent/extensions/agentctl.js", ""},
		{"pi", map[string]string{"PI_CODING_AGENT_DIR": "DIR/pi"}, "DIR/pi/extensions/agentctl.js", "HOME/.pi/agent/extensions/agentctl.js"},
		// Pi reads a leading ~ of it as the home.
		{"pi", map[string]string{"PI_CODING_AGENT_DIR": "~/piagent"}, "HOME/piagent/extensions/agentctl.js", "HOME/.pi/agent/extensions/agentctl.js"},
	}
	for _, tt := range tests {
		name := tt.agent
		for k, v := range tt.vars {
			name += " " + k + "=" + v
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			env := testEnv(t, "/usr/bin/agentctl")
			dir := t.TempDir()
			at := func(p string) string {
				if p == "" {
					return ""
				}
				r := map[string]string{"HOME": env.UserHome, "DIR": dir}
				first, rest, _ := strings.Cut(p, "/")
				if v, ok := r[first]; ok {
					return filepath.Join(v, rest)
				}
				return p
			}
			env.Getenv = func(k string) string {
				v := tt.vars[k]
				if first, rest, _ := strings.Cut(v, "/"); first == "DIR" {
					return filepath.Join(dir, rest)
				}
				return v
			}
			want, dflt := at(tt.want), at(tt.dflt)
			in := Lookup(tt.agent)
			ch, err := in.Install(ctx, env)
			if err != nil {
				t.Fatal(err)
			}
			if len(ch.Files) != 1 || ch.Files[0] != want {
				t.Fatalf("installed in %q, want %s", ch.Files, want)
			}
			if _, err := os.Stat(want); err != nil {
				t.Fatal(err)
			}
			if dflt != "" {
				if _, err := os.Stat(dflt); !os.IsNotExist(err) {
					t.Errorf("%s: %v, want nothing there", dflt, err)
				}
			}
			st, err := in.Status(ctx, env)
			if err != nil || !st.Installed || len(st.Files) != 1 || st.Files[0] != want {
				t.Errorf("status %+v, %v; want installed in %s", st, err, want)
			}
			if _, err := in.Remove(ctx, env); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(want); !os.IsNotExist(err) {
				t.Errorf("%s after remove: %v, want it gone", want, err)
			}
		})
	}
}
