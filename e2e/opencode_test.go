package e2e

import (
	"encoding/json"
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

// opencodeBin finds the opencode CLI installed by scripts/install-agents.sh,
// or skips the test loudly.
func opencodeBin(t *testing.T) string { return agenttest.Bin(t, "opencode") }

// opencodeEnv is an agentctl installation whose opencode reaches a fake
// model server: opencode on PATH, a throwaway HOME with XDG folders and an
// offline opencode.json, and a project folder.
type opencodeEnv struct {
	*Env
	srv  *fakemodel.Server
	data string
	proj string
}

func newOpencodeEnv(t *testing.T) *opencodeEnv {
	t.Helper()
	bin := opencodeBin(t)
	srv := agenttest.FakeModel(t)
	e := NewEnv(t)
	home := t.TempDir()
	o := &opencodeEnv{Env: e, srv: srv, data: filepath.Join(home, ".local", "share")}
	o.proj, _ = filepath.EvalSymlinks(t.TempDir())
	config := filepath.Join(home, ".config", "opencode", "opencode.json")
	if err := os.MkdirAll(filepath.Dir(config), 0o755); err != nil {
		t.Fatal(err)
	}
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
	e.Setenv("HOME", home)
	e.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	e.Setenv("XDG_DATA_HOME", o.data)
	e.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	e.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	// Offline: without it every start looks up the models catalogue.
	e.Setenv("OPENCODE_DISABLE_MODELS_FETCH", "1")
	e.Setenv("OPENCODE_DISABLE_AUTOUPDATE", "1")
	e.Setenv("OPENCODE_DISABLE_SHARE", "1")
	e.Setenv("PATH", filepath.Dir(bin)+":"+os.Getenv("PATH"))
	return o
}

func (o *opencodeEnv) launch(prompt string) api.Session {
	o.T.Helper()
	var s api.Session
	o.JSON(&s, "launch", "opencode", "--json", "--cwd", o.proj, "--model", "fake/fake-model", "-p", prompt)
	return s
}

func (o *opencodeEnv) peek(id string, n int) []string {
	o.T.Helper()
	var tr api.Transcript
	o.JSON(&tr, "peek", "--json", "-n", fmt.Sprint(n), id)
	return texts(tr)
}

// A prompt whose tool runs a few seconds: list shows it running with the
// native id learned from OpenCode's database, peek shows the answer,
// status says exited 0 with the native facts; resume continues the same
// session.
func TestOpencodeLaunchPeekResume(t *testing.T) {
	t.Parallel()
	o := newOpencodeEnv(t)
	s := o.launch("work [[sleep: 6]]")
	if s.Adapter != "opencode" {
		t.Fatalf("launched %+v", s)
	}
	var nativeID string
	WaitFor(t, 120*time.Second, "the session to be listed running with its native id", func() bool {
		for _, l := range o.List().Sessions {
			if l.ID == s.ID && l.Status == api.StatusRunning && l.NativeID != "" {
				nativeID = l.NativeID
				return true
			}
		}
		return false
	})
	if !strings.HasPrefix(nativeID, "ses_") {
		t.Errorf("native id %q is not an OpenCode session id", nativeID)
	}
	for _, l := range o.List("-a").Sessions {
		if l.NativeID == nativeID && l.ID != s.ID {
			t.Errorf("native session %s listed twice: %s (%s) and %s", nativeID, l.ID, l.Origin, s.ID)
		}
	}
	done := o.WaitStatus(s.ID, api.StatusExited, 180*time.Second)
	if done.ExitCode == nil || *done.ExitCode != 0 {
		t.Fatalf("session ended %+v, want exit 0", done)
	}
	if done.NativeID != nativeID || done.Model != "fake/fake-model" || done.TokensIn == nil || *done.TokensIn <= 0 || done.CostUSD == nil || done.Prompt != "work [[sleep: 6]]" {
		t.Errorf("native facts not merged: native %q model %q tokens %v cost %v prompt %q", done.NativeID, done.Model, done.TokensIn, done.CostUSD, done.Prompt)
	}
	if got := o.peek(s.ID, 1); len(got) != 1 || got[0] != "hi from fakellm (after 1 tool calls)" {
		t.Errorf("peek = %q", got)
	}

	var r api.Session
	o.JSON(&r, "resume", "--json", s.ID, "again [[text: resumed ok]]")
	if r.NativeID != nativeID || r.ID == s.ID {
		t.Fatalf("resume: %+v, want a new run of native session %s", r, nativeID)
	}
	if rd := o.WaitStatus(r.ID, api.StatusExited, 180*time.Second); rd.ExitCode == nil || *rd.ExitCode != 0 {
		t.Fatalf("resumed run ended %+v", rd)
	}
	want := []string{"hi from fakellm (after 1 tool calls)", "resumed ok"}
	for _, id := range []string{s.ID, r.ID} {
		if got := o.peek(id, 2); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("peek -n 2 %s = %q, want %q (one native session)", id, got, want)
		}
	}
}

// A long session stopped: opencode (SIGTERM; it ignores SIGINT) and its
// tool, which it would leave running in a session of its own, are gone,
// and status reports how it ended.
func TestOpencodeStop(t *testing.T) {
	t.Parallel()
	o := newOpencodeEnv(t)
	s := o.launch("long [[sleep: 117.59]]")
	WaitFor(t, 120*time.Second, "the tool to run", func() bool { return liveArgv("sleep", "117.59") })
	var final api.Session
	o.JSON(&final, "stop", "--json", s.ID)
	if !final.Status.Ended() {
		t.Fatalf("after stop: %+v", final)
	}
	code := "none"
	if final.ExitCode != nil {
		code = fmt.Sprint(*final.ExitCode)
	}
	t.Logf("after stop: status %s, exit code %s, signal %q", final.Status, code, final.Signal)
	if final.Status == api.StatusExited && (final.ExitCode == nil || *final.ExitCode != 143) {
		t.Errorf("stopped opencode exited %v, want 143 (SIGTERM) or killed", final.ExitCode)
	}
	if final.Status == api.StatusKilled && final.Signal == "" {
		t.Errorf("killed without a signal: %+v", final)
	}
	if alive(final.PID) {
		t.Errorf("opencode (pid %d) survived the stop", final.PID)
	}
	if liveArgv("sleep", "117.59") {
		t.Error("the tool (sleep 117.59) survived the stop")
	}
}
