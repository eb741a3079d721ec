package session

import (
	"fmt"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/spawn"
)

// launchedStatus is the one rule for a session this service started: the
// exit record first (written by the agent's own parent), then the liveness
// of the recorded process with its recorded start stamp, then whether its
// monitor is still finishing. The warning, when there is one, says why the
// status is what it is.
func launchedStatus(st spawn.State) (api.Status, string) {
	switch {
	case st.Exit != nil && st.Exit.Signal != "":
		return api.StatusKilled, ""
	case st.Exit != nil:
		return api.StatusExited, ""
	case st.Running:
		return api.StatusRunning, ""
	case st.ShimAlive:
		// The agent is gone and its monitor, alive, did not write the exit
		// record while a read waited for it (settleEnd): it is stopped or
		// stuck. Say so rather than guess.
		pid := st.Record.Shim.PID
		return api.StatusUnknown, fmt.Sprintf("the agent has ended but its monitor (pid %d) has not written its exit record; if the monitor is stopped, `kill -CONT %d` lets it finish", pid, pid)
	}
	return api.StatusLost, "the process is gone and left no exit record (its monitor was killed)"
}

// nativeStatus is the one rule for a session only an adapter knows: a live
// process the adapter attributed to it (alive: pid and start stamp hold),
// else the agent's own record of its state. An adapter that could not
// answer this time (vouched false) vouches for nothing. Activity is the
// agent's busy/idle signal, for running sessions only.
func nativeStatus(state adapters.NativeState, alive, vouched bool) (status api.Status, activity string) {
	switch {
	case !vouched:
		status = api.StatusUnknown
	case alive:
		status = api.StatusRunning
	case state == adapters.NativeBusy || state == adapters.NativeIdle || state == adapters.NativeRunning:
		status = api.StatusRunning
	case state == adapters.NativeDone || state == adapters.NativeFailed || state == adapters.NativeAborted:
		status = api.StatusEnded
	default:
		status = api.StatusUnknown
	}
	return status, nativeActivity(status, state)
}

// nativeActivity is the agent's own busy/idle signal, which means something
// only while the session runs.
func nativeActivity(status api.Status, state adapters.NativeState) string {
	if status == api.StatusRunning && (state == adapters.NativeBusy || state == adapters.NativeIdle) {
		return string(state)
	}
	return ""
}
