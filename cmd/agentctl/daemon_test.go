package main

import (
	"strings"
	"testing"

	"github.com/agentctl/agentctl/api"
)

// daemon status says which caps admit launches and how many wait, and
// nothing when the service admits everything.
func TestPrintAdmission(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		st   *api.AdmissionStatus
		want string
	}{
		{"none", nil, ""},
		{"queue only", &api.AdmissionStatus{Queued: 2}, "  admission admits every launch; 2 queued\n"},
		{"every cap", &api.AdmissionStatus{Policy: api.Admission{
			MaxSessions: 4, PerAdapter: map[string]int{"codex": 1, "claude": 2}, PerProvider: map[string]int{api.AdmissionAny: 1},
			PerGroup: map[string]int{"nightly": 3}, MemoryFloorBytes: 2 << 30,
		}, Queued: 0}, "  admission at most 4 running, at most 2 of adapter claude, at most 1 of adapter codex, " +
			"at most 1 per provider, at most 3 of group nightly, memory floor 2048 MiB; 0 queued\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			printAdmission(&b, tc.st)
			if b.String() != tc.want {
				t.Errorf("got  %q\nwant %q", b.String(), tc.want)
			}
		})
	}
}
