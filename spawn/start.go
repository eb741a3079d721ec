package spawn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/logs"
	"github.com/agentctl/agentctl/proc"
)

// ErrStart wraps a failure to start the command itself (not found, not
// executable, bad working directory): the caller's mistake, not ours.
var ErrStart = errors.New("command did not start")

// errNoReport: the monitor ended (or closed its report) without saying
// whether the command started.
var errNoReport = errors.New("session monitor ended before reporting the start")

// StartTimeout bounds how long a start may take before it is reported failed.
const StartTimeout = 30 * time.Second

// StandbyDir is the session folder a standby monitor is started with
// (`agentctl shim -`): its folder and spec come later, on its stdin.
const StandbyDir = "-"

// standbyRequest is what a standby monitor reads on its stdin: the session
// it is to run.
type standbyRequest struct {
	Dir  string `json:"dir"`
	Spec Spec   `json:"spec"`
}

// startFresh starts a new monitor for the session folder dir (which must
// exist) and returns once it reports the command started (the exec
// succeeded and launch.json is on disk) or failed. exe is the agentctl
// binary; the monitor is `exe shim DIR` in its own session, so it outlives
// the caller.
func startFresh(ctx context.Context, exe, dir string, spec Spec, told func(monitorPID int)) (Record, error) {
	m, err := startMonitor(exe, dir)
	if err != nil {
		return Record{}, err
	}
	told(m.pid)
	go func() {
		json.NewEncoder(m.stdin).Encode(spec)
		m.stdin.Close()
	}()
	return m.awaitReady(ctx, dir)
}

// Starter starts session monitors. With a standby, it keeps one monitor
// started ahead of need, past its exec and its runtime's start (most of a
// start's cost), waiting on its stdin for the session to run; the next
// Start hands it the session and another is started in the background. A
// standby that is gone or cannot be told falls back to a fresh start.
type Starter struct {
	// exe is what a monitor is started from: the service's own image
	// where it is the agentctl binary (see ownImage).
	exe string
	log *slog.Logger
	ctx context.Context
	wg  sync.WaitGroup

	mu      sync.Mutex
	standby *monitor // nil while none is ready
	filling bool
}

// NewStarter returns a Starter for the agentctl binary exe. With standby, a
// monitor is kept started ahead until ctx ends, then released.
func NewStarter(ctx context.Context, exe string, standby bool, log *slog.Logger) *Starter {
	s := &Starter{exe: ownImage(exe), log: log, ctx: ctx}
	if !standby {
		return s
	}
	s.refill()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-ctx.Done()
		s.mu.Lock()
		m := s.standby
		s.standby = nil
		s.mu.Unlock()
		if m != nil {
			m.release()
		}
	}()
	return s
}

// Wait waits, once the Starter's context has ended, for its background
// work (a standby being started, the release of the last one).
func (s *Starter) Wait() { s.wg.Wait() }

// Start launches a monitor for the session folder dir (which must exist)
// and returns once it reports the command started (the exec succeeded and
// launch.json is on disk) or failed: the standby when one is ready, else a
// fresh one.
func (s *Starter) Start(ctx context.Context, dir string, spec Spec) (Record, error) {
	return s.StartTelling(ctx, dir, spec, func(int) {})
}

// StartTelling is Start that tells told the pid of the monitor that is
// handed the session, before it starts the command: a process of the
// session may ask the service something before the start is reported
// (and launch.json written), and must be known as the session's then.
func (s *Starter) StartTelling(ctx context.Context, dir string, spec Spec, told func(monitorPID int)) (Record, error) {
	s.mu.Lock()
	m := s.standby
	s.standby = nil
	s.mu.Unlock()
	if m == nil {
		return startFresh(ctx, s.exe, dir, spec, told)
	}
	// The next standby starts once this start is reported: started now,
	// it would compete with this one for the CPU.
	defer s.refill()
	b, err := json.Marshal(standbyRequest{Dir: dir, Spec: spec})
	if err == nil {
		told(m.pid)
		// A frozen standby does not hold the launch: a request it has
		// not read whole in time is cut short, which it refuses.
		m.stdin.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, err = m.stdin.Write(append(b, '\n'))
	}
	m.stdin.Close()
	if err != nil {
		// It never got the session (it was ended, frozen, or the pipe
		// broke): nothing of it ran, so start afresh.
		s.log.Warn("the standby session monitor could not be told; starting a new one", "err", err)
		m.ready.Close()
		return startFresh(ctx, s.exe, dir, spec, told)
	}
	rec, err := m.awaitReady(ctx, dir)
	if errors.Is(err, errNoReport) {
		// A standby opens the session's log first thing once it has read
		// the session: without it, the standby ended (killed) before it
		// took the session, and nothing of it ran.
		if _, serr := os.Stat(filepath.Join(dir, home.ShimLog)); errors.Is(serr, os.ErrNotExist) {
			s.log.Warn("the standby session monitor ended before it took the session; starting a new one", "err", err)
			return startFresh(ctx, s.exe, dir, spec, told)
		}
	}
	return rec, err
}

// refill starts a standby in the background unless one is ready or coming.
func (s *Starter) refill() {
	s.mu.Lock()
	if s.filling || s.standby != nil || s.ctx.Err() != nil {
		s.mu.Unlock()
		return
	}
	s.filling = true
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		m, err := startMonitor(s.exe, StandbyDir)
		s.mu.Lock()
		s.filling = false
		keep := err == nil && s.ctx.Err() == nil && s.standby == nil
		if keep {
			s.standby = m
		}
		s.mu.Unlock()
		switch {
		case err != nil:
			s.log.Warn("start a standby session monitor", "err", err)
		case !keep:
			m.release()
		}
	}()
}

// monitor is a started monitor process not yet told its session, or
// waiting for its report.
type monitor struct {
	pid   int
	stdin *os.File // where its spec goes
	ready *os.File // where it reports the start (its fd 3)
}

// startMonitor starts `exe shim DIR` in a session of its own, its output
// into DIR's shim log (a standby opens its own once it has a folder).
func startMonitor(exe, dir string) (*monitor, error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start session monitor: %w", err)
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		readyR.Close()
		readyW.Close()
		return nil, fmt.Errorf("start session monitor: %w", err)
	}
	cmd := exec.Command(exe, "shim", dir)
	cmd.Args[0] = "agentctl" // exe may be /proc/self/exe
	cmd.Dir = "/"
	cmd.Env = shimEnv()
	cmd.Stdin = stdinR
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if dir != StandbyDir {
		logf, err := logs.OpenAppend(filepath.Join(dir, home.ShimLog))
		if err != nil {
			readyR.Close()
			readyW.Close()
			stdinR.Close()
			stdinW.Close()
			return nil, fmt.Errorf("start session monitor: %w", err)
		}
		defer logf.Close()
		cmd.Stdout, cmd.Stderr = logf, logf
	}
	err = cmd.Start()
	readyW.Close()
	stdinR.Close()
	if err != nil {
		readyR.Close()
		stdinW.Close()
		return nil, fmt.Errorf("start session monitor %s: %w", exe, err)
	}
	m := &monitor{pid: cmd.Process.Pid, stdin: stdinW, ready: readyR}
	// The monitor is our child until it ends, and must be reaped then. A
	// blocking wait would hold an OS thread per session for the session's
	// life: wait on its pidfd in the runtime's poller instead, and reap it
	// once it has exited.
	id, lookErr := proc.Lookup(cmd.Process.Pid)
	go func() {
		if lookErr == nil {
			proc.WaitExit(context.Background(), id.Identity)
		}
		cmd.Wait()
	}()
	return m, nil
}

// release ends a standby that was never told a session: its stdin closes,
// and it exits by itself (it holds nothing), reaped by startMonitor's
// goroutine; a service's stop does not wait for it.
func (m *monitor) release() {
	m.stdin.Close()
	m.ready.Close()
}

// awaitReady waits for the monitor's report of the start.
func (m *monitor) awaitReady(ctx context.Context, dir string) (Record, error) {
	defer m.ready.Close()
	type result struct {
		msg readyMessage
		err error
	}
	got := make(chan result, 1)
	go func() {
		var msg readyMessage
		err := json.NewDecoder(m.ready).Decode(&msg)
		got <- result{msg, err}
	}()
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	select {
	case r := <-got:
		if r.err != nil {
			return Record{}, fmt.Errorf("%w (see %s): %w", errNoReport, filepath.Join(dir, home.ShimLog), r.err)
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
