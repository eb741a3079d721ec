package api

import (
	"errors"
	"fmt"
	"net/http"
)

// Error codes are stable: scripts may match on them.
const (
	CodeNotFound    = "not_found"
	CodeAmbiguous   = "ambiguous"
	CodeInvalid     = "invalid"
	CodeSpawnFailed = "spawn_failed"
	CodeNotRunning  = "not_running"
	CodeNotWaiting  = "not_waiting" // an answer to a session that asks nothing it could take
	CodeRunning     = "running"
	CodeLocked      = "locked"
	CodeForbidden   = "forbidden"
	// CodeChanged: an answer named a request that is no longer pending
	// (another replaced it since it was shown).
	CodeChanged  = "changed"
	CodeInternal = "internal"
	// CodeBusy: the service cannot take the request now (its limits are
	// reached); the same request may succeed later.
	CodeBusy = "busy"
	// CodeTooMany: one client sent more than its rate (an integration's
	// reports from one agent process); later ones are taken again.
	CodeTooMany = "too_many"
	// CodeUnsupported: the session's monitor speaks a version of the
	// monitor protocol this service does not (the message says what to do).
	CodeUnsupported = "unsupported"
)

// Error is the JSON body of every failed API call. On the service's side it
// keeps the error it was made from, so errors.Is still sees the cause.
type Error struct {
	Code       string   `json:"code"`
	Message    string   `json:"message"`
	Candidates []string `json:"candidates,omitempty"`
	Err        error    `json:"-"`
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the error the answer was made from (nil on a client).
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with a code.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// HTTPStatus maps an error code to its HTTP status: the one place that does.
func HTTPStatus(code string) int {
	switch code {
	case CodeNotFound:
		return http.StatusNotFound
	case CodeAmbiguous, CodeLocked, CodeNotRunning, CodeRunning, CodeChanged, CodeUnsupported:
		return http.StatusConflict
	case CodeInvalid:
		return http.StatusBadRequest
	case CodeForbidden:
		return http.StatusForbidden
	case CodeSpawnFailed:
		return http.StatusUnprocessableEntity
	case CodeBusy:
		return http.StatusServiceUnavailable
	case CodeTooMany:
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

// CodeOf returns the code of an *Error in err's chain, or CodeInternal.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}
