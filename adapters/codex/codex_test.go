package codex

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	codexsynth "github.com/agentctl/agentctl/internal/synth/codex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio/storeiotest"
)

// Real-shaped rollouts in testdata, written by Codex 0.169.0 against the
// fake model server (long instruction texts replaced by filler).
const (
	idComplete = "01a201ee-f061-7c00-b411-41d396ae5594" // `exec "-say hi"`
	idFailed   = "01a201ee-e2a2-7a42-bd44-85baba2c4adb" // the model call failed
	idResumed  = "01a201ef-152c-7783-90b3-04defa79bcc5" // a tool call, then two resumes, the last with another model
	idAborted  = "01a201f8-b498-7521-92c8-3beaf15c8a47" // SIGINT during a tool call
)

// testHome makes a CODEX_HOME and an adapter reading it.
func testHome(t *testing.T) (string, *Adapter) {
	t.Helper()
	home := t.TempDir()
	a := New(adapters.Env{Home: t.TempDir(), Getenv: func(k string) string {
		if k == "CODEX_HOME" {
			return home
		}
		return ""
	}})
	return home, a
}

// installFixtures copies the testdata rollouts into home's day folder.
func installFixtures(t *testing.T, home string) string {
	t.Helper()
	day := filepath.Join(home, "sessions", "2026", "11", "22")
	if err := os.MkdirAll(day, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "rollout-") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("testdata", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(day, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return day
}

func discoverByID(t *testing.T, a *Adapter) map[string]adapters.NativeSession {
	t.Helper()
	ss, err := a.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]adapters.NativeSession{}
	for _, s := range ss {
		if _, dup := out[s.NativeID]; dup {
			t.Errorf("session %s reported twice", s.NativeID)
		}
		out[s.NativeID] = s
	}
	return out
}

func i64(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

func TestDiscoverRealShapedRollouts(t *testing.T) {
	t.Parallel()
	home, a := testHome(t)
	installFixtures(t, home)
	got := discoverByID(t, a)
	tests := []struct {
		id, state, prompt, model string
		in, out                  int64
		warn                     string
		created                  string
	}{
		{idComplete, "done", "-say hi", "fake-model", 101, 10, "", "2026-11-22T06:26:06.056Z"},
		{idFailed, "failed", "-say hi", "fake-model", -1, -1, "stream disconnected before completion", "2026-11-22T06:26:02.536Z"},
		{idResumed, "done", "please sleep 20", "other-model", 414, 40, "", "2026-11-22T06:26:15.472Z"},
		{idAborted, "aborted", "please sleep 30", "fake-model", 138, 10, "", ""},
	}
	if len(got) != len(tests) {
		t.Errorf("discovered %d sessions, want %d", len(got), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			s, ok := got[tt.id]
			if !ok {
				t.Fatal("not discovered")
			}
			if s.Adapter != "codex" || string(s.State) != tt.state || s.FirstPrompt != tt.prompt || s.Model != tt.model {
				t.Errorf("got adapter=%q state=%q prompt=%q model=%q", s.Adapter, s.State, s.FirstPrompt, s.Model)
			}
			if s.Cwd != "/home/user/proj" {
				t.Errorf("cwd = %q", s.Cwd)
			}
			if i64(s.TokensIn) != tt.in || i64(s.TokensOut) != tt.out {
				t.Errorf("tokens = %d/%d, want %d/%d", i64(s.TokensIn), i64(s.TokensOut), tt.in, tt.out)
			}
			if tt.created != "" && s.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z") != tt.created {
				t.Errorf("created = %s, want %s", s.CreatedAt.UTC(), tt.created)
			}
			if !s.UpdatedAt.After(s.CreatedAt) {
				t.Errorf("updated %s is not after created %s", s.UpdatedAt, s.CreatedAt)
			}
			if s.Process != nil {
				t.Errorf("matched a process: %+v", s.Process)
			}
			joined := strings.Join(s.Warnings, "; ")
			if (tt.warn == "") != (joined == "") || !strings.Contains(joined, tt.warn) {
				t.Errorf("warnings = %q, want %q", joined, tt.warn)
			}
		})
	}
}

func TestFactsFromLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		lines []string
		check func(t *testing.T, x *facts)
	}{
		{"older release: top-level thread_id, user_message and agent_message events", []string{
			`{"thread_id":"0199a000-0000-7000-8000-000000000001"}`,
			`{"timestamp":"2025-09-01T10:00:00Z","type":"event_msg","payload":{"type":"user_message","message":"fix the build"}}`,
			`{"timestamp":"2025-09-01T10:00:05Z","type":"event_msg","payload":{"type":"agent_message","message":"fixed"}}`,
		}, func(t *testing.T, x *facts) {
			if x.id != "0199a000-0000-7000-8000-000000000001" || x.prompt() != "fix the build" || !x.lastTime.Equal(time.Date(2025, 9, 1, 10, 0, 5, 0, time.UTC)) {
				t.Errorf("id=%q prompt=%q last record at %s", x.id, x.prompt(), x.lastTime)
			}
		}},
		{"injected context is not the prompt", []string{
			`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>x</environment_context>"}]}}`,
			`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /x"}]}}`,
			`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"real prompt"}]}}`,
		}, func(t *testing.T, x *facts) {
			if x.prompt() != "real prompt" {
				t.Errorf("prompt = %q", x.prompt())
			}
		}},
		{"wrong types keep the fields that are right", []string{
			`{"timestamp":12,"type":"session_meta","payload":{"id":"0199a000-0000-7000-8000-000000000002","cwd":["x"],"cli_version":1}}`,
			`{"timestamp":"2025-09-01T10:00:00Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":"many","output_tokens":3}}}}`,
			`{"type":"event_msg","payload":{"type":"token_count","info":null}}`,
			`{"type":"event_msg","payload":"not an object"}`,
			`{"type":["x"],"payload":{}}`,
		}, func(t *testing.T, x *facts) {
			if x.id != "0199a000-0000-7000-8000-000000000002" || x.cwd != "" || x.hasTokens || x.badLines != 0 {
				t.Errorf("id=%q cwd=%q tokens=%v bad=%d", x.id, x.cwd, x.hasTokens, x.badLines)
			}
		}},
		{"garbage lines are counted", []string{
			"\x00\x01\x02garbage", `[1,2,3]`, `{"unterminated": `, `"a string"`,
			strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
			`{"a":` + strings.Repeat(`{"a":`, 20000) + `1` + strings.Repeat("}", 20001),
		}, func(t *testing.T, x *facts) {
			if x.badLines != 6 {
				t.Errorf("bad lines = %d, want 6", x.badLines)
			}
		}},
		{"error event fails the turn; a new turn starts over", []string{
			`{"type":"event_msg","payload":{"type":"task_started"}}`,
			`{"type":"event_msg","payload":{"type":"error","message":"429 Too Many Requests"}}`,
		}, func(t *testing.T, x *facts) {
			if x.turn != turnFailed || x.turnError != "429 Too Many Requests" {
				t.Errorf("turn=%d err=%q", x.turn, x.turnError)
			}
			x.apply([]byte(`{"type":"event_msg","payload":{"type":"task_started"}}`))
			if x.turn != turnStarted || x.turnError != "" {
				t.Errorf("after task_started: turn=%d err=%q", x.turn, x.turnError)
			}
		}},
		{"usage limit: task_complete's UsageLimitExceeded, the window from the token_count before it", []string{
			`{"timestamp":"2026-11-26T22:05:57.242Z","type":"event_msg","payload":{"type":"task_started"}}`,
			codexLimitSnapshot, codexLimitComplete,
		}, func(t *testing.T, x *facts) {
			h := x.limit()
			want := adapters.LimitHit{Provider: Provider, Window: "primary", ResetsAt: time.Unix(1795731357, 0).UTC(),
				Message: "You’ve hit your usage limit. Try again at 10:15 PM.", At: time.Date(2026, 11, 26, 22, 5, 57, 344e6, time.UTC)}
			if h == nil || *h != want {
				t.Fatalf("limit %+v, want %+v", h, want)
			}
			snap := time.Date(2026, 11, 26, 22, 5, 57, 336e6, time.UTC)
			ws := x.native("/r.jsonl", time.Time{}, nil, false).Windows
			if len(ws) != 2 || ws[0] != (adapters.LimitWindow{Provider: Provider, Name: "primary", UsedPercent: 100, ResetsAt: time.Unix(1795731357, 0).UTC(), At: snap}) ||
				ws[1] != (adapters.LimitWindow{Provider: Provider, Name: "secondary", UsedPercent: 42, At: snap}) {
				t.Errorf("windows %+v", ws)
			}
			// A turn that goes through clears it.
			x.apply([]byte(`{"type":"event_msg","payload":{"type":"task_started"}}`))
			x.apply([]byte(`{"type":"event_msg","payload":{"type":"task_complete","last_agent_message":"ok"}}`))
			if h := x.limit(); h != nil {
				t.Errorf("after a turn that went through: limit %+v", h)
			}
		}},
		{"usage limit as an error event; other errors are not limits", []string{
			`{"type":"event_msg","payload":{"type":"error","message":"You've hit your usage limit.","codex_error_info":"usage_limit_exceeded"}}`,
		}, func(t *testing.T, x *facts) {
			if h := x.limit(); h == nil || h.Window != "" || !h.ResetsAt.IsZero() {
				t.Errorf("limit %+v, want one without a window", h)
			}
			x.apply([]byte(`{"type":"event_msg","payload":{"type":"task_complete","error":{"message":"stream disconnected","codex_error_info":{"response_stream_disconnected":{}}}}}`))
			if h := x.limit(); h != nil || x.turn != turnFailed {
				t.Errorf("another error: limit %+v turn %d", h, x.turn)
			}
		}},
		{"long texts are shortened", []string{
			`{"type":"event_msg","payload":{"type":"user_message","message":"` + strings.Repeat("é", 500) + `"}}`,
		}, func(t *testing.T, x *facts) {
			if n := len([]rune(x.prompt())); n != promptRunes+1 {
				t.Errorf("prompt has %d runes", n)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var x facts
			for _, l := range tt.lines {
				x.apply([]byte(l))
			}
			tt.check(t, &x)
		})
	}
}

func TestNativeState(t *testing.T) {
	t.Parallel()
	tests := []struct {
		turn       turnState
		alive      bool
		want       adapters.NativeState
		originator string
	}{
		// No Codex holds the rollout: whatever the rollout says last, the
		// session is over.
		{turnNone, false, adapters.NativeAborted, ""},
		{turnNone, true, adapters.NativeRunning, ""},
		{turnStarted, false, adapters.NativeAborted, ""},
		{turnStarted, true, adapters.NativeBusy, ""},
		{turnComplete, false, adapters.NativeDone, ""},
		{turnComplete, true, adapters.NativeIdle, ""},
		{turnFailed, false, adapters.NativeFailed, ""},
		{turnAborted, false, adapters.NativeAborted, ""},
		{turnAborted, true, adapters.NativeIdle, ""},
		// The TUI's thread before its first message: at its prompt.
		{turnNone, true, adapters.NativeIdle, originatorTUI},
		{turnNone, false, adapters.NativeAborted, originatorTUI},
	}
	for _, tt := range tests {
		x := facts{turn: tt.turn, originator: tt.originator}
		if got := x.state(tt.alive); got != tt.want {
			t.Errorf("turn %d alive %v: %q, want %q", tt.turn, tt.alive, got, tt.want)
		}
	}
}

// appendLines appends raw text to path.
func appendText(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

func TestGrowingRolloutIsReadIncrementally(t *testing.T) {
	t.Parallel()
	home, a := testHome(t)
	day := installFixtures(t, home)
	path := filepath.Join(day, "rollout-2026-11-22T06-26-06-"+idComplete+".jsonl")
	if s := discoverByID(t, a)[idComplete]; s.State != adapters.NativeDone {
		t.Fatalf("state = %q", s.State)
	}
	before := a.rollouts.Stats()
	// A resume starts a new turn; its last line is still half-written.
	appendText(t, path, `{"timestamp":"2026-11-22T07:00:00.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t2"}}`+"\n"+
		`{"timestamp":"2026-11-22T07:00:01.000Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"AgentMessage","content":[{"type":"Text","text":"work`)
	s := discoverByID(t, a)[idComplete]
	if s.State != adapters.NativeAborted {
		t.Errorf("mid-turn without a process (cut off): state=%q", s.State)
	}
	if !s.UpdatedAt.Equal(time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC)) {
		t.Errorf("updated = %s", s.UpdatedAt)
	}
	after := a.rollouts.Stats()
	if after.Misses-before.Misses != 1 {
		t.Errorf("%d rollouts re-read after one grew, want 1", after.Misses-before.Misses)
	}
	// The line completes, and the turn ends.
	appendText(t, path, `ing on it"}]}}}`+"\n"+
		`{"timestamp":"2026-11-22T07:00:02.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":500,"output_tokens":50}}}}`+"\n"+
		`{"timestamp":"2026-11-22T07:00:03.000Z","type":"event_msg","payload":{"type":"task_complete","last_agent_message":"all done"}}`+"\n")
	s = discoverByID(t, a)[idComplete]
	if s.State != adapters.NativeDone || i64(s.TokensIn) != 500 || s.FirstPrompt != "-say hi" {
		t.Errorf("after the turn: state=%q in=%d prompt=%q", s.State, i64(s.TokensIn), s.FirstPrompt)
	}
	// Nothing changed: nothing is read.
	before = a.rollouts.Stats()
	discoverByID(t, a)
	if d := a.rollouts.Stats().Misses - before.Misses; d != 0 {
		t.Errorf("%d rollouts re-read with nothing changed", d)
	}
}

func TestRewrittenRolloutIsReadAgain(t *testing.T) {
	t.Parallel()
	home, a := testHome(t)
	day := installFixtures(t, home)
	path := filepath.Join(day, "rollout-2026-11-22T06-26-06-"+idComplete+".jsonl")
	discoverByID(t, a)
	// Same inode, rewritten in place and grown: the old offset is not a
	// line boundary of the new content.
	b, err := os.ReadFile(filepath.Join(day, "rollout-2026-11-22T06-36-46-"+idAborted+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(append(b, b...)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s := discoverByID(t, a)[idComplete]
	if s.State != adapters.NativeAborted || s.FirstPrompt != "please sleep 30" {
		t.Errorf("after rewrite: state=%q prompt=%q", s.State, s.FirstPrompt)
	}
}

func TestDiscoverOddFiles(t *testing.T) {
	t.Parallel()
	home, a := testHome(t)
	day := installFixtures(t, home)
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(day, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const (
		idEmpty   = "01a20000-0000-7000-8000-000000000001"
		idGarbage = "01a20000-0000-7000-8000-000000000002"
		idHalf    = "01a20000-0000-7000-8000-000000000003"
	)
	write("rollout-2026-11-22T01-00-00-"+idEmpty+".jsonl", "")
	write("rollout-2026-11-22T01-00-01-"+idGarbage+".jsonl", "\x00\xff\xfe binary\n\x1b[31mnot json\n")
	write("rollout-2026-11-22T01-00-02-"+idHalf+".jsonl", `{"timestamp":"2026-11-22T01:00:02.000Z","type":"session_meta","payload":{"id":"`+idHalf+`","cwd":"/w"}}`+"\n"+`{"timestamp":"2026-11-22T01:00:03.000Z","type":"event_msg","payl`)
	write("not-a-rollout.jsonl", "{}\n")
	write("rollout-notes.txt", "x")
	if err := os.Symlink(filepath.Join(day, "gone"), filepath.Join(day, "rollout-2026-11-22T01-00-03-01a20000-0000-7000-8000-000000000004.jsonl")); err != nil {
		t.Fatal(err)
	}
	got := discoverByID(t, a)
	if len(got) != 7 {
		t.Errorf("discovered %d sessions, want 7: %v", len(got), got)
	}
	if s := got[idEmpty]; s.State != adapters.NativeAborted || s.FirstPrompt != "" {
		t.Errorf("empty: %+v", s)
	}
	if s := got[idGarbage]; len(s.Warnings) == 0 || !strings.Contains(s.Warnings[0], "2 unreadable lines") {
		t.Errorf("garbage: warnings %q", s.Warnings)
	}
	if s := got[idHalf]; s.Cwd != "/w" || len(s.Warnings) != 0 {
		t.Errorf("half-written: cwd=%q warnings=%q", s.Cwd, s.Warnings)
	}
	if got[idComplete].State != adapters.NativeDone {
		t.Error("the good sessions suffered")
	}
}

func TestDiscoverHugeLineAndFile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes a 40 MB rollout")
	}
	home, a := testHome(t)
	day := installFixtures(t, home)
	const id = "01a20000-0000-7000-8000-0000000000aa"
	path := filepath.Join(day, "rollout-2026-11-22T02-00-00-"+id+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString(`{"timestamp":"2026-11-22T02:00:00.000Z","type":"session_meta","payload":{"id":"` + id + `","cwd":"/big"}}` + "\n")
	w.WriteString(`{"type":"event_msg","payload":{"type":"user_message","message":"make it big"}}` + "\n")
	// One tool output over the line limit, then 20 MB of ordinary lines.
	w.WriteString(`{"type":"response_item","payload":{"type":"function_call_output","output":"`)
	w.WriteString(strings.Repeat("x", maxLine+10))
	w.WriteString("\"}}\n")
	line := `{"timestamp":"2026-11-22T02:00:01.000Z","type":"response_item","payload":{"type":"function_call_output","output":"` + strings.Repeat("y", 1000) + `"}}` + "\n"
	for range 20 << 10 {
		w.WriteString(line)
	}
	w.WriteString(`{"timestamp":"2026-11-22T02:30:00.000Z","type":"event_msg","payload":{"type":"task_complete","last_agent_message":"big done"}}` + "\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s := discoverByID(t, a)[id]
	if s.State != adapters.NativeDone || s.FirstPrompt != "make it big" || s.Cwd != "/big" {
		t.Errorf("huge rollout: state=%q prompt=%q cwd=%q", s.State, s.FirstPrompt, s.Cwd)
	}
	msgs, err := a.Transcript(context.Background(), id, 1)
	if err != nil || len(msgs) != 1 || msgs[0].Text != strings.Repeat("y", 1000) {
		t.Errorf("transcript tail: %d messages, %v", len(msgs), err)
	}
}

func TestDiscoverMissingStore(t *testing.T) {
	t.Parallel()
	_, a := testHome(t)
	ss, err := a.Discover(context.Background())
	if err != nil || len(ss) != 0 {
		t.Errorf("empty store: %d sessions, %v", len(ss), err)
	}
}

func TestTranscript(t *testing.T) {
	t.Parallel()
	home, a := testHome(t)
	installFixtures(t, home)
	ctx := context.Background()
	all, err := a.Transcript(ctx, idResumed, 0)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range all {
		roles = append(roles, m.Role+":"+m.Text)
		if m.Time.IsZero() {
			t.Errorf("message without time: %+v", m)
		}
	}
	want := []string{
		"user:please sleep 20",
		"tool:exec_command: sleep 20",
		"tool:Chunk ID: 3f0780\nWall time: 19.8567 seconds\nProcess exited with code 0\nOriginal token count: 0\nOutput:\n",
		"assistant:slept 20 seconds (turn 3)",
		"user:-again hi",
		"assistant:hi from fakellm (turn 4)",
		"user:third",
		"assistant:hi from fakellm (turn 5)",
	}
	if strings.Join(roles, "|") != strings.Join(want, "|") {
		t.Errorf("transcript:\n%q\nwant\n%q", roles, want)
	}
	last, err := a.Transcript(ctx, idResumed[:13], 2)
	if err != nil || len(last) != 2 || last[1].Text != "hi from fakellm (turn 5)" || last[0].Text != "third" {
		t.Errorf("last 2 by prefix: %+v, %v", last, err)
	}
	if _, err := a.Transcript(ctx, "01a2", 1); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if _, err := a.Transcript(ctx, "01a2ffff-0000-7000-8000-000000000000", 1); err == nil {
		t.Error("unknown id: no error")
	}
	// Events are preferred; a rollout with only response items still reads.
	aborted, err := a.Transcript(ctx, idAborted, 0)
	if err != nil || len(aborted) == 0 || aborted[0].Text != "please sleep 30" {
		t.Errorf("aborted: %+v %v", aborted, err)
	}
}

// TestSkippingIrrelevantLinesChangesNothing reads every fixture line with
// and without the quick skip of irrelevant lines and of user messages
// whose facts are known: the facts must agree.
func TestSkippingIrrelevantLinesChangesNothing(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	skipped, spent := 0, 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "rollout-") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("testdata", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var fast, full facts
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if fast.spent([]byte(l)) {
				spent++
			}
			fast.apply([]byte(l))
			if irrelevant([]byte(l)) {
				skipped++
			}
			full.applyDecoded([]byte(l))
		}
		if fmt.Sprint(fast) != fmt.Sprint(full) {
			t.Errorf("%s:\nskipping: %+v\nfull:     %+v", e.Name(), fast, full)
		}
	}
	if skipped == 0 {
		t.Error("no line was skipped")
	}
	if spent == 0 {
		t.Error("no later user message was skipped")
	}
}

// The assistant's messages are skimmed for their time, not decoded: no
// fact comes from them (how a turn ended is task_complete's). A user's
// message, and task_complete with its last_agent_message, are read.
func TestAssistantMessagesAreNotDecoded(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		line       string
		irrelevant bool
	}{
		{`{"timestamp":"2026-11-22T06:26:05.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}`, true},
		{`{"timestamp":"2026-11-22T06:26:05.000Z","type":"event_msg","payload":{"type":"agent_message","message":"done"}}`, true},
		{`{"timestamp":"2026-11-22T06:26:05.000Z","type":"event_msg","payload":{"type":"item_completed","thread_id":"t","item":{"type":"AgentMessage","content":[{"type":"Text","text":"done"}]}}}`, true},
		{`{"timestamp":"2026-11-22T06:26:05.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]}}`, false},
		{`{"timestamp":"2026-11-22T06:26:05.000Z","type":"event_msg","payload":{"type":"user_message","message":"do it"}}`, false},
		{`{"timestamp":"2026-11-22T06:26:05.000Z","type":"event_msg","payload":{"type":"item_completed","thread_id":"t","item":{"type":"UserMessage","content":[{"type":"Text","text":"do it"}]}}}`, false},
		{`{"timestamp":"2026-11-22T06:26:05.000Z","type":"event_msg","payload":{"type":"task_complete","last_agent_message":"done"}}`, false},
	} {
		if got := irrelevant([]byte(tt.line)); got != tt.irrelevant {
			t.Errorf("irrelevant = %v, want %v: %s", got, tt.irrelevant, tt.line)
		}
		var x facts
		x.apply([]byte(tt.line))
		if !x.lastTime.Equal(time.Date(2026, 11, 22, 6, 26, 5, 0, time.UTC)) {
			t.Errorf("last record at %s: %s", x.lastTime, tt.line)
		}
	}
}

func TestConcurrentDiscoverAndTranscript(t *testing.T) {
	t.Parallel()
	home, a := testHome(t)
	installFixtures(t, home)
	done := make(chan error, 8)
	for range 4 {
		go func() {
			_, err := a.Discover(context.Background())
			done <- err
		}()
		go func() {
			_, err := a.Transcript(context.Background(), idResumed, 2)
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestRolloutVanishingBetweenListAndRead: a rollout removed after the
// folder was listed is left out, without an error or a warning.
func TestRolloutVanishingBetweenListAndRead(t *testing.T) {
	t.Parallel()
	home, a := testHome(t)
	day := installFixtures(t, home)
	files, err := a.listRollouts(context.Background(), a.sessionsDir())
	if err != nil || len(files) != 4 {
		t.Fatalf("%d rollouts, %v", len(files), err)
	}
	if err := os.Remove(filepath.Join(day, "rollout-2026-11-22T06-26-06-"+idComplete+".jsonl")); err != nil {
		t.Fatal(err)
	}
	var kept int
	for _, f := range files {
		s := a.readOne(f, nil)
		if s.facts == nil && !errors.Is(s.err, fs.ErrNotExist) {
			t.Errorf("%s: %v", f.key.Path, s.err)
		}
		if s.facts != nil {
			kept++
		}
	}
	if kept != 3 {
		t.Errorf("%d rollouts read, want 3", kept)
	}
	got := discoverByID(t, a)
	if _, ok := got[idComplete]; ok || len(got) != 3 {
		t.Errorf("after removal: %d sessions", len(got))
	}
}

// TestFirstReadCutShortGoesOn: a discovery whose context ends while a large
// store is first read fails, and the next one goes on from where it
// stopped instead of starting over: each rollout is read once.
func TestFirstReadCutShortGoesOn(t *testing.T) {
	home, a := testHome(t)
	if err := codexsynth.GenerateStore(home, 200, 9); err != nil {
		t.Fatal(err)
	}
	storeiotest.CheckCutShortGoesOn(t, a, 200, func() int64 { return a.rollouts.Stats().Misses })
}

// A Discover between changes reuses what the last one built; a change to
// one rollout is seen, at the cost of reading that rollout. One session
// read alone is what Discover says of it.
func TestDiscoverReadsOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := codexsynth.GenerateStore(home, 6, 1); err != nil {
		t.Fatal(err)
	}
	store := storeiotest.MemoStore{
		New: func(watch adapters.FolderWatch) (adapters.Adapter, func() int64) {
			a := New(adapters.Env{Home: "/nonexistent", Folders: watch, Getenv: func(k string) string {
				if k == "CODEX_HOME" {
					return home
				}
				return ""
			}})
			return a, func() int64 { return a.rollouts.Stats().Misses }
		},
		Grow: func(t *testing.T, path string) {
			storeiotest.AppendLine(t, path, `{"timestamp":"2026-11-22T07:00:00.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5,"output_tokens":1}}}}`)
		},
		Stats: func(a adapters.Adapter) uint64 { return a.(*Adapter).folders.Stats() },
	}
	storeiotest.CheckMemo(t, store)
	t.Run("one", func(t *testing.T) { storeiotest.CheckDiscoverOne(t, store) })
}

// codexLimitSnapshot and codexLimitComplete are what Codex 0.169 writes
// when the Responses API answers 429 usage_limit_reached (from a real run
// against the fake model).
const (
	codexLimitSnapshot = `{"timestamp":"2026-11-26T22:05:57.336Z","ordinal":9,"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"limit_id":"codex","limit_name":null,"primary":{"used_percent":100.0,"window_minutes":300,"resets_at":1795731357},"secondary":{"used_percent":42.0,"window_minutes":10080,"resets_at":null},"credits":null,"plan_type":null,"rate_limit_reached_type":null}}}`
	codexLimitComplete = `{"timestamp":"2026-11-26T22:05:57.344Z","ordinal":10,"type":"event_msg","payload":{"type":"task_complete","turn_id":"01a2","last_agent_message":null,"error":{"message":"You’ve hit your usage limit. Try again at 10:15 PM.","codex_error_info":"usage_limit_exceeded"},"started_at":1795730757,"completed_at":1795730757,"duration_ms":164}}`
)
