package openclaw

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

// ErrUnreachable means no gateway answered at the configured URL.
var ErrUnreachable = errors.New("gateway not reachable")

// ErrMissingScope means the gateway did not grant a scope a method needs.
var ErrMissingScope = fmt.Errorf("missing scope: %w", adapters.ErrForbidden)

// Detail codes the client branches on (error.details.code).
const (
	detailProtocolMismatch = "PROTOCOL_MISMATCH"
	detailMissingScope     = "MISSING_SCOPE"
	detailPairingRequired  = "PAIRING_REQUIRED"
	detailTokenMissing     = "AUTH_TOKEN_MISSING"
	detailTokenMismatch    = "AUTH_TOKEN_MISMATCH"
	detailPasswordMissing  = "AUTH_PASSWORD_MISSING"
	detailPasswordMismatch = "AUTH_PASSWORD_MISMATCH"
	detailAuthRequired     = "AUTH_REQUIRED"
	detailRateLimited      = "AUTH_RATE_LIMITED"
	codeForbidden          = "FORBIDDEN"
	codeUnavailable        = "UNAVAILABLE"
)

// GatewayError is an error response from the gateway.
type GatewayError struct {
	Method string
	// Code is the error's code (INVALID_REQUEST, UNAVAILABLE, FORBIDDEN, ...)
	// and DetailCode its details.code (AUTH_TOKEN_MISMATCH, MISSING_SCOPE, ...).
	Code           string
	DetailCode     string
	Reason         string
	Message        string
	MissingScope   string
	RequiredScopes []string
	Retryable      bool
	RetryAfter     time.Duration
}

func newGatewayError(method string, w *wireError) *GatewayError {
	e := &GatewayError{
		Method:     method,
		Code:       w.Code,
		Message:    w.Message,
		Retryable:  w.Retryable,
		RetryAfter: time.Duration(w.RetryAfterMs) * time.Millisecond,
	}
	var d errorDetails
	if len(w.Details) > 0 && json.Unmarshal(w.Details, &d) == nil {
		e.DetailCode = d.Code
		e.Reason = d.Reason
		e.MissingScope = d.MissingScope
		e.RequiredScopes = d.RequiredScopes
	}
	return e
}

func (e *GatewayError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", e.Method)
	if hint := e.hint(); hint != "" {
		b.WriteString(hint)
		b.WriteString(" (")
	}
	b.WriteString(e.Code)
	if e.DetailCode != "" {
		b.WriteString("/" + e.DetailCode)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.hint() != "" {
		b.WriteString(")")
	}
	return b.String()
}

// hint says in plain words what went wrong and what to do, for the errors a
// user can fix.
func (e *GatewayError) hint() string {
	switch e.DetailCode {
	case detailProtocolMismatch:
		return fmt.Sprintf("the gateway does not accept protocol version %d (this agentctl needs an OpenClaw gateway from 2026.9 on)", ProtocolVersion)
	case detailTokenMissing, detailAuthRequired:
		return "the gateway requires a token: set OPENCLAW_GATEWAY_TOKEN to the gateway's token"
	case detailTokenMismatch:
		return "the gateway rejected the token: set OPENCLAW_GATEWAY_TOKEN to the gateway's token"
	case detailPasswordMissing, detailPasswordMismatch:
		return "the gateway rejected the password: set OPENCLAW_GATEWAY_PASSWORD to the gateway's password"
	case detailRateLimited:
		return "the gateway is rate-limiting failed logins: wait and check the token"
	case detailPairingRequired:
		return "the gateway has not approved agentctl's device yet: approve it with `openclaw devices`"
	case detailMissingScope:
		return fmt.Sprintf("the gateway did not grant agentctl the %s scope", e.MissingScope)
	}
	return ""
}

// Is lets callers test for ErrMissingScope.
func (e *GatewayError) Is(target error) bool {
	return target == ErrMissingScope && (e.DetailCode == detailMissingScope || (e.Code == codeForbidden && e.MissingScope != ""))
}

// retryableStartup reports whether the gateway asked to retry because it is
// still starting.
func (e *GatewayError) retryableStartup() bool {
	return e.Code == codeUnavailable && e.Retryable
}
