package api

import (
	"strings"
	"testing"
)

// Normalize is the launch contract: what it refuses, no service starts, and
// what it passes reaches every service in one form.
func TestRunRequestNormalize(t *testing.T) {
	t.Parallel()
	ok := func(edit func(*RunRequest)) RunRequest {
		r := RunRequest{Adapter: "claude", Prompt: "fix it", Cwd: "/src/app"}
		if edit != nil {
			edit(&r)
		}
		return r
	}
	tests := []struct {
		name    string
		req     RunRequest
		adapter string // the adapter once normalised, when it passes
		err     string // a part of the refusal; "" when it passes
	}{
		{"an agent", ok(nil), "claude", ""},
		{"a plain command", ok(func(r *RunRequest) { r.Adapter, r.Command = "", []string{"make"} }), ExecAdapter, ""},
		{"the old name of claude", ok(func(r *RunRequest) { r.Adapter = "claude-code" }), "claude", ""},
		{"every option of an agent", ok(func(r *RunRequest) {
			r.PermissionMode, r.AgentArgs, r.HookTimeout = "plan", []string{"--verbose"}, "30s"
			r.Name, r.Group, r.Labels, r.ResumeOf = "fixer", "g-abc123", map[string]string{"team": "core"}, "20260506-070809-abcd"
			r.EnvOverrides = []string{"A=1", "B="}
		}), "claude", ""},
		{"no working directory", ok(func(r *RunRequest) { r.Cwd = "" }), "", "must be an absolute path"},
		{"a relative working directory", ok(func(r *RunRequest) { r.Cwd = "src" }), "", "must be an absolute path"},
		{"an --env without =", ok(func(r *RunRequest) { r.EnvOverrides = []string{"A"} }), "", "want KEY=VALUE"},
		{"an --env without a key", ok(func(r *RunRequest) { r.EnvOverrides = []string{"=1"} }), "", "want KEY=VALUE"},
		{"a resume of a path", ok(func(r *RunRequest) { r.ResumeOf = "../x" }), "", "resume_of"},
		{"a restart of a path", ok(func(r *RunRequest) { r.RestartOf = "a/b" }), "", "restart_of"},
		{"a group with a slash", ok(func(r *RunRequest) { r.Group = "g/1" }), "", "group"},
		{"a group starting with a dot", ok(func(r *RunRequest) { r.Group = ".g" }), "", "group"},
		{"a name with an escape", ok(func(r *RunRequest) { r.Name = "a\x1b[2J" }), "", "no control characters"},
		{"a name too long", ok(func(r *RunRequest) { r.Name = strings.Repeat("n", 129) }), "", "at most 128"},
		{"a label key with =", ok(func(r *RunRequest) { r.Labels = map[string]string{"a=b": "c"} }), "", "label"},
		{"an empty label key", ok(func(r *RunRequest) { r.Labels = map[string]string{"": "c"} }), "", "label"},
		{"a label value with a newline", ok(func(r *RunRequest) { r.Labels = map[string]string{"a": "b\nc"} }), "", "label"},
		{"an unknown permission mode", ok(func(r *RunRequest) { r.PermissionMode = "yolo" }), "", "permission mode"},
		{"a permission mode for a command", ok(func(r *RunRequest) { r.Adapter, r.Command, r.PermissionMode = ExecAdapter, []string{"make"}, "plan" }), "", "are for agents"},
		{"agent arguments for a command", ok(func(r *RunRequest) { r.Adapter, r.Command, r.AgentArgs = "", []string{"make"}, []string{"-v"} }), "", "are for agents"},
		{"a command without its command", ok(func(r *RunRequest) { r.Adapter = ExecAdapter }), "", "no command given"},
		{"a hook timeout that is no duration", ok(func(r *RunRequest) { r.HookTimeout = "soon" }), "", "hook timeout"},
		{"a hook timeout of zero", ok(func(r *RunRequest) { r.HookTimeout = "0s" }), "", "hook timeout"},
		{"an on-limit action it does not know", ok(func(r *RunRequest) { r.OnLimit = "retry" }), "", "on-limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := tt.req
			err := req.Normalize()
			if tt.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if req.Adapter != tt.adapter {
					t.Fatalf("adapter %q, want %q", req.Adapter, tt.adapter)
				}
				return
			}
			if CodeOf(err) != CodeInvalid || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("got %v (code %q), want an invalid request saying %q", err, CodeOf(err), tt.err)
			}
		})
	}
}

// A request normalised once is left as it is by a second pass: the
// cluster and the machine's core may both see it.
func TestRunRequestNormalizeIsIdempotent(t *testing.T) {
	t.Parallel()
	req := RunRequest{Adapter: "claude-code", Cwd: "/w", Labels: map[string]string{"k": "v"}}
	if err := req.Normalize(); err != nil {
		t.Fatal(err)
	}
	once := req
	if err := req.Normalize(); err != nil || req.Adapter != once.Adapter || req.Cwd != once.Cwd {
		t.Fatalf("second pass: %+v, %v; first: %+v", req, err, once)
	}
}
