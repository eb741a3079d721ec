//go:build darwin

package spawn

import "golang.org/x/sys/unix"

// setSubreaper: macOS has no child subreaper. Orphans reparent to launchd;
// the shim still finds those that stay in the agent's process group or
// session (see shim.session).
func setSubreaper() error { return nil }

// dupTo makes newfd a copy of oldfd (dup2).
func dupTo(oldfd, newfd int) error { return unix.Dup2(oldfd, newfd) }

// ownImage: macOS has no path to a process's own image; a monitor is
// started from the file at exe.
func ownImage(exe string) string { return exe }

// nameSelf: a monitor on macOS is started from the agentctl binary's path,
// and is named after it.
func nameSelf() {}
