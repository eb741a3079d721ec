//go:build linux

package spawn

import (
	"os"

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

// ownImage is /proc/self/exe when exe is this process's own binary, so that
// a monitor runs the service's image even after a package upgrade replaced
// the file at exe: a newer binary's monitor could speak a protocol the
// running service does not (see protocol.go). Otherwise exe.
func ownImage(exe string) string {
	const self = "/proc/self/exe"
	a, err := os.Stat(exe)
	if err != nil {
		return exe
	}
	if b, err := os.Stat(self); err == nil && os.SameFile(a, b) {
		return self
	}
	return exe
}

// nameSelf names the monitor "agentctl" in ps and top: started from
// /proc/self/exe (ownImage), its name would be "exe". (PR_SET_NAME would
// name only the calling thread, not the process.)
func nameSelf() { _ = os.WriteFile("/proc/self/comm", []byte("agentctl"), 0) }
