package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var seeds = []string{
	`{}`, `[]`, `{"a":[]}`, ` {"a" : { } , "b":[ 1 ,2 ]} ` + "\n", `"s"`, `0`, `-0.5e+10`, `1E3`, `true`, `false`, `null`,
	`{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"a \"q\" \\ \u00e9 \ud83d\ude00"}],"usage":{"input_tokens":3}}}`,
	`[[[[]]],[{}],{"":""}]`, "\t[1]\r\n ",
	``, ` `, `{`, `}`, `[1,]`, `{"a"}`, `{"a":}`, `{a:1}`, `[1 2]`, `"unterminated`, "\"ctl\x01\"", `"\x"`, `"\u12"`, `"\u12G4"`,
	`01`, `-`, `1.`, `1e`, `.5`, `+1`, `tru`, `nul`, `[1]x`, `{} {}`, `[1]]`, `{"a":1,}`, "\"bad \xff utf8\"",
}

// Valid agrees with json.Valid, and Members sees every member of a valid
// object, as written.
func TestValidAndMembers(t *testing.T) {
	t.Parallel()
	for _, s := range seeds {
		check(t, []byte(s))
	}
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	if Valid([]byte(deep)) {
		t.Errorf("%d nested arrays: valid", maxDepth+1)
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if bytes.Count(b, []byte("[")) > 1000 || bytes.Count(b, []byte("{")) > 1000 {
			return // encoding/json's depth bound is its own
		}
		check(t, b)
	})
}

func check(t *testing.T, b []byte) {
	t.Helper()
	want := json.Valid(b)
	if got := Valid(b); got != want {
		t.Fatalf("%q: Valid %v, json.Valid %v", b, got, want)
	}
	start := Space(b, 0)
	if !want || start >= len(b) || b[start] != '{' {
		return
	}
	var got []string
	end, err := Members(b, start, func(k, v []byte) { got = append(got, string(k)+"="+string(bytes.TrimSpace(v))) })
	if err != nil || Space(b, end) != len(b) {
		t.Fatalf("%q: Members: end %d, %v", b, end, err)
	}
	// The decoder's members, in order: the same count (a key repeated
	// is a member each time).
	n := 0
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.Token()
	for dec.More() {
		dec.Token()
		var v json.RawMessage
		dec.Decode(&v)
		n++
	}
	if len(got) != n {
		t.Fatalf("%q: %d members, the decoder %d", b, len(got), n)
	}
}
