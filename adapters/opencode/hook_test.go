package opencode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

// The reports of agentctl's plugin, as the real OpenCode 1.18.33 gave them
// (captured by integrate's TestOpenCodePluginReports), and hostile ones.
func TestReadHook(t *testing.T) {
	t.Parallel()
	seed := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "hooks", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const sid = "ses_de615ca0bffe0R82sySaTAaGxg"
	tests := []struct {
		name, event, payload string
		want                 adapters.HookFacts
		err                  string
	}{
		{name: "created", event: "session.created", payload: seed("session.created"),
			want: adapters.HookFacts{Event: "session.created", NativeID: sid, Cwd: "/home/user/proj", Sent: time.UnixMilli(1790000000123).UTC()}},
		{name: "busy", event: "session.status", payload: seed("session.status"),
			want: adapters.HookFacts{Event: "session.status", NativeID: sid, Cwd: "/home/user/proj", State: adapters.NativeBusy}},
		{name: "idle", event: "session.idle", payload: seed("session.idle"),
			want: adapters.HookFacts{Event: "session.idle", NativeID: sid, Cwd: "/home/user/proj", State: adapters.NativeIdle}},
		{name: "permission", event: "permission.asked", payload: seed("permission.asked"),
			want: adapters.HookFacts{Event: "permission.asked", NativeID: sid, Cwd: "/home/user/proj", WaitingFor: adapters.WaitingPermission,
				Tool: "bash", Input: "echo integ > allowed.txt", Request: "per_219ea8847001KQ2ZHBfHy4x528"}},
		{name: "replied", event: "permission.replied", payload: seed("permission.replied"),
			want: adapters.HookFacts{Event: "permission.replied", NativeID: sid, Cwd: "/home/user/proj", State: adapters.NativeBusy}},
		{name: "error", event: "session.error",
			payload: `{"directory":"/p","event":{"type":"session.error","properties":{"sessionID":"` + sid + `","error":{"name":"APIError","data":{"message":"rate limited"}}}}}`,
			want:    adapters.HookFacts{Event: "session.error", NativeID: sid, Cwd: "/p", Text: "APIError: rate limited"}},
		{name: "question", event: "question.asked",
			payload: `{"directory":"/p","event":{"type":"question.asked","properties":{"id":"que_1","sessionID":"` + sid + `","questions":[{"question":"Which one?"}]}}}`,
			want:    adapters.HookFacts{Event: "question.asked", NativeID: sid, Cwd: "/p", WaitingFor: "question", Text: "Which one?"}},
		{name: "with the time the plugin saw it", event: "session.idle",
			payload: `{"directory":"/p","sent":1790000000123,"event":{"type":"session.idle","properties":{"sessionID":"` + sid + `"}}}`,
			want:    adapters.HookFacts{Event: "session.idle", NativeID: sid, Cwd: "/p", State: adapters.NativeIdle, Sent: time.UnixMilli(1790000000123).UTC()}},
		{name: "event named otherwise", event: "session.idle", payload: seed("session.status"), err: "sent as"},
		{name: "not an id", event: "session.idle", payload: `{"directory":"/p","event":{"type":"session.idle","properties":{"sessionID":"../../x"}}}`, err: "not an OpenCode session id"},
		{name: "relative directory", event: "session.idle", payload: `{"directory":"p","event":{"type":"session.idle","properties":{"sessionID":"` + sid + `"}}}`, err: "absolute"},
		{name: "unknown status", event: "session.status", payload: `{"directory":"/p","event":{"type":"session.status","properties":{"sessionID":"` + sid + `","status":{"type":"dancing"}}}}`, err: "not one"},
		{name: "unreported event", event: "message.updated", payload: `{"directory":"/p","event":{"type":"message.updated","properties":{"sessionID":"` + sid + `"}}}`, err: "not one agentctl's"},
		{name: "malformed", event: "session.idle", payload: `{"directory":`, err: "read report"},
		{name: "trailing", event: "session.idle", payload: seed("session.idle") + `{}`, err: "after"},
		{name: "array", event: "session.idle", payload: `[]`, err: "not a JSON object"},
		{name: "huge", event: "session.idle", payload: `{"directory":"/p","x":"` + strings.Repeat("a", adapters.MaxHookPayload) + `"}`, err: "more than"},
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
		f.Add(strings.TrimSuffix(filepath.Base(p), ".json"), b)
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
