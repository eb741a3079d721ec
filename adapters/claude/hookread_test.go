package claude

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/proc"
)

const hookSession = "0b4c3a8e-2f1d-4e5a-9c7b-6d8e9f0a1b2c"

// What Claude Code's hooks say, as agentctl reads it: the session and
// folder, busy at a prompt or a tool, idle at the end of a turn, waiting
// for a permission (answerable) or a question, the end of the session.
func TestReadHook(t *testing.T) {
	t.Parallel()
	in := func(event string, extra string) string {
		return `{"hook_event_name":"` + event + `","session_id":"` + hookSession + `","cwd":"/w","transcript_path":"/t.jsonl"` + extra + `}`
	}
	cases := []struct {
		name, event, payload string
		want                 adapters.HookFacts
	}{
		{"start", "", in("SessionStart", `,"source":"startup"`), adapters.HookFacts{Event: "SessionStart", NativeID: hookSession, Cwd: "/w", State: adapters.NativeIdle}},
		{"prompt", "UserPromptSubmit", in("UserPromptSubmit", `,"prompt":"hi"`), adapters.HookFacts{Event: "UserPromptSubmit", NativeID: hookSession, Cwd: "/w", State: adapters.NativeBusy}},
		{"tool", "", in("PreToolUse", `,"tool_name":"Bash"`), adapters.HookFacts{Event: "PreToolUse", NativeID: hookSession, Cwd: "/w", State: adapters.NativeBusy}},
		{"permission", "PermissionRequest", in("PermissionRequest", `,"tool_name":"Bash","tool_input":{"command":"rm -rf build","description":"clean"}`),
			adapters.HookFacts{Event: "PermissionRequest", NativeID: hookSession, Cwd: "/w", WaitingFor: adapters.WaitingPermission, Tool: "Bash", Input: "rm -rf build", Request: "PermissionRequest"}},
		{"permission prompt", "", in("Notification", `,"notification_type":"permission_prompt","message":"Claude needs your permission to use Bash"`),
			adapters.HookFacts{Event: "Notification", NativeID: hookSession, Cwd: "/w", WaitingFor: adapters.WaitingPermission, Text: "Claude needs your permission to use Bash"}},
		{"question", "", in("Notification", `,"notification_type":"elicitation_dialog","message":"which one?"`),
			adapters.HookFacts{Event: "Notification", NativeID: hookSession, Cwd: "/w", WaitingFor: "question", Text: "which one?"}},
		{"other notification", "", in("Notification", `,"notification_type":"auth_success","message":"ok"`),
			adapters.HookFacts{Event: "Notification", NativeID: hookSession, Cwd: "/w", Text: "ok"}},
		{"stop", "Stop", in("Stop", ``), adapters.HookFacts{Event: "Stop", NativeID: hookSession, Cwd: "/w", State: adapters.NativeIdle}},
		{"limit", "", in("StopFailure", `,"error_type":"rate_limit","error":"5-hour limit reached"`),
			adapters.HookFacts{Event: "StopFailure", NativeID: hookSession, Cwd: "/w", State: adapters.NativeIdle, WaitingFor: "limit", Text: "rate_limit 5-hour limit reached"}},
		{"end", "", in("SessionEnd", `,"reason":"exit"`), adapters.HookFacts{Event: "SessionEnd", NativeID: hookSession, Cwd: "/w", Ended: true}},
		{"event from the flag", "Stop", `{"session_id":"` + hookSession + `"}`, adapters.HookFacts{Event: "Stop", NativeID: hookSession, State: adapters.NativeIdle}},
	}
	for _, c := range cases {
		got, err := readHook(c.event, []byte(c.payload))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// What cannot be Claude's hook input is refused, saying why.
func TestReadHookRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, event, payload, why string }{
		{"not JSON", "Stop", `{"hook_event_name":`, "claude hook input"},
		{"an array", "Stop", `[{"hook_event_name":"Stop"}]`, "not a JSON object"},
		{"empty", "Stop", ``, "not a JSON object"},
		{"no event", "", `{"session_id":"` + hookSession + `"}`, "no hook_event_name"},
		{"another event than run for", "Stop", `{"hook_event_name":"PermissionRequest"}`, "but the hook was run for"},
		{"a path for a session", "Stop", `{"hook_event_name":"Stop","session_id":"../../x"}`, "not a Claude session id"},
		{"a relative folder", "Stop", `{"hook_event_name":"Stop","cwd":"work"}`, "not an absolute path"},
	}
	for _, c := range cases {
		_, err := readHook(c.event, []byte(c.payload))
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: err %v, want one saying %q", c.name, err, c.why)
		}
	}
}

// Long inputs are cut: a tool's input can be a whole file.
func TestReadHookBoundsText(t *testing.T) {
	t.Parallel()
	got, err := readHook("PermissionRequest", []byte(`{"hook_event_name":"PermissionRequest","tool_name":"Write","tool_input":{"file_path":"/`+strings.Repeat("é", 400)+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Input) > maxHookText || !strings.HasPrefix(got.Input, "/é") {
		t.Errorf("input of %d bytes: %.20q", len(got.Input), got.Input)
	}
}

func FuzzReadHook(f *testing.F) {
	f.Add("PermissionRequest", []byte(`{"hook_event_name":"PermissionRequest","session_id":"`+hookSession+`","cwd":"/w","tool_name":"Bash","tool_input":{"command":"ls"}}`))
	f.Add("", []byte(`{"hook_event_name":"Notification","notification_type":"idle_prompt","message":"waiting"}`))
	f.Add("Stop", []byte(`{}`))
	f.Fuzz(func(t *testing.T, event string, payload []byte) {
		got, err := readHook(event, payload)
		if err != nil {
			return
		}
		if got.NativeID != "" && !validID(got.NativeID) {
			t.Errorf("session id %q passed", got.NativeID)
		}
		if got.Cwd != "" && !filepath.IsAbs(got.Cwd) {
			t.Errorf("folder %q passed", got.Cwd)
		}
		if len(got.Input) > maxHookText || len(got.Text) > maxHookText || len(got.Tool) > maxHookText {
			t.Errorf("unbounded text: %d %d %d", len(got.Input), len(got.Text), len(got.Tool))
		}
	})
}

// A process the integration proved is tied to the session its reports
// name at once, before any file of the store exists (its registry entry
// or transcript), with the reports' state; a tie whose process has ended,
// or was replaced by another under its pid, ties nothing.
func TestIntegrationTiesBeforeTheStoreSays(t *testing.T) {
	t.Parallel()
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	info, err := proc.Lookup(sleeper.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	book := ties{
		{PID: info.PID, Start: info.Start, NativeID: hookSession, Cwd: "/w", Event: "PermissionRequest", At: at, WaitingFor: adapters.WaitingPermission, WaitingSince: at, Tool: "Bash", Input: "ls", Request: "r1"},
		{PID: info.PID, Start: info.Start + 1, NativeID: "9b4c3a8e-2f1d-4e5a-9c7b-6d8e9f0a1b2c", Cwd: "/w", Event: "Stop", At: at, State: adapters.NativeIdle},
	}
	a := New(adapters.Env{Home: t.TempDir(), Hooks: book})
	found, err := a.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 {
		t.Fatalf("found %d sessions, want the one the live process's reports name: %+v", len(found), found)
	}
	ns := found[0]
	if ns.NativeID != hookSession || ns.Process == nil || ns.Process.PID != info.PID || ns.Process.Start != info.Start || ns.Hook == nil {
		t.Fatalf("session %s process %+v hook %v", ns.NativeID, ns.Process, ns.Hook)
	}
	if ns.WaitingFor != adapters.WaitingPermission || !strings.HasPrefix(ns.Process.Evidence, "integration (hook PermissionRequest at ") {
		t.Errorf("waiting %q, evidence %q", ns.WaitingFor, ns.Process.Evidence)
	}
}

// ties is a book of integration evidence as given.
type ties []adapters.HookTie

func (b ties) HookTies(agent string) []adapters.HookTie {
	if agent != Name {
		return nil
	}
	return b
}

// The agent the service walks up to from a hook: Claude Code's own binary
// or its Node install, not a shell nor another agent.
func TestIsAgentProcess(t *testing.T) {
	t.Parallel()
	a := New(adapters.Env{Home: os.TempDir()})
	for argv, want := range map[string]bool{
		"/home/u/.local/bin/claude --permission-mode default":         true,
		"node /usr/lib/node_modules/@anthropic-ai/claude-code/cli.js": true,
		"/bin/sh -c claude": false,
		"codex":             false,
	} {
		if got := a.IsAgentProcess(strings.Fields(argv)); got != want {
			t.Errorf("%q: %v, want %v", argv, got, want)
		}
	}
}

// A turn's end in Claude's TUI leaves a person at its prompt; in -p, or at
// any other event, it does not.
func TestWaitsAtPrompt(t *testing.T) {
	t.Parallel()
	a := New(adapters.Env{})
	for _, tc := range []struct {
		event string
		argv  []string
		want  bool
	}{
		{"Stop", []string{"claude"}, true},
		{"StopFailure", []string{"node", "/usr/lib/claude/cli.js", "--resume", "x"}, true},
		{"Stop", []string{"claude", "-p", "hi"}, false},
		{"Stop", []string{"claude", "--print", "hi"}, false},
		{"SessionStart", []string{"claude"}, false},
		{"UserPromptSubmit", []string{"claude"}, false},
		{"Stop", nil, false},
	} {
		if got := a.WaitsAtPrompt(tc.event, tc.argv); got != tc.want {
			t.Errorf("WaitsAtPrompt(%s, %q) = %v, want %v", tc.event, tc.argv, got, tc.want)
		}
	}
}
