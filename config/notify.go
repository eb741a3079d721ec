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

// Integrate is config.json's "integrate": {"permission_wait": "10m"}.
type Integrate struct {
	// PermissionWait is how long the hook of a permission prompt (Claude
	// Code's PermissionRequest) of an agent started by hand waits for
	// `agentctl approve`/`deny` before the agent asks in its own terminal
	// as usual: a Go duration; "" means DefaultPermissionWait, "0s" does
	// not wait.
	PermissionWait string `json:"permission_wait,omitempty"`
}

// Wait is PermissionWait parsed.
func (i Integrate) Wait() (time.Duration, error) {
	if i.PermissionWait == "" {
		return DefaultPermissionWait, nil
	}
	d, err := time.ParseDuration(i.PermissionWait)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("integrate.permission_wait %q: want a duration such as 10m (0s: do not wait)", i.PermissionWait)
	}
	return d, nil
}
