package adapters

import (
	"testing"
	"time"
)

func TestWithUnwritten(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	stored := []NativeSession{{Adapter: "pi", NativeID: "written", State: NativeIdle}}
	tie := func(pid int, id string) HookTie {
		return HookTie{PID: pid, Start: uint64(pid) * 10, NativeID: id, Cwd: "/w", Event: "session_start", At: at}
	}
	busy := tie(3, "new")
	busy.State, busy.WaitingFor, busy.WaitingSince = NativeBusy, WaitingPermission, at
	ours := func(pid int, _ uint64) bool { return pid != 9 }
	for _, tc := range []struct {
		name string
		ties []HookTie
		// want are the native ids added, with their state.
		want map[string]NativeState
	}{
		{"no ties", nil, nil},
		{"a session the store has", []HookTie{tie(1, "written")}, nil},
		{"a session the store has not written yet", []HookTie{tie(2, "new")}, map[string]NativeState{"new": NativeRunning}},
		{"with the state its reports said", []HookTie{busy}, map[string]NativeState{"new": NativeBusy}},
		{"a process of another store", []HookTie{tie(9, "elsewhere")}, nil},
		{"a tie without a session", []HookTie{tie(4, "")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := append([]NativeSession(nil), stored...)
			got := WithUnwritten(in, tc.ties, "pi", ours)
			if len(in) != len(stored) || in[0].NativeID != "written" || in[0].Hook != nil {
				t.Fatalf("the input was changed: %+v", in)
			}
			if len(got) != len(stored)+len(tc.want) {
				t.Fatalf("got %d sessions %+v, want %d", len(got), got, len(stored)+len(tc.want))
			}
			for _, ns := range got[len(stored):] {
				state, ok := tc.want[ns.NativeID]
				if !ok {
					t.Errorf("added %s, not wanted", ns.NativeID)
					continue
				}
				var tie *HookTie
				for i := range tc.ties {
					if tc.ties[i].NativeID == ns.NativeID {
						tie = &tc.ties[i]
					}
				}
				if ns.Adapter != "pi" || ns.State != state || ns.Cwd != "/w" || ns.Hook == nil || ns.Hook.Event != "session_start" {
					t.Errorf("added %+v, want pi's, %s, in /w, with its hook", ns, state)
				}
				if p := ns.Process; p == nil || p.PID != tie.PID || p.Start != tie.Start || p.Evidence != tie.Source() {
					t.Errorf("process %+v, want pid %d by %q", p, tie.PID, tie.Source())
				}
				if ns.WaitingFor != tie.WaitingFor || !ns.WaitingSince.Equal(tie.WaitingSince) {
					t.Errorf("waiting %q since %v, want the report's", ns.WaitingFor, ns.WaitingSince)
				}
			}
		})
	}
}
