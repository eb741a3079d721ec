package spawn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

// ErrStart wraps a failure to start the command itself (not found, not
// executable, bad working directory): the caller's mistake, not ours.
var ErrStart = errors.New("command did not start")

// StartTimeout bounds how long a start may take before it is reported failed.
const StartTimeout = 30 * time.Second

// Start launches a shim for the session folder dir (which must exist) and
// returns once the shim reports the command started (the exec succeeded and
// launch.json is on disk) or failed. exe is the agentctl binary; the shim is
// `exe shim DIR` in its own session, so it outlives the caller. onExit, if
// not nil, is called when the shim process ends, while the caller lives.
func Start(ctx context.Context, exe, dir string, spec Spec, onExit func()) (Record, error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return Record{}, fmt.Errorf("start session monitor: %w", err)
	}
	defer readyR.Close()
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return Record{}, fmt.Errorf("start session monitor: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, home.ShimLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		readyW.Close()
		stdinR.Close()
		stdinW.Close()
		return Record{}, fmt.Errorf("start session monitor: %w", err)
	}
	cmd := exec.Command(exe, "shim", dir)
	cmd.Dir = "/"
	cmd.Env = shimEnv()
	cmd.Stdin = stdinR
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	readyW.Close()
	stdinR.Close()
	logf.Close()
	if err != nil {
		stdinW.Close()
		return Record{}, fmt.Errorf("start session monitor %s: %w", exe, err)
	}
	// The monitor is our child until it ends, and must be reaped then. A
	// blocking wait would hold an OS thread per session for the session's
	// life: wait on its pidfd in the runtime's poller instead, and reap it
	// once it has exited.
	shim, lookErr := proc.Lookup(cmd.Process.Pid)
	go func() {
		if lookErr == nil {
			proc.WaitExit(context.Background(), shim.Identity)
		}
		cmd.Wait()
		if onExit != nil {
			onExit()
		}
	}()
	go func() {
		json.NewEncoder(stdinW).Encode(spec)
		stdinW.Close()
	}()

	type result struct {
		msg readyMessage
		err error
	}
	got := make(chan result, 1)
	go func() {
		var m readyMessage
		err := json.NewDecoder(readyR).Decode(&m)
		got <- result{m, err}
	}()
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	select {
	case r := <-got:
		if r.err != nil {
			return Record{}, fmt.Errorf("session monitor ended before reporting the start (see %s): %w", filepath.Join(dir, home.ShimLog), r.err)
		}
		if !r.msg.OK {
			return Record{}, fmt.Errorf("%w: %s", ErrStart, r.msg.Error)
		}
		return *r.msg.Record, nil
	case <-ctx.Done():
		// The shim may still start the command; it is then a session like
		// any other, found on disk.
		return Record{}, fmt.Errorf("wait for session start: %w", ctx.Err())
	}
}

// shimEnv is the shim's own environment: just enough to run. The agent gets
// the environment in its Spec.
func shimEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "USER", "LANG", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}
