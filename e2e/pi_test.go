package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
	"github.com/agentctl/agentctl/internal/fakemodel"
)

// piBin finds the pi CLI installed by scripts/install-agents.sh, or skips
// the test loudly.
func piBin(t *testing.T) string { return agenttest.Bin(t, "pi") }

// piEnv is an agentctl installation whose HOME has a Pi models.json
// pointing at a fake model server, with pi on PATH, and a project folder.
type piEnv struct {
	*Env
	srv        *fakemodel.Server
	home, proj string
	binDir     string
}

func newPiEnv(t *testing.T) *piEnv {
	t.Helper()
	bin := piBin(t)
	srv := agenttest.FakeModel(t)

	e := NewEnv(t)
	p := &piEnv{Env: e, srv: srv, home: t.TempDir(), binDir: filepath.Dir(bin)}
	p.proj, _ = filepath.EvalSymlinks(t.TempDir())
	agentDir := filepath.Join(p.home, ".pi", "agent")
	if err := os.MkdirAll(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	models := fmt.Sprintf(`{"providers":{"fakeopenai":{"baseUrl":"%s/v1","api":"openai-completions","apiKey":"fake-key",
  "compat":{"supportsDeveloperRole":false,"supportsReasoningEffort":false},"models":[{"id":"fake-model"}]}}}`, srv.URL())
	if err := os.WriteFile(filepath.Join(agentDir, "models.json"), []byte(models), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Setenv("HOME", p.home)
	e.Setenv("PATH", p.binDir+":"+os.Getenv("PATH"))
	return p
}

// launch starts pi through agentctl and returns the session.
func (p *piEnv) launch(prompt string, extra ...string) api.Session {
	p.T.Helper()
	var s api.Session
	args := append([]string{"launch", "pi", "--json", "--cwd", p.proj, "--model", "fakeopenai/fake-model", "-p", prompt}, extra...)
	p.JSON(&s, args...)
	return s
}

func (p *piEnv) peek(id string, n int) api.Transcript {
	p.T.Helper()
	var tr api.Transcript
	p.JSON(&tr, "peek", "--json", "-n", fmt.Sprint(n), id)
	return tr
}

func texts(tr api.Transcript) []string {
	var out []string
	for _, m := range tr.Messages {
		out = append(out, m.Text)
	}
	return out
}

// liveArgv reports whether a live process has exactly argv. A Pi tool runs
// as `/bin/bash -c CMD`, and bash execs a simple CMD in place, so the tool
// shows as CMD's own argv. (Pi's argv holds the prompt, which mentions CMD,
// until it overwrites its title seconds after start.)
func liveArgv(argv ...string) bool {
	want := strings.Join(argv, "\x00")
	ents, _ := os.ReadDir("/proc")
	for _, en := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
		if err != nil || strings.TrimRight(string(b), "\x00") != want {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(en.Name(), "%d", &pid); err == nil && alive(pid) {
			return true
		}
	}
	return false
}

// A prompt whose tool runs a few seconds: list shows it running with the
// native id, peek shows the answer, status says exited 0; resume appends to
// the same native session.
func TestPiLaunchPeekResume(t *testing.T) {
	t.Parallel()
	p := newPiEnv(t)
	s := p.launch("work [[sleep: 3]]")
	if s.NativeID == "" || s.Adapter != "pi" {
		t.Fatalf("launched session %+v: want adapter pi and a pre-assigned native id", s)
	}
	WaitFor(t, 30*time.Second, "the session to be listed running with its native id", func() bool {
		for _, l := range p.List().Sessions {
			if l.ID == s.ID && l.Status == api.StatusRunning && l.NativeID == s.NativeID {
				return true
			}
		}
		return false
	})
	// The native session is not listed a second time as discovered.
	for _, l := range p.List("-a").Sessions {
		if l.NativeID == s.NativeID && l.ID != s.ID {
			t.Errorf("native session %s listed twice: %s (%s) and %s", s.NativeID, l.ID, l.Origin, s.ID)
		}
	}
	done := p.WaitStatus(s.ID, api.StatusExited, 90*time.Second)
	if done.ExitCode == nil || *done.ExitCode != 0 {
		t.Fatalf("session ended %+v, want exit 0", done)
	}
	if done.Model != "fakeopenai/fake-model" || done.TokensIn == nil || !strings.HasPrefix(done.Prompt, "work") {
		t.Errorf("native facts not merged: model %q tokens %v prompt %q", done.Model, done.TokensIn, done.Prompt)
	}
	if got := texts(p.peek(s.ID, 1)); len(got) != 1 || got[0] != "hi from fakellm (after 1 tool calls)" {
		t.Errorf("peek = %q", got)
	}

	var r api.Session
	p.JSON(&r, "resume", "--json", s.ID, "again [[text: resumed ok]]")
	if r.NativeID != s.NativeID || r.ID == s.ID {
		t.Fatalf("resume: %+v, want a new run of native session %s", r, s.NativeID)
	}
	if rd := p.WaitStatus(r.ID, api.StatusExited, 90*time.Second); rd.ExitCode == nil || *rd.ExitCode != 0 {
		t.Fatalf("resumed run ended %+v", rd)
	}
	want := []string{"hi from fakellm (after 1 tool calls)", "resumed ok"}
	for _, id := range []string{s.ID, r.ID} {
		if got := texts(p.peek(id, 2)); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("peek -n 2 %s = %q, want %q (one native session)", id, got, want)
		}
	}
}

// A long session stopped: Pi and its tool are gone, and status reports how
// it ended.
func TestPiStop(t *testing.T) {
	t.Parallel()
	p := newPiEnv(t)
	s := p.launch("long [[bash: sleep 53.17]]")
	WaitFor(t, 60*time.Second, "the tool to run", func() bool { return liveArgv("sleep", "53.17") })
	var final api.Session
	p.JSON(&final, "stop", "--json", s.ID)
	if !final.Status.Ended() {
		t.Fatalf("after stop: %+v", final)
	}
	if final.Status == api.StatusExited && (final.ExitCode == nil || *final.ExitCode != 143) {
		t.Errorf("stopped pi exited %v, want 143 (SIGTERM) or killed", final.ExitCode)
	}
	if final.Status == api.StatusKilled && final.Signal == "" {
		t.Errorf("killed without a signal: %+v", final)
	}
	if alive(final.PID) {
		t.Errorf("pi (pid %d) survived the stop", final.PID)
	}
	if liveArgv("sleep", "53.17") {
		t.Error("the tool (sleep 53.17) survived the stop")
	}
}
