package pi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

// The reports of agentctl's extension, as the real Pi 0.73.1 gave them
// (captured by integrate's TestPiExtensionReports), and hostile ones.
func TestReadHook(t *testing.T) {
	t.Parallel()
	seed := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "hooks", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const sid = "01a219eb-67f5-74e0-9575-6e3bbb83424a"
	base := adapters.HookFacts{NativeID: sid, Cwd: "/home/user/proj"}
	with := func(f func(*adapters.HookFacts)) adapters.HookFacts { h := base; f(&h); return h }
	tests := []struct {
		name, event, payload string
		want                 adapters.HookFacts
		err                  string
	}{
		{name: "start", event: "session_start", payload: seed("session_start"), want: with(func(h *adapters.HookFacts) { h.Event = "session_start" })},
		{name: "agent start", event: "agent_start", payload: seed("agent_start"),
			want: with(func(h *adapters.HookFacts) { h.Event, h.State = "agent_start", adapters.NativeBusy })},
		{name: "turn end", event: "turn_end", payload: seed("turn_end"), want: with(func(h *adapters.HookFacts) { h.Event = "turn_end" })},
		{name: "agent end in the TUI", event: "agent_end", payload: seed("agent_end"),
			want: with(func(h *adapters.HookFacts) {
				h.Event, h.State, h.WaitingFor = "agent_end", adapters.NativeIdle, adapters.WaitingInput
			})},
		{name: "agent end of -p", event: "agent_end", payload: `{"type":"agent_end","sessionId":"` + sid + `","cwd":"/home/user/proj","hasUI":false}`,
			want: with(func(h *adapters.HookFacts) { h.Event, h.State = "agent_end", adapters.NativeIdle })},
		{name: "tool call reported", event: "tool_call", payload: seed("tool_call"),
			want: adapters.HookFacts{Event: "tool_call", NativeID: "01a219eb-658d-7227-b9dc-9da39e8a084a", Cwd: "/home/user/proj",
				State: adapters.NativeBusy, Tool: "bash", Input: "echo integ > tool.txt"}},
		{name: "tool call asked", event: "tool_call", payload: seed("tool_call-ask"),
			want: adapters.HookFacts{Event: "tool_call", NativeID: "01a219eb-0041-756d-93ea-ba539bf72772", Cwd: "/home/user/proj",
				State: adapters.NativeBusy, Tool: "bash", Input: "echo integ > tool.txt", WaitingFor: adapters.WaitingPermission, Request: "call_fake_ae57f13a1ea7"}},
		{name: "with the time the extension saw it", event: "agent_start", payload: `{"type":"agent_start","sessionId":"` + sid + `","cwd":"/home/user/proj","sent":1790000000123}`,
			want: with(func(h *adapters.HookFacts) {
				h.Event, h.State, h.Sent = "agent_start", adapters.NativeBusy, time.UnixMilli(1790000000123).UTC()
			})},
		{name: "a time out of reason is none", event: "agent_start", payload: `{"type":"agent_start","sessionId":"` + sid + `","cwd":"/home/user/proj","sent":12}`,
			want: with(func(h *adapters.HookFacts) { h.Event, h.State = "agent_start", adapters.NativeBusy })},
		{name: "shutdown", event: "session_shutdown", payload: `{"type":"session_shutdown","sessionId":"` + sid + `","cwd":"/home/user/proj"}`,
			want: with(func(h *adapters.HookFacts) { h.Event, h.Ended = "session_shutdown", true })},
		{name: "event named otherwise", event: "agent_end", payload: seed("agent_start"), err: "sent as"},
		{name: "not an id", event: "agent_end", payload: `{"type":"agent_end","sessionId":"x","cwd":"/p"}`, err: "not a Pi session id"},
		{name: "relative cwd", event: "agent_end", payload: `{"type":"agent_end","sessionId":"` + sid + `","cwd":"p"}`, err: "absolute"},
		{name: "tool call without its tool", event: "tool_call", payload: `{"type":"tool_call","sessionId":"` + sid + `","cwd":"/p"}`, err: "without"},
		{name: "unreported event", event: "message_end", payload: `{"type":"message_end","sessionId":"` + sid + `","cwd":"/p"}`, err: "not one"},
		{name: "malformed", event: "agent_end", payload: `{"type":`, err: "read report"},
		{name: "huge", event: "agent_end", payload: `{"x":"` + strings.Repeat("a", adapters.MaxHookPayload) + `"}`, err: "more than"},
	}
	a := New(adapters.Env{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := a.ReadHook(tt.event, []byte(tt.payload))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// FuzzReadHook: whatever a report holds, ReadHook answers facts or an
// error, and the facts it answers are bounded and name a session.
func FuzzReadHook(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "hooks", "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(strings.TrimSuffix(strings.TrimSuffix(filepath.Base(p), ".json"), "-ask"), b)
	}
	a := New(adapters.Env{})
	f.Fuzz(func(t *testing.T, event string, payload []byte) {
		got, err := a.ReadHook(event, payload)
		if err != nil {
			return
		}
		if got.NativeID == "" || got.Event != event || !filepath.IsAbs(got.Cwd) {
			t.Fatalf("facts without a session, event or folder: %+v", got)
		}
		if len(got.Input) > adapters.MaxHookText || len(got.Text) > adapters.MaxHookText || len(got.Tool) > adapters.MaxHookText {
			t.Fatalf("unbounded facts: %d %d %d", len(got.Input), len(got.Text), len(got.Tool))
		}
	})
}
