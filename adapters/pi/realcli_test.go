package pi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/internal/fakemodel"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
	"github.com/agentctl/agentctl/proc"
)

// piBinary finds the pi CLI installed by scripts/install-agents.sh, or skips
// the test loudly.
func piBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("SKIP real Pi CLI: -short")
	}
	return agenttest.Bin(t, "pi")
}

// piWorld is a throwaway home with models.json pointing Pi at a fake model
// server, and a project folder.
type piWorld struct {
	home, proj string
	adapter    *Adapter
	bin        string
	server     *fakemodel.Server
}

func newPiWorld(t *testing.T) *piWorld {
	t.Helper()
	bin := piBinary(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := fakemodel.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	w := &piWorld{home: t.TempDir(), proj: t.TempDir(), bin: bin, server: srv}
	w.proj, _ = filepath.EvalSymlinks(w.proj)
	models := fmt.Sprintf(`{"providers":{
  "fakeopenai":{"baseUrl":"%[1]s/v1","api":"openai-completions","apiKey":"fake-key",
    "compat":{"supportsDeveloperRole":false,"supportsReasoningEffort":false},"models":[{"id":"fake-model"}]},
  "fakeanthropic":{"baseUrl":"%[1]s","api":"anthropic-messages","apiKey":"fake-key","models":[{"id":"fake-claude"}]}}}`, srv.URL())
	agentDir := filepath.Join(w.home, ".pi", "agent")
	if err := os.MkdirAll(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(agentDir, "models.json"), []byte(models), 0o644); err != nil {
		t.Fatal(err)
	}
	w.adapter = New(adapters.Env{Home: w.home})
	return w
}

// env is a caller's environment: the pi wrapper needs node on PATH.
func (w *piWorld) env() []string {
	return []string{"HOME=" + w.home, "PATH=" + filepath.Dir(w.bin) + ":" + os.Getenv("PATH"), "TERM=xterm"}
}

// start runs spec under a pty as agentctl's shim does, with the agent's
// binary resolved to the installed one.
func (w *piWorld) start(t *testing.T, spec adapters.LaunchSpec) (*exec.Cmd, *bytes.Buffer, chan struct{}) {
	t.Helper()
	argv := append([]string(nil), spec.Argv...)
	for i, a := range argv {
		if a == "pi" {
			argv[i] = w.bin
			break
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = spec.Env, w.proj
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		io.Copy(&out, tty)
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		tty.Close()
	})
	return cmd, &out, done
}

// run starts spec and waits for it, returning its exit code and output.
func (w *piWorld) run(t *testing.T, spec adapters.LaunchSpec) (int, string) {
	t.Helper()
	cmd, out, done := w.start(t, spec)
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	select {
	case err := <-errc:
		<-done
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), out.String()
	case <-time.After(90 * time.Second):
		t.Fatalf("pi did not finish in 90 s; output so far:\n%s", out.String())
	}
	return 0, ""
}

func (w *piWorld) session(t *testing.T, id string) adapters.NativeSession {
	t.Helper()
	got, err := w.adapter.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range got {
		if s.NativeID == id {
			return s
		}
	}
	t.Fatalf("session %s not discovered among %d", id, len(got))
	return adapters.NativeSession{}
}

func lastText(t *testing.T, a *Adapter, id string) string {
	t.Helper()
	msgs, err := a.Transcript(context.Background(), id, 1)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Transcript(%s, 1) = %v, %v", id, msgs, err)
	}
	return msgs[0].Role + ": " + msgs[0].Text
}

// TestRealPi drives the installed Pi CLI headless under a pty with the
// launcher's argv and environment, against the fake model server, and reads
// back what it wrote.
func TestRealPi(t *testing.T) {
	w := newPiWorld(t)
	a := w.adapter

	spec, err := a.Launch(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), a.Binary()),
		Prompt: "work [[sleep: 1]] [[bash: echo hello > hello.txt]]", Model: "fakeopenai/fake-model",
		Cwd: w.proj, Env: w.env(), SessionDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	code, out := w.run(t, spec)
	if code != 0 || !strings.Contains(out, "hi from fakellm (after 2 tool calls)") {
		t.Fatalf("pi exited %d:\n%s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(w.proj, "hello.txt")); string(b) != "hello\n" {
		t.Errorf("the tool did not run: hello.txt = %q", b)
	}
	s := w.session(t, spec.NativeID)
	if s.Cwd != w.proj || s.Model != "fakeopenai/fake-model" || s.FirstPrompt != "work [[sleep: 1]] [[bash: echo hello > hello.txt]]" ||
		s.State != adapters.NativeDone || s.TokensIn == nil || *s.TokensIn == 0 || s.Process != nil {
		t.Errorf("discovered %+v", s)
	}
	msgs, err := a.Transcript(context.Background(), spec.NativeID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "user,tool,tool,tool,tool,assistant" {
		t.Errorf("transcript roles %v: %+v", roles, msgs)
	}
	before := s.TokensIn

	// Resume appends to the same file.
	r, err := a.Resume(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), a.Binary()), Prompt: "again [[text: resumed ok]]", NativeID: spec.NativeID, Cwd: w.proj, Env: w.env()})
	if err != nil {
		t.Fatal(err)
	}
	if code, out := w.run(t, r); code != 0 || !strings.Contains(out, "resumed ok") {
		t.Fatalf("resume exited %d:\n%s", code, out)
	}
	s2 := w.session(t, spec.NativeID)
	if s2.Path != s.Path || *s2.TokensIn <= *before {
		t.Errorf("after resume: %+v", s2)
	}
	if got := lastText(t, a, spec.NativeID); got != "assistant: resumed ok" {
		t.Errorf("last message after resume = %q", got)
	}

	// A prompt over 100 kB that starts with '-' goes through stdin, even
	// under a pty.
	big := "-" + strings.Repeat("x", 120_000) + " [[text: big ok]]"
	spec3, err := a.Launch(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), a.Binary()), Prompt: big, Model: "fakeanthropic/fake-claude", Cwd: w.proj, Env: w.env(), SessionDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if code, out := w.run(t, spec3); code != 0 || !strings.Contains(out, "big ok") {
		t.Fatalf("big prompt exited %d:\n%.2000s", code, out)
	}
	s3 := w.session(t, spec3.NativeID)
	if s3.Model != "fakeanthropic/fake-claude" || !strings.HasPrefix(s3.FirstPrompt, "-xxxx") || s3.State != adapters.NativeDone {
		t.Errorf("big prompt session: model %q prompt %.20q state %q", s3.Model, s3.FirstPrompt, s3.State)
	}

	// A model error ends the run with Pi's non-zero code, and the file says
	// the turn failed.
	spec4, err := a.Launch(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), a.Binary()), Prompt: "fail [[error: 400]]", Model: "fakeopenai/fake-model", Cwd: w.proj, Env: w.env(), SessionDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if code, out := w.run(t, spec4); code == 0 {
		t.Fatalf("model error exited 0:\n%s", out)
	}
	if s4, last := w.session(t, spec4.NativeID), lastText(t, a, spec4.NativeID); s4.State != adapters.NativeFailed || !strings.Contains(last, "400") {
		t.Errorf("failed session: state %q, last message %q", s4.State, last)
	}
}

// TestRealPiStop: while a tool runs, Discover matches the live process to
// its session (busy); SIGTERM, the launcher's stop signal, ends Pi with 143
// and its tool with it.
func TestRealPiStop(t *testing.T) {
	w := newPiWorld(t)
	a := w.adapter
	spec, err := a.Launch(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), a.Binary()), Prompt: "long [[bash: sleep 47.31]]", Model: "fakeopenai/fake-model", Cwd: w.proj, Env: w.env(), SessionDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cmd, out, done := w.start(t, spec)
	deadline := time.Now().Add(60 * time.Second)
	var s adapters.NativeSession
	for {
		s = w.session(t, spec.NativeID)
		if s.State == adapters.NativeBusy && toolRunning(t, "sleep", "47.31") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tool never ran: state %q process %+v\n%s", s.State, s.Process, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if s.Process == nil || s.Process.PID != cmd.Process.Pid || s.Process.Evidence != evidenceEnviron {
		t.Errorf("process match %+v, want pid %d by environ", s.Process, cmd.Process.Pid)
	}
	if err := cmd.Process.Signal(a.StopSignal()); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	<-done
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !(ws.Exited() && ws.ExitStatus() == 143) && !(ws.Signaled() && ws.Signal() == syscall.SIGTERM) {
		t.Errorf("pi ended with %v (%v), want 143 or SIGTERM", ws, err)
	}
	time.Sleep(300 * time.Millisecond)
	if toolRunning(t, "sleep", "47.31") {
		t.Error("the tool survived SIGTERM")
	}
	// Killed mid-tool, with no Pi of this store left: the turn was cut off,
	// and the session is over (it must not stay unknown for good).
	if s := w.session(t, spec.NativeID); s.Process != nil || s.State != adapters.NativeAborted {
		t.Errorf("after stop: process %+v state %q; want none, aborted (killed mid-tool)", s.Process, s.State)
	}
}

// toolRunning reports whether a live process has exactly argv: a Pi tool
// runs as `/bin/bash -c CMD`, which execs a simple CMD in place.
func toolRunning(t *testing.T, argv ...string) bool {
	t.Helper()
	table, err := proc.Table()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range table {
		if p.Zombie {
			continue
		}
		if got, err := proc.Cmdline(p.PID); err == nil && slices.Equal(got, argv) {
			return true
		}
	}
	return false
}
