package opencode

import (
	"context"
	"encoding/json"
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

// realEnv is a throwaway HOME with XDG folders for the real OpenCode CLI,
// configured to talk only to the fake model server.
type realEnv struct {
	home, data, cwd string
	env             []string
	srv             *fakemodel.Server
	adapter         *Adapter
}

// newRealEnv skips the test loudly when the OpenCode CLI is not installed.
func newRealEnv(t *testing.T) *realEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("SKIPPED in -short mode: the real OpenCode CLI tests take about a minute")
	}
	bin := agentsBin(t)
	if fi, err := os.Stat(filepath.Join(bin, "opencode")); err != nil || fi.Mode()&0o111 == 0 {
		t.Skipf("SKIPPED: the real OpenCode CLI is not installed in %s; run scripts/install-agents.sh opencode (or set AGENTCTL_AGENTS_DIR)", bin)
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
	e.data = filepath.Join(e.home, ".local", "share")
	config := filepath.Join(e.home, ".config", "opencode", "opencode.json")
	for _, d := range []string{e.data, filepath.Dir(config), e.cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Offline configuration (see the reference notes): one provider, the
	// fake server through the bundled OpenAI-compatible SDK.
	cfg, err := json.Marshal(map[string]any{
		"$schema": "https://opencode.ai/config.json", "model": "fake/fake-model", "small_model": "fake/fake-model",
		"autoupdate": false, "share": "disabled",
		"provider": map[string]any{"fake": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "Fake",
			"options": map[string]any{"baseURL": srv.URL() + "/v1", "apiKey": "sk-fake"},
			"models":  map[string]any{"fake-model": map[string]any{"name": "Fake Model", "tool_call": true}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	e.env = []string{
		"HOME=" + e.home,
		"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin",
		"XDG_CONFIG_HOME=" + filepath.Join(e.home, ".config"),
		"XDG_DATA_HOME=" + e.data,
		"XDG_STATE_HOME=" + filepath.Join(e.home, ".local", "state"),
		"XDG_CACHE_HOME=" + filepath.Join(e.home, ".cache"),
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_SHARE=1",
		"TERM=xterm",
	}
	e.adapter = New(adapters.Env{Home: e.home, Getenv: func(k string) string {
		if k == "XDG_DATA_HOME" {
			return e.data
		}
		return ""
	}})
	return e
}

// run starts spec under a pty in its own session, as agentctl does, and
// returns the exit code (128+signal when killed) and the output.
func (e *realEnv) run(t *testing.T, spec adapters.LaunchSpec, onStart func(pid int, since time.Time)) (int, string) {
	t.Helper()
	return agenttest.RunPTY(t, spec, e.cwd, 4*time.Minute, onStart)
}

func (e *realEnv) session(t *testing.T, id string) adapters.NativeSession {
	t.Helper()
	return agenttest.Session(t, e.adapter, id)
}

// findID learns the id of the OpenCode at pid.
func (e *realEnv) findID(t *testing.T, pid int, since time.Time) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	id, err := e.adapter.FindNativeID(ctx, adapters.Started{PID: pid, Cwd: e.cwd, Since: since})
	if err != nil {
		t.Errorf("FindNativeID: %v", err)
	}
	return id
}

// waitBusy waits until Discover shows session id busy with a process.
func (e *realEnv) waitBusy(t *testing.T, id string) adapters.NativeSession {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		ss, _ := e.adapter.Discover(context.Background())
		for _, s := range ss {
			if s.NativeID == id && s.Process != nil && s.State == adapters.NativeBusy {
				return s
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return adapters.NativeSession{}
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

// TestRealOpencode runs the installed OpenCode headless under a pty with
// the argv Launch and Resume build, against the fake model, and reads back
// what it wrote to opencode.db.
func TestRealOpencode(t *testing.T) {
	e := newRealEnv(t)
	// "[[sleep: 4]]" has a number-like word: the prompt goes through stdin.
	prompt := "-work  [[sleep: 4]] [[text: real ok]]"
	spec, err := e.adapter.Launch(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), e.adapter.Binary()), Prompt: prompt, Model: "fake/fake-model", Cwd: e.cwd, Env: e.env, SessionDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var id string
	var live adapters.NativeSession
	code, out := e.run(t, spec, func(pid int, since time.Time) {
		id = e.findID(t, pid, since)
		live = e.waitBusy(t, id)
	})
	if code != 0 {
		t.Fatalf("opencode exited %d:\n%s", code, out)
	}
	if live.Process == nil || live.Process.Evidence != evidencePrompt {
		t.Errorf("while the tool ran: state %q process %+v", live.State, live.Process)
	}
	s := e.session(t, id)
	if s.Model != "fake/fake-model" || s.Cwd != e.cwd || s.FirstPrompt != prompt ||
		s.State != adapters.NativeDone || s.Process != nil || s.TokensIn == nil || *s.TokensIn <= 0 || s.CostUSD == nil {
		t.Errorf("after the run: %+v", s)
	}
	tokensBefore := *s.TokensIn

	// Resume with a plain-words prompt (argv) appends to the same session.
	resumePrompt := "again  -v [[text: resumed ok]]"
	spec, err = e.adapter.Resume(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), e.adapter.Binary()), Prompt: resumePrompt, NativeID: id, Cwd: e.cwd, Env: e.env, SessionDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if spec.Argv[0] != "opencode" {
		t.Errorf("a words prompt went through %q", spec.Argv[0])
	}
	var resumedID string
	if code, out := e.run(t, spec, func(pid int, since time.Time) { resumedID = e.findID(t, pid, since) }); code != 0 {
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
	var users []string
	for _, m := range msgs {
		if m.Role == "user" {
			users = append(users, m.Text)
		}
	}
	if strings.Join(users, "|") != prompt+"|"+resumePrompt {
		t.Errorf("user messages %q: the prompts did not arrive exactly", users)
	}
}

// TestRealOpencodeModelError: a model that answers 400 makes opencode exit
// non-zero, and the failed message says why. OpenCode 1.18 retries every
// error status, 4xx included, five times over about 70 seconds first.
func TestRealOpencodeModelError(t *testing.T) {
	e := newRealEnv(t)
	spec, err := e.adapter.Launch(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), e.adapter.Binary()), Prompt: "fail [[error: 400]]", Cwd: e.cwd, Env: e.env, SessionDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var id string
	code, out := e.run(t, spec, func(pid int, since time.Time) { id = e.findID(t, pid, since) })
	if code == 0 {
		t.Fatalf("opencode exited 0 on a model error:\n%s", out)
	}
	s := e.session(t, id)
	if s.State != adapters.NativeFailed || len(s.Warnings) == 0 {
		t.Errorf("after the error: state %q warnings %q", s.State, s.Warnings)
	}
}

// TestRealOpencodeStop: SIGTERM, the adapter's stop signal, ends opencode
// with 143 mid-tool. OpenCode leaves its tool command running in a session
// of its own, so ending that is the supervisor's job; the test records
// what is left and ends it.
func TestRealOpencodeStop(t *testing.T) {
	e := newRealEnv(t)
	spec, err := e.adapter.Launch(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), e.adapter.Binary()), Prompt: "long [[sleep: 71]]", Cwd: e.cwd, Env: e.env, SessionDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var id string
	code, out := e.run(t, spec, func(pid int, since time.Time) {
		id = e.findID(t, pid, since)
		e.waitBusy(t, id)
		deadline := time.Now().Add(60 * time.Second)
		for len(processesRunning("sleep 71")) == 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		syscall.Kill(pid, e.adapter.StopSignal())
	})
	if code != 143 {
		t.Errorf("exit %d after SIGTERM, want 143:\n%s", code, out)
	}
	if left := processesRunning("sleep 71"); len(left) > 0 {
		t.Logf("as the notes say, OpenCode left its tool running after SIGTERM: %v (ended by the test)", left)
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	s := e.session(t, id)
	// Killed mid-turn, with no OpenCode of this store left: the turn was
	// cut off and the session is over (it must not stay unknown for good).
	if s.State != adapters.NativeAborted || s.Process != nil {
		t.Errorf("after stop: state %q process %+v, want aborted (killed mid-turn)", s.State, s.Process)
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
