package spawn

import (
	"errors"
	"fmt"
)

// The monitor protocol: what a session's monitor and the service say to
// each other, and what the monitor leaves on disk for the service. Monitors
// outlive the service by design (an upgrade replaces the service while
// sessions run), so a service meets monitors started by an older (or, after
// a downgrade, a newer) agentctl, and must know which it is talking to.
//
// What carries the version:
//   - launch.json and exit.json: "protocol" (absent: version 1);
//   - the control socket: every request line names the version the caller
//     speaks on that connection ("protocol"), and every answer line, the
//     first thing the monitor says on a connection, names the monitor's
//     version: its hello (absent: version 1).
//
// The versions:
//
//	1  agentctl up to the first release with a versioned monitor: no
//	   version anywhere (launch.json, exit.json, the control socket's JSON
//	   lines and the frames of api.WriteFrame after an attach).
//	2  the version itself, in the records and in the hello; a monitor
//	   answers a request of a version it does not speak with an error.
//	   Everything else is as in version 1.
//
// The compatibility rule:
//   - The service speaks its own version and the one before
//     (MinMonitorProtocol..MonitorProtocol). It talks to a monitor of any
//     other version not at all: the call is refused with a *ProtocolError
//     that names the session and what to do, before anything is sent.
//   - The records only grow: a field keeps its name and meaning in every
//     version, so the identities that prove liveness (process, shim, pgid)
//     and the exit (exit_code, signal, ended_at) read the same whatever the
//     version. A session of a version this agentctl does not speak still
//     reads a truthful status, and `agentctl kill` can still end it (from
//     those identities, without its monitor). A reader learns from the
//     version which fields an older monitor could not have written.
//   - A change a monitor of the previous version could not follow (a new
//     control op the service relies on, a changed frame, a field whose
//     meaning changes) takes a new version, a line above, and a line in
//     the CHANGELOG.
//   - The launch spec (stdin) and the ready report (fd 3) pass between a
//     service and a monitor it starts from its own executable: they only
//     grow, and unknown fields are ignored.
const (
	// MonitorProtocol is the version the monitors of this agentctl speak.
	MonitorProtocol = 2
	// MinMonitorProtocol is the oldest version this agentctl still speaks.
	MinMonitorProtocol = MonitorProtocol - 1
)

// ErrProtocol marks a session whose monitor speaks a version of the
// monitor protocol this agentctl does not.
var ErrProtocol = errors.New("the session's monitor speaks another protocol")

// ProtocolError refuses a session whose monitor speaks Version, outside the
// versions Min..Max this agentctl speaks.
type ProtocolError struct {
	ID       string
	Version  int
	Min, Max int
}

func (e *ProtocolError) Error() string {
	speaks := fmt.Sprintf("%d–%d", e.Min, e.Max)
	if e.Min == e.Max {
		speaks = fmt.Sprint(e.Max)
	}
	which := "an older release"
	if e.Version > e.Max {
		which = "a newer release"
	}
	return fmt.Sprintf("session %s runs monitor protocol %d; this agentctl speaks %s: stop it with the agentctl that started it (%s), or end it without its monitor with `agentctl kill %s`",
		e.ID, e.Version, speaks, which, e.ID)
}

// Is makes a *ProtocolError an ErrProtocol.
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }

// protocolVersion reads a version field: absent (0) is version 1.
func protocolVersion(v int) int {
	if v == 0 {
		return 1
	}
	return v
}

// checkProtocol refuses version v (as read from a record or a hello) of
// session id unless it is within lo..hi.
func checkProtocol(id string, v, lo, hi int) error {
	v = protocolVersion(v)
	if v < lo || v > hi {
		return &ProtocolError{ID: id, Version: v, Min: lo, Max: hi}
	}
	return nil
}

// ProtocolOf is the version of the monitor protocol the session's monitor
// speaks, as its record says.
func ProtocolOf(r Record) int { return protocolVersion(r.Protocol) }

// CheckProtocol returns a *ProtocolError when the session's monitor speaks
// a version of the monitor protocol this agentctl does not.
func CheckProtocol(r Record) error {
	return checkProtocol(r.ID, r.Protocol, MinMonitorProtocol, MonitorProtocol)
}
