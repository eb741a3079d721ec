package codex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/adapters"
)

// The notifications of Codex 0.169.0's TUI as its notify program got them
// (captured by integrate's TestCodexNotifyReports), and hostile ones.
func TestReadHook(t *testing.T) {
	t.Parallel()
	seed := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "hooks", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const tid = "01a219f6-031f-7ff3-9313-5fa076e713f0"
	tests := []struct {
		name, event, payload string
		want                 adapters.HookFacts
		err                  string
	}{
		{name: "end of a TUI's turn", event: HookTurnComplete, payload: seed("agent-turn-complete"),
			want: adapters.HookFacts{Event: HookTurnComplete, NativeID: tid, Cwd: "/home/user/proj", State: adapters.NativeIdle,
				WaitingFor: adapters.WaitingInput, Text: "codex-integ-answer"}},
		{name: "end of exec's turn", event: HookTurnComplete,
			payload: `{"type":"agent-turn-complete","thread-id":"` + tid + `","turn-id":"t","cwd":"/p","client":"codex_exec","input-messages":["x"],"last-assistant-message":null}`,
			want:    adapters.HookFacts{Event: HookTurnComplete, NativeID: tid, Cwd: "/p", State: adapters.NativeIdle}},
		{name: "title generation", event: HookTurnComplete, payload: seed("agent-turn-complete-title"), err: "title generation"},
		{name: "other event", event: "approval-requested", payload: `{"type":"approval-requested"}`, err: "not one"},
		{name: "event named otherwise", event: "x", payload: seed("agent-turn-complete"), err: "sent as"},
		{name: "not a thread id", event: HookTurnComplete, payload: `{"type":"agent-turn-complete","thread-id":"../x","cwd":"/p"}`, err: "not a Codex thread id"},
		{name: "relative cwd", event: HookTurnComplete, payload: `{"type":"agent-turn-complete","thread-id":"` + tid + `","cwd":"p"}`, err: "absolute"},
		{name: "wrong type", event: HookTurnComplete, payload: `{"type":"agent-turn-complete","thread-id":"` + tid + `","cwd":"/p","input-messages":"x"}`, err: "read report"},
		{name: "huge", event: HookTurnComplete, payload: `{"x":"` + strings.Repeat("a", adapters.MaxHookPayload) + `"}`, err: "more than"},
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

// FuzzReadHook: whatever a notification holds, ReadHook answers facts or
// an error, and the facts it answers are bounded and name a thread.
func FuzzReadHook(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "hooks", "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(HookTurnComplete, b)
	}
	a := New(adapters.Env{})
	f.Fuzz(func(t *testing.T, event string, payload []byte) {
		got, err := a.ReadHook(event, payload)
		if err != nil {
			return
		}
		if !uuidOnly().MatchString(got.NativeID) || got.Event != event || !filepath.IsAbs(got.Cwd) {
			t.Fatalf("facts without a thread, event or folder: %+v", got)
		}
		if len(got.Text) > adapters.MaxHookText {
			t.Fatalf("unbounded text: %d", len(got.Text))
		}
	})
}
