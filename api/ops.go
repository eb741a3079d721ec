package api

import "time"

// Lock is a directory lock as the API shows it. Its JSON keys are snake_case
// like every other API object (the tool agentctl replaces used camelCase).
type Lock struct {
	Directory  string    `json:"directory"`
	Type       string    `json:"type"` // "auto" or "manual"
	PID        int       `json:"pid,omitempty"`
	StartTicks uint64    `json:"start_ticks,omitempty"`
	SessionID  string    `json:"session_id,omitempty"`
	LockedBy   string    `json:"locked_by,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	LockedAt   time.Time `json:"locked_at"`
}

// LockRequest takes a manual lock.
type LockRequest struct {
	Directory string `json:"directory"` // absolute
	By        string `json:"by,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Force replaces another manual lock on the directory.
	Force bool `json:"force,omitempty"`
}

// UnlockRequest releases a manual lock.
type UnlockRequest struct {
	Directory string `json:"directory"` // absolute
}

// FuseAction is what a fuse does when it expires.
type FuseAction struct {
	Script  string `json:"script,omitempty"`
	Webhook string `json:"webhook,omitempty"`
}

// Fuse is a directory's timer as the API shows it (snake_case keys, as
// every API object).
type Fuse struct {
	Directory string      `json:"directory"`
	TTLMs     int64       `json:"ttl_ms"`
	ExpiresAt time.Time   `json:"expires_at"`
	SessionID string      `json:"session_id,omitempty"`
	OnExpire  *FuseAction `json:"on_expire,omitempty"`
	Label     string      `json:"label,omitempty"`
	SetAt     time.Time   `json:"set_at"`
}

// FuseRequest sets, extends or cancels a fuse.
type FuseRequest struct {
	Directory string `json:"directory"` // absolute
	// TTL is a Go duration; for extend, "" re-arms with the fuse's own.
	TTL       string `json:"ttl,omitempty"`
	Script    string `json:"script,omitempty"`
	Webhook   string `json:"webhook,omitempty"`
	Label     string `json:"label,omitempty"`
	SessionID string `json:"session_id,omitempty"`
}

// HookRun is how one of a session's lifecycle hooks went.
type HookRun struct {
	Phase   string `json:"phase"` // "on-create", "on-complete"
	Command string `json:"command"`
	// Status: ok, failed, timeout, error (could not start), running, or
	// interrupted (the service stopped while it ran: outcome unknown).
	Status    string     `json:"status"`
	ExitCode  *int       `json:"exit_code,omitempty"`
	Signal    string     `json:"signal,omitempty"`
	Error     string     `json:"error,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// Log is the file that holds the hook's output.
	Log string `json:"log,omitempty"`
}
