package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/adapters/storeio/storeiotest"
	claudesynth "github.com/agentctl/agentctl/internal/synth/claude"
	"github.com/agentctl/agentctl/proc"
)

// helperEnv makes the test binary act as a long-running stand-in for a
// claude process (its argv is whatever the test gives it).
const helperEnv = "AGENTCTL_CLAUDE_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "sleep" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startHelper starts a process whose argv is argv (argv[0] included), in
// dir, with env added to the test's environment (a HOME, for one), and
// stops it with the test.
func startHelper(t *testing.T, env []string, dir string, argv ...string) proc.Info {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Args = argv
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), helperEnv+"=sleep")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// Wait until the child has exec'd (its argv is the one asked for).
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := proc.Cmdline(cmd.Process.Pid)
		if err == nil && len(got) > 0 && got[0] == argv[0] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("helper did not start: %v %v", got, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	info, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

const (
	resumedID = "b5b0dadd-5911-49b9-ab7c-7e019a734bb1" // two runs, the second a --resume
	toolID    = "2f187516-e195-4326-adc4-908e2f238274" // one run with a [[sleep: 5]] tool call
)

// fixtureHome copies testdata/home (transcripts the real Claude Code 2.1.330
// wrote against the fake model, long strings elided) into a temporary home.
func fixtureHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	err := filepath.WalkDir("testdata/home", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/home", p)
		dst := filepath.Join(home, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return home
}

func newAdapter(home string) *Adapter {
	return New(adapters.Env{Home: home, Getenv: func(string) string { return "" }})
}

func discover(t *testing.T, a *Adapter) map[string]adapters.NativeSession {
	t.Helper()
	ss, err := a.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]adapters.NativeSession{}
	for _, s := range ss {
		if _, dup := out[s.NativeID]; dup {
			t.Errorf("session %s listed twice", s.NativeID)
		}
		out[s.NativeID] = s
	}
	return out
}

func TestProjectSlug(t *testing.T) {
	t.Parallel()
	long := "/tmp/w/" + strings.Repeat("x", 120) + "/" + strings.Repeat("y", 120)
	tests := []struct{ cwd, want string }{
		{"/tmp/w/proj", "-tmp-w-proj"},
		{"/tmp/w/My Proj.v2_x", "-tmp-w-My-Proj-v2-x"},
		{"/tmp/w/ünï-code", "-tmp-w--n--code"},
		{"/tmp/w/a..b/c", "-tmp-w-a--b-c"},
		{long, ProjectSlug(long)[:200] + "-mcw99s"},
	}
	for _, tt := range tests {
		if got := ProjectSlug(tt.cwd); got != tt.want {
			t.Errorf("ProjectSlug(%q) = %q, want %q", tt.cwd, got, tt.want)
		}
	}
	if got := ProjectSlug(long); len(got) != 207 {
		t.Errorf("long slug has %d chars, want 207", len(got))
	}
}

func ptr[T any](v T) *T { return &v }

func TestDiscoverFixtures(t *testing.T) {
	t.Parallel()
	a := newAdapter(fixtureHome(t))
	got := discover(t, a)
	ts := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	want := []adapters.NativeSession{
		{
			NativeID: resumedID, Cwd: "/home/dev/proj", Model: "claude-opus-5-5",
			FirstPrompt: "first [[bash: true]]",
			TokensIn:    ptr[int64](7725), TokensOut: ptr[int64](61), CostUSD: ptr(0.032119999999999996),
			CreatedAt: ts("2026-11-22T06:28:47.271Z"), UpdatedAt: ts("2026-11-22T06:28:48.092Z"), State: adapters.NativeDone,
		},
		{
			NativeID: toolID, Cwd: "/home/dev/proj", Model: "claude-opus-5-5",
			FirstPrompt: "long [[sleep: 5]]",
			TokensIn:    ptr[int64](5122), TokensOut: ptr[int64](69), CostUSD: ptr(0.021868),
			CreatedAt: ts("2026-11-22T06:28:57.245Z"), UpdatedAt: ts("2026-11-22T06:29:02.527Z"), State: adapters.NativeDone,
		},
	}
	if len(got) != len(want) {
		t.Fatalf("%d sessions, want %d: %v", len(got), len(want), got)
	}
	for _, w := range want {
		g, ok := got[w.NativeID]
		if !ok {
			t.Errorf("session %s not found", w.NativeID)
			continue
		}
		if g.Adapter != "claude" || g.Cwd != w.Cwd || g.Model != w.Model || g.FirstPrompt != w.FirstPrompt ||
			*g.TokensIn != *w.TokensIn || *g.TokensOut != *w.TokensOut ||
			*g.CostUSD != *w.CostUSD || !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) ||
			g.State != w.State || g.Process != nil || len(g.Warnings) != 0 || !strings.HasSuffix(g.Path, w.NativeID+".jsonl") {
			t.Errorf("session %s:\n got %+v\nwant %+v", w.NativeID, g, w)
		}
	}
}

// writeTranscript writes a transcript for id under cwd's project folder.
func writeTranscript(t *testing.T, home, cwd, id, content string) string {
	t.Helper()
	dir := filepath.Join(home, ".claude", "projects", ProjectSlug(cwd))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func lines(recs ...string) string { return strings.Join(recs, "\n") + "\n" }

func userRec(text string) string {
	b, _ := json.Marshal(text)
	return `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":` + string(b) +
		`},"uuid":"u1","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/w/p","sessionId":"s"}`
}

func assistantRec(id, text, stop string, in, out int) string {
	b, _ := json.Marshal(text)
	return fmt.Sprintf(`{"parentUuid":"u1","isSidechain":false,"message":{"id":%q,"role":"assistant","model":"claude-x","content":[{"type":"text","text":%s}],"stop_reason":%q,"usage":{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"type":"assistant","uuid":"a1","timestamp":"2026-01-02T03:04:06.000Z","cwd":"/w/p","sessionId":"s"}`,
		id, b, stop, in, out)
}

func costRec(cost float64, in, out int) string {
	return fmt.Sprintf(`{"type":"cost-state","sessionId":"s","totalCostUSD":%v,"modelUsage":{"claude-x":{"inputTokens":%d,"outputTokens":%d}}}`, cost, in, out)
}

func TestDiscoverRobust(t *testing.T) {
	t.Parallel()
	good := lines(userRec("do it"), assistantRec("m1", "done it", "end_turn", 10, 5))
	nested := `{"type":"user","message":{"role":"user","content":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}`
	tests := []struct {
		name      string
		content   string
		prompt    string
		tokensIn  int64 // -1: unknown
		state     adapters.NativeState
		warnLines int // unreadable lines reported
	}{
		{"empty file", "", "", 0, adapters.NativeAborted, 0},
		{"half-written last line", good + `{"parentUuid":"a1","type":"assistant","message":{"id":"m2","content":[{"type":"te`, "do it", 10, adapters.NativeDone, 0},
		{"unknown record types", lines(`{"type":"atis-latch","atis":""}`, `{"type":"brand-new-kind","x":[1,2]}`) + good, "do it", 10, adapters.NativeDone, 0},
		{"binary garbage", "\x00\xff\xfe garbage\n" + good + "\x01\x02\x03\n", "do it", 10, adapters.NativeDone, 2},
		{"wrong types in known fields", lines(userRec("do it"), `{"type":"assistant","message":{"content":5,"usage":"lots","model":7}}`, `{"type":"cost-state","totalCostUSD":"free"}`), "do it", 0, adapters.NativeAborted, 2},
		{"deeply nested value", lines(nested) + good, "do it", 10, adapters.NativeDone, 1},
		{"interrupted turn", good + lines(userRec("next"), userRec("[Request interrupted by user for tool use]")), "do it", 10, adapters.NativeAborted, 0},
		{"API error", good + lines(userRec("next"), `{"type":"assistant","isApiErrorMessage":true,"message":{"id":"e","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error: 500"}],"stop_reason":"stop_sequence","usage":{"input_tokens":0,"output_tokens":0}}}`), "do it", 10, adapters.NativeFailed, 0},
		{"tool call pending", lines(userRec("go"), `{"type":"assistant","message":{"id":"m1","model":"claude-x","role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"sleep 9"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":1}}}`), "go", 3, adapters.NativeAborted, 0},
		{"cost-state plus a later run", good + lines(costRec(0.5, 100, 50), userRec("again"), assistantRec("m3", "again done", "end_turn", 7, 3)), "do it", 107, adapters.NativeDone, 0},
	}
	// No Claude runs in these tests: a turn the transcript leaves unfinished
	// was cut off, and reads aborted.
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			id := "0b6c1b1e-0000-4000-8000-000000000001"
			writeTranscript(t, home, "/w/p", id, tt.content)
			s := discover(t, newAdapter(home))[id]
			if s.FirstPrompt != tt.prompt || s.State != tt.state {
				t.Errorf("prompt %q state %q; want %q %q", s.FirstPrompt, s.State, tt.prompt, tt.state)
			}
			if s.TokensIn == nil || *s.TokensIn != tt.tokensIn {
				t.Errorf("tokens in %v, want %d", s.TokensIn, tt.tokensIn)
			}
			warned := len(s.Warnings) > 0
			if warned != (tt.warnLines > 0) || (warned && !strings.HasPrefix(s.Warnings[0], strconv.Itoa(tt.warnLines)+" unreadable")) {
				t.Errorf("warnings %q, want %d unreadable lines", s.Warnings, tt.warnLines)
			}
		})
	}
}

// TestDiscoverHugeFiles: a 2 GB transcript (sparse, so it costs no disk) is
// read by its head and tail only, with or without a closing cost-state, and
// a line over the line limit is skipped with a warning.
func TestDiscoverHugeFiles(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	mk := func(id string, tail string) {
		p := writeTranscript(t, home, "/w/p", id, lines(userRec("start")))
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt([]byte("\n"+tail), 2<<30); err != nil {
			t.Fatal(err)
		}
	}
	withCost := "0b6c1b1e-0000-4000-8000-000000000002"
	noCost := "0b6c1b1e-0000-4000-8000-000000000003"
	mk(withCost, lines(assistantRec("m1", "the end", "end_turn", 1, 1), costRec(1.5, 1000, 200)))
	mk(noCost, lines(assistantRec("m1", "still going", "end_turn", 1, 1)))
	long := "0b6c1b1e-0000-4000-8000-000000000004"
	writeTranscript(t, home, "/w/p", long, lines(userRec("hi"), `{"type":"user","pad":"`+strings.Repeat("x", maxLine+10)+`"}`, assistantRec("m1", "after the long line", "end_turn", 2, 2)))

	got := discover(t, newAdapter(home))
	if s := got[withCost]; s.FirstPrompt != "start" || s.TokensIn == nil || *s.TokensIn != 1000 || *s.CostUSD != 1.5 {
		t.Errorf("2 GB with cost-state: %+v", s)
	}
	if s := got[noCost]; s.FirstPrompt != "start" || s.State != adapters.NativeDone || s.Model != "claude-x" || s.TokensIn != nil {
		t.Errorf("2 GB without cost-state: %+v (tokens must be unknown)", s)
	}
	if s := got[long]; s.State != adapters.NativeDone || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "lines over") {
		t.Errorf("long line: %+v", s)
	}
}

// A transcript whose latest turn is tool calls, their text answer far back,
// is read by its head and its tail, which stops once it holds the latest
// facts (time, model, turn, cost-state): it does not read on back to an
// answer's text, nor, growing to the whole file, read it all again.
func TestTailStopsAtTheLatestFacts(t *testing.T) {
	t.Parallel()
	recs := []string{userRec("do it"), assistantRec("m0", "an answer far back", "end_turn", 1, 1), userRec("now the tools")}
	for i := range 200 {
		recs = append(recs, fmt.Sprintf(`{"type":"assistant","message":{"id":"m%d","model":"claude-x","role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"echo %s"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":1}},"timestamp":"2026-01-02T03:05:00.000Z"}`, i+1, i, strings.Repeat("x", 1000)))
	}
	recs = append(recs, costRec(0.5, 100, 50))
	p := writeTranscript(t, t.TempDir(), "/w/p", "0b6c1b1e-0000-4000-8000-000000000010", lines(recs...))
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() < 4*tailStart {
		t.Fatalf("a transcript of %d bytes (%v), want more than the tail's first windows", fi.Size(), err)
	}
	s, err := summaryReader{ctx: context.Background()}.fill(f, storeio.KeyOf(p, fi), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Complete || s.Turn != turnInProgress || s.Model != "claude-x" || !s.HaveCost || s.FirstPrompt != "do it" {
		t.Errorf("read whole %v, turn %v, model %q, cost-state %v, prompt %q; want the head and tail only, the tool turn, claude-x, a cost-state, do it",
			s.Complete, s.Turn, s.Model, s.HaveCost, s.FirstPrompt)
	}
}

// TestDiscoverIncremental: an appended transcript is read from where the
// last read stopped, and only then.
// watchers are the ways an adapter learns of changes: stat alone, and a
// folder watch where the system has one.
func watchers(t *testing.T) map[string]adapters.FolderWatch {
	out := map[string]adapters.FolderWatch{"stat": nil}
	w, err := storeio.NewWatcher()
	if err != nil {
		t.Logf("no folder watch: %v", err)
		return out
	}
	t.Cleanup(func() { w.Close() })
	out["watched"] = w
	return out
}

func TestDiscoverIncremental(t *testing.T) {
	t.Parallel()
	for name, watch := range watchers(t) {
		t.Run(name, func(t *testing.T) { testDiscoverIncremental(t, watch) })
	}
}

func testDiscoverIncremental(t *testing.T, watch adapters.FolderWatch) {
	home := t.TempDir()
	id := "0b6c1b1e-0000-4000-8000-000000000005"
	first := "NOT JSON, FIRST LINE\n" + lines(userRec("do it"))
	p := writeTranscript(t, home, "/w/p", id, first)
	a := New(adapters.Env{Home: home, Getenv: func(string) string { return "" }, Folders: watch})
	s := discover(t, a)[id]
	if len(s.Warnings) != 1 || s.State != adapters.NativeAborted {
		t.Fatalf("first read: %+v", s)
	}
	// Rewrite the first line in place with a valid record of the same
	// length, then append: an incremental read does not look back there.
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte(`{"type":"x","y":"12"}`[:20]), 0)
	f.Close()
	appendTo(t, p, lines(assistantRec("m1", "done", "end_turn", 4, 2)))
	s = discover(t, a)[id]
	if s.State != adapters.NativeDone || len(s.Warnings) != 1 || *s.TokensIn != 4 {
		t.Errorf("after append: %+v (want the old warning kept: the start was not re-read)", s)
	}
	// Half a line appended: nothing changes until it is complete.
	rec := assistantRec("m2", "more", "end_turn", 1, 1)
	appendTo(t, p, rec[:30])
	if s = discover(t, a)[id]; *s.TokensIn != 4 {
		t.Errorf("half line: %+v", s)
	}
	appendTo(t, p, rec[30:]+"\n")
	if s = discover(t, a)[id]; *s.TokensIn != 5 {
		t.Errorf("completed line: %+v", s)
	}
	// Truncated and rewritten: read again from the start.
	os.WriteFile(p, []byte(lines(userRec("other"), assistantRec("m9", "fresh", "end_turn", 9, 9), costRec(0.1, 9, 9))), 0o644)
	if s = discover(t, a)[id]; s.FirstPrompt != "other" || *s.TokensIn != 9 || len(s.Warnings) != 0 {
		t.Errorf("rewritten: %+v", s)
	}
	// A session in a project folder new since the last query.
	other := "0b6c1b1e-0000-4000-8000-000000000006"
	writeTranscript(t, home, "/w/new", other, lines(userRec("new one")))
	if s = discover(t, a)[other]; s.FirstPrompt != "new one" {
		t.Errorf("a new project's session: %+v", s)
	}
	// Deleted: gone from the list.
	os.Remove(p)
	if _, ok := discover(t, a)[id]; ok {
		t.Error("deleted transcript still listed")
	}
	if _, _, err := a.summaries.GetKey(storeio.FileKey{Path: p}, summaryReader{ctx: context.Background()}.fill); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("vanished file: %v", err)
	}
}

func appendTo(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestProcessMatching(t *testing.T) {
	home := fixtureHome(t)
	reg := filepath.Join(home, ".claude", "sessions")
	os.MkdirAll(reg, 0o755)
	writeReg := func(info proc.Info, id, status string, procStart string) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"pid": info.PID, "sessionId": id, "cwd": "/home/dev/proj",
			"startedAt": info.StartTime.UnixMilli(), "procStart": procStart, "status": status, "kind": "interactive"})
		if err := os.WriteFile(filepath.Join(reg, strconv.Itoa(info.PID)+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a := newAdapter(home)
	// The processes of this store run under its HOME.
	ours := []string{"HOME=" + home, "CLAUDE_CONFIG_DIR="}

	// The registry vouches for a live process with the recorded start.
	p1 := startHelper(t, ours, t.TempDir(), "claude")
	writeReg(p1, resumedID, "busy", strconv.FormatUint(p1.Start, 10))
	// A stale entry: right pid, wrong start (the pid was recycled).
	p2 := startHelper(t, ours, t.TempDir(), "claude", "--print")
	writeReg(p2, toolID, "idle", strconv.FormatUint(p2.Start+12345, 10))
	got := discover(t, a)
	if s := got[resumedID]; s.Process == nil || s.Process.PID != p1.PID || s.Process.Start != p1.Start || s.Process.Evidence != "registry" || s.State != adapters.NativeBusy {
		t.Errorf("registry match: %+v %+v", s, s.Process)
	}
	if s := got[toolID]; s.Process != nil || s.State != adapters.NativeDone {
		t.Errorf("stale registry entry matched: %+v", s)
	}

	// The argv names the session.
	id3 := "0b6c1b1e-0000-4000-8000-000000000006"
	writeTranscript(t, home, "/w/q", id3, lines(userRec("x"), assistantRec("m", "y", "end_turn", 1, 1)))
	p3 := startHelper(t, ours, t.TempDir(), "claude", "-p", "--resume", id3, "--output-format", "json")
	// A new interactive session: registered, no transcript yet.
	id4 := "0b6c1b1e-0000-4000-8000-000000000007"
	p4 := startHelper(t, ours, t.TempDir(), "claude.exe")
	writeReg(p4, id4, "idle", strconv.FormatUint(p4.Start, 10))
	got = discover(t, a)
	if s := got[id3]; s.Process == nil || s.Process.PID != p3.PID || s.Process.Evidence != "argv" || s.State != adapters.NativeRunning {
		t.Errorf("argv match: %+v %+v", s, s.Process)
	}
	if s := got[id4]; s.Process == nil || s.Process.PID != p4.PID || s.State != adapters.NativeIdle || s.Cwd != "/home/dev/proj" {
		t.Errorf("registered session without transcript: %+v", s)
	}

	// A claude with nothing saying which session it runs, in a session's
	// folder: that session's end cannot be told, and no session is
	// claimed running.
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	id5 := "0b6c1b1e-0000-4000-8000-000000000008"
	writeTranscript(t, home, dir, id5, lines(strings.Replace(userRec("x"), `"/w/p"`, strconv.Quote(dir), 1), assistantRec("m", "y", "end_turn", 1, 1)))
	startHelper(t, ours, dir, "claude")
	if s := discover(t, a)[id5]; s.Process != nil || s.State != adapters.NativeUnknown {
		t.Errorf("ambiguous cwd: %+v", s)
	}
}

// A Claude under another HOME (another user's, or a test's) works on
// another store: its argv naming one of this store's sessions, or its cwd
// being one of this store's folders, says nothing about this store.
func TestProcessesOfAnotherStoreAreNotOurs(t *testing.T) {
	home := fixtureHome(t)
	a := newAdapter(home)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	ended := "0b6c1b1e-0000-4000-8000-000000000009"
	writeTranscript(t, home, dir, ended, lines(strings.Replace(userRec("x"), `"/w/p"`, strconv.Quote(dir), 1), assistantRec("m", "y", "end_turn", 1, 1)))
	before := discover(t, a)[ended]
	if before.State != adapters.NativeDone {
		t.Fatalf("with no process, the session is %s, want done", before.State)
	}

	tests := []struct {
		name string
		env  []string
		ours bool
	}{
		{"another HOME", []string{"HOME=" + t.TempDir(), "CLAUDE_CONFIG_DIR="}, false},
		{"another config folder", []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + t.TempDir()}, false},
		{"this store through CLAUDE_CONFIG_DIR", []string{"HOME=" + t.TempDir(), "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude")}, true},
		{"this HOME", []string{"HOME=" + home, "CLAUDE_CONFIG_DIR="}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startHelper(t, tt.env, dir, "claude", "--resume", ended)
			s := discover(t, a)[ended]
			if tt.ours && (s.Process == nil || s.Process.PID != p.PID) {
				t.Errorf("a Claude of this store is not matched: %+v", s)
			}
			if !tt.ours && (s.Process != nil || s.State != adapters.NativeDone) {
				t.Errorf("a Claude of another store is matched: %+v %+v", s, s.Process)
			}
			// A process of another store that names the session is
			// turned down, and explain says so.
			rejected := len(s.Evidence) == 1 && s.Evidence[0].Kind == adapters.EvidenceRejected && s.Evidence[0].PID == p.PID
			if rejected == tt.ours {
				t.Errorf("evidence %+v (ours: %v)", s.Evidence, tt.ours)
			}
		})
	}
}

// A registry entry whose pid is gone, or now runs another process, is
// stale: not a live session, and named as turned down.
func TestStaleRegistryEntryIsRejected(t *testing.T) {
	home := fixtureHome(t)
	a := newAdapter(home)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	id := "0b6c1b1e-0000-4000-8000-00000000000b"
	writeTranscript(t, home, dir, id, lines(strings.Replace(userRec("x"), `"/w/p"`, strconv.Quote(dir), 1), assistantRec("m", "y", "end_turn", 1, 1)))
	self, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// This test's own pid, with a start stamp it does not have: a pid
	// reused by another process.
	entry := fmt.Sprintf(`{"pid":%d,"sessionId":%q,"cwd":%q,"startedAt":%d,"procStart":"%d","status":"busy"}`,
		self.PID, id, dir, time.Now().Add(-time.Hour).UnixMilli(), self.Start+12345)
	regDir := filepath.Join(home, ".claude", "sessions")
	if err := os.MkdirAll(regDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(regDir, fmt.Sprintf("%d.json", self.PID)), []byte(entry), 0o600); err != nil {
		t.Fatal(err)
	}
	s := discover(t, a)[id]
	if s.Process != nil || s.State != adapters.NativeDone {
		t.Errorf("a stale entry made the session live: %+v %+v", s, s.Process)
	}
	if len(s.Evidence) != 1 || s.Evidence[0].Kind != adapters.EvidenceRejected || s.Evidence[0].PID != self.PID ||
		!strings.HasSuffix(s.Evidence[0].Source, fmt.Sprintf("%d.json", self.PID)) {
		t.Errorf("evidence %+v, want the stale entry rejected", s.Evidence)
	}
}

func TestArgvSession(t *testing.T) {
	t.Parallel()
	id := "0b6c1b1e-0000-4000-8000-000000000009"
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"claude", "-p", "--session-id", id}, id},
		{[]string{"claude", "--session-id=" + id}, id},
		{[]string{"claude", "-r", id, "hello"}, id},
		{[]string{"claude", "--resume=" + id}, id},
		{[]string{"claude", "--resume", id, "--fork-session"}, ""},
		{[]string{"claude", "-p", "--", "--session-id", id}, ""},
		{[]string{"claude", "--session-id", "../../etc"}, ""},
		{[]string{"claude", "--session-id"}, ""},
	}
	for _, tt := range tests {
		if got := argvSession(tt.argv); got != tt.want {
			t.Errorf("argvSession(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
	for argv, want := range map[string]bool{"claude": true, "/x/.bin/claude": true, "claude.exe": true, "node /x/claude-code/cli.js": true, "claudette": false, "node x.js": false} {
		if got := claudeArgv(strings.Fields(argv)); got != want {
			t.Errorf("claudeArgv(%q) = %v", argv, got)
		}
	}
}

func TestTranscript(t *testing.T) {
	t.Parallel()
	a := newAdapter(fixtureHome(t))
	ctx := context.Background()
	all, err := a.Transcript(ctx, resumedID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range all {
		got = append(got, m.Role+": "+m.Text)
	}
	want := []string{
		"user: first [[bash: true]]",
		"tool: Bash: true",
		"tool: (Bash completed with no output)",
		"assistant: hi from fakellm (after 1 tool calls)",
		"user: again [[text: resumed ok]]",
		"assistant: resumed ok",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("transcript:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	last, err := a.Transcript(ctx, resumedID, 2)
	if err != nil || len(last) != 2 || last[1].Text != "resumed ok" || last[0].Role != "user" || last[1].Time.IsZero() {
		t.Errorf("last 2: %+v %v", last, err)
	}
	if _, err := a.Transcript(ctx, "0b6c1b1e-0000-4000-8000-00000000000f", 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("unknown session: %v", err)
	}
	if _, err := a.Transcript(ctx, "../../../etc/passwd", 1); err == nil {
		t.Error("a path as session id was accepted")
	}
}

// TestTranscriptTail: on a large transcript the last n messages are read
// from the end and equal the end of the full read.
func TestTranscriptTail(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	var b strings.Builder
	for i := 0; i < 400; i++ {
		b.WriteString(userRec(fmt.Sprintf("prompt %d %s", i, strings.Repeat("p", 400))) + "\n")
		b.WriteString(assistantRec(fmt.Sprintf("m%d", i), fmt.Sprintf("answer %d", i), "end_turn", 1, 1) + "\n")
	}
	id := "0b6c1b1e-0000-4000-8000-00000000000a"
	writeTranscript(t, home, "/w/p", id, b.String())
	a := newAdapter(home)
	all, err := a.Transcript(context.Background(), id, 0)
	if err != nil || len(all) != 800 {
		t.Fatalf("all: %d %v", len(all), err)
	}
	for _, n := range []int{1, 5, 300, 799, 800, 1000} {
		got, err := a.Transcript(context.Background(), id, n)
		if err != nil {
			t.Fatal(err)
		}
		want := all[max(len(all)-n, 0):]
		if len(got) != len(want) || got[0] != want[0] || got[len(got)-1] != want[len(want)-1] {
			t.Errorf("n=%d: %d messages, first %q", n, len(got), got[0].Text)
		}
	}
}

func TestHistoryFirstPrompt(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	id := "0b6c1b1e-0000-4000-8000-00000000000b"
	// A transcript whose head has no prompt (it only has tool traffic).
	writeTranscript(t, home, "/w/p", id, lines(`{"type":"assistant","message":{"id":"m","model":"claude-x","role":"assistant","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn"}}`))
	os.WriteFile(filepath.Join(home, ".claude", "history.jsonl"), []byte(lines(
		`{"display":"typed first","pastedContents":{},"timestamp":1,"project":"/w/p","sessionId":"`+id+`"}`,
		`{"display":"typed later","timestamp":2,"project":"/w/p","sessionId":"`+id+`"}`,
		`not json`)), 0o644)
	a := newAdapter(home)
	if s := discover(t, a)[id]; s.FirstPrompt != "typed first" {
		t.Errorf("first prompt %q", s.FirstPrompt)
	}
}

func TestConfigDirFromEnv(t *testing.T) {
	t.Parallel()
	home := fixtureHome(t)
	alt := t.TempDir()
	os.Rename(filepath.Join(home, ".claude"), filepath.Join(alt, "cfg"))
	a := New(adapters.Env{Home: home, Getenv: func(k string) string {
		if k == "CLAUDE_CONFIG_DIR" {
			return filepath.Join(alt, "cfg")
		}
		return ""
	}})
	if got := discover(t, a); len(got) != 2 {
		t.Errorf("CLAUDE_CONFIG_DIR: %d sessions", len(got))
	}
	if got := discover(t, newAdapter(t.TempDir())); len(got) != 0 {
		t.Errorf("empty home: %d sessions", len(got))
	}
}

// TestRegistryUnreadable: when the live processes cannot all be seen, no
// session is said to have ended, and each says why.
func TestRegistryUnreadable(t *testing.T) {
	t.Parallel()
	home := fixtureHome(t)
	// A file where the registry folder should be.
	if err := os.WriteFile(filepath.Join(home, ".claude", "sessions"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := discover(t, newAdapter(home))
	s := got[resumedID]
	if s.State != adapters.NativeUnknown || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "live-session registry") {
		t.Errorf("unreadable registry: %+v", s)
	}
	if s.FirstPrompt != "first [[bash: true]]" || s.Model != "claude-opus-5-5" || s.TokensIn == nil {
		t.Errorf("facts lost with the registry: %+v", s)
	}
}

// A session cut off mid-tool (its Claude killed, its registry entry gone)
// is unknown only while a Claude that may be working on it lives in its
// folder, with that pid named; then it reads aborted, not unknown for good.
func TestCutOffSessionIsUnknownOnlyWhileAContenderLives(t *testing.T) {
	home := fixtureHome(t)
	a := newAdapter(home)
	ours := []string{"HOME=" + home, "CLAUDE_CONFIG_DIR="}
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	id := "0b6c1b1e-0000-4000-8000-00000000000a"
	pending := `{"type":"assistant","message":{"id":"m1","model":"claude-x","role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"sleep 9"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":1}}}`
	writeTranscript(t, home, dir, id, lines(strings.Replace(userRec("go"), `"/w/p"`, strconv.Quote(dir), 1), pending))

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Args = []string{"claude"}
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), ours...), helperEnv+"=sleep")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if argv, _ := proc.Cmdline(cmd.Process.Pid); len(argv) == 1 && argv[0] == "claude" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("helper did not start")
		}
	}
	s := discover(t, a)[id]
	if s.State != adapters.NativeUnknown || len(s.Warnings) == 0 || !strings.Contains(s.Warnings[len(s.Warnings)-1], "pid "+strconv.Itoa(cmd.Process.Pid)) {
		t.Errorf("with a Claude in its folder: state %q warnings %q; want unknown naming pid %d", s.State, s.Warnings, cmd.Process.Pid)
	}
	if len(s.Evidence) != 1 || s.Evidence[0].Kind != adapters.EvidenceContender || s.Evidence[0].PID != cmd.Process.Pid {
		t.Errorf("with a Claude in its folder: evidence %+v, want one contender, pid %d", s.Evidence, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if s := discover(t, a)[id]; s.State != adapters.NativeAborted || s.Process != nil {
		t.Errorf("with no Claude left: state %q process %+v; want aborted", s.State, s.Process)
	}
}

// A Discover between changes reuses what the last one built; a change to
// one transcript is seen, at the cost of reading that transcript. One
// session read alone is what Discover says of it.
func TestDiscoverReadsOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := claudesynth.GenerateStore(home, 6, 1); err != nil {
		t.Fatal(err)
	}
	store := storeiotest.MemoStore{
		New: func(watch adapters.FolderWatch) (adapters.Adapter, func() int64) {
			a := New(adapters.Env{Home: home, Folders: watch, Getenv: func(string) string { return "" }})
			return a, func() int64 { return a.summaries.Stats().Misses }
		},
		Grow: func(t *testing.T, path string) {
			storeiotest.AppendLine(t, path, strings.TrimSuffix(lines(userRec("one more turn"), assistantRec("msg_memo", "and its answer", "end_turn", 100, 20)), "\n"))
		},
		Stats: func(a adapters.Adapter) uint64 { return a.(*Adapter).folders.Stats() },
	}
	storeiotest.CheckMemo(t, store)
	t.Run("one", func(t *testing.T) { storeiotest.CheckDiscoverOne(t, store) })
}

// Claude's own registry says what a hand-started TUI waits for ("status":
// "waiting", "waitingFor": "permission prompt" or "dialog open"); an
// interactive Claude started in a folder it was never told to trust has no
// registry entry yet: it sits on its trust dialog.
func TestClaudeWaitingFromItsRegistry(t *testing.T) {
	t.Parallel()
	home := fixtureHome(t)
	reg := filepath.Join(home, ".claude", "sessions")
	if err := os.MkdirAll(reg, 0o755); err != nil {
		t.Fatal(err)
	}
	trusted, _ := filepath.EvalSymlinks(t.TempDir())
	untrusted, _ := filepath.EvalSymlinks(t.TempDir())
	inside := filepath.Join(trusted, "sub")
	if err := os.Mkdir(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"projects": map[string]any{trusted: map[string]any{"hasTrustDialogAccepted": true}}})
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	ours := []string{"HOME=" + home, "CLAUDE_CONFIG_DIR="}
	updated := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	waitingFor := map[string]string{}
	for i, what := range []string{"permission prompt", "dialog open"} {
		id := fmt.Sprintf("0b6c1b1e-0000-4000-8000-00000000010%d", i)
		p := startHelper(t, ours, t.TempDir(), "claude")
		b, _ := json.Marshal(map[string]any{"pid": p.PID, "sessionId": id, "cwd": trusted, "startedAt": p.StartTime.UnixMilli(),
			"procStart": strconv.FormatUint(p.Start, 10), "status": "waiting", "waitingFor": what, "kind": "interactive",
			"updatedAt": updated.UnixMilli(), "statusUpdatedAt": updated.UnixMilli()})
		if err := os.WriteFile(filepath.Join(reg, strconv.Itoa(p.PID)+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		waitingFor[id] = []string{adapters.WaitingPermission, adapters.WaitingDialog}[i]
	}
	onDialog := "0b6c1b1e-0000-4000-8000-000000000110"
	startHelper(t, ours, untrusted, "claude", "--session-id", onDialog)
	waitingFor[onDialog] = adapters.WaitingDialog
	trustedTUI := "0b6c1b1e-0000-4000-8000-000000000111"
	startHelper(t, ours, inside, "claude", "--session-id", trustedTUI)
	waitingFor[trustedTUI] = ""
	oneShot := "0b6c1b1e-0000-4000-8000-000000000112"
	startHelper(t, ours, untrusted, "claude", "-p", "--session-id", oneShot, "hi")
	waitingFor[oneShot] = ""

	got := discover(t, New(adapters.Env{Home: home, Getenv: func(string) string { return "" }}))
	for id, want := range waitingFor {
		s, ok := got[id]
		if !ok || s.Process == nil {
			t.Errorf("%s: not found running: %+v", id, s)
			continue
		}
		if s.WaitingFor != want {
			t.Errorf("%s: waiting for %q, want %q", id, s.WaitingFor, want)
		}
		if want != "" && s.State != adapters.NativeRunning {
			t.Errorf("%s: state %q while waiting, want running", id, s.State)
		}
	}
	if s := got["0b6c1b1e-0000-4000-8000-000000000100"]; !s.WaitingSince.Equal(updated) {
		t.Errorf("waiting since %v, want the registry's %v", s.WaitingSince, updated)
	}
}

// stamped is rec written at t (its timestamp replaced).
func stamped(rec string, t time.Time) string {
	return strings.Replace(rec, `"timestamp":"2026-01-02T03:04:0`, `"timestamp":"`+t.UTC().Format("2006-01-02T15:04:05.000Z")+`","was":"`, 1)
}

// costAt is a cost-state written by a process started at start.
func costAt(cost float64, in, out int, start time.Time) string {
	return strings.Replace(costRec(cost, in, out), `"type":"cost-state",`, fmt.Sprintf(`"type":"cost-state","startTime":%d,`, start.UnixMilli()), 1)
}

// killedThenContinued is a transcript of three processes: the first ends
// normally (cost-state: 100 in, 10 out), the second is SIGKILLed after one
// answer (7 in, 2 out; no cost-state), the third continues the session
// and writes a cost-state that counts the first and itself (30 in, 4 out)
// but not the second. pad bytes of other records follow the first
// process's prompt (a large file is read from its end).
func killedThenContinued(pad int) string {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	recs := []string{stamped(userRec("first"), at(1))}
	for n := 0; n < pad; n += 1000 {
		recs = append(recs, fmt.Sprintf(`{"type":"attachment","timestamp":%q,"attachment":{"type":"x","text":%q}}`, at(1).Format(time.RFC3339Nano), strings.Repeat("p", 1000)))
	}
	recs = append(recs,
		stamped(assistantRec("m0", "zero", "end_turn", 100, 10), at(2)),
		costAt(0.1, 100, 10, at(0)),
		stamped(userRec("second"), at(11)),
		stamped(assistantRec("m1", "one", "tool_use", 7, 2), at(12)),
		stamped(assistantRec("m1", "one", "tool_use", 7, 2), at(12)),
		stamped(userRec("third"), at(21)),
		stamped(assistantRec("m2", "two", "end_turn", 30, 4), at(22)),
		costAt(0.3, 130, 14, at(20)),
	)
	return lines(recs...)
}

// Claude tokens sum every process's records of a session: a process
// SIGKILLed before it wrote a cost-state is not in the next process's
// cost-state (claude --continue after a kill), and its answers still count,
// whether the transcript is read whole or from its end.
func TestClaudeTokensDropAfterContinueOfAKilledRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pad  int
	}{{"read whole", 0}, {"read from its end", 200 << 10}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			id := "0b6c1b1e-0000-4000-8000-000000000200"
			writeTranscript(t, home, "/w/p", id, killedThenContinued(tc.pad))
			s := discover(t, newAdapter(home))[id]
			if s.TokensIn == nil || s.TokensOut == nil || *s.TokensIn != 137 || *s.TokensOut != 16 {
				t.Errorf("tokens %v in, %v out; want 137 in, 16 out (the killed process's 7 and 2 counted): %+v", deref(s.TokensIn), deref(s.TokensOut), s)
			}
			if s.State != adapters.NativeDone {
				t.Errorf("state %q", s.State)
			}
		})
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
