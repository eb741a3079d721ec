//go:build linux

package spawn

import (
	"golang.org/x/sys/unix"
)

// setSubreaper makes orphaned descendants of the agent (tool commands that
// called setsid and were left behind) reparent to the shim, so a stop can
// find and end them.
func setSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// dupTo makes newfd a copy of oldfd (dup2).
func dupTo(oldfd, newfd int) error { return unix.Dup3(oldfd, newfd, 0) }
