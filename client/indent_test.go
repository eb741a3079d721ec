package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

// indentSeeds are valid and invalid JSON of every kind indentJSON meets.
var indentSeeds = []string{
	`{}`, `[]`, `{"a":[]}`, ` {"a" : { } , "b":[ 1 ,2 ]} ` + "\n", `"s"`, `0`, `-0.5e+10`, `1E3`, `true`, `false`, `null`,
	`{"sessions":[{"id":"1","prompt":"a \"quoted\" \\ \u00e9 \ud83d\ude00 <&>","tokens_in":3,"cost_usd":0.25,"labels":{"k":"v"}}` + "\n" + `,{"id":"2"}` + "\n" + `],"warnings":["w"]}` + "\n",
	`[[[[]]],[{}],{"":""}]`, "\t[1]\r\n ",
	// invalid
	``, ` `, `{`, `}`, `[1,]`, `{"a"}`, `{"a":}`, `{a:1}`, `[1 2]`, `"unterminated`, "\"ctl\x01\"", `"\x"`, `"\u12"`, `"\u12G4"`,
	`01`, `-`, `1.`, `1e`, `.5`, `+1`, `tru`, `nul`, `[1]x`, `{} {}`, `[1]]`, `{"a":1,}`,
}

// indentJSON writes what json.Indent writes, and refuses what it refuses.
func TestIndentJSON(t *testing.T) {
	t.Parallel()
	for _, in := range indentSeeds {
		checkIndent(t, []byte(in))
	}
	deep := strings.Repeat("[", maxIndentDepth+1) + strings.Repeat("]", maxIndentDepth+1)
	if _, err := indentJSON(nil, []byte(deep)); err == nil {
		t.Errorf("%d nested arrays: indented", maxIndentDepth+1)
	}
}

// Every byte, at every place of a string, is copied or refused as
// json.Indent does; deep nesting is indented as it indents it.
func TestIndentJSONStringsAndDepths(t *testing.T) {
	t.Parallel()
	for c := range 256 {
		for at := range 20 {
			b := []byte("abcdefghijklmnopqrstuvwx")[:20]
			b[at] = byte(c)
			checkIndent(t, []byte(`["`+string(b)+`",1]`))
			checkIndent(t, []byte(`{"`+string(b)+`":"\\"}`))
		}
	}
	for _, depth := range []int{31, 32, 33, 40} {
		checkIndent(t, []byte(strings.Repeat(`[1,{"k":`, depth)+"2"+strings.Repeat("}]", depth)))
	}
}

// BenchmarkIndentJSON re-indents the answer of a list of 7,000 sessions
// (3.3 MB), what `list -a --json` does to the service's answer.
func BenchmarkIndentJSON(b *testing.B) {
	created, last := time.Date(2026, 9, 28, 4, 8, 31, 572e6, time.UTC), time.Date(2026, 9, 28, 4, 35, 30, 147e6, time.UTC)
	in, out, cost := int64(33516), int64(2355), 0.107562
	body := []byte(`{"sessions":[`)
	for i := range 7000 {
		if i > 0 {
			body = append(body, ',')
		}
		id := fmt.Sprintf("01a0e633-3854-79d1-885b-%012x", i)
		s := api.Session{ID: id, Handle: id[:10], Adapter: "pi", Origin: api.OriginDiscovered, Status: api.StatusEnded,
			CreatedAt: created, Cwd: "/home/dev/src/project-026", NativeID: id, Model: "google/gemini-2.5-pro",
			TokensIn: &in, TokensOut: &out, CostUSD: &cost, LastActivity: &last, Prompt: "the a server read handler parse return index cache error parse add struct signal"}
		var err error
		if body, err = s.AppendJSON(body); err != nil {
			b.Fatal(err)
		}
		body = append(body, '\n')
	}
	body = append(body, "]}\n"...)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := indentJSON(make([]byte, 0, indentedSize(len(body))), body); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzIndentJSON(f *testing.F) {
	for _, in := range indentSeeds {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if bytes.Count(in, []byte("[")) > 1000 || bytes.Count(in, []byte("{")) > 1000 {
			return // json.Indent's own depth bound differs; not compared
		}
		checkIndent(t, in)
	})
}

func checkIndent(t *testing.T, in []byte) {
	t.Helper()
	var want bytes.Buffer
	wantErr := json.Indent(&want, in, "", "  ")
	got, err := indentJSON([]byte("prefix"), in)
	switch {
	case (err != nil) != (wantErr != nil):
		t.Errorf("%q: error %v, json.Indent's %v", in, err, wantErr)
	case err == nil && string(got) != "prefix"+want.String():
		t.Errorf("%q:\n got %q\nwant %q", in, got, "prefix"+want.String())
	}
}

// list --json prints the service's answer re-indented, byte for byte what
// decoding it and printing it indented gives; an answer that is not
// UTF-8 goes that long way.
func TestListIndented(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	in, out := int64(1200), int64(34)
	cost := 0.125
	list := api.SessionList{Warnings: []string{"adapter x: timed out <&>"}}
	for i := range 3 {
		list.Sessions = append(list.Sessions, api.Session{ID: fmt.Sprintf("id-%d", i), Adapter: "claude", Status: api.StatusRunning,
			CreatedAt: at, Prompt: "fix \"it\" \u2028 <b>", TokensIn: &in, TokensOut: &out, CostUSD: &cost, Labels: map[string]string{"k": "v"}})
	}
	for _, tc := range []struct {
		name string
		body func() []byte
	}{
		{"as the service writes it", func() []byte {
			var b bytes.Buffer
			b.WriteString(`{"sessions":[`)
			enc := json.NewEncoder(&b)
			for i := range list.Sessions {
				if i > 0 {
					b.WriteByte(',')
				}
				enc.Encode(&list.Sessions[i])
			}
			b.WriteString(`],"warnings":`)
			enc.Encode(list.Warnings)
			b.WriteString("}\n")
			return b.Bytes()
		}},
		{"not UTF-8", func() []byte {
			return []byte(`{"sessions":[{"id":"a","adapter":"x","origin":"discovered","status":"ended","created_at":"2026-01-02T03:04:05Z","prompt":"bad ` + "\xff" + ` byte"}]}` + "\n")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := tc.body()
			h := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write(body)
			})
			c := New(h, "", false)
			ctx := context.Background()
			decoded, err := c.List(ctx, api.ListOptions{All: true})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.MarshalIndent(decoded, "", "  ")
			want = append(want, '\n')
			got, err := c.ListIndented(ctx, api.ListOptions{All: true})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}
