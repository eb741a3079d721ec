package supervisor

import (
	"errors"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/session"
	"github.com/agentctl/agentctl/spawn"
	"github.com/agentctl/agentctl/supervisor/fuses"
	"github.com/agentctl/agentctl/supervisor/locks"
)

// codes maps each kind of failure the service's parts report to its API
// code, first match wins. Anything else is the service's own fault:
// internal.
var codes = []struct {
	kind error
	code string
}{
	{session.ErrNotFound, api.CodeNotFound},
	{adapters.ErrNoSession, api.CodeNotFound},
	{fuses.ErrNoFuse, api.CodeNotFound},
	{locks.ErrNoManualLock, api.CodeNotFound},
	{session.ErrInvalid, api.CodeInvalid},
	{session.ErrNotWaiting, api.CodeNotWaiting},
	{session.ErrChanged, api.CodeChanged},
	{fuses.ErrInvalid, api.CodeInvalid},
	{session.ErrNotRunning, api.CodeNotRunning},
	{adapters.ErrNotRunning, api.CodeNotRunning},
	{session.ErrRunning, api.CodeRunning},
	{locks.ErrLocked, api.CodeLocked},
	{adapters.ErrForbidden, api.CodeForbidden},
	{session.ErrUnsafeFolder, api.CodeForbidden},
	{session.ErrSpawn, api.CodeSpawnFailed},
	{session.ErrAdmission, api.CodeBusy},
	{spawn.ErrProtocol, api.CodeUnsupported},
}

// apiError is the one place an error becomes an API error.
func apiError(err error) *api.Error {
	var e *api.Error
	if errors.As(err, &e) {
		return e
	}
	var amb *session.AmbiguousError
	if errors.As(err, &amb) {
		return &api.Error{Code: api.CodeAmbiguous, Message: err.Error(), Candidates: amb.Candidates, Err: err}
	}
	for _, c := range codes {
		if errors.Is(err, c.kind) {
			return &api.Error{Code: c.code, Message: err.Error(), Err: err}
		}
	}
	return &api.Error{Code: api.CodeInternal, Message: err.Error(), Err: err}
}
