package session

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/spawn"
)

func TestApplyAttention(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 4, 0, 0, 0, time.UTC)
	later := t0.Add(time.Minute)
	note := func(at time.Time, cleared bool) *spawn.Terminal {
		n := &spawn.TermNotification{Kind: spawn.NotifyOSC9, Text: "build needs input", At: at}
		if cleared {
			c := at.Add(time.Second)
			n.ClearedAt, n.ClearedBy = &c, "input"
		}
		return &spawn.Terminal{Notification: n, Title: "make", UpdatedAt: at}
	}
	perm := &hookEvidence{Activity: api.ActivityWaiting, Since: t0, Event: "PermissionRequest",
		Waiting: &api.Waiting{For: api.WaitingPermission, Tool: "Bash", Input: "rm -rf build", Request: "r1"}}
	busy := &hookEvidence{Activity: api.ActivityBusy, Since: later, Event: "PostToolUse"}
	for _, tc := range []struct {
		name                      string
		term                      *spawn.Terminal
		hook                      *hookEvidence
		activity, source, forWhat string
		since                     time.Time
	}{
		{"nothing says", nil, nil, "", "", "", time.Time{}},
		{"a notification", note(t0, false), nil, api.ActivityWaiting, api.SourceTerminal, api.WaitingInput, t0},
		{"an answered notification", note(t0, true), nil, "", "", "", time.Time{}},
		{"a permission hook", nil, perm, api.ActivityWaiting, api.SourceHook, api.WaitingPermission, t0},
		{"the newer notification wins", note(later, false), perm, api.ActivityWaiting, api.SourceTerminal, api.WaitingInput, later},
		{"the newer hook wins", note(t0, false), busy, api.ActivityBusy, api.SourceHook, "", later},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.term != nil {
				if err := atomicfile.WriteJSON(filepath.Join(dir, home.TerminalFile), tc.term, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.hook != nil {
				if err := atomicfile.WriteJSON(filepath.Join(dir, home.AttentionFile), tc.hook, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s := api.Session{Status: api.StatusRunning}
			applyAttention(dir, &s)
			if s.Activity != tc.activity || s.ActivitySource != tc.source || s.WaitingFor != tc.forWhat {
				t.Fatalf("activity %q source %q for %q, want %q %q %q", s.Activity, s.ActivitySource, s.WaitingFor, tc.activity, tc.source, tc.forWhat)
			}
			if !tc.since.IsZero() && (s.ActivitySince == nil || !s.ActivitySince.Equal(tc.since)) {
				t.Fatalf("since %v, want %v", s.ActivitySince, tc.since)
			}
			if tc.forWhat == api.WaitingPermission && (s.Waiting == nil || s.Waiting.Summary() != "permission: Bash: rm -rf build") {
				t.Fatalf("waiting %+v", s.Waiting)
			}
			if tc.term != nil && s.Title != "make" {
				t.Fatalf("title %q", s.Title)
			}
		})
	}
}

func TestApplyAttentionDamagedFileIsAWarning(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, home.AttentionFile), []byte("{torn"), 0o600)
	s := api.Session{Status: api.StatusRunning}
	applyAttention(dir, &s)
	if s.Activity != "" || len(s.Warnings) != 1 {
		t.Fatalf("activity %q warnings %q", s.Activity, s.Warnings)
	}
}

// A process below the session's monitor, or carrying its marker, is inside
// the session; others are not.
func TestInsideSession(t *testing.T) {
	self, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// This test process stands for the session's monitor.
	rec := spawn.Record{ID: "s1", Argv: []string{"x"}, Shim: self.Identity, Process: proc.Identity{PID: 1 << 22}}
	if err := atomicfile.WriteJSON(filepath.Join(dir, home.LaunchFile), rec, 0o600); err != nil {
		t.Fatal(err)
	}
	start := func(env ...string) int {
		cmd := exec.Command("sh", "-c", "sleep 30 & wait")
		cmd.Env = append(os.Environ(), env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd.Process.Pid
	}
	child := start()
	for _, tc := range []struct {
		name string
		pid  int
		want bool
	}{
		{"the monitor itself", os.Getpid(), true},
		{"a descendant", child, true},
		{"unknown caller", 0, true},
		{"init, outside", 1, false},
	} {
		got, err := insideSession(dir, "s1", tc.pid)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s (pid %d): inside %v, want %v", tc.name, tc.pid, got, tc.want)
		}
	}
	// Outside the tree but marked as the session's (escaped by double fork
	// before the monitor could adopt it): still inside.
	other := filepath.Join(t.TempDir(), "other")
	rec.ID, rec.Shim = "s2", proc.Identity{PID: 1 << 22}
	os.MkdirAll(other, 0o700)
	atomicfile.WriteJSON(filepath.Join(other, home.LaunchFile), rec, 0o600)
	marked := start(home.SessionEnv + "=s2")
	if got, _ := insideSession(other, "s2", marked); !got {
		t.Error("a process with the session's marker is not inside")
	}
	if got, _ := insideSession(other, "s2", child); got {
		t.Error("an unmarked process outside the tree is inside")
	}
}
