package session

import (
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/spawn"
)

// A process is checked by pid and start stamp: alive with the recorded
// stamp, gone, or its pid now another process's.
func TestIdentityEvidence(t *testing.T) {
	self, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		id   proc.Identity
		want string
	}{
		{"alive", self.Identity, "is alive with the recorded start stamp"},
		{"gone", proc.Identity{PID: done.Process.Pid, Start: 1}, "is gone"},
		{"pid reused", proc.Identity{PID: self.PID, Start: self.Start + 1}, "now runs another process"},
		{"never recorded", proc.Identity{}, "has no recorded pid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := identityEvidence(api.EvidenceProcess, "the agent's process", tc.id)
			if ev.Kind != api.EvidenceProcess || ev.PID != tc.id.PID || !strings.Contains(ev.Says, tc.want) {
				t.Errorf("evidence %+v, want it to say %q", ev, tc.want)
			}
		})
	}
}

// The launched rule's evidence: the launch record, the exit record (or its
// absence), the process and the monitor; the reason names the step that
// decided.
func TestLaunchedEvidence(t *testing.T) {
	self, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	code := 3
	at := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	rec := spawn.Record{Process: self.Identity, Shim: proc.Identity{PID: self.PID, Start: self.Start + 1}, CreatedAt: at}
	for _, tc := range []struct {
		name       string
		st         spawn.State
		exitSays   string
		reasonSays string
	}{
		{"running", spawn.State{Record: rec, Running: true}, "none", "running: no exit record"},
		{"exited", spawn.State{Record: rec, Exit: &spawn.ExitRecord{ExitCode: &code, EndedAt: at}}, "exited with code 3", "exited: the exit record says so"},
		{"killed by stop", spawn.State{Record: rec, Exit: &spawn.ExitRecord{Signal: "SIGTERM", EndedAt: at, StoppedBy: "agentctl stop"}},
			"killed by SIGTERM", "killed: the exit record"},
		{"lost", spawn.State{Record: rec}, "none", "lost: the process is gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := launchedEvidence("/s/x", tc.st)
			kinds := make([]string, len(evs))
			for i, e := range evs {
				kinds[i] = e.Kind
			}
			want := []string{api.EvidenceLaunchRecord, api.EvidenceExitRecord, api.EvidenceProcess, api.EvidenceMonitor}
			if strings.Join(kinds, ",") != strings.Join(want, ",") {
				t.Fatalf("kinds %v, want %v", kinds, want)
			}
			if evs[0].Source != "/s/x/launch.json" || evs[1].Source != "/s/x/exit.json" {
				t.Errorf("sources %q, %q", evs[0].Source, evs[1].Source)
			}
			if !strings.Contains(evs[1].Says, tc.exitSays) {
				t.Errorf("exit record says %q, want %q", evs[1].Says, tc.exitSays)
			}
			if tc.st.Exit != nil && tc.st.Exit.StoppedBy != "" && !strings.Contains(evs[1].Says, "agentctl stop") {
				t.Errorf("exit record does not say who stopped it: %q", evs[1].Says)
			}
			if !strings.Contains(evs[2].Says, "is alive with the recorded start stamp") || !strings.Contains(evs[3].Says, "now runs another process") {
				t.Errorf("process %q, monitor %q", evs[2].Says, evs[3].Says)
			}
			if r := launchedReason(tc.st); !strings.HasPrefix(r, tc.reasonSays) {
				t.Errorf("reason %q, want it to begin %q", r, tc.reasonSays)
			}
		})
	}
}

// The native rule's evidence: the adapter's answer, the store's record, the
// attributed process and by what, contenders and rejections.
func TestNativeEvidence(t *testing.T) {
	self, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	ended := &adapters.NativeSession{Adapter: "pi", NativeID: "01aa", Path: "/s/a.jsonl", State: adapters.NativeDone,
		UpdatedAt: time.Now(), Evidence: []adapters.Evidence{{Kind: adapters.EvidenceRejected, PID: 42, Says: "another store"}}}
	attributed := &adapters.NativeSession{Adapter: "pi", NativeID: "01bb", Path: "/s/b.jsonl", State: adapters.NativeBusy,
		Process: &adapters.ProcessRef{PID: self.PID, Start: self.Start, Evidence: "environ"}}
	contended := &adapters.NativeSession{Adapter: "pi", NativeID: "01cc", Path: "/s/c.jsonl", State: adapters.NativeUnknown,
		Evidence: adapters.ContenderEvidence("pi", []int{10, 11})}
	oneOfTwo := &adapters.NativeSession{Adapter: "pi", NativeID: "01dd", Path: "/s/d.jsonl", State: adapters.NativeIdle,
		Evidence: []adapters.Evidence{{Kind: adapters.EvidenceCandidate, PID: 10, Says: "holds it in some consistent assignment"}, {Kind: adapters.EvidenceCandidate, PID: 11, Says: "holds it in some consistent assignment"}}}
	for _, tc := range []struct {
		name    string
		ns      *adapters.NativeSession
		vouched bool
		kinds   []string
		reason  string
		says    string // in some evidence
	}{
		{"ended, one rejected", ended, true, []string{api.EvidenceStore, api.EvidenceRejected}, "ended:", "the last turn is done"},
		{"attributed by the marker", attributed, true, []string{api.EvidenceStore, api.EvidenceAttributed}, "running: a live process", "the environment marker agentctl set"},
		{"contenders", contended, true, []string{api.EvidenceStore, api.EvidenceContender, api.EvidenceContender}, "unknown: no process is tied to it, and live processes", "nothing ties it to one session"},
		{"running, which pid open", oneOfTwo, true, []string{api.EvidenceStore, api.EvidenceCandidate, api.EvidenceCandidate}, "running: every assignment of the live processes consistent with the facts gives it one of pid 10 or 11", "some consistent assignment"},
		{"adapter failed", ended, false, []string{api.EvidenceAdapter, api.EvidenceStore, api.EvidenceRejected}, "unknown: its adapter could not answer", "timed out"},
		{"no longer listed", nil, true, []string{api.EvidenceStore}, "its adapter no longer lists it", "does not list this session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := nativeEvidence("pi", tc.ns, tc.vouched, []string{"adapter pi: timed out after 3s"})
			kinds := make([]string, len(evs))
			var all strings.Builder
			for i, e := range evs {
				kinds[i] = e.Kind
				all.WriteString(e.Says + "\n")
			}
			if strings.Join(kinds, ",") != strings.Join(tc.kinds, ",") {
				t.Errorf("kinds %v, want %v", kinds, tc.kinds)
			}
			if !strings.Contains(all.String(), tc.says) {
				t.Errorf("evidence %q does not say %q", all.String(), tc.says)
			}
			if r := nativeReason(tc.ns, tc.vouched); !strings.HasPrefix(r, tc.reason) {
				t.Errorf("reason %q, want it to begin %q", r, tc.reason)
			}
		})
	}
	if evs := nativeEvidence("pi", ended, true, nil); evs[0].Source != "/s/a.jsonl" || evs[1].PID != 42 {
		t.Errorf("store source %q, rejected pid %d", evs[0].Source, evs[1].PID)
	}
}

// Running launched sessions with a known native id pin their processes in
// the adapters' attribution; ended ones, or ones without an id, do not.
func TestLaunchPins(t *testing.T) {
	t.Parallel()
	got := launchPins([]api.Session{
		{Adapter: "opencode", Status: api.StatusRunning, PID: 10, NativeID: "ses_a"},
		{Adapter: "opencode", Status: api.StatusExited, PID: 11, NativeID: "ses_b"},
		{Adapter: "opencode", Status: api.StatusRunning, PID: 12},
		{Adapter: "pi", Status: api.StatusRunning, PID: 13, NativeID: "01aa"},
	})
	want := map[string]map[int]string{"opencode": {10: "ses_a"}, "pi": {13: "01aa"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("launchPins = %v, want %v", got, want)
	}
}
