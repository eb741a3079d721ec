package claude

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
)

// agentsBin is the folder scripts/install-agents.sh installs the agent
// CLIs into: $AGENTCTL_AGENTS_DIR/bin, else .cache/agents/bin in the
// repository.
func agentsBin(t *testing.T) string { return agenttest.BinDir(t) }

// realClaude returns the installed Claude Code CLI's folder, or skips the
// test loudly.
func realClaude(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("SKIPPED in -short mode: the real Claude Code CLI tests take about a minute")
	}
	bin := agentsBin(t)
	if fi, err := os.Stat(filepath.Join(bin, Binary)); err != nil || fi.Mode()&0o111 == 0 {
		t.Skipf("SKIPPED: the real Claude Code CLI is not installed in %s; run scripts/install-agents.sh claude (or set AGENTCTL_AGENTS_DIR)", bin)
	}
	return bin
}

// realEnv is a throwaway home for the real CLI, pointed at the fake model.
type realEnv struct {
	home, cwd string
	env       []string
	srv       *fakemodel.Server
	adapter   *Adapter
}

func newRealEnv(t *testing.T) *realEnv {
	t.Helper()
	bin := realClaude(t)
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
	os.MkdirAll(e.home, 0o755)
	os.MkdirAll(e.cwd, 0o755)
	e.env = []string{
		"HOME=" + e.home,
		"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin",
		"ANTHROPIC_BASE_URL=" + srv.URL(),
		"ANTHROPIC_API_KEY=sk-ant-fake",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		// Keep the variables above: without this the adapter strips them
		// (subscription billing) and the CLI would not find the fake.
		UseAPIKeyVar + "=1",
	}
	e.adapter = New(adapters.Env{Home: e.home, Getenv: func(string) string { return "" }})
	return e
}

// run starts spec under a pty, as agentctl does, and returns the exit code
// and output. onStart, when set, runs while the agent is alive.
func (e *realEnv) run(t *testing.T, spec adapters.LaunchSpec, onStart func(pid int)) (int, string) {
	t.Helper()
	var started func(int, time.Time)
	if onStart != nil {
		started = func(pid int, _ time.Time) { onStart(pid) }
	}
	return agenttest.RunPTY(t, spec, e.cwd, 2*time.Minute, started)
}

func (e *realEnv) session(t *testing.T, id string) adapters.NativeSession {
	t.Helper()
	return agenttest.Session(t, e.adapter, id)
}

// TestRealClaude runs the installed Claude Code headless under a pty with
// the argv and environment Launch and Resume build, against the fake model,
// and reads back what it wrote: the pre-assigned id, the live registry while
// it works, model, tokens, cost and the last answer.
func TestRealClaude(t *testing.T) {
	e := newRealEnv(t)
	req := adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), e.adapter.Binary()), Prompt: "-work [[sleep: 3]] [[text: real ok]]", Cwd: e.cwd, Env: e.env, SessionDir: t.TempDir()}
	spec, err := e.adapter.Launch(req)
	if err != nil {
		t.Fatal(err)
	}
	var live adapters.NativeSession
	code, out := e.run(t, spec, func(pid int) {
		// While the tool call sleeps, the agent's own registry vouches
		// for the process.
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			ss, _ := e.adapter.Discover(context.Background())
			for _, s := range ss {
				// Claude writes its entry before its first status.
				if s.NativeID == spec.NativeID && s.Process != nil && s.Process.Evidence == "registry" {
					live = s
					if s.State == adapters.NativeBusy || s.State == adapters.NativeIdle {
						return
					}
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	if code != 0 {
		t.Fatalf("claude exited %d:\n%s", code, out)
	}
	if live.Process == nil || live.Process.Evidence != "registry" || (live.State != adapters.NativeBusy && live.State != adapters.NativeIdle) {
		t.Errorf("while running: %+v process %+v", live, live.Process)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 2 || reqs[0].Reply != "tool: Bash echo sleeping 3; sleep 3; echo slept 3" {
		t.Fatalf("model requests: %+v", reqs)
	}
	s := e.session(t, spec.NativeID)
	if s.Model == "" || s.Model != reqs[0].Model || s.Cwd != e.cwd || s.FirstPrompt != req.Prompt ||
		s.State != adapters.NativeDone || s.Process != nil ||
		s.TokensIn == nil || *s.TokensIn <= 0 || s.TokensOut == nil || *s.TokensOut <= 0 || s.CostUSD == nil || len(s.Warnings) != 0 {
		t.Errorf("after the run: %+v", s)
	}
	if !strings.Contains(out, `"result":"real ok (after 1 tool calls)"`) {
		t.Errorf("stream-json output lacks the result:\n%s", out)
	}
	tokensBefore := *s.TokensIn

	// Resume appends to the same session.
	spec, err = e.adapter.Resume(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), e.adapter.Binary()), Prompt: "again [[text: resumed ok]]", NativeID: spec.NativeID, Cwd: e.cwd, Env: e.env})
	if err != nil {
		t.Fatal(err)
	}
	if code, out := e.run(t, spec, nil); code != 0 {
		t.Fatalf("resume exited %d:\n%s", code, out)
	}
	s = e.session(t, spec.NativeID)
	if *s.TokensIn <= tokensBefore || s.FirstPrompt != req.Prompt {
		t.Errorf("after resume: %+v", s)
	}
	msgs, err := e.adapter.Transcript(context.Background(), spec.NativeID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var assistant []string
	for _, m := range msgs {
		if m.Role == "assistant" {
			assistant = append(assistant, m.Text)
		}
	}
	if strings.Join(assistant, "|") != "real ok (after 1 tool calls)|resumed ok" {
		t.Errorf("assistant messages %q", assistant)
	}
}

// TestRealClaudeLargePrompt: a prompt over 100 kB reaches the model
// through the prompt file, not argv.
func TestRealClaudeLargePrompt(t *testing.T) {
	e := newRealEnv(t)
	prompt := strings.Repeat("lorem ipsum ", 15000) + "[[text: big ok]]"
	spec, err := e.adapter.Launch(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), e.adapter.Binary()), Prompt: prompt, Cwd: e.cwd, Env: e.env, SessionDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if code, out := e.run(t, spec, nil); code != 0 {
		t.Fatalf("claude exited %d:\n%.2000s", code, out)
	}
	s := e.session(t, spec.NativeID)
	if s.State != adapters.NativeDone || !strings.HasPrefix(prompt, strings.TrimSuffix(s.FirstPrompt, "…")) || len(s.FirstPrompt) < maxKept {
		t.Errorf("large prompt: state %q, prompt of %d bytes", s.State, len(s.FirstPrompt))
	}
}

// TestRealClaudeStop: SIGTERM, the adapter's stop signal, ends a working
// claude with 143 and its registry entry removed.
func TestRealClaudeStop(t *testing.T) {
	e := newRealEnv(t)
	spec, err := e.adapter.Launch(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), e.adapter.Binary()), Prompt: "long [[sleep: 60]]", Cwd: e.cwd, Env: e.env, SessionDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	code, out := e.run(t, spec, func(pid int) {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) && len(e.srv.Requests()) == 0 {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(time.Second) // the tool call is running
		syscall.Kill(pid, e.adapter.StopSignal())
	})
	if code != 143 {
		t.Errorf("exit %d after SIGTERM, want 143:\n%s", code, out)
	}
	s := e.session(t, spec.NativeID)
	if s.Process != nil {
		t.Errorf("stopped session still matched to a process: %+v", s.Process)
	}
	if entries, _ := os.ReadDir(filepath.Join(e.home, ".claude", "sessions")); len(entries) != 0 {
		t.Errorf("registry entries left: %v", entries)
	}
}

// TestRealClaudeTokensDropAfterContinueOfAKilledRun: a run SIGKILLed in the
// middle of its turn writes no cost-state; the run that continues the
// session writes one that counts only itself. The session's tokens count
// both runs' records: they never drop below what the killed run had.
func TestRealClaudeTokensDropAfterContinueOfAKilledRun(t *testing.T) {
	e := newRealEnv(t)
	bin := filepath.Join(agenttest.BinDir(t), e.adapter.Binary())
	spec, err := e.adapter.Launch(adapters.LaunchRequest{BinaryPath: bin, Prompt: "long [[sleep: 60]]", Cwd: e.cwd, Env: e.env, SessionDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	e.run(t, spec, func(pid int) {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) && len(e.srv.Requests()) == 0 {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(2 * time.Second) // the tool call runs; its request is on disk
		syscall.Kill(pid, syscall.SIGKILL)
	})
	killed := e.session(t, spec.NativeID)
	if killed.TokensIn == nil || *killed.TokensIn <= 0 {
		t.Fatalf("after the kill: %+v", killed)
	}
	spec, err = e.adapter.Resume(adapters.LaunchRequest{BinaryPath: bin, Prompt: "again [[text: resumed ok]]", NativeID: spec.NativeID, Cwd: e.cwd, Env: e.env})
	if err != nil {
		t.Fatal(err)
	}
	if code, out := e.run(t, spec, nil); code != 0 {
		t.Fatalf("resume exited %d:\n%s", code, out)
	}
	s := e.session(t, spec.NativeID)
	if s.State != adapters.NativeDone || s.TokensIn == nil || s.TokensOut == nil {
		t.Fatalf("after the resume: %+v", s)
	}
	t.Logf("killed run: in %d out %d; after the resume: in %d out %d", *killed.TokensIn, *killed.TokensOut, *s.TokensIn, *s.TokensOut)
	if *s.TokensIn <= *killed.TokensIn || *s.TokensOut <= *killed.TokensOut {
		t.Errorf("tokens after the resume (in %d, out %d) are not above the killed run's (in %d, out %d)", *s.TokensIn, *s.TokensOut, *killed.TokensIn, *killed.TokensOut)
	}
}
