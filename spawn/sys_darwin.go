//go:build darwin

package spawn

// setSubreaper: macOS has no child subreaper. Orphans reparent to launchd;
// the shim still finds those that stay in the agent's process group or
// session (see shim.session).
func setSubreaper() error { return nil }
