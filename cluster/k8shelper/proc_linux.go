package k8shelper

import (
	"os/exec"
	"syscall"
)

// dieWithParent ends the helper when the agentctl that ran it dies, even
// by SIGKILL: a helper following a log, an attach or events would
// otherwise go on until its stream ends.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
