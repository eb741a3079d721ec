package codex

import (
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

// A notify report comes from the shared app-server (its pid, not the
// TUI's): it speaks of the thread it names once the store tied that
// thread's process, and not of a turn the store shows begun since.
func TestWithNotifies(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tui := &adapters.ProcessRef{PID: 100, Start: 7, Evidence: evidenceOpenFile}
	daemon := adapters.HookTie{PID: 50, Start: 3, NativeID: "th-1", Event: HookTurnComplete, At: at, State: adapters.NativeIdle, WaitingFor: adapters.WaitingInput, WaitingSince: at}
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := []adapters.NativeSession{tc.ns}
			got := withNotifies(in, tc.ties)[0]
			if got.Hook != nil != tc.wantHook {
				t.Fatalf("hook evidence %+v, want it %v", got.Hook, tc.wantHook)
			}
			if !tc.wantHook {
				if got.State != tc.ns.State || got.WaitingFor != "" {
					t.Errorf("state %s waiting %q, want the store's %s", got.State, got.WaitingFor, tc.ns.State)
				}
				return
			}
			if got.State != adapters.NativeIdle || got.WaitingFor != adapters.WaitingInput || got.Hook.PID != tui.PID || got.Process != tui {
				t.Errorf("got %+v (hook %+v), want idle, waiting for input, on the TUI's process", got, got.Hook)
			}
			if in[0].Hook != nil {
				t.Error("the input was changed (it may be a cache's)")
			}
		})
	}
}
