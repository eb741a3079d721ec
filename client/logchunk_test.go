package client

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentctl/agentctl/api"
)

// The fast path decodes exactly what the JSON decoder would.
func TestDecodeLogChunk(t *testing.T) {
	t.Parallel()
	for _, ch := range []api.LogChunk{
		{Data: []byte("hello\nworld\x1b[31m\x00\xff")},
		{Data: []byte("x")},
		{Data: []byte("partial"), Partial: true},
		{Text: "a line"},
		{End: true, Session: &api.Session{ID: "k3x9"}},
	} {
		line, err := json.Marshal(ch)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeLogChunk(line)
		if err != nil {
			t.Fatalf("decode %s: %v", line, err)
		}
		if !reflect.DeepEqual(got, ch) {
			t.Errorf("decode %s = %+v, want %+v", line, got, ch)
		}
	}
	if _, err := decodeLogChunk([]byte(`{"data":"!!"}`)); err == nil {
		t.Error("bad base64 decoded")
	}
}
