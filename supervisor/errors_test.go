package supervisor

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/session"
	"github.com/agentctl/agentctl/spawn"
	"github.com/agentctl/agentctl/supervisor/fuses"
	"github.com/agentctl/agentctl/supervisor/locks"
)

func TestAPIError(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("doing something: %w", err) }
	for _, tc := range []struct {
		name string
		err  error
		code string
	}{
		{"no session", wrap(session.ErrNotFound), api.CodeNotFound},
		{"no native session", wrap(adapters.ErrNoSession), api.CodeNotFound},
		{"no fuse", wrap(fuses.ErrNoFuse), api.CodeNotFound},
		{"no manual lock", wrap(locks.ErrNoManualLock), api.CodeNotFound},
		{"ambiguous prefix", wrap(&session.AmbiguousError{Prefix: "01", Candidates: []string{"01a", "01b"}}), api.CodeAmbiguous},
		{"invalid request", wrap(session.ErrInvalid), api.CodeInvalid},
		{"invalid fuse", wrap(fuses.ErrInvalid), api.CodeInvalid},
		{"not running", wrap(session.ErrNotRunning), api.CodeNotRunning},
		{"native not running", wrap(adapters.ErrNotRunning), api.CodeNotRunning},
		{"locked", wrap(&locks.LockedError{Dir: "/x"}), api.CodeLocked},
		{"forbidden", wrap(adapters.ErrForbidden), api.CodeForbidden},
		{"spawn failed", wrap(session.ErrSpawn), api.CodeSpawnFailed},
		{"already an API error", api.Errorf(api.CodeForbidden, "uid 7 may not"), api.CodeForbidden},
		// A failure of the service's own (a disk error writing fuses.json)
		// is internal, never the caller's mistake.
		{"disk full", wrap(syscall.ENOSPC), api.CodeInternal},
		{"survivors", wrap(&spawn.SurvivorsError{PIDs: []int{42}}), api.CodeInternal},
		{"monitor protocol", wrap(&spawn.ProtocolError{ID: "s1", Version: 9, Min: 1, Max: 2}), api.CodeUnsupported},
		{"anything else", errors.New("boom"), api.CodeInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := apiError(tc.err)
			if e.Code != tc.code {
				t.Errorf("code = %s, want %s", e.Code, tc.code)
			}
			if e.Message != tc.err.Error() {
				t.Errorf("message = %q, want %q", e.Message, tc.err.Error())
			}
			if !errors.Is(e, tc.err) {
				t.Errorf("the API error does not unwrap to its cause")
			}
		})
	}
	if e := apiError(&session.AmbiguousError{Prefix: "01", Candidates: []string{"01a", "01b"}}); len(e.Candidates) != 2 {
		t.Errorf("ambiguous candidates = %v", e.Candidates)
	}
}
