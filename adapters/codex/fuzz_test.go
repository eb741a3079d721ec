package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/adapters/storeio/storeiotest"
	"github.com/agentctl/agentctl/internal/text"
)

// seedLines adds every line of the real-shaped rollouts to the corpus.
func seedLines(f *testing.F) [][]byte {
	var all [][]byte
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "rollout-") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("testdata", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range bytes.Split(b, []byte("\n")) {
			if len(l) > 0 {
				all = append(all, l)
			}
		}
	}
	return all
}

// FuzzRolloutLine feeds single lines to the facts and transcript readers:
// any input is at most a counted bad line, never a panic.
func FuzzRolloutLine(f *testing.F) {
	for _, l := range seedLines(f) {
		f.Add(l)
	}
	f.Add([]byte(`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":-1,"output_tokens":1e300}}}}`))
	f.Add([]byte(`{"type":"response_item","payload":{"type":"message","role":"user","content":"plain string"}}`))
	f.Add([]byte(codexLimitSnapshot))
	f.Add([]byte(codexLimitComplete))
	f.Add([]byte(`{"type":"event_msg","payload":{"type":"error","message":"x","codex_error_info":{"a":1}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var x, full facts
		x.apply(line)
		full.applyDecoded(line)
		if x.turn != full.turn || x.prompt() != full.prompt() || x.hasTokens != full.hasTokens || x.model != full.model || x.id != full.id {
			t.Errorf("skipping the line changed the facts:\n%+v\n%+v", x, full)
		}
		if x.hasTokens && (x.tokensIn < 0 || x.tokensOut < 0) {
			t.Errorf("negative tokens %d/%d", x.tokensIn, x.tokensOut)
		}
		if utf8.RuneCountInString(x.prompt()) > promptRunes+1 {
			t.Error("a text was not shortened")
		}
		var tr transcript
		tr.apply(line)
		for _, m := range tr.messages(0) {
			if m.Role != "user" && m.Role != "assistant" && m.Role != "tool" {
				t.Errorf("role %q", m.Role)
			}
		}
	})
}

// FuzzRolloutFile reads arbitrary file contents cold, then again after an
// append, and as a transcript: never a panic, and the incremental read
// agrees with a cold read of the grown file about the last turn.
func FuzzRolloutFile(f *testing.F) {
	lines := seedLines(f)
	f.Add(bytes.Join(lines[:min(len(lines), 20)], []byte("\n")), []byte("\n"))
	f.Add([]byte(`{"type":"event_msg","payload":{"type":"task_started"}}`+"\n"), []byte(`{"type":"event_msg","payload":{"type":"task_complete"}}`+"\n"))
	f.Add([]byte("garbage\x00\xff"), []byte(`{"type":"event_msg","payload":{"type":"turn_aborted"}}`))
	f.Add([]byte(`{"type":"session_meta","payload":{"id":"x"`), []byte("}}\n"))
	f.Fuzz(func(t *testing.T, first, more []byte) {
		path := filepath.Join(t.TempDir(), "rollout-2026-01-01T00-00-00-01a20000-0000-7000-8000-000000000001.jsonl")
		if err := os.WriteFile(path, first, 0o644); err != nil {
			t.Fatal(err)
		}
		cache := storeio.NewFileCache[*facts](4)
		read := func() *facts {
			x, _, err := cache.Get(path, func(fl *os.File, key storeio.FileKey, prev *storeio.Entry[*facts]) (*facts, error) {
				return readFacts(fl, key, prev, nil, nil)
			})
			if err != nil {
				t.Fatal(err)
			}
			return x
		}
		read()
		fl, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		fl.Write(more)
		fl.Close()
		incremental := read()
		cold, _, err := storeio.NewFileCache[*facts](1).Get(path, func(fl *os.File, key storeio.FileKey, prev *storeio.Entry[*facts]) (*facts, error) {
			return readFacts(fl, key, prev, nil, nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		if incremental.turn != cold.turn || incremental.hasTokens != cold.hasTokens || incremental.tokensIn != cold.tokensIn {
			t.Errorf("incremental turn %d tokens %v/%d, cold turn %d tokens %v/%d",
				incremental.turn, incremental.hasTokens, incremental.tokensIn, cold.turn, cold.hasTokens, cold.tokensIn)
		}
		if _, err := readTranscript(context.Background(), path, 3); err != nil {
			t.Error(err)
		}
	})
}

// FuzzRolloutName checks the hand-written rollout name parser against the
// pattern it replaced, which names Codex's files exactly.
func FuzzRolloutName(f *testing.F) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(e.Name())
	}
	f.Add("rollout-2026-11-22T06-26-06-01A201EE-F061-7C00-B411-41D396AE5594.jsonl")
	f.Add("rollout-2026-11-22T06-26-06-01a201ee-f061-7c00-b411-41d396ae559.jsonl")
	oracle := regexp.MustCompile(`^rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-(` + uuidPattern + `)\.jsonl$`)
	f.Fuzz(func(t *testing.T, name string) {
		want := ""
		if m := oracle.FindStringSubmatch(name); m != nil {
			want = strings.ToLower(m[1])
		}
		if strings.ContainsRune(name, '/') {
			return // a path: only its base name counts
		}
		if got := idFromRolloutPath(name); got != want {
			t.Errorf("idFromRolloutPath(%q) = %q, the pattern says %q", name, got, want)
		}
	})
}

// FuzzStringHead checks that a shortened view decoded from the head of a
// string value is the view decoding all of it gives.
func FuzzStringHead(f *testing.F) {
	f.Add("plain text", uint8(3))
	f.Add(strings.Repeat("é\"\\\n\t😀x", 40), uint8(7))
	f.Add(strings.Repeat("\u2028<>&", 30), uint8(1))
	f.Fuzz(func(t *testing.T, s string, n uint8) {
		runes := int(n%64) + 1
		raw, err := json.Marshal(s)
		if err != nil {
			return
		}
		// Codex's own encoder escapes less than Go's: try both spellings.
		var plain bytes.Buffer
		enc := json.NewEncoder(&plain)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		for _, r := range [][]byte{raw, bytes.TrimSpace(plain.Bytes()), []byte(strings.ReplaceAll(string(raw), `\u003c`, `\u003C`))} {
			want := text.Ellipsis(stringOf(r), runes)
			if got := text.Ellipsis(stringHead(r, 12*runes+16), runes); got != want {
				t.Errorf("head of %s: %q, whole: %q", r, got, want)
			}
		}
	})
}

// FuzzFactsDiskForm: any bytes in the cache file are rejected or read to
// facts that read back to the same record (times compare as instants, so
// the bytes are compared).
func FuzzFactsDiskForm(f *testing.F) {
	storeiotest.FuzzDiskForm(f, &facts{id: "i", cwd: "/w", firstPrompt: "p", turn: turnComplete, tokensIn: 9, hasTokens: true,
		limited: true, limitAt: time.Unix(1795731357, 0).UTC(), windows: [2]usageWindow{{known: true, used: 100, minutes: 300, resetsAt: time.Unix(1795731357, 0).UTC()}}})
}

// decodeWhole is encoding/json over the line: what decode must equal.
func decodeWhole(line []byte) (rolloutLine, error) {
	var l rolloutLine
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return l, errBadLine
	}
	err := json.Unmarshal(line, &l)
	if isTypeError(err) {
		err = nil
	}
	return l, err
}

// FuzzDecode holds decode (internal/jsondecode over the line) to
// encoding/json over it: the same record and payload, and an error where
// it fails; the seeds include long lines of members the decoder skips.
func FuzzDecode(f *testing.F) {
	pad := strings.Repeat("instructions \\\"quoted\\\" ", 300)
	for _, l := range seedLines(f) {
		f.Add(l)
	}
	f.Add([]byte(`{"timestamp":"2026-11-22T06:26:06.000Z","type":"session_meta","payload":{"id":"x","base_instructions":{"text":"` + pad + `"},"cwd":"/w"}}`))
	f.Add([]byte(`{"type":"session_meta","payload":{"ID":"x","Base_Instructions":"` + pad + `","cwd":"/w"},"extra":"` + pad + `"}`))
	f.Add([]byte(`{"type":"session_meta","payload":{"id":"x","notes":"` + pad + `"},"payload":{"cwd":"/w","more":[` + strings.Repeat(`"`+pad[:40]+`",`, 200) + `1]}}`))
	f.Add([]byte(`{"type":"session_meta","payload":{"id":"x","b\u0061se":"` + pad + `"}}`))
	f.Add([]byte(`{"type":"session_meta","payload":{"id":"x","notes":"` + pad + `"}} trailing`))
	f.Add([]byte(`{"type":"session_meta","payload":{"id":"x","notes":"` + pad + `"`))
	f.Add([]byte(`{"type":"session_meta","payload":{"id":7,"notes":"` + pad + `","cwd":"/w"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, p, err := decode(line)
		want, werr := decodeWhole(line)
		if (err != nil) != (werr != nil) {
			t.Fatalf("decode: %v, the whole line: %v", err, werr)
		}
		if err == nil && (r != want.record || !reflect.DeepEqual(p, want.Payload)) {
			t.Errorf("decode:\n%+v %+v\nthe whole line:\n%+v %+v", r, p, want.record, want.Payload)
		}
	})
}
