package session

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
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
