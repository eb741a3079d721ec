package pi

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/adapters"
)

const robustID = "01a20000-0000-7000-8000-0000000000aa"

// lines builds a session file from records.
func lines(recs ...string) string { return strings.Join(recs, "\n") + "\n" }

var (
	robustHeader = `{"type":"session","version":3,"id":"` + robustID + `","timestamp":"2026-11-22T06:00:00.000Z","cwd":"/w"}`
	robustUser   = `{"type":"message","id":"u1","parentId":null,"timestamp":"2026-11-22T06:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"hello"}]}}`
	robustAnswer = `{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-11-22T06:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"done it"}],"provider":"p","model":"m","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"cost":{"total":0.5}},"stopReason":"stop"}}`
)

// discoverOne writes content as the store's only session and discovers it.
func discoverOne(t *testing.T, content string) adapters.NativeSession {
	t.Helper()
	a, home := testStore(t, nil)
	writeSession(t, home, content)
	got, err := a.Discover(context.Background())
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("Discover returned %d sessions, want 1: %+v", len(got), got)
	}
	return got[0]
}

func sessionPath(home string) string {
	return filepath.Join(home, ".pi", "agent", "sessions", "--w--", "2026-11-22T06-00-00-000Z_"+robustID+".jsonl")
}

func writeSession(t *testing.T, home, content string) string {
	t.Helper()
	p := sessionPath(home)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRobustFiles(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 200000) + strings.Repeat("]", 200000)
	garbage := make([]byte, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(r.IntN(256))
	}
	for _, tc := range []struct {
		name    string
		content string
		// state and model say what the tail read found (the answer's
		// when it was read past what surrounds it), last what the
		// transcript ends with.
		state adapters.NativeState
		model string
		last  string
		warn  bool // the session carries a warning
		id    bool // the header id is known
	}{
		{"half-written last line", lines(robustHeader, robustUser, robustAnswer) + `{"type":"message","id":"u2","parentId":"a1","message":{"role":"us`, adapters.NativeDone, "p/m", "done it", false, true},
		{"truncated header", robustHeader[:40], "", "", "", true, false},
		{"empty file", "", "", "", "", true, false},
		{"binary garbage", string(garbage), "", "", "", true, false},
		{"garbage lines inside", lines(robustHeader, robustUser, "\x00\x01{not json", string(garbage[:100]), robustAnswer), adapters.NativeDone, "p/m", "done it", false, true},
		{"deeply nested value", lines(robustHeader, robustUser, robustAnswer, `{"type":"message","id":"x","parentId":"a1","message":{"role":"assistant","content":`+deep+`}}`), adapters.NativeDone, "p/m", "done it", false, true},
		{"wrong types", lines(`{"type":"session","version":"three","id":"`+robustID+`","timestamp":12,"cwd":["x"]}`, robustUser,
			`{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":"plain string answer","usage":{"input":"ten","output":5,"cost":"free"},"stopReason":7}}`), adapters.NativeAborted, "", "plain string answer", true, true},
		{"message not an object", lines(robustHeader, `{"type":"message","id":"u1","parentId":null,"message":"hi"}`, robustAnswer), adapters.NativeDone, "p/m", "done it", true, true},
		{"crlf line ends", strings.ReplaceAll(lines(robustHeader, robustUser, robustAnswer), "\n", "\r\n"), adapters.NativeDone, "p/m", "done it", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := discoverOne(t, tc.content)
			if s.NativeID != robustID {
				t.Errorf("native id = %q, want %q (from the header or the file name)", s.NativeID, robustID)
			}
			if s.State != tc.state || s.Model != tc.model {
				t.Errorf("state %q model %q, want %q %q", s.State, s.Model, tc.state, tc.model)
			}
			if (len(s.Warnings) > 0) != tc.warn {
				t.Errorf("warnings = %q, want some: %v", s.Warnings, tc.warn)
			}
			a, home := testStore(t, nil)
			writeSession(t, home, tc.content)
			msgs, err := a.Transcript(context.Background(), robustID, 10)
			if err != nil && tc.id {
				t.Errorf("Transcript: %v", err)
			}
			if tc.id {
				last := ""
				if len(msgs) > 0 {
					last = msgs[len(msgs)-1].Text
				}
				if last != tc.last {
					t.Errorf("the transcript ends with %q, want %q", last, tc.last)
				}
			}
		})
	}
}

func TestLongFirstPrompt(t *testing.T) {
	t.Parallel()
	prompt := strings.Repeat("long prompt ", 15000) // 180 kB, over the head window
	user, _ := json.Marshal(map[string]any{"type": "message", "id": "u1", "parentId": nil, "message": map[string]any{"role": "user", "content": prompt}})
	s := discoverOne(t, lines(robustHeader, string(user), robustAnswer))
	if !strings.HasPrefix(s.FirstPrompt, "long prompt long prompt") || len([]rune(s.FirstPrompt)) > promptRunes+1 {
		t.Errorf("first prompt = %q", s.FirstPrompt)
	}
}

// A 2 GB transcript (sparse: the middle is a hole) is read at its head and
// tail only; its sums are skipped with a warning.
func TestHugeTranscript(t *testing.T) {
	t.Parallel()
	a, home := testStore(t, nil)
	p := writeSession(t, home, lines(robustHeader, robustUser))
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	const size = 2 << 30
	if err := f.Truncate(size); err != nil {
		t.Skipf("cannot make a 2 GB sparse file here: %v", err)
	}
	if _, err := f.WriteAt([]byte("\n"+robustAnswer+"\n"), size); err != nil {
		t.Fatal(err)
	}
	f.Close()

	got, err := a.Discover(context.Background())
	if err != nil || len(got) != 1 {
		t.Fatalf("Discover = %+v, %v", got, err)
	}
	s := got[0]
	if s.NativeID != robustID || s.FirstPrompt != "hello" || s.State != adapters.NativeDone || s.Model != "p/m" {
		t.Errorf("huge session = %+v", s)
	}
	if s.TokensIn != nil || s.CostUSD != nil || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "not summed") {
		t.Errorf("huge session sums = %v/%v, warnings %q; want unknown with one warning", s.TokensIn, s.CostUSD, s.Warnings)
	}
	msgs, err := a.Transcript(context.Background(), robustID, 3)
	if err != nil || len(msgs) == 0 || msgs[len(msgs)-1].Text != "done it" {
		t.Errorf("Transcript of the huge session = %+v, %v", msgs, err)
	}
}

// A file that vanishes between the listing and the read is left out; a
// dangling entry is the same case, made deterministic.
func TestVanishingFile(t *testing.T) {
	t.Parallel()
	a, home := testStore(t, nil)
	p := writeSession(t, home, lines(robustHeader, robustUser, robustAnswer))
	if err := os.Symlink(filepath.Join(home, "gone"), filepath.Join(filepath.Dir(p), "2026-11-22T06-00-00-000Z_01a20000-0000-7000-8000-0000000000bb.jsonl")); err != nil {
		t.Fatal(err)
	}
	got, err := a.Discover(context.Background())
	if err != nil || len(got) != 1 || got[0].NativeID != robustID {
		t.Fatalf("Discover = %+v, %v; want only the readable session", got, err)
	}
	if _, _, s := a.files.Get(filepath.Join(home, "nothing.jsonl"), readFacts); !errors.Is(s, fs.ErrNotExist) {
		t.Errorf("reading a missing file: %v", s)
	}
}

// A store root that cannot be listed is an error (the caller marks nothing
// stopped), not an empty store.
func TestUnreadableStore(t *testing.T) {
	t.Parallel()
	a, home := testStore(t, nil)
	root := filepath.Join(home, ".pi", "agent", "sessions")
	os.MkdirAll(filepath.Dir(root), 0o755)
	if err := os.WriteFile(root, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Discover(context.Background()); err == nil {
		t.Error("Discover of an unreadable store: no error")
	}
}
