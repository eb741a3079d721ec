package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

// agentCase is one real agent CLI the shared end-to-end tests run over:
// how to make an installation whose agent reaches the fake model, and what
// truly differs between agents.
type agentCase struct {
	name string
	// install is what its install hint names.
	install string
	// wrapped is a prompt that goes through the prompt-file wrapper.
	wrapped string
	// start makes the installation and returns it with its launch.
	start func(t *testing.T) (*Env, func(prompt string) api.Session)
	// modelError is the prompt that makes the fake model fail, the exit
	// code the agent then ends with (0: any non-zero), and how long it may
	// take (some agents retry).
	modelError     string
	modelErrorCode int
	modelErrorWait time.Duration
}

var agentCases = []agentCase{
	{
		name: "claude", install: "@anthropic-ai/claude-code", wrapped: "-" + strings.Repeat("x", 120_000),
		start: func(t *testing.T) (*Env, func(string) api.Session) {
			c := newClaudeEnv(t)
			c.Setenv("CLAUDE_CODE_MAX_RETRIES", "0")
			return c.Env, func(p string) api.Session { return c.launch(p) }
		},
		modelError: "fail [[error: 500]]", modelErrorCode: 1, modelErrorWait: 120 * time.Second,
	},
	{
		name: "codex", install: "@openai/codex", wrapped: "-" + strings.Repeat("x", 120_000),
		start: func(t *testing.T) (*Env, func(string) api.Session) {
			c := newCodexEnv(t)
			return c.Env, c.launch
		},
		modelError: "fail [[error: 400]]", modelErrorWait: 120 * time.Second,
	},
	{
		name: "opencode", install: "opencode-ai", wrapped: "fix bug 42",
		start: func(t *testing.T) (*Env, func(string) api.Session) {
			o := newOpencodeEnv(t)
			return o.Env, o.launch
		},
		modelError: "fail [[error: 400]]", modelErrorWait: 240 * time.Second,
	},
	{
		name: "pi", install: "@mariozechner/pi-coding-agent", wrapped: "-starts with a dash",
		start: func(t *testing.T) (*Env, func(string) api.Session) {
			p := newPiEnv(t)
			return p.Env, func(prompt string) api.Session { return p.launch(prompt) }
		},
		modelError: "fail [[error: 400]]", modelErrorWait: 90 * time.Second,
	},
}

// Without the agent on PATH, launch fails at once naming the binary and
// how to install it, for a small prompt and for one that would go through
// the prompt-file wrapper.
func TestAgentMissingBinary(t *testing.T) {
	t.Parallel()
	for _, ac := range agentCases {
		t.Run(ac.name, func(t *testing.T) {
			t.Parallel()
			e := NewEnv(t)
			e.Setenv("PATH", "/usr/bin:/bin")
			proj := t.TempDir()
			for _, prompt := range []string{"say hi", ac.wrapped} {
				start := time.Now()
				_, errOut, code := e.Run("launch", ac.name, "--cwd", proj, "-p", prompt)
				if code == 0 {
					t.Fatalf("launch without %s succeeded", ac.name)
				}
				if !strings.Contains(errOut, ac.name+" is not installed") || !strings.Contains(errOut, ac.install) {
					t.Errorf("launch error does not name %s and its install: %q", ac.name, errOut)
				}
				if d := time.Since(start); d > 20*time.Second {
					t.Errorf("launch took %s to fail", d)
				}
			}
			if n := len(e.Launched("-a")); n != 0 {
				t.Errorf("failed launches left %d sessions", n)
			}
		})
	}
}

// A model error ends the session with the agent's own non-zero exit code,
// and status shows it.
func TestAgentModelError(t *testing.T) {
	t.Parallel()
	for _, ac := range agentCases {
		t.Run(ac.name, func(t *testing.T) {
			t.Parallel()
			e, launch := ac.start(t)
			s := launch(ac.modelError)
			done := e.WaitStatus(s.ID, api.StatusExited, ac.modelErrorWait)
			switch {
			case done.ExitCode == nil || *done.ExitCode == 0:
				t.Fatalf("model error ended %+v, want a non-zero exit code", done)
			case ac.modelErrorCode != 0 && *done.ExitCode != ac.modelErrorCode:
				t.Fatalf("model error ended with %d, want %d", *done.ExitCode, ac.modelErrorCode)
			}
			out := e.MustRun("status", s.ID)
			if !strings.Contains(out, fmt.Sprintf("exited(%d)", *done.ExitCode)) {
				t.Errorf("status does not show exit code %d:\n%s", *done.ExitCode, out)
			}
		})
	}
}
