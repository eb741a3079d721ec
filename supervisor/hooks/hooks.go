// Package hooks runs a session's lifecycle commands (--on-create,
// --on-complete): through /bin/sh -c exactly as the user wrote them, with
// the session's values only in the environment, under a timeout that ends
// the hook's whole process group, output appended to a log file. RunOnce
// records each run in the session's folder so a hook is started at most
// once per session, across service restarts.
package hooks

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/logs"
	"github.com/agentctl/agentctl/proc"
)

// Phases.
const (
	OnCreate   = "on-create"
	OnComplete = "on-complete"
)

// DefaultTimeout bounds a hook that sets none.
const DefaultTimeout = 300 * time.Second

// DefaultKillGrace is how long a timed-out hook's group has between
// SIGTERM and SIGKILL.
const DefaultKillGrace = 5 * time.Second

// Vars are the session values a hook sees, as AGENTCTL_* variables. Empty
// values (and a nil ExitCode) are unknown and left unset.
type Vars struct {
	SessionID string
	Cwd       string
	Adapter   string
	ExitCode  *int
	Group     string
	Model     string
	Branch    string
}

// Env returns the variables as "K=V" entries.
func (v Vars) Env() []string {
	var out []string
	add := func(k, val string) {
		if val != "" {
			out = append(out, k+"="+val)
		}
	}
	add("AGENTCTL_SESSION_ID", v.SessionID)
	add("AGENTCTL_CWD", v.Cwd)
	add("AGENTCTL_ADAPTER", v.Adapter)
	if v.ExitCode != nil {
		add("AGENTCTL_EXIT_CODE", strconv.Itoa(*v.ExitCode))
	}
	add("AGENTCTL_GROUP", v.Group)
	add("AGENTCTL_MODEL", v.Model)
	add("AGENTCTL_BRANCH", v.Branch)
	return out
}

// varNames are every variable Vars may set: a caller's environment that
// already has one (a hook of an agentctl session launching another) must
// not leak it into a hook where this session leaves it unknown.
func varNames() []string {
	return []string{"AGENTCTL_SESSION_ID", "AGENTCTL_CWD", "AGENTCTL_ADAPTER", "AGENTCTL_EXIT_CODE", "AGENTCTL_GROUP", "AGENTCTL_MODEL", "AGENTCTL_BRANCH"}
}

// Command is one hook to run.
type Command struct {
	Phase  string
	Script string // run by /bin/sh -c, never edited
	Dir    string
	// Env is the base environment; Vars are added over it.
	Env     []string
	Vars    Vars
	Timeout time.Duration // DefaultTimeout when 0
	// KillGrace separates SIGTERM and SIGKILL when the hook is cut short
	// (DefaultKillGrace when 0).
	KillGrace time.Duration
	// LogPath receives the hook's output, appended, between a header and a
	// footer line.
	LogPath string
	// OnStart, when set, is called with the hook's process once it runs.
	OnStart func(proc.Identity)
}

// Result is how a run went.
type Result struct {
	Phase     string    `json:"phase"`
	Command   string    `json:"command"`
	PID       int       `json:"pid,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	ExitCode  *int      `json:"exit_code,omitempty"`
	Signal    string    `json:"signal,omitempty"`
	TimedOut  bool      `json:"timed_out,omitempty"`
	// Error says why the hook could not run, or why it was cut short.
	Error string `json:"error,omitempty"`
}

// OK reports whether the hook ran and exited 0.
func (r Result) OK() bool {
	return r.Error == "" && !r.TimedOut && r.ExitCode != nil && *r.ExitCode == 0
}

// Outcome is a short word for metrics and tables: ok, failed, timeout, error.
func (r Result) Outcome() string {
	switch {
	case r.OK():
		return "ok"
	case r.TimedOut:
		return "timeout"
	case r.Error != "" && r.ExitCode == nil && r.Signal == "":
		return "error"
	}
	return "failed"
}

// Describe says in words how the hook ended.
func (r Result) Describe() string {
	var s string
	switch {
	case r.TimedOut:
		s = fmt.Sprintf("timed out after %s", r.EndedAt.Sub(r.StartedAt).Round(time.Second))
	case r.ExitCode != nil:
		s = fmt.Sprintf("exited %d", *r.ExitCode)
	case r.Signal != "":
		s = "killed by " + r.Signal
	default:
		s = "did not run"
	}
	if r.Error != "" {
		s += ": " + r.Error
	}
	return s
}

// Run runs c and waits for it, its timeout, or ctx (both end the hook's
// process group: SIGTERM, then SIGKILL after a grace period).
func Run(ctx context.Context, c Command) Result {
	r := Result{Phase: c.Phase, Command: c.Script, StartedAt: time.Now()}
	finish := func(err error) Result {
		r.EndedAt = time.Now()
		if err != nil {
			r.Error = err.Error()
		}
		return r
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	// In the session's folder, so never through a link planted there.
	logFile, err := logs.OpenAppend(c.LogPath)
	if err != nil {
		return finish(fmt.Errorf("open hook log: %w", err))
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "--- %s %s: %s\n", c.Phase, r.StartedAt.UTC().Format(time.RFC3339), c.Script)

	cmd := exec.Command("/bin/sh", "-c", c.Script)
	cmd.Dir = c.Dir
	names := varNames()
	cmd.Env = append(slices.DeleteFunc(slices.Clone(c.Env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, k)
	}), c.Vars.Env()...)
	// A file, not a pipe: no copying goroutine, and a background child
	// that keeps the descriptor cannot hold up Wait.
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r = finish(fmt.Errorf("start /bin/sh in %s: %w", c.Dir, err))
		fmt.Fprintf(logFile, "--- %s %s\n", c.Phase, r.Describe())
		return r
	}
	r.PID = cmd.Process.Pid
	if c.OnStart != nil {
		if info, err := proc.Lookup(r.PID); err == nil {
			c.OnStart(info.Identity)
		}
	}

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var waitErr error
	select {
	case waitErr = <-done:
	case <-timer.C:
		r.TimedOut = true
		waitErr = stopGroup(r.PID, c.KillGrace, done)
	case <-ctx.Done():
		r.Error = "cancelled: " + context.Cause(ctx).Error()
		waitErr = stopGroup(r.PID, c.KillGrace, done)
	}
	r.EndedAt = time.Now()
	var exitErr *exec.ExitError
	switch {
	case waitErr == nil || errors.As(waitErr, &exitErr):
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			r.Signal = unix.SignalName(ws.Signal())
		} else {
			code := ws.ExitStatus()
			r.ExitCode = &code
		}
	default:
		r.Error = waitErr.Error()
	}
	fmt.Fprintf(logFile, "--- %s %s (%s)\n", c.Phase, r.Describe(), r.EndedAt.Sub(r.StartedAt).Round(time.Millisecond))
	return r
}

// stopGroup ends the process group led by pid and returns the leader's
// wait result.
func stopGroup(pid int, grace time.Duration, done <-chan error) error {
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	unix.Kill(-pid, unix.SIGTERM)
	graceTimer := time.NewTimer(grace)
	defer graceTimer.Stop()
	select {
	case err := <-done:
		// The shell is gone; children it left in the group go too.
		unix.Kill(-pid, unix.SIGKILL)
		return err
	case <-graceTimer.C:
		unix.Kill(-pid, unix.SIGKILL)
		return <-done
	}
}
