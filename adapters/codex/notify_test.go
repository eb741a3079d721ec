package codex

import (
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

// A notify or hook report comes from the shared app-server (its pid, not
// the TUI's): it speaks of the thread it names once the store tied that
// thread's process, and not of a state the store shows changed since
// (a turn begun after its end, ended after its prompt); a permission
// request stands while the turn runs, not once it ended.
func TestWithNotifies(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tui := &adapters.ProcessRef{PID: 100, Start: 7, Evidence: evidenceOpenFile}
	daemon := adapters.HookTie{PID: 50, Start: 3, NativeID: "th-1", Event: HookTurnComplete, At: at, State: adapters.NativeIdle, WaitingFor: adapters.WaitingInput, WaitingSince: at}
	prompt := adapters.HookTie{PID: 50, Start: 3, NativeID: "th-1", Event: HookUserPromptSubmit, At: at, State: adapters.NativeBusy}
	asked := adapters.HookTie{PID: 50, Start: 3, NativeID: "th-1", Event: HookPermissionRequest, At: at, State: adapters.NativeBusy, WaitingFor: adapters.WaitingPermission, WaitingSince: at, Request: "turn-1"}
	for _, tc := range []struct {
		name     string
		ns       adapters.NativeSession
		ties     []adapters.HookTie
		wantHook bool
	}{
		{"tied thread", adapters.NativeSession{NativeID: "th-1", Process: tui, State: adapters.NativeBusy, UpdatedAt: at.Add(-time.Second)}, []adapters.HookTie{daemon}, true},
		{"no process known", adapters.NativeSession{NativeID: "th-1", State: adapters.NativeUnknown}, []adapters.HookTie{daemon}, false},
		{"another thread", adapters.NativeSession{NativeID: "th-2", Process: tui, State: adapters.NativeIdle}, []adapters.HookTie{daemon}, false},
		{"a turn begun since", adapters.NativeSession{NativeID: "th-1", Process: tui, State: adapters.NativeBusy, UpdatedAt: at.Add(time.Second)}, []adapters.HookTie{daemon}, false},
		{"no ties", adapters.NativeSession{NativeID: "th-1", Process: tui, State: adapters.NativeBusy}, nil, false},
		{"a prompt's turn", adapters.NativeSession{NativeID: "th-1", Process: tui, State: adapters.NativeBusy, UpdatedAt: at.Add(time.Second)}, []adapters.HookTie{prompt}, true},
		{"a prompt's turn ended since", adapters.NativeSession{NativeID: "th-1", Process: tui, State: adapters.NativeIdle, UpdatedAt: at.Add(time.Second)}, []adapters.HookTie{prompt}, false},
		{"a permission asked, the rollout written since", adapters.NativeSession{NativeID: "th-1", Process: tui, State: adapters.NativeBusy, UpdatedAt: at.Add(time.Second)}, []adapters.HookTie{asked}, true},
		{"a permission asked, the turn ended since", adapters.NativeSession{NativeID: "th-1", Process: tui, State: adapters.NativeIdle, UpdatedAt: at.Add(time.Second)}, []adapters.HookTie{asked}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := []adapters.NativeSession{tc.ns}
			got := withNotifies(in, lastReports(tc.ties))[0]
			if got.Hook != nil != tc.wantHook {
				t.Fatalf("hook evidence %+v, want it %v", got.Hook, tc.wantHook)
			}
			if !tc.wantHook {
				if got.State != tc.ns.State || got.WaitingFor != "" {
					t.Errorf("state %s waiting %q, want the store's %s", got.State, got.WaitingFor, tc.ns.State)
				}
				return
			}
			tie := tc.ties[0]
			if got.State != tie.State || got.WaitingFor != tie.WaitingFor || got.Hook.PID != tui.PID || got.Process != tui {
				t.Errorf("got %+v (hook %+v), want %s, waiting for %q, on the TUI's process", got, got.Hook, tie.State, tie.WaitingFor)
			}
			if in[0].Hook != nil {
				t.Error("the input was changed (it may be a cache's)")
			}
		})
	}
}
