package jsondecode

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// record has the kinds of fields the adapters' records decode into: an
// embedded struct, nested structs by value and by pointer, slices of
// structs, maps, raw messages, interfaces, numbers of each size, a custom
// decoder, ignored and renamed members.
type record struct {
	header
	Kind    string            `json:"type"`
	Count   int               `json:"count"`
	Small   int8              `json:"small"`
	Big     uint64            `json:"big"`
	Ratio   float64           `json:"ratio"`
	Flag    bool              `json:"flag"`
	Opt     *string           `json:"opt"`
	Body    body              `json:"body"`
	More    *body             `json:"more"`
	Items   []body            `json:"items"`
	Tags    map[string]string `json:"tags"`
	Raw     json.RawMessage   `json:"raw"`
	Any     any               `json:"any"`
	Cost    cost              `json:"cost"`
	Ignored string            `json:"-"`
	Quoted  int               `json:"quoted,string"`
}

type header struct {
	Timestamp string `json:"timestamp"`
	ID        string `json:"id"`
}

type body struct {
	Text  string   `json:"text"`
	Parts []string `json:"parts"`
	Usage struct {
		In  int64 `json:"input_tokens"`
		Out int64 `json:"output_tokens"`
	} `json:"usage"`
}

// cost decodes a number or an object with a total, as Pi's cost does.
type cost float64

func (c *cost) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err == nil {
		*c = cost(f)
		return nil
	}
	var o struct {
		Total float64 `json:"total"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	*c = cost(o.Total)
	return nil
}

var seeds = []string{
	`{"timestamp":"2026-11-01T10:00:00.000Z","id":"a","type":"assistant","count":3,"small":-4,"big":18446744073709551615,"ratio":1.5e-3,"flag":true,"opt":"x","body":{"text":"hé \u00e9 \ud83d\ude00","parts":["a","b"],"usage":{"input_tokens":12,"output_tokens":4}},"more":{"text":"m"},"items":[{"text":"1"},{"text":"2"}],"tags":{"k":"v"},"raw":{"any":[1,2,{"x":null}]},"any":{"n":1,"s":"t","l":[true,null]},"cost":{"total":0.25},"-":"ignored","quoted":"7"}`,
	`{"type":"user","count":1.5}`,
	`{"type":"user","count":"3","body":{"text":"after the wrong type"}}`,
	`{"small":300,"type":"overflow"}`,
	`{"TYPE":"case","Count":2,"BODY":{"TEXT":"folded"}}`,
	`{"type":"a","type":"b","tags":{"k":"1","k":"2"}}`,
	`{"body":null,"more":null,"items":null,"tags":null,"raw":null,"any":null,"opt":null,"cost":null}`,
	`{"body":{"text":"\ud800 lone surrogate"},"type":"\u0000nul"}`,
	"{\"type\":\"bad utf-8 \xff\xfe\"}",
	`{"type":"unterminated`,
	`{"type":"x"} trailing`,
	`{"type":"x",}`,
	`[1,2,3]`,
	`"a string"`,
	`null`,
	``,
	`{"count":01}`,
	`{"ratio":-0.0,"big":-1}`,
	`{"items":[{"text":1},{"text":"ok"}]}`,
	`{"cost":"not a number"}`,
	`{"cost":3}`,
	`{"quoted":7}`,
	`{"raw":  {"a" : 1 }  ,"any":1e400}`,
	`{"body":{"usage":{"input_tokens":1e3}}}`,
	` {"type":"spaces"} `,
	`{"type":"\u002f\/\b\f\n\r\t\"\\"}`,
}

// FuzzUnmarshal holds Unmarshal to encoding/json: the same value and the
// same error, for any input.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		same(t, data)
	})
}

func TestUnmarshalIsEncodingJSONs(t *testing.T) {
	t.Parallel()
	for _, s := range append(seeds,
		// Past encoding/json's nesting limit, in an ignored member and
		// in an interface; and just under it.
		`{"x":`+strings.Repeat(`{"a":`, 10001)+`1`+strings.Repeat("}", 10002),
		`{"any":`+strings.Repeat(`[`, 10001)+strings.Repeat("]", 10001)+`}`,
		`{"x":`+strings.Repeat(`[`, 9998)+strings.Repeat("]", 9998)+`}`,
		`{"type":"`+strings.Repeat("{", 20000)+`"}`,
	) {
		same(t, []byte(s))
	}
}

func same(t *testing.T, data []byte) {
	t.Helper()
	var got, want record
	gotErr := Unmarshal(data, &got)
	wantErr := json.Unmarshal(data, &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got  %+v\n want %+v", data, got, want)
	}
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%q: error %v, want %v", data, gotErr, wantErr)
	}
	var gotAny, wantAny any
	gotErr, wantErr = Unmarshal(data, &gotAny), json.Unmarshal(data, &wantAny)
	if !reflect.DeepEqual(gotAny, wantAny) || (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%q as any: %#v, %v; want %#v, %v", data, gotAny, gotErr, wantAny, wantErr)
	}
}

// A wrong type in one field still yields the fields after it, as the
// adapters expect of encoding/json, and the error says which field.
func TestTypeErrorKeepsTheOtherFields(t *testing.T) {
	t.Parallel()
	var r record
	err := Unmarshal([]byte(`{"count":"three","type":"user","body":{"text":"kept"}}`), &r)
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || !strings.Contains(te.Field, "count") {
		t.Fatalf("error %v, want a type error on count", err)
	}
	if r.Kind != "user" || r.Body.Text != "kept" {
		t.Fatalf("decoded %+v, want the fields after the wrong one", r)
	}
}

// TestNothingAliasesTheInput: the readers decode lines out of read buffers
// they lend out again, so a decoded string, raw message or interface value
// must not point into the input.
func TestNothingAliasesTheInput(t *testing.T) {
	t.Parallel()
	in := []byte(seeds[0])
	var r record
	if err := Unmarshal(in, &r); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%+v", r)
	for i := range in {
		in[i] = 'x'
	}
	if got := fmt.Sprintf("%+v", r); got != want {
		t.Fatalf("overwriting the input changed the value:\n%s\nwas\n%s", got, want)
	}
}
