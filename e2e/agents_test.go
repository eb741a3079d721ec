package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

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
	// start makes the installation, its agent reaching a fake model.
	start func(t *testing.T) agentRun
	// modelError is the prompt that makes the fake model fail, the exit
	// code the agent then ends with (0: any non-zero), and how long it may
	// take (some agents retry).
	modelError     string
	modelErrorCode int
	modelErrorWait time.Duration
	// preassigned says the native id is known at launch (agentctl gives
	// it); else it is learned from the agent's store after the start.
	// nativeID tells the agent's ids from anything else.
	preassigned bool
	nativeID    func(id string) bool
	// costs says the agent's store records what a run cost.
	costs bool
	// stopPrompt runs a tool for long, stopTool is that tool's argv (a
	// number of its own per agent, as the cases run in parallel), and
	// stopCode is the code the agent exits with on its graceful stop
	// signal.
	stopPrompt string
	stopTool   []string
	stopCode   int
}

// agentRun is one installation of an agent, reaching a fake model.
type agentRun struct {
	*Env
	launch func(prompt string) api.Session
	// model is the model a run of the agent reports.
	model func() string
	// nativeFiles lists the agent's files of native session id, for an
	// agent whose store keeps one per session; nil: not checked.
	nativeFiles func(id string) []string
}

func isUUID(id string) bool { _, err := uuid.Parse(id); return err == nil }

var agentCases = []agentCase{
	{
		name: "claude", install: "@anthropic-ai/claude-code", wrapped: "-" + strings.Repeat("x", 120_000),
		start: func(t *testing.T) agentRun {
			c := newClaudeEnv(t)
			c.Setenv("CLAUDE_CODE_MAX_RETRIES", "0")
			return agentRun{Env: c.Env, launch: func(p string) api.Session { return c.launch(p) },
				// Claude Code picks its model: the one it asked the fake for.
				model: func() string {
					if reqs := c.srv.Requests(); len(reqs) > 0 {
						return reqs[0].Model
					}
					return "(no request)"
				},
				nativeFiles: func(id string) []string {
					files, _ := filepath.Glob(filepath.Join(c.home, ".claude", "projects", "*", id+".jsonl"))
					return files
				}}
		},
		modelError: "fail [[error: 500]]", modelErrorCode: 1, modelErrorWait: 120 * time.Second,
		preassigned: true, nativeID: isUUID, costs: true,
		// Claude ends itself on SIGTERM with 143.
		stopPrompt: "long [[sleep: 117.31]]", stopTool: []string{"sleep", "117.31"}, stopCode: 143,
	},
	{
		name: "codex", install: "@openai/codex", wrapped: "-" + strings.Repeat("x", 120_000),
		start: func(t *testing.T) agentRun {
			c := newCodexEnv(t)
			return agentRun{Env: c.Env, launch: c.launch, model: func() string { return "fake-model" },
				nativeFiles: func(id string) []string {
					files, _ := filepath.Glob(filepath.Join(c.codexHome, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
					return files
				}}
		},
		modelError: "fail [[error: 400]]", modelErrorWait: 120 * time.Second,
		nativeID: isUUID,
		// Codex ends itself on SIGINT with 1 after recording the aborted
		// turn.
		stopPrompt: "long [[sleep: 117.43]]", stopTool: []string{"sleep", "117.43"}, stopCode: 1,
	},
	{
		name: "opencode", install: "opencode-ai", wrapped: "fix bug 42",
		start: func(t *testing.T) agentRun {
			o := newOpencodeEnv(t)
			return agentRun{Env: o.Env, launch: o.launch, model: func() string { return "fake/fake-model" }}
		},
		modelError: "fail [[error: 400]]", modelErrorWait: 240 * time.Second,
		nativeID: func(id string) bool { return strings.HasPrefix(id, "ses_") }, costs: true,
		// OpenCode ignores SIGINT: SIGTERM, and its tool, which it would
		// leave running in a session of its own, goes with the session.
		stopPrompt: "long [[sleep: 117.59]]", stopTool: []string{"sleep", "117.59"}, stopCode: 143,
	},
	{
		name: "pi", install: "@mariozechner/pi-coding-agent", wrapped: "-starts with a dash",
		start: func(t *testing.T) agentRun {
			p := newPiEnv(t)
			return agentRun{Env: p.Env, launch: func(prompt string) api.Session { return p.launch(prompt) },
				model: func() string { return "fakeopenai/fake-model" }}
		},
		modelError: "fail [[error: 400]]", modelErrorWait: 90 * time.Second,
		preassigned: true, nativeID: func(id string) bool { return id != "" },
		// A Pi tool runs as `/bin/bash -c CMD`, which execs CMD in place.
		stopPrompt: "long [[bash: sleep 53.17]]", stopTool: []string{"sleep", "53.17"}, stopCode: 143,
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
			r := ac.start(t)
			e := r.Env
			s := r.launch(ac.modelError)
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

// A prompt whose tool runs a few seconds: list shows it running with its
// native id (pre-assigned, or learned from the agent's store), and once,
// peek shows the answer, status says exited 0 with the native facts
// merged; resume continues the same native session, and peek of either
// run shows both answers.
func TestAgentLaunchPeekResume(t *testing.T) {
	t.Parallel()
	for _, ac := range agentCases {
		t.Run(ac.name, func(t *testing.T) {
			t.Parallel()
			r := ac.start(t)
			s := r.launch("work [[sleep: 6]]")
			if s.Adapter != ac.name || ac.preassigned && !ac.nativeID(s.NativeID) {
				t.Fatalf("launched %+v: want adapter %s (a pre-assigned native id: %v)", s, ac.name, ac.preassigned)
			}
			nativeID := s.NativeID
			WaitFor(t, 120*time.Second, "the session to be listed running with its native id", func() bool {
				for _, l := range r.List().Sessions {
					if l.ID == s.ID && l.Status == api.StatusRunning && l.NativeID != "" && (!ac.preassigned || l.NativeID == s.NativeID) {
						nativeID = l.NativeID
						return true
					}
				}
				return false
			})
			if !ac.nativeID(nativeID) {
				t.Errorf("native id %q is not a %s session id", nativeID, ac.name)
			}
			for _, l := range r.List("-a").Sessions {
				if l.NativeID == nativeID && l.ID != s.ID {
					t.Errorf("native session %s listed twice: %s (%s) and %s", nativeID, l.ID, l.Origin, s.ID)
				}
			}
			done := r.WaitStatus(s.ID, api.StatusExited, 180*time.Second)
			if done.ExitCode == nil || *done.ExitCode != 0 {
				t.Fatalf("session ended %+v, want exit 0", done)
			}
			if done.NativeID != nativeID || done.Model != r.model() || done.TokensIn == nil || *done.TokensIn <= 0 || ac.costs && done.CostUSD == nil || !strings.HasPrefix(done.Prompt, "work") {
				t.Errorf("native facts not merged: native %q model %q (want %q) tokens %v cost %v prompt %q", done.NativeID, done.Model, r.model(), done.TokensIn, done.CostUSD, done.Prompt)
			}
			if got := peekTexts(r.Env, s.ID, 1); len(got) != 1 || got[0] != "hi from fakellm (after 1 tool calls)" {
				t.Errorf("peek = %q", got)
			}

			var rs api.Session
			r.JSON(&rs, "resume", "--json", s.ID, "again [[text: resumed ok]]")
			if rs.NativeID != nativeID || rs.ID == s.ID {
				t.Fatalf("resume: %+v, want a new run of native session %s", rs, nativeID)
			}
			if rd := r.WaitStatus(rs.ID, api.StatusExited, 180*time.Second); rd.ExitCode == nil || *rd.ExitCode != 0 {
				t.Fatalf("resumed run ended %+v", rd)
			}
			want := []string{"hi from fakellm (after 1 tool calls)", "resumed ok"}
			for _, id := range []string{s.ID, rs.ID} {
				if got := peekTexts(r.Env, id, 2); strings.Join(got, "|") != strings.Join(want, "|") {
					t.Errorf("peek -n 2 %s = %q, want %q (one native session)", id, got, want)
				}
			}
			if r.nativeFiles != nil {
				if files := r.nativeFiles(nativeID); len(files) != 1 {
					t.Errorf("native files of %s: %v, want one", nativeID, files)
				}
			}
		})
	}
}

// A long session stopped: the agent (on its own graceful signal) and its
// tool, which some agents run in a session of their own, are gone, status
// reports how it ended, and the native session is not listed running.
func TestAgentStop(t *testing.T) {
	t.Parallel()
	for _, ac := range agentCases {
		t.Run(ac.name, func(t *testing.T) {
			t.Parallel()
			r := ac.start(t)
			s := r.launch(ac.stopPrompt)
			WaitFor(t, 120*time.Second, "the tool to run", func() bool { return liveArgv(ac.stopTool...) })
			var final api.Session
			r.JSON(&final, "stop", "--json", s.ID)
			if !final.Status.Ended() {
				t.Fatalf("after stop: %+v", final)
			}
			code := "none"
			if final.ExitCode != nil {
				code = fmt.Sprint(*final.ExitCode)
			}
			t.Logf("after stop: status %s, exit code %s, signal %q", final.Status, code, final.Signal)
			// A kill after the grace period shows as the signal.
			if final.Status == api.StatusExited && (final.ExitCode == nil || *final.ExitCode != ac.stopCode) {
				t.Errorf("stopped %s exited %v, want %d (its stop signal) or killed", ac.name, final.ExitCode, ac.stopCode)
			}
			if final.Status == api.StatusKilled && final.Signal == "" {
				t.Errorf("killed without a signal: %+v", final)
			}
			if alive(final.PID) {
				t.Errorf("%s (pid %d) survived the stop", ac.name, final.PID)
			}
			if liveArgv(ac.stopTool...) {
				t.Errorf("the tool (%s) survived the stop", strings.Join(ac.stopTool, " "))
			}
			for _, l := range r.List("-a").Sessions {
				if l.NativeID != "" && l.NativeID == final.NativeID && l.Status == api.StatusRunning {
					t.Errorf("stopped session still listed running: %+v", l)
				}
			}
		})
	}
}

// peekTexts is the text of session id's last n assistant messages.
func peekTexts(e *Env, id string, n int) []string {
	e.T.Helper()
	var tr api.Transcript
	e.JSON(&tr, "peek", "--json", "-n", fmt.Sprint(n), id)
	return texts(tr)
}
