package supervisor

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

// A list written a session at a time reads back as the list written whole.
func TestWriteListReadsBackAsWriteJSON(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	in := int64(5)
	for _, tc := range []struct {
		name string
		list api.SessionList
	}{
		{"empty", api.SessionList{Sessions: []api.Session{}}},
		{"warnings only", api.SessionList{Sessions: []api.Session{}, Warnings: []string{"adapter x: <failed> & \"why\""}}},
		{"sessions", api.SessionList{Sessions: []api.Session{
			{ID: "a1", Adapter: "claude", Status: api.StatusRunning, CreatedAt: now, TokensIn: &in, Prompt: "<b>html</b> & \u2028"},
			{ID: "b2", Adapter: "codex", Status: api.StatusExited, CreatedAt: now.Add(time.Second)},
		}, Warnings: []string{"w"}}},
		{"resources and the machine", api.SessionList{Sessions: []api.Session{
			{ID: "c3", Adapter: "exec", Status: api.StatusRunning, CreatedAt: now, Resources: &api.Resources{Source: "processes", SampledAt: now, MemoryBytes: new(uint64)}},
		}, Machine: &api.Machine{CPUs: 2, Load1: 0.5, MemTotalBytes: 1 << 30, MemAvailableBytes: 1 << 29}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole, streamed := httptest.NewRecorder(), httptest.NewRecorder()
			writeJSON(whole, 200, tc.list)
			writeList(streamed, tc.list, false)
			var a, b api.SessionList
			if err := json.Unmarshal(whole.Body.Bytes(), &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(streamed.Body.Bytes(), &b); err != nil {
				t.Fatalf("%v:\n%s", err, streamed.Body.Bytes())
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("written whole: %+v\nwritten a session at a time: %+v", a, b)
			}
			// Byte for byte what a json.Encoder writes a session at a time.
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			want.WriteString(`{"sessions":[`)
			for i := range tc.list.Sessions {
				if i > 0 {
					want.WriteByte(',')
				}
				enc.Encode(&tc.list.Sessions[i])
			}
			want.WriteByte(']')
			if len(tc.list.Warnings) > 0 {
				want.WriteString(`,"warnings":`)
				enc.Encode(tc.list.Warnings)
			}
			if tc.list.Machine != nil {
				want.WriteString(`,"machine":`)
				enc.Encode(tc.list.Machine)
			}
			want.WriteString("}\n")
			if got := streamed.Body.String(); got != want.String() {
				t.Errorf("written:\n%s\nwant:\n%s", got, want.String())
			}
			if streamed.Code != 200 || streamed.Header().Get("Content-Type") != "application/json" {
				t.Errorf("status %d, content type %q", streamed.Code, streamed.Header().Get("Content-Type"))
			}
			if n := streamed.Header().Get(api.HeaderListCount); n != strconv.Itoa(len(tc.list.Sessions)) {
				t.Errorf("announced %q sessions, wrote %d", n, len(tc.list.Sessions))
			}
		})
	}
}

// A list asked for as the table writes each session's TableRow.
func TestWriteListTable(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	in := int64(5)
	list := api.SessionList{Sessions: []api.Session{
		{ID: "a1", NativeID: "a1", Origin: api.OriginDiscovered, Adapter: "claude", Status: api.StatusEnded, CreatedAt: now, TokensIn: &in,
			Prompt: strings.Repeat("a long prompt ", 40), Labels: map[string]string{"k": "v"}, Warnings: []string{"w"}},
		{ID: "b2", Name: "named", Prompt: "not shown", Adapter: "exec", Status: api.StatusExited, Command: []string{"make"}},
	}}
	rec := httptest.NewRecorder()
	writeList(rec, list, true)
	var got api.SessionList
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for i := range list.Sessions {
		if want := list.Sessions[i].TableRow(); !reflect.DeepEqual(got.Sessions[i], want) {
			t.Errorf("session %d written as %+v, want its TableRow %+v", i, got.Sessions[i], want)
		}
	}
	if got.Sessions[0].NativeID != "" || got.Sessions[0].Labels != nil || len(got.Sessions[0].Prompt) >= len(list.Sessions[0].Prompt) || got.Sessions[1].Prompt != "" {
		t.Errorf("the table's rows carry what it does not show: %+v", got.Sessions)
	}
}
