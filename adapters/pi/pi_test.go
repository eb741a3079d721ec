package pi

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio/storeiotest"
	pisynth "github.com/agentctl/agentctl/internal/synth/pi"
)

// testStore makes a Pi home in a temp dir and returns the adapter reading it.
func testStore(t *testing.T, env map[string]string) (*Adapter, string) {
	t.Helper()
	home := t.TempDir()
	a := New(adapters.Env{Home: home, Getenv: func(k string) string { return env[k] }})
	return a, home
}

// putFixture copies testdata/sessions/name into the store under cwd's slug
// folder, with Pi's file naming, and returns its path.
func putFixture(t *testing.T, home, name, cwd, fileName string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sessions", name))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".pi", "agent", "sessions", CwdSlug(cwd))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, fileName)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func TestCwdSlug(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cwd, want string }{
		{"/tmp/x.y/proj", "--tmp-x.y-proj--"},
		{"/home/a b/my_proj", "--home-a b-my_proj--"},
		{`C:\Users\ada`, "--C--Users-ada--"},
		{"/", "----"},
	} {
		if got := CwdSlug(tc.cwd); got != tc.want {
			t.Errorf("CwdSlug(%q) = %q, want %q", tc.cwd, got, tc.want)
		}
	}
}

func TestDiscoverFixtures(t *testing.T) {
	t.Parallel()
	a, home := testStore(t, nil)
	putFixture(t, home, "resumed.jsonl", "/home/ada/proj", "2026-11-22T06-00-00-000Z_019a0000-0000-7000-8000-000000000001.jsonl")
	putFixture(t, home, "model-error.jsonl", "/home/ada/proj", "2026-11-22T06-30-40-056Z_01a201f3-1eb7-7513-ada7-a18cc61f81d6.jsonl")
	putFixture(t, home, "killed-mid-tool.jsonl", "/home/ada/proj", "2026-11-22T06-31-01-308Z_01a201f3-71bb-734f-8058-ce88daacf049.jsonl")
	putFixture(t, home, "branched.jsonl", "/home/ada/other", "2026-11-20T10-00-00-000Z_01a1f000-0000-7000-8000-00000000b0b0.jsonl")

	got, err := a.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]adapters.NativeSession{}
	for _, s := range got {
		byID[s.NativeID] = s
	}
	want := []adapters.NativeSession{
		{
			NativeID: "019a0000-0000-7000-8000-000000000001", Cwd: "/home/ada/proj", Model: "fakeopenai/fake-model",
			FirstPrompt: "work [[bash: echo hello]]",
			TokensIn:    ptr[int64](2637), TokensOut: ptr[int64](23), CostUSD: ptr(0.0),
			CreatedAt: time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC), State: adapters.NativeDone,
		},
		{
			NativeID: "01a201f3-1eb7-7513-ada7-a18cc61f81d6", Cwd: "/home/ada/proj", Model: "fakeopenai/fake-model",
			FirstPrompt: "fail [[error: 500]]",
			TokensIn:    ptr[int64](0), TokensOut: ptr[int64](0), CostUSD: ptr(0.0),
			CreatedAt: time.Date(2026, 11, 22, 6, 30, 40, 56e6, time.UTC), State: adapters.NativeFailed,
		},
		{
			NativeID: "01a201f3-71bb-734f-8058-ce88daacf049", Cwd: "/home/ada/proj", Model: "fakeopenai/fake-model",
			FirstPrompt: "long [[sleep: 30]]",
			TokensIn:    ptr[int64](639), TokensOut: ptr[int64](14), CostUSD: ptr(0.0),
			CreatedAt: time.Date(2026, 11, 22, 6, 31, 1, 308e6, time.UTC), State: adapters.NativeAborted, // cut off mid-tool, and no Pi runs it
		},
		{
			NativeID: "01a1f000-0000-7000-8000-00000000b0b0", Cwd: "/home/ada/other", Model: "openai/gpt-5",
			FirstPrompt: "plan the refactor",
			TokensIn:    ptr[int64](660), TokensOut: ptr[int64](90), CostUSD: ptr(0.0037),
			CreatedAt: time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC), State: adapters.NativeDone,
		},
	}
	if len(got) != len(want) {
		t.Fatalf("Discover returned %d sessions, want %d: %+v", len(got), len(want), got)
	}
	for _, w := range want {
		g, ok := byID[w.NativeID]
		if !ok {
			t.Errorf("session %s not discovered", w.NativeID)
			continue
		}
		if g.Adapter != "pi" || g.Cwd != w.Cwd || g.Model != w.Model || g.FirstPrompt != w.FirstPrompt ||
			g.State != w.State || !g.CreatedAt.Equal(w.CreatedAt) {
			t.Errorf("session %s:\n got %+v\nwant %+v", w.NativeID, g, w)
		}
		if g.TokensIn == nil || *g.TokensIn != *w.TokensIn || g.TokensOut == nil || *g.TokensOut != *w.TokensOut {
			t.Errorf("session %s tokens = %v/%v, want %d/%d", w.NativeID, g.TokensIn, g.TokensOut, *w.TokensIn, *w.TokensOut)
		}
		if g.CostUSD == nil || abs(*g.CostUSD-*w.CostUSD) > 1e-9 {
			t.Errorf("session %s cost = %v, want %v", w.NativeID, g.CostUSD, *w.CostUSD)
		}
		if g.UpdatedAt.Before(g.CreatedAt) || g.Path == "" || g.Process != nil || len(g.Warnings) != 0 {
			t.Errorf("session %s: updated %v path %q process %v warnings %v", w.NativeID, g.UpdatedAt, g.Path, g.Process, g.Warnings)
		}
	}
	if u := byID["01a1f000-0000-7000-8000-00000000b0b0"].UpdatedAt; !u.Equal(time.Date(2026, 11, 20, 10, 2, 10, 0, time.UTC)) {
		t.Errorf("branched updated = %v, want the last record's time", u)
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func TestTranscriptFollowsActiveBranch(t *testing.T) {
	t.Parallel()
	a, home := testStore(t, nil)
	putFixture(t, home, "branched.jsonl", "/home/ada/other", "2026-11-20T10-00-00-000Z_01a1f000-0000-7000-8000-00000000b0b0.jsonl")
	putFixture(t, home, "resumed.jsonl", "/home/ada/proj", "2026-11-22T06-00-00-000Z_019a0000-0000-7000-8000-000000000001.jsonl")
	ctx := context.Background()

	for _, tc := range []struct {
		id   string
		n    int
		want []string
	}{
		{"01a1f000-0000-7000-8000-00000000b0b0", 0, []string{"user: plan the refactor", "assistant: Here is a plan.", "user: try approach C", "assistant: second branch answer"}},
		{"01a1f000-0000-7000-8000-00000000b0b0", 2, []string{"user: try approach C", "assistant: second branch answer"}},
		{"01a1f000", 1, []string{"assistant: second branch answer"}}, // a unique prefix, as Pi accepts
		{"019a0000-0000-7000-8000-000000000001", 0, []string{
			"user: work [[bash: echo hello]]", "tool: bash: echo hello", "tool: hello\n",
			"assistant: hi from fakellm (after 1 tool calls)", "user: again [[text: resumed ok]]", "assistant: resumed ok",
			"user: -dash prompt [[text: via stdin]]", "assistant: via stdin",
		}},
		{"019a0000-0000-7000-8000-000000000001", 100, nil}, // nil: same as n=0
	} {
		got, err := a.Transcript(ctx, tc.id, tc.n)
		if err != nil {
			t.Fatalf("Transcript(%s, %d): %v", tc.id, tc.n, err)
		}
		want := tc.want
		if want == nil {
			all, _ := a.Transcript(ctx, tc.id, 0)
			for _, m := range all {
				want = append(want, m.Role+": "+m.Text)
			}
		}
		var lines []string
		for _, m := range got {
			lines = append(lines, m.Role+": "+m.Text)
			if m.Time.IsZero() {
				t.Errorf("message %q has no time", m.Text)
			}
		}
		if strings.Join(lines, "|") != strings.Join(want, "|") {
			t.Errorf("Transcript(%s, %d):\n got %q\nwant %q", tc.id, tc.n, lines, want)
		}
	}
	if _, err := a.Transcript(ctx, "nope", 5); err == nil {
		t.Error("Transcript of an unknown id: no error")
	}
}

func TestSessionDirEnvAndAgentDir(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	agentDir := filepath.Join(home, "elsewhere", "agent")
	flat := filepath.Join(home, "flat-sessions")
	env := map[string]string{envAgentDir: agentDir, envSessionDir: flat}
	a := New(adapters.Env{Home: home, Getenv: func(k string) string { return env[k] }})

	b, err := os.ReadFile(filepath.Join("testdata", "sessions", "branched.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// One in the flat session dir (as Pi writes with the env var set), one
	// in the agent dir's default store.
	for _, p := range []string{
		filepath.Join(flat, "2026-11-20T10-00-00-000Z_01a1f000-0000-7000-8000-00000000b0b0.jsonl"),
		filepath.Join(agentDir, "sessions", "--x--", "2026-11-20T10-00-00-000Z_01a1f000-0000-7000-8000-00000000b0b1.jsonl"),
	} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		data := b
		if strings.HasSuffix(p, "b0b1.jsonl") {
			data = []byte(strings.Replace(string(b), "00000000b0b0", "00000000b0b1", 1))
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := a.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d sessions, want 2 (flat dir and agent dir): %+v", len(got), got)
	}
	// ~ in the env var is expanded against the home, as Pi does.
	env[envSessionDir] = "~/flat-sessions"
	if l := a.layout(); l.flatDir != flat {
		t.Errorf("flat dir = %q, want %q", l.flatDir, flat)
	}
	// settings.json's sessionDir applies when the env var is unset.
	delete(env, envSessionDir)
	os.WriteFile(filepath.Join(agentDir, "settings.json"), []byte(`{"sessionDir":"~/from-settings"}`), 0o644)
	if l := a.layout(); l.flatDir != filepath.Join(home, "from-settings") {
		t.Errorf("flat dir from settings = %q", l.flatDir)
	}
	if l := a.layout(); l.dirFor("/a/b") != filepath.Join(home, "from-settings") {
		t.Errorf("dirFor with a flat dir = %q", l.dirFor("/a/b"))
	}
}

func TestDiscoverMissingStore(t *testing.T) {
	t.Parallel()
	a, _ := testStore(t, nil)
	got, err := a.Discover(context.Background())
	if err != nil || len(got) != 0 {
		t.Fatalf("Discover on a home without Pi = %v, %v; want nothing, no error", got, err)
	}
}

// A Discover between changes reuses what the last one built; a change to
// one file is seen, at the cost of reading that file. One session read
// alone is what Discover says of it.
func TestDiscoverReadsOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := pisynth.GenerateStore(home, 6, 1); err != nil {
		t.Fatal(err)
	}
	store := storeiotest.MemoStore{
		New: func(watch adapters.FolderWatch) (adapters.Adapter, func() int64) {
			a := New(adapters.Env{Home: home, Folders: watch})
			return a, func() int64 { return a.files.Stats().Misses }
		},
		Grow: func(t *testing.T, path string) {
			storeiotest.AppendLine(t, path, `{"type":"message","id":"ffffffff","parentId":null,"timestamp":"2026-11-22T06:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"one more"}],"provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"total":0}},"stopReason":"stop","timestamp":1}}`)
		},
		Stats: func(a adapters.Adapter) uint64 { return a.(*Adapter).folders.Stats() },
	}
	storeiotest.CheckMemo(t, store)
	t.Run("one", func(t *testing.T) { storeiotest.CheckDiscoverOne(t, store) })
}
