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
	const hid = "01a21a8e-4a49-7e53-8d8e-e66c61baddd2"
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
		{name: "event named otherwise", event: "x", payload: seed("agent-turn-complete"), err: "not one"},
		{name: "not a thread id", event: HookTurnComplete, payload: `{"type":"agent-turn-complete","thread-id":"../x","cwd":"/p"}`, err: "not a Codex thread id"},
		{name: "relative cwd", event: HookTurnComplete, payload: `{"type":"agent-turn-complete","thread-id":"` + tid + `","cwd":"p"}`, err: "absolute"},
		{name: "wrong type", event: HookTurnComplete, payload: `{"type":"agent-turn-complete","thread-id":"` + tid + `","cwd":"/p","input-messages":"x"}`, err: "read report"},
		{name: "huge", event: HookTurnComplete, payload: `{"x":"` + strings.Repeat("a", adapters.MaxHookPayload) + `"}`, err: "more than"},

		// Codex's hooks (hooks.json), as Codex 0.169's app-server daemon ran
		// them for a TUI.
		{name: "session start", event: HookSessionStart, payload: seed(HookSessionStart),
			want: adapters.HookFacts{Event: HookSessionStart, NativeID: hid, Cwd: "/home/user/proj", State: adapters.NativeIdle}},
		{name: "prompt", event: HookUserPromptSubmit, payload: seed(HookUserPromptSubmit),
			want: adapters.HookFacts{Event: HookUserPromptSubmit, NativeID: hid, Cwd: "/home/user/proj", State: adapters.NativeBusy}},
		{name: "tool ran", event: HookPostToolUse, payload: seed(HookPostToolUse),
			want: adapters.HookFacts{Event: HookPostToolUse, NativeID: hid, Cwd: "/home/user/proj", State: adapters.NativeBusy}},
		{name: "permission", event: HookPermissionRequest, payload: seed(HookPermissionRequest),
			want: adapters.HookFacts{Event: HookPermissionRequest, NativeID: "01a21a9a-8533-7361-932b-fc0103325315", Cwd: "/home/user/proj", WaitingFor: adapters.WaitingPermission,
				Tool: "Bash", Input: "touch made-by-hand", Request: "01a21a9a-998d-7843-8159-ffac5a2cfe56"}},
		{name: "end of turn", event: HookStop, payload: seed(HookStop),
			want: adapters.HookFacts{Event: HookStop, NativeID: hid, Cwd: "/home/user/proj", State: adapters.NativeIdle,
				WaitingFor: adapters.WaitingInput, Text: "hi from fakellm (after 1 tool calls)"}},
		{name: "title generation's prompt", event: HookUserPromptSubmit,
			payload: `{"session_id":"` + hid + `","cwd":"/p","hook_event_name":"UserPromptSubmit","prompt":"` + titleTurnPrompt + ` of at most"}`, err: "title generation"},
		{name: "hook sent as another event", event: HookStop, payload: seed(HookUserPromptSubmit), err: "sent as"},
		{name: "hook not installed", event: "PreCompact", payload: `{"session_id":"` + hid + `","cwd":"/p","hook_event_name":"PreCompact"}`, err: "not one agentctl reads"},
		{name: "hook without a thread", event: HookStop, payload: `{"session_id":"../../etc","cwd":"/p","hook_event_name":"Stop"}`, err: "not a Codex thread id"},
		{name: "hook in a relative folder", event: HookStop, payload: `{"session_id":"` + hid + `","cwd":"p","hook_event_name":"Stop"}`, err: "absolute"},
		{name: "hook with a NUL in its folder", event: HookStop, payload: `{"session_id":"` + hid + `","cwd":"/p\u0000x","hook_event_name":"Stop"}`, err: "absolute"},
		{name: "permission without its tool", event: HookPermissionRequest, payload: `{"session_id":"` + hid + `","cwd":"/p","hook_event_name":"PermissionRequest"}`, err: "without its tool"},
		{name: "hook's tool input of the wrong type", event: HookPermissionRequest,
			payload: `{"session_id":"` + hid + `","cwd":"/p","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":7}}`,
			want:    adapters.HookFacts{Event: HookPermissionRequest, NativeID: hid, Cwd: "/p", WaitingFor: adapters.WaitingPermission, Tool: "Bash", Input: `{"command":7}`, Request: HookPermissionRequest}},
		{name: "huge tool input", event: HookPermissionRequest,
			payload: `{"session_id":"` + hid + `","cwd":"/p","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"` + strings.Repeat("x", 100000) + `"}}`,
			want:    adapters.HookFacts{Event: HookPermissionRequest, NativeID: hid, Cwd: "/p", WaitingFor: adapters.WaitingPermission, Tool: "Bash", Input: strings.Repeat("x", maxHookInput), Request: HookPermissionRequest}},
		{name: "hook input malformed", event: HookStop, payload: `{"session_id":`, err: "read report"},
		{name: "hook input not an object", event: HookStop, payload: `["Stop"]`, err: "not a JSON object"},
		{name: "two objects", event: HookStop, payload: seed(HookStop) + seed(HookStop), err: "after its JSON object"},
		{name: "huge hook input", event: HookStop, payload: `{"x":"` + strings.Repeat("a", adapters.MaxHookPayload) + `"}`, err: "more than"},
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
		event := strings.TrimSuffix(filepath.Base(p), ".json")
		if strings.HasPrefix(event, HookTurnComplete) {
			event = HookTurnComplete
		}
		f.Add(event, b)
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
