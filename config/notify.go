package config

import (
	"fmt"
	"time"
)

// DefaultNotifyAfter is how long a session waits before the desktop is
// told, so a quick answer does not ping.
const DefaultNotifyAfter = 30 * time.Second

// Notify is config.json's "notify": {"desktop": true, "after": "30s"}.
type Notify struct {
	// Desktop sends a freedesktop notification (over the D-Bus session
	// bus) when a session has waited After; nil means on where a session
	// bus exists.
	Desktop *bool `json:"desktop,omitempty"`
	// After is a Go duration ("30s"); "" means DefaultNotifyAfter.
	After string `json:"after,omitempty"`
}

// DesktopOn reports whether desktop notifications are wanted.
func (n Notify) DesktopOn() bool { return n.Desktop == nil || *n.Desktop }

// Delay is After parsed.
func (n Notify) Delay() (time.Duration, error) {
	if n.After == "" {
		return DefaultNotifyAfter, nil
	}
	d, err := time.ParseDuration(n.After)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("notify.after %q: want a duration such as 30s", n.After)
	}
	return d, nil
}

// DefaultPermissionWait is how long a permission prompt of an agent
// started by hand waits for an answer through agentctl by default.
const DefaultPermissionWait = 10 * time.Minute

// Integrate is config.json's "integrate": {"permission_wait": "10m",
// "codex_permission_wait": "0s"}.
type Integrate struct {
	// PermissionWait is how long the hook of a permission prompt (Claude
	// Code's PermissionRequest, OpenCode's permission.asked, Pi's asking
	// tool_call) of an agent started by hand waits for `agentctl
	// approve`/`deny` (Claude Code and OpenCode show their own prompt
	// meanwhile). A Go duration; "" means DefaultPermissionWait, "0s" does
	// not wait.
	PermissionWait string `json:"permission_wait,omitempty"`
	// CodexPermissionWait is the same for Codex's PermissionRequest hook,
	// which Codex runs before it shows its own prompt: a wait holds the
	// prompt back from the person at the terminal, so by default ("") the
	// hook reports and does not wait, and approve cannot answer it.
	CodexPermissionWait string `json:"codex_permission_wait,omitempty"`
}

// WaitFor is how long agent's permission hook waits for an answer through
// agentctl.
func (i Integrate) WaitFor(agent string) (time.Duration, error) {
	key, v, def := "permission_wait", i.PermissionWait, DefaultPermissionWait
	if agent == "codex" {
		key, v, def = "codex_permission_wait", i.CodexPermissionWait, 0
	}
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("integrate.%s %q: want a duration such as 10m (0s: do not wait)", key, v)
	}
	return d, nil
}
