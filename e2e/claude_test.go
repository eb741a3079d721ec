package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/fakemodel"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
)

// claudeBin finds the claude CLI installed by scripts/install-agents.sh, or
// skips the test loudly.
func claudeBin(t *testing.T) string { return agenttest.Bin(t, "claude") }

// claudeEnv is an agentctl installation whose agents reach a fake model
// server: claude on PATH, a throwaway HOME, and a project folder.
type claudeEnv struct {
	*Env
	srv  *fakemodel.Server
	home string
	proj string
}

func newClaudeEnv(t *testing.T) *claudeEnv {
	t.Helper()
	bin := claudeBin(t)
	srv := agenttest.FakeModel(t)
	e := NewEnv(t)
	c := &claudeEnv{Env: e, srv: srv, home: t.TempDir()}
	c.proj, _ = filepath.EvalSymlinks(t.TempDir())
	e.Setenv("HOME", c.home)
	e.Setenv("PATH", filepath.Dir(bin)+":"+os.Getenv("PATH"))
	e.Setenv("ANTHROPIC_BASE_URL", srv.URL())
	e.Setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
	e.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
	e.Setenv("DISABLE_AUTOUPDATER", "1")
	// Without it the adapter removes the three ANTHROPIC_ variables (the
	// old tool's subscription billing) and claude could not reach the fake.
	e.Setenv("AGENTCTL_CLAUDE_USE_API_KEY", "1")
	return c
}

func (c *claudeEnv) launch(prompt string, extra ...string) api.Session {
	c.T.Helper()
	var s api.Session
	c.JSON(&s, append([]string{"launch", "claude", "--json", "--cwd", c.proj, "-p", prompt}, extra...)...)
	return s
}

// csiSequence matches the cursor and colour sequences of a TUI.
var csiSequence = regexp.MustCompile(`\x1b\[[0-9;?]*[a-zA-Z]`)

// An interactive Claude (no -p) under agentctl's pty: typed input reaches
// its prompt, its answer lands in the log, and stop ends it and its tree.
func TestClaudeInteractive(t *testing.T) {
	t.Parallel()
	c := newClaudeEnv(t)
	key := "sk-ant-fake"
	seed := fmt.Sprintf(`{"hasCompletedOnboarding": true, "projects": {%q: {"hasTrustDialogAccepted": true}},
		"customApiKeyResponses": {"approved": [%q], "rejected": []}}`, c.proj, key[len(key)-min(20, len(key)):])
	if err := os.WriteFile(filepath.Join(c.home, ".claude.json"), []byte(seed), 0o600); err != nil {
		t.Fatal(err)
	}
	s := c.Start("--cwd", c.proj, "--", "claude")
	WaitFor(t, 60*time.Second, "claude's prompt to be drawn", func() bool {
		out, _, _ := c.Run("logs", "-n", "0", s.ID)
		return len(strings.TrimSpace(out)) > 0 && c.Session(s.ID).Status == api.StatusRunning
	})
	time.Sleep(2 * time.Second) // the input box takes keys once drawn
	// One send types the text and submits it, as a person would.
	c.MustRun("send", s.ID, "hello [[text: interactive-answer]]")
	WaitFor(t, 60*time.Second, "the answer in the log", func() bool {
		// The TUI moves the cursor instead of printing spaces, and echoes
		// the typed directive: look for the answer outside the echo.
		out, _, _ := c.Run("logs", "--raw", "-n", "0", s.ID)
		out = csiSequence.ReplaceAllString(out, "")
		out = strings.ReplaceAll(strings.Join(strings.Fields(out), ""), "text:interactive-answer", "")
		return strings.Contains(out, "interactive-answer") && len(c.srv.Requests()) > 0
	})
	if got := c.Session(s.ID); got.Status != api.StatusRunning {
		t.Fatalf("after answering, the interactive session is %s, want running (idle at its prompt)", got.Status)
	}
	// A plain command that is an agent is one session: the launched row,
	// with the agent's own facts, not a second discovered row.
	var rows []api.Session
	for _, x := range c.List("-a").Sessions {
		if x.PID == s.PID || x.ID == s.ID {
			rows = append(rows, x)
		}
	}
	if len(rows) != 1 || rows[0].ID != s.ID || rows[0].NativeID == "" {
		t.Errorf("run -- claude is listed as %+v, want its launched row once, with its native id", rows)
	}
	var final api.Session
	c.JSON(&final, "stop", "--json", s.ID)
	if !final.Status.Ended() || alive(s.PID) {
		t.Fatalf("after stop: %s, pid alive %v", final.Status, alive(s.PID))
	}
}

// kill -9 of the service while a real agent works: the agent finishes, and
// its true exit code is reported by the next service.
func TestClaudeOutlivesServiceKill9(t *testing.T) {
	t.Parallel()
	c := newClaudeEnv(t)
	s := c.launch("work [[sleep: 5]]")
	daemon := c.DaemonPID()
	killPID(t, daemon, syscall.SIGKILL)
	waitGone(t, daemon, 10*time.Second)
	if !alive(s.PID) {
		t.Fatal("the agent died with the service")
	}
	waitGone(t, s.PID, 120*time.Second)
	// The next command starts a new service; the monitor may still be
	// writing the exit record for a moment (status unknown).
	var final api.Session
	WaitFor(t, 15*time.Second, "the session to read ended", func() bool {
		final = c.Session(s.ID)
		return final.Status.Ended()
	})
	if final.Status != api.StatusExited || final.ExitCode == nil || *final.ExitCode != 0 {
		t.Fatalf("after the service was killed, the session reads %s (code %v), want exited 0", final.Status, final.ExitCode)
	}
	if got := peekTexts(c.Env, s.ID, 1); len(got) != 1 || got[0] != "hi from fakellm (after 1 tool calls)" {
		t.Errorf("peek = %q", got)
	}
}

// A launched Claude TUI in a folder it was never told to trust sits on its
// trust dialog: it reads waiting: dialog (from source native), and a send
// is refused, saying what to do, rather than answering the dialog blind
// (whose selected choice is "No, exit").
func TestClaudeLaunchedOnTrustDialogReadsRunningWithNoActivity(t *testing.T) {
	t.Parallel()
	c := newClaudeEnv(t)
	key := "sk-ant-fake"
	seed := fmt.Sprintf(`{"hasCompletedOnboarding": true, "customApiKeyResponses": {"approved": [%q], "rejected": []}}`, key[len(key)-min(20, len(key)):])
	if err := os.WriteFile(filepath.Join(c.home, ".claude.json"), []byte(seed), 0o600); err != nil {
		t.Fatal(err)
	}
	var s api.Session
	c.JSON(&s, "launch", "claude", "--json", "--cwd", c.proj)
	WaitFor(t, 60*time.Second, "the trust dialog to be drawn", func() bool {
		out, _, _ := c.Run("logs", "-n", "0", s.ID)
		return strings.Contains(strings.Join(strings.Fields(out), ""), "trust")
	})
	var got api.Session
	WaitFor(t, 30*time.Second, "the session to read waiting: dialog", func() bool {
		got = c.Session(s.ID)
		return got.WaitingFor == api.WaitingDialog
	})
	if got.Status != api.StatusRunning || got.Activity != api.ActivityWaiting || got.ActivitySource != api.SourceNative {
		t.Errorf("on its trust dialog: %s, activity %q from %q", got.Status, got.Activity, got.ActivitySource)
	}
	_, stderr, code := c.Run("send", s.ID, "hello")
	if code == 0 || !strings.Contains(stderr, "dialog") || !strings.Contains(stderr, "attach") {
		t.Errorf("send to a session on its dialog: exit %d, %q; want it refused, naming attach", code, stderr)
	}
	time.Sleep(time.Second)
	if after := c.Session(s.ID); after.Status != api.StatusRunning {
		t.Errorf("after the refused send the session is %s: the dialog was answered", after.Status)
	}
	c.MustRun("stop", s.ID)
}

// `run -- claude -p …` is one session for its whole life: the command's
// row, tied to the native session its process runs, with the native facts
// in status and peek while it runs and after it ended; never a second,
// discovered row of the same conversation once it has ended.
func TestRunOfAnAgentIsTwoRowsOnceItEnds(t *testing.T) {
	t.Parallel()
	c := newClaudeEnv(t)
	s := c.Start("--cwd", c.proj, "--", "claude", "-p", "hi [[delay: 4]] [[text: run ok]]")
	WaitFor(t, 60*time.Second, "the command to end", func() bool { return c.Session(s.ID).Status.Ended() })
	got := c.Session(s.ID)
	if got.NativeID == "" || got.Agent != "claude" || got.TokensIn == nil || got.Model == "" {
		t.Errorf("status of the ended command: native %q agent %q tokens %v model %q; want the claude session's facts", got.NativeID, got.Agent, got.TokensIn, got.Model)
	}
	var rows []string
	for _, x := range c.List("-a").Sessions {
		if x.ID == s.ID || (got.NativeID != "" && x.NativeID == got.NativeID) {
			rows = append(rows, x.ID)
		}
	}
	if len(rows) != 1 {
		t.Errorf("the command is listed as %q, want its own row once", rows)
	}
	if p := peekTexts(c.Env, s.ID, 1); len(p) != 1 || p[0] != "run ok" {
		t.Errorf("peek = %q, want the agent's answer", p)
	}
}

// A Claude started by hand in a real terminal (tmux), stopped at a
// permission prompt, reads waiting: permission, from Claude's own live
// registry (source native); today its activity is "-".
func TestClaudeByHandAtAPermissionPromptHasNoActivity(t *testing.T) {
	t.Parallel()
	c := newClaudeEnv(t)
	c.seedInteractive()
	tm := newTmux(t, c.Env, 120, 40)
	tm.text(fmt.Sprintf("cd %s && claude --permission-mode default", c.proj))
	tm.keys("Enter")
	reg := filepath.Join(c.home, ".claude", "sessions")
	WaitFor(t, 60*time.Second, "claude's registry entry", func() bool {
		ents, _ := filepath.Glob(filepath.Join(reg, "*.json"))
		return len(ents) == 1
	})
	time.Sleep(3 * time.Second) // the input box takes keys once drawn
	tm.text("make it [[bash: touch made-by-hand]]")
	time.Sleep(500 * time.Millisecond)
	tm.keys("Enter")
	var row api.Session
	WaitFor(t, 60*time.Second, "the hand-started session to read waiting: permission", func() bool {
		for _, s := range c.List().Sessions {
			if s.Adapter == "claude" && s.Origin == api.OriginDiscovered {
				row = s
				return s.WaitingFor == api.WaitingPermission
			}
		}
		return false
	})
	if row.Status != api.StatusRunning || row.Activity != api.ActivityWaiting || row.ActivitySource != api.SourceNative {
		t.Errorf("at its permission prompt: %s, activity %q from %q", row.Status, row.Activity, row.ActivitySource)
	}
	if _, err := os.Stat(filepath.Join(c.proj, "made-by-hand")); err == nil {
		t.Error("the tool ran without the permission asked")
	}
}

// A permission mode replaces agentctl's default permission flags, and the
// arguments after -- reach Claude as given (before the prompt); Claude's
// transcript says which mode it ran in.
func TestClaudePermissionModeAndAgentArgs(t *testing.T) {
	t.Parallel()
	c := newClaudeEnv(t)
	for _, extra := range [][]string{{"--permission-mode", "plan"}, {"--", "--permission-mode", "plan"}} {
		s := c.launch("say hello", extra...)
		argv := strings.Join(s.Command, " ")
		if !strings.Contains(argv, "--permission-mode plan") || strings.Contains(argv, "--dangerously-skip-permissions") || strings.Contains(argv, "acceptEdits") {
			t.Fatalf("launch claude %q ran %q", extra, argv)
		}
		done := c.WaitStatus(s.ID, api.StatusExited, 120*time.Second)
		if done.ExitCode == nil || *done.ExitCode != 0 {
			t.Fatalf("launch claude %q ended %+v", extra, done)
		}
		files, _ := filepath.Glob(filepath.Join(c.home, ".claude", "projects", "*", s.NativeID+".jsonl"))
		if len(files) != 1 {
			t.Fatalf("transcript of %s: %v", s.NativeID, files)
		}
		b, err := os.ReadFile(files[0])
		if err != nil || !strings.Contains(string(b), `"permissionMode":"plan"`) {
			t.Fatalf("claude did not run in plan mode (%v):\n%.2000s", err, b)
		}
	}
	// A mode agentctl does not know, and one the agent has no equivalent
	// of, are refused before anything starts.
	for _, args := range [][]string{
		{"launch", "claude", "-p", "hi", "--cwd", c.proj, "--permission-mode", "yolo"},
		{"launch", "pi", "-p", "hi", "--cwd", c.proj, "--permission-mode", "plan"},
		{"run", "--permission-mode", "plan", "--", "true"},
	} {
		if _, errOut, code := c.Run(args...); code != 2 {
			t.Errorf("agentctl %q: exit %d, %s", args, code, errOut)
		}
	}
}
