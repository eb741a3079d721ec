package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentctl/agentctl/adapters/storeio"
)

// fixtureLines returns every line of the checked-in transcripts, the seed
// corpus of the record-level fuzz targets.
func fixtureLines(f *testing.F) [][]byte {
	f.Helper()
	var out [][]byte
	paths, _ := filepath.Glob("testdata/home/.claude/projects/*/*.jsonl")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, bytes.Split(bytes.TrimSpace(b), []byte{'\n'})...)
	}
	return out
}

func fixtureFiles(f *testing.F) [][]byte {
	f.Helper()
	var out [][]byte
	paths, _ := filepath.Glob("testdata/home/.claude/projects/*/*.jsonl")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// topLevelTypes returns the top-level "type" values of a JSON object line,
// decoded the slow, sure way.
func topLevelTypes(line []byte) (types []any, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		if k == "type" {
			types = append(types, v)
		}
	}
	return types, true
}

// FuzzParseRecord: any line parses without panic, and the cheap type peek
// agrees with a full decode.
func FuzzParseRecord(f *testing.F) {
	for _, l := range fixtureLines(f) {
		f.Add(l)
	}
	f.Add([]byte(`{"type":"assistant","message":{"content":5}}`))
	f.Add([]byte(limitRec("Claude AI usage limit reached|1795748400")))
	f.Add([]byte(`{"type":"assistant","isApiErrorMessage":true,"error":{"x":1},"apiErrorStatus":"429","message":{"content":[]}}`))
	f.Add([]byte(`{"a":{"type":"x"},"type":"user"}`))
	f.Add([]byte(`{"typ\u0065":"cost-state"}`))
	f.Add([]byte(`{"k":"a\"b","type" : "user"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		rec, ok, err := parseRecord(line)
		if err == nil && ok && !recordTypes[rec.Type] {
			t.Fatalf("ok for type %q", rec.Type)
		}
		typ, found := peekType(line)
		if !found || !json.Valid(line) {
			return
		}
		types, valid := topLevelTypes(line)
		if !valid || len(types) != 1 {
			return // not an object, or a duplicated key (decoders differ)
		}
		if !utf8.ValidString(typ) {
			return // the decoder replaces invalid UTF-8; not a type either way
		}
		if s, isString := types[0].(string); !isString || s != typ {
			t.Fatalf("peekType = %q, decoded type %v", typ, types[0])
		}
	})
}

// FuzzSummaryBackwards: reading a transcript backwards from its end gives
// the same latest facts as applying every record in order.
func FuzzSummaryBackwards(f *testing.F) {
	for _, b := range fixtureFiles(f) {
		f.Add(b)
	}
	f.Add([]byte(lines(userRec("a"), assistantRec("m1", "x", "end_turn", 1, 2), costRec(0.5, 3, 4), assistantRec("m1", "y", "tool_use", 5, 6))))
	f.Add([]byte(lines(assistantRec("", "x", "", 1, 1), assistantRec("", "y", "", 1, 1), userRec("[Request interrupted by user]"))))
	f.Add([]byte(lines(userRec("go"), limitRec("limit"), userRec("continue"), limitRec("API Error: Request rejected (429)|1795748400"))))
	// Keys match case-insensitively when decoding; two records of one
	// message with different usage: the last one counts.
	f.Add([]byte("{\"messAge\":{\"id\":\"m1\",\"usAge\":{}},\"tYpe\":\"assistant\"}\n{\"messAge\":{\"id\":\"m1\",\"usAge\":{\"output_tokens\":1}},\"tYpe\":\"assistant\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var recs []record
		for _, l := range bytes.Split(data, []byte{'\n'}) {
			if r, ok, err := parseRecord(l); err == nil && ok {
				recs = append(recs, r)
			}
		}
		var fwd, back summary
		for _, r := range recs {
			fwd.apply(r)
		}
		var facts tailFacts
		for i := len(recs) - 1; i >= 0; i-- {
			if back.applyBackwards(recs[i], &facts) {
				break
			}
		}
		if fwd.Model != back.Model || fwd.Turn != back.Turn ||
			fwd.HaveCost != back.HaveCost || fwd.CostUSD != back.CostUSD ||
			fwd.CostIn != back.CostIn || fwd.CostOut != back.CostOut ||
			fwd.UsageIn != back.UsageIn || fwd.UsageOut != back.UsageOut || fwd.lastUsageMsg != back.lastUsageMsg ||
			fwd.lastMsgIn != back.lastMsgIn || fwd.lastMsgOut != back.lastMsgOut {
			t.Fatalf("forward %+v\nbackward %+v", fwd, back)
		}
	})
}

// FuzzSummaryFile: any file content (garbage, cut lines, huge values) gives
// a summary without panic, and a file read in two steps (a prefix, then the
// rest appended) gives the same summary as one read.
func FuzzSummaryFile(f *testing.F) {
	for _, b := range fixtureFiles(f) {
		f.Add(b, uint16(len(b)/2))
	}
	f.Add([]byte("\x00\x01\n{\"type\":\"user\"\n"), uint16(3))
	f.Add([]byte(killedThenContinued(0)), uint16(200))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		dir := t.TempDir()
		p := filepath.Join(dir, "s.jsonl")
		sr := summaryReader{ctx: context.Background()}
		read := func(prev *storeio.Entry[*summary]) (*summary, storeio.FileKey) {
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fi, _ := f.Stat()
			key := storeio.KeyOf(p, fi)
			s, err := sr.fill(f, key, prev)
			if err != nil {
				t.Fatal(err)
			}
			return s, key
		}
		os.WriteFile(p, data, 0o644)
		whole, _ := read(nil)

		c := int(cut) % (len(data) + 1)
		os.WriteFile(p, data[:c], 0o644)
		first, key := read(nil)
		fh, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		fh.Write(data[c:])
		fh.Close()
		second, _ := read(&storeio.Entry[*summary]{Key: key, Value: first})
		if len(data) > wholeFile {
			return // read by head and tail: the two paths may see different windows
		}
		if whole.FirstPrompt != second.FirstPrompt || whole.Model != second.Model ||
			whole.Turn != second.Turn || whole.UsageIn != second.UsageIn || whole.CostIn != second.CostIn || whole.CarriedIn != second.CarriedIn ||
			whole.Offset != second.Offset || whole.Cwd != second.Cwd || whole.BadLines != second.BadLines || !whole.Created.Equal(second.Created) {
			t.Fatalf("one read %+v\ntwo reads %+v", whole, second)
		}
	})
}

// FuzzReadMessages: the last n messages read from the end equal the end of
// the whole transcript.
func FuzzReadMessages(f *testing.F) {
	for _, b := range fixtureFiles(f) {
		f.Add(b, uint8(2))
	}
	f.Add([]byte(lines(userRec("a"), assistantRec("m", "b", "end_turn", 1, 1))+"{\"type\":\"user\""), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		ctx := context.Background()
		r := bytes.NewReader(data)
		all, err := readMessages(ctx, r, int64(len(data)), 0)
		if err != nil {
			t.Fatal(err)
		}
		k := int(n)%8 + 1
		last, err := readMessages(ctx, r, int64(len(data)), k)
		if err != nil {
			t.Fatal(err)
		}
		want := all[max(len(all)-k, 0):]
		if len(last) != len(want) {
			t.Fatalf("last %d: got %d messages, want %d", k, len(last), len(want))
		}
		for i := range want {
			if last[i] != want[i] {
				t.Fatalf("message %d: %+v, want %+v", i, last[i], want[i])
			}
		}
	})
}

// FuzzHistory: the prompt index read in two steps equals one read.
func FuzzHistory(f *testing.F) {
	f.Add([]byte(lines(`{"display":"a","timestamp":1,"project":"/p","sessionId":"s1"}`, `{"display":"b","sessionId":"s1"}`, `{"display":"c","sessionId":"s2"}`)), uint16(30))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		p := filepath.Join(t.TempDir(), "history.jsonl")
		read := func(prev *storeio.Entry[historyIndex]) (historyIndex, storeio.FileKey) {
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fi, _ := f.Stat()
			key := storeio.KeyOf(p, fi)
			h, err := readHistory(f, key, prev)
			if err != nil {
				t.Fatal(err)
			}
			return h, key
		}
		os.WriteFile(p, data, 0o644)
		whole, _ := read(nil)
		c := int(cut) % (len(data) + 1)
		os.WriteFile(p, data[:c], 0o644)
		first, key := read(nil)
		fh, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		fh.Write(data[c:])
		fh.Close()
		second, _ := read(&storeio.Entry[historyIndex]{Key: key, Value: first})
		if len(whole.byID) != len(second.byID) {
			t.Fatalf("one read %v, two reads %v", whole.byID, second.byID)
		}
		for k, v := range whole.byID {
			if second.byID[k] != v {
				t.Fatalf("%s: %v vs %v", k, v, second.byID[k])
			}
		}
	})
}

// FuzzRegistry: any registry entry is read without panic, and nothing is
// matched to a process that does not exist.
func FuzzRegistry(f *testing.F) {
	f.Add([]byte(`{"pid":11890,"sessionId":"b40b0000-0000-4000-8000-000000000000","cwd":"/p","startedAt":1795325919035,"procStart":"31585","status":"busy"}`))
	f.Add([]byte(`{"pid":"x","sessionId":5}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "1.json"), data, 0o644)
		live, _, err := readRegistry(dir)
		if err != nil {
			t.Fatal(err)
		}
		for id, ls := range live {
			if ls.proc.PID <= 0 || id == "" {
				t.Fatalf("matched %q to %+v", id, ls.proc)
			}
		}
	})
}

// FuzzArgv: any command line gives a safe session id or none.
func FuzzArgv(f *testing.F) {
	f.Add("claude -p --session-id 0b6c1b1e-0000-4000-8000-000000000001 -- hi")
	f.Add("claude --resume=../../x --fork-session")
	f.Fuzz(func(t *testing.T, cmdline string) {
		id := argvSession(strings.Fields(cmdline))
		if id != "" && (!validID(id) || strings.ContainsAny(id, "/.")) {
			t.Fatalf("unsafe id %q", id)
		}
		claudeArgv(strings.Fields(cmdline))
	})
}

// FuzzProjectSlug: a slug is a safe single folder name of bounded length.
func FuzzProjectSlug(f *testing.F) {
	f.Add("/tmp/w/ünï-code")
	f.Add(strings.Repeat("/abc", 80))
	f.Fuzz(func(t *testing.T, cwd string) {
		s := ProjectSlug(cwd)
		if len(s) > maxSlug+14 || strings.ContainsAny(s, "/.\\ \x00") {
			t.Fatalf("ProjectSlug(%q) = %q", cwd, s)
		}
	})
}
