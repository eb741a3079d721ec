package session

import (
	"errors"
	"fmt"
	"strings"
)

// The session core's kinds of failure. The service turns each into an API
// code in one place; every other error is the service's own fault.
var (
	ErrNotFound   = errors.New("no such session")
	ErrInvalid    = errors.New("invalid request")
	ErrNotRunning = errors.New("the session is not running")
	// ErrRunning: the operation needs a session that has ended.
	ErrRunning = errors.New("the session is running")
	// ErrSpawn: the command or agent could not be started (not installed,
	// not executable, bad working directory): the caller's to fix.
	ErrSpawn = errors.New("the command could not be started")
	// ErrUnsafeFolder: a session folder this service would not have made
	// (a symbolic link, another user's, one others may write into). Its
	// records are not trusted, so nothing is done to what they name.
	ErrUnsafeFolder = errors.New("the session's folder is not safe to read")
	// ErrAdmission: admission holds the launch back (a cap on running
	// sessions, the memory floor, a provider's limit) and it did not ask
	// to be queued; the same launch may be admitted later.
	ErrAdmission = errors.New("admission holds the launch back")
)

// fault is one of the kinds above with a message of its own: the message is
// what a person reads, the kind is what the service maps.
type fault struct {
	kind error
	msg  string
}

func (f *fault) Error() string        { return f.msg }
func (f *fault) Is(target error) bool { return target == f.kind }

func faultf(kind error, format string, args ...any) error {
	return &fault{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// invalid is a request the API's own checks refused (the launch contract,
// api.RunRequest.Normalize): an ErrInvalid with their message.
func invalid(err error) error { return &fault{kind: ErrInvalid, msg: err.Error()} }

// AmbiguousError: a prefix matches several sessions.
type AmbiguousError struct {
	Prefix     string
	Candidates []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%q matches %d sessions: %s; type more of the id", e.Prefix, len(e.Candidates), strings.Join(e.Candidates, ", "))
}
