package spawn

import "github.com/agentctl/agentctl/spawn/monitorapi"

// The monitor's spec, record and termination words live in monitorapi,
// which a cluster imports without linking the monitor; spawn names them as
// its own.
type (
	// Spec is what the service hands a shim on its standard input.
	Spec = monitorapi.Spec
	// Record is launch.json: what was launched and the process that runs
	// it.
	Record = monitorapi.Record
	// CgroupSpec is a session's cgroup: where, and its limits.
	CgroupSpec = monitorapi.CgroupSpec
)

const (
	// DefaultGrace is how long a stop waits for the agent's own graceful
	// exit before SIGKILL.
	DefaultGrace = monitorapi.DefaultGrace
	// ContainerGrace is the stop grace a monitor asks for in a container.
	ContainerGrace = monitorapi.ContainerGrace
	// TerminationLog is where a container's last words go.
	TerminationLog = monitorapi.TerminationLog
	// TerminationSignal and TerminationNativeID begin the lines of a
	// container monitor's termination message.
	TerminationSignal   = monitorapi.TerminationSignal
	TerminationNativeID = monitorapi.TerminationNativeID
)
