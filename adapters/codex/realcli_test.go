package codex

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/internal/fakemodel"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
	"github.com/agentctl/agentctl/proc"
)

// agentsBin is the folder scripts/install-agents.sh installs the agent
// CLIs into: $AGENTCTL_AGENTS_DIR/bin, else .cache/agents/bin in the
// repository.
func agentsBin(t *testing.T) string { return agenttest.BinDir(t) }

// realEnv is a throwaway HOME and CODEX_HOME for the real Codex CLI,
// configured to talk only to the fake model server.
type realEnv struct {
	home, codexHome, cwd string
	env                  []string
	srv                  *fakemodel.Server
	adapter              *Adapter
}

// newRealEnv skips the test loudly when the Codex CLI is not installed.
func newRealEnv(t *testing.T) *realEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("SKIPPED in -short mode: the real Codex CLI tests take about a minute")
	}
	bin := agentsBin(t)
	if fi, err := os.Stat(filepath.Join(bin, "codex")); err != nil || fi.Mode()&0o111 == 0 {
		t.Skipf("SKIPPED: the real Codex CLI is not installed in %s; run scripts/install-agents.sh codex (or set AGENTCTL_AGENTS_DIR)", bin)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := fakemodel.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &realEnv{home: filepath.Join(root, "home"), cwd: filepath.Join(root, "proj"), srv: srv}
	e.codexHome = filepath.Join(e.home, ".codex")
	for _, d := range []string{e.codexHome, e.cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	config := agenttest.CodexConfig(srv.URL())
	if err := os.WriteFile(filepath.Join(e.codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	e.env = []string{
		"HOME=" + e.home,
		"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin",
		"CODEX_HOME=" + e.codexHome,
		"FAKE_API_KEY=sk-fake",
		"TERM=xterm",
	}
	e.adapter = New(adapters.Env{Home: e.home, Getenv: func(k string) string {
		if k == "CODEX_HOME" {
			return e.codexHome
		}
		return ""
	}})
	return e
}

// run starts spec under a pty in its own session, as agentctl does, and
// returns the exit code (128+signal when killed) and the output.
func (e *realEnv) run(t *testing.T, spec adapters.LaunchSpec, onStart func(pid int, since time.Time)) (int, string) {
	t.Helper()
	return agenttest.RunPTY(t, spec, e.cwd, 3*time.Minute, onStart)
}

func (e *realEnv) session(t *testing.T, id string) adapters.NativeSession {
	t.Helper()
	return agenttest.Session(t, e.adapter, id)
}

// waitLive learns the id of the Codex at pid and waits until Discover
// shows it working on a turn, matched by the rollout it holds open.
func (e *realEnv) waitLive(t *testing.T, pid int, since time.Time) (string, adapters.NativeSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	id, err := e.adapter.FindNativeID(ctx, adapters.Started{PID: pid, Cwd: e.cwd, Since: since})
	if err != nil {
		t.Errorf("FindNativeID: %v", err)
		return "", adapters.NativeSession{}
	}
	for ctx.Err() == nil {
		ss, _ := e.adapter.Discover(ctx)
		for _, s := range ss {
			if s.NativeID == id && s.Process != nil && s.State == adapters.NativeBusy {
				return id, s
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return id, adapters.NativeSession{}
}

func assistantTexts(msgs []adapters.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == "assistant" {
			out = append(out, m.Text)
		}
	}
	return out
}

// TestRealCodex runs the installed Codex CLI headless under a pty with the
// argv Launch and Resume build, against the fake model, and reads back what
// it wrote: the id learned from the rollout it opens, the live match while
// a tool runs, and afterwards the state, model, tokens and transcript.
func TestRealCodex(t *testing.T) {
	e := newRealEnv(t)
	prompt := "-work [[sleep: 5]] [[text: real ok]]"
	spec, err := e.adapter.Launch(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), e.adapter.Binary()), Prompt: prompt, Cwd: e.cwd, Env: e.env, SessionDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var id string
	var live adapters.NativeSession
	code, out := e.run(t, spec, func(pid int, since time.Time) {
		id, live = e.waitLive(t, pid, since)
	})
	if code != 0 {
		t.Fatalf("codex exited %d:\n%s", code, out)
	}
	if live.Process == nil || live.Process.Evidence != evidenceOpenFile || live.State != adapters.NativeBusy {
		t.Errorf("while the tool ran: state %q process %+v", live.State, live.Process)
	}
	reqs := e.srv.Requests()
	if len(reqs) < 2 {
		t.Fatalf("model requests: %+v", reqs)
	}
	s := e.session(t, id)
	if s.Model != "fake-model" || s.Cwd != e.cwd || s.FirstPrompt != prompt ||
		s.State != adapters.NativeDone || s.Process != nil || s.TokensIn == nil || *s.TokensIn <= 0 || s.TokensOut == nil || *s.TokensOut <= 0 {
		t.Errorf("after the run: %+v", s)
	}
	tokensBefore := *s.TokensIn

	// Resume appends to the same rollout.
	spec, err = e.adapter.Resume(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), e.adapter.Binary()), Prompt: "again [[text: resumed ok]]", NativeID: id, Cwd: e.cwd, Env: e.env})
	if err != nil {
		t.Fatal(err)
	}
	var resumedID string
	if code, out := e.run(t, spec, func(pid int, since time.Time) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resumedID, _ = e.adapter.FindNativeID(ctx, adapters.Started{PID: pid, Cwd: e.cwd, Since: since})
	}); code != 0 {
		t.Fatalf("resume exited %d:\n%s", code, out)
	}
	if resumedID != id {
		t.Errorf("the resumed run's id is %q, want %q", resumedID, id)
	}
	s = e.session(t, id)
	if *s.TokensIn <= tokensBefore || s.FirstPrompt != prompt || s.State != adapters.NativeDone {
		t.Errorf("after resume: %+v", s)
	}
	msgs, err := e.adapter.Transcript(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(assistantTexts(msgs), "|"); got != "real ok (after 1 tool calls)|resumed ok" {
		t.Errorf("assistant messages %q", got)
	}
	var sawTool bool
	for _, m := range msgs {
		sawTool = sawTool || (m.Role == "tool" && strings.Contains(m.Text, "sleep 5"))
	}
	if !sawTool || msgs[0].Role != "user" || msgs[0].Text != prompt {
		t.Errorf("transcript: %+v", msgs)
	}
	if last, err := e.adapter.Transcript(context.Background(), id, 1); err != nil || len(last) != 1 || last[0].Text != "resumed ok" {
		t.Errorf("last message: %+v %v", last, err)
	}
}

// TestRealCodexLargePrompt: a prompt over 100 kB that starts with '-'
// reaches the model whole, through stdin from the prompt file.
func TestRealCodexLargePrompt(t *testing.T) {
	e := newRealEnv(t)
	prompt := "-" + strings.Repeat("lorem ipsum ", 15000) + "[[text: big ok]] the end"
	spec, err := e.adapter.Launch(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), e.adapter.Binary()), Prompt: prompt, Cwd: e.cwd, Env: e.env, SessionDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var id string
	code, out := e.run(t, spec, func(pid int, since time.Time) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var err error
		if id, err = e.adapter.FindNativeID(ctx, adapters.Started{PID: pid, Cwd: e.cwd, Since: since}); err != nil {
			t.Errorf("FindNativeID: %v", err)
		}
	})
	if code != 0 {
		t.Fatalf("codex exited %d:\n%.2000s", code, out)
	}
	reqs := e.srv.Requests()
	if len(reqs) == 0 || !strings.HasSuffix(strings.TrimSpace(reqs[0].Prompt), "the end") || len(reqs[0].Prompt) < len(prompt) {
		t.Errorf("the model did not get the whole prompt")
	}
	s := e.session(t, id)
	if s.State != adapters.NativeDone || !strings.HasPrefix(prompt, strings.TrimSuffix(s.FirstPrompt, "…")) {
		t.Errorf("large prompt: state %q first %.40q", s.State, s.FirstPrompt)
	}
}

// TestRealCodexModelError: a model that answers 400 makes codex exit
// non-zero, and its rollout records the failed turn.
func TestRealCodexModelError(t *testing.T) {
	e := newRealEnv(t)
	spec, err := e.adapter.Launch(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), e.adapter.Binary()), Prompt: "fail [[error: 400]]", Cwd: e.cwd, Env: e.env})
	if err != nil {
		t.Fatal(err)
	}
	var id string
	code, out := e.run(t, spec, func(pid int, since time.Time) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		id, _ = e.adapter.FindNativeID(ctx, adapters.Started{PID: pid, Cwd: e.cwd, Since: since})
	})
	if code == 0 {
		t.Fatalf("codex exited 0 on a model error:\n%s", out)
	}
	s := e.session(t, id)
	if s.State != adapters.NativeFailed || len(s.Warnings) == 0 {
		t.Errorf("after the error: state %q warnings %q", s.State, s.Warnings)
	}
}

// TestRealCodexStop: SIGINT, the adapter's stop signal, aborts the turn:
// codex exits 1, its tool command ends, and the rollout records
// turn_aborted.
func TestRealCodexStop(t *testing.T) {
	e := newRealEnv(t)
	spec, err := e.adapter.Launch(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), e.adapter.Binary()), Prompt: "long [[sleep: 67]]", Cwd: e.cwd, Env: e.env})
	if err != nil {
		t.Fatal(err)
	}
	var id string
	code, out := e.run(t, spec, func(pid int, since time.Time) {
		id, _ = e.waitLive(t, pid, since)
		time.Sleep(time.Second) // the tool command is running
		syscall.Kill(pid, e.adapter.StopSignal())
	})
	if code != 1 {
		t.Errorf("exit %d after SIGINT, want 1:\n%s", code, out)
	}
	s := e.session(t, id)
	if s.State != adapters.NativeAborted || s.Process != nil {
		t.Errorf("after stop: state %q process %+v", s.State, s.Process)
	}
	// The tool command (sleep 67) must not outlive codex.
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := processesRunning("sleep 67")
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("tool processes left after stop: %v", left)
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// processesRunning returns the live processes whose command line contains
// s.
func processesRunning(s string) []int {
	table, err := proc.Table()
	if err != nil {
		return nil
	}
	var out []int
	for _, p := range table {
		if p.Zombie {
			continue
		}
		if argv, err := proc.Cmdline(p.PID); err == nil && strings.Contains(strings.Join(argv, " "), s) {
			out = append(out, p.PID)
		}
	}
	return out
}
