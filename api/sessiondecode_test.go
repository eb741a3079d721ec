package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// checkDecode holds DecodeJSON to json.Unmarshal over data: the same
// session, the same error.
func checkDecode(t *testing.T, data []byte) {
	t.Helper()
	var want, got Session
	wantErr := json.Unmarshal(data, &want)
	err := got.DecodeJSON(data)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("DecodeJSON(%q): error %v, json.Unmarshal's %v", data, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeJSON(%q):\n%+v\njson.Unmarshal:\n%+v", data, got, want)
	}
}

// variants are data changed in ways json.Unmarshal reads otherwise, or
// refuses: white space, a key in capitals, a null, an unknown key, a
// repeated member, a cut, a wrong type.
func variants(data []byte, r *rand.Rand) [][]byte {
	out := [][]byte{data}
	var spaced bytes.Buffer
	json.Indent(&spaced, data, " ", "\t")
	out = append(out, spaced.Bytes())
	if len(data) > 2 {
		body := data[1 : len(data)-1]
		out = append(out,
			data[:r.IntN(len(data))],
			bytes.Replace(data, []byte(`"id"`), []byte(`"ID"`), 1),
			append([]byte(`{"future":{"x":[1,"}"]},`), data[1:]...),
			append([]byte(`{"cwd":null,`), data[1:]...),
			append([]byte(`{"pid":1.5,`), data[1:]...),
			append([]byte(`{"tokens_in":"7",`), data[1:]...),
			append([]byte(`{"labels":{"a":"b"},"waiting":{"for":"x"},"command":[],`), data[1:]...),
			append(append(append([]byte("{"), body...), ','), append(body, '}')...),
			append(bytes.Clone(data), " x"...),
		)
	}
	return out
}

// plainText sets the session's own strings to text without escapes.
func plainText(v reflect.Value) {
	for i := range v.NumField() {
		switch f := v.Field(i); {
		case f.Kind() == reflect.String && f.Len() > 0:
			f.SetString("plain text é")
		case f.Type() == reflect.TypeFor[[]string]():
			for j := range f.Len() {
				f.Index(j).SetString("/home/dev")
			}
		}
	}
}

// TestDecodeJSON: DecodeJSON reads what json.Unmarshal reads, the same,
// over each field set alone, random sessions as AppendJSON writes them,
// and changes to them that it leaves to json.Unmarshal.
func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	typ := reflect.TypeFor[Session]()
	for i := range typ.NumField() {
		t.Run(typ.Field(i).Name, func(t *testing.T) {
			for range 20 {
				var s Session
				sample(reflect.ValueOf(&s).Elem().Field(i), r)
				data, err := s.AppendJSON(nil)
				if err != nil {
					continue
				}
				for _, v := range variants(data, r) {
					checkDecode(t, v)
				}
			}
		})
	}
	t.Run("random", func(t *testing.T) {
		fast := 0
		for range 400 {
			var s Session
			v := reflect.ValueOf(&s).Elem()
			for i := range v.NumField() {
				if r.IntN(3) == 0 {
					sample(v.Field(i), r)
				}
			}
			if r.IntN(2) == 0 {
				plainText(v)
			}
			data, err := s.AppendJSON(nil)
			if err != nil {
				continue
			}
			// What AppendJSON writes, escapes and all, is read here, not
			// left to json.Unmarshal.
			if p := (sessionParser{d: data, ds: string(data)}); p.session(&Session{}) {
				fast++
			} else {
				t.Errorf("%s left to json.Unmarshal", data)
			}
			for _, v := range variants(data, r) {
				checkDecode(t, v)
			}
		}
		if fast < 20 {
			t.Errorf("only %d of the sessions read here", fast)
		}
	})
	for _, data := range []string{``, `{}`, `[]`, `null`, `{"id":"a"}`, ` {"id" : "a" , "pid" : -0 } `, `{"pid":01}`, `{"pid":-}`, `{"cost_usd":1e400}`,
		`{"cost_usd":-0.5e-3}`, `{"created_at":"2026-01-02T03:04:05+01:00"}`, `{"created_at":"2026-1-2"}`, `{"totals_pending":tru}`,
		`{"oom":false,"oom":true}`, `{"command":["a",]}`, `{"command":["a" "b"]}`, `{"labels":{"a":"b"},"labels":{"c":"d"}}`, `{"id":"\u00e9"}`, "{\"id\":\"\xff\"}",
		`{"prompt":"a\"b\\c\/d\be\ff\ng\rh\ti"}`, `{"prompt":"\u00E9\u00e9\u2028\u003c"}`, `{"prompt":"\ud83d\ude00 \ud83d \ude00 \ud83dx \ud83d\u0041 \udbff\udfff"}`,
		`{"prompt":"\ud83d\ud83d\ude00"}`, `{"prompt":"\u12"}`, `{"prompt":"\u12g4"}`, `{"prompt":"\x"}`, `{"prompt":"\`, `{"prompt":"a\n` + "\x01" + `"}`,
		"{\"prompt\":\"\\n\xff\"}", `{"\u0069d":"x"}`, `{"command":["a\nb","\"c\""]}`, `{"cwd":"\/home\/dev"}`, `{"created_at":"2026-01-02T03:04:05\u005a"}`} {
		checkDecode(t, []byte(data))
	}
}

// FuzzDecodeJSON holds DecodeJSON to json.Unmarshal over any bytes.
func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"id":"01a0e633-3854-79d1-885b-efdb7b54a9a9","handle":"01a0e633-3","adapter":"pi","origin":"discovered","status":"ended","created_at":"2026-09-28T04:08:31.572Z","cwd":"/home/dev/src/project-026","native_id":"01a0e633-3854-79d1-885b-efdb7b54a9a9","model":"google/gemini-2.5-pro","tokens_in":33516,"tokens_out":2355,"cost_usd":0.107562,"last_activity":"2026-09-28T04:35:30.147Z","prompt":"the a server read handler"}`))
	f.Add([]byte(`{"id":"x","status":"exited","exit_code":0,"command":["make","all"],"labels":{"team":"infra"},"totals_pending":true,"warnings":["w"]}`))
	f.Add([]byte(`{"id":"x","waiting":{"for":"permission","tool":"Bash"},"resources":{"source":"cgroup"},"queue":{"position":1,"since":"2026-01-01T00:00:00Z"}}`))
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, data) })
}

// BenchmarkDecodeJSON is a list's session decoded by DecodeJSON and by
// json.Unmarshal.
func BenchmarkDecodeJSON(b *testing.B) {
	data := []byte(`{"id":"01a0e633-3854-79d1-885b-efdb7b54a9a9","handle":"01a0e633-3","adapter":"pi","origin":"discovered","status":"ended","created_at":"2026-09-28T04:08:31.572Z","cwd":"/home/dev/src/project-026","native_id":"01a0e633-3854-79d1-885b-efdb7b54a9a9","model":"google/gemini-2.5-pro","tokens_in":33516,"tokens_out":2355,"cost_usd":0.107562,"last_activity":"2026-09-28T04:35:30.147Z","prompt":"the a server read handler parse return index cache error parse add struct signal"}`)
	b.Run("DecodeJSON", func(b *testing.B) {
		for b.Loop() {
			var s Session
			if err := s.DecodeJSON(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		for b.Loop() {
			var s Session
			if err := json.Unmarshal(data, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
