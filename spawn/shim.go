package spawn

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/cgroup"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/internal/envvar"
	"github.com/agentctl/agentctl/logs"
	"github.com/agentctl/agentctl/proc"
)

// cgroupLimits are a cgroup spec's limits; none without a spec.
func cgroupLimits(c *CgroupSpec) cgroup.Limits {
	if c == nil {
		return cgroup.Limits{}
	}
	return c.Limits
}

// readyMessage is what the shim writes on its ready pipe (fd 3) once.
type readyMessage struct {
	OK     bool    `json:"ok"`
	Error  string  `json:"error,omitempty"`
	Record *Record `json:"record,omitempty"`
}

// Default terminal size and grace periods.
const (
	DefaultRows = 40
	DefaultCols = 120
	// leftoverGrace is how long processes left behind by an agent that
	// exited get after SIGTERM, before SIGKILL.
	leftoverGrace = 2 * time.Second
)

// shim holds one session: the pty master, the log, the attached viewers.
type shim struct {
	dir         string
	rec         Record
	serviceLock string
	log         *logs.Writer
	master      *os.File
	logger      *slog.Logger
	health      *healthReport
	exitSlot    *atomicfile.Slot
	term        *terminalWatch
	// ln is the session's socket (attach, input, stop), nil when it
	// could not listen.
	ln net.Listener
	// echo, when set, gets a copy of the output too: a container's
	// standard output, which the cluster's log stream serves.
	echo io.Writer
	// cg is the session's cgroup, empty when it has none.
	cg cgroup.Paths

	mu        sync.Mutex
	viewers   map[*viewer]struct{}
	screen    *screen // what the terminal shows, for viewers that attach
	exit      *ExitRecord
	stoppedBy string

	reaped   chan struct{} // closed when the agent has been reaped
	finished chan struct{} // closed when exit.json is written
	readDone chan struct{} // closed when the pty read loop ended
	requests sync.WaitGroup
}

type viewer struct {
	out chan frame
}

type frame struct {
	typ  byte
	data []byte
}

// RunShim is the per-session monitor's main: it reads a Spec from stdin,
// starts the agent under a pty, reports readiness on fd 3, and then holds the
// session until the agent and every process it left behind are gone. It
// returns the shim's own exit code.
//
// Started as a standby (dir is StandbyDir), it reads the session's folder
// with its spec, and sends its own output to that folder's shim log; a
// standby whose stdin closes before that was not needed, and exits.
func RunShim(dir string) int {
	nameSelf()
	ready := os.NewFile(3, "ready")
	var logger *slog.Logger
	report := func(m readyMessage) {
		if ready == nil {
			return
		}
		if err := json.NewEncoder(ready).Encode(m); err != nil && logger != nil {
			logger.Warn("report start to the service", "err", err)
		}
		ready.Close()
		ready = nil
	}
	in := json.NewDecoder(io.LimitReader(os.Stdin, 64<<20))
	var spec Spec
	if dir == StandbyDir {
		var req standbyRequest
		if err := in.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return 0 // released unused
			}
			report(readyMessage{Error: fmt.Sprintf("read launch spec: %v", err)})
			return 2
		}
		if err := logInto(req.Dir); err != nil {
			report(readyMessage{Error: err.Error()})
			return 2
		}
		dir, spec = req.Dir, req.Spec
	} else if err := in.Decode(&spec); err != nil {
		report(readyMessage{Error: fmt.Sprintf("read launch spec: %v", err)})
		return 2
	}
	logger = slog.New(slog.NewTextHandler(os.Stderr, nil)).With("session", filepath.Base(dir))
	s, err := startShim(dir, spec, logger, nil)
	if err != nil {
		// Nothing runs: leave nothing that could look like a session.
		os.RemoveAll(dir)
		report(readyMessage{Error: err.Error()})
		return 1
	}
	rec := s.rec
	report(readyMessage{OK: true, Record: &rec})
	s.run()
	return 0
}

// logInto points a standby monitor's standard output and error at the
// shim log of its session folder dir, as a monitor started for dir has them.
func logInto(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("session folder %q is not an absolute path", dir)
	}
	f, err := logs.OpenAppend(filepath.Join(dir, home.ShimLog))
	if err != nil {
		return fmt.Errorf("open the monitor's log: %w", err)
	}
	defer f.Close()
	for _, fd := range []int{1, 2} {
		if err := dupTo(int(f.Fd()), fd); err != nil {
			return fmt.Errorf("open the monitor's log: %w", err)
		}
	}
	return nil
}

func startShim(dir string, spec Spec, logger *slog.Logger, echo io.Writer) (*shim, error) {
	rec := spec.Record
	if len(rec.Argv) == 0 {
		return nil, errors.New("start: no command given")
	}
	if st, err := os.Stat(rec.Cwd); err != nil {
		return nil, fmt.Errorf("start %s: working directory: %w", rec.Argv[0], err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("start %s: working directory %s is not a directory", rec.Argv[0], rec.Cwd)
	}
	env := spec.Env
	if envvar.Value(env, "TERM") == "" {
		env = append(env, "TERM=xterm-256color")
	}
	path := spec.Path
	if path == "" {
		var err error
		if path, err = LookPath(rec.Argv[0], env, rec.Cwd); err != nil {
			return nil, fmt.Errorf("start %s in %s: %w", rec.Argv[0], rec.Cwd, err)
		}
	}
	if err := setSubreaper(); err != nil {
		logger.Warn("cannot become child subreaper; orphans of the agent may escape a stop", "err", err)
	}
	if rec.Rows == 0 {
		rec.Rows = DefaultRows
	}
	if rec.Cols == 0 {
		rec.Cols = DefaultCols
	}
	lw, err := logs.OpenWriter(filepath.Join(dir, home.LogFile), spec.LogMaxSize, spec.LogFiles)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", rec.Argv[0], err)
	}
	// Space for what must be said on a full disk: that output is being
	// dropped, and how the agent ended.
	health, err := newHealthReport(dir)
	if err != nil {
		lw.Close()
		return nil, fmt.Errorf("start %s: %w", rec.Argv[0], err)
	}
	exitSlot, err := reserveExit(dir)
	if err != nil {
		lw.Close()
		health.slot.Close()
		return nil, fmt.Errorf("start %s: %w", rec.Argv[0], err)
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT)
	// The monitor outlives a hang-up, but catches it rather than ignoring
	// it: an ignored signal stays ignored across exec, and the agent must
	// start with default dispositions (a caught one is reset).
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	go func() {
		for range hups {
		}
	}()

	cg, origin, err := enterCgroup(dir, spec.Cgroup, logger)
	if err != nil {
		lw.Close()
		return nil, fmt.Errorf("start %s: %w", rec.Argv[0], err)
	}
	cmd := exec.Command(path, rec.Argv[1:]...)
	cmd.Args[0] = rec.Argv[0]
	cmd.Env = env
	cmd.Dir = rec.Cwd
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rec.Rows, Cols: rec.Cols})
	if !cg.Empty() {
		// The agent started inside. The monitor leaves: neither an OOM
		// kill at the session's limit nor its cgroup.kill may end the
		// process that writes its exit record.
		if merr := cgroup.Move(origin); merr != nil {
			logger.Warn("leave the session's cgroup", "err", merr)
		}
	}
	if err != nil {
		lw.Close()
		cgroup.Remove(cg)
		return nil, fmt.Errorf("start %s in %s: %w", rec.Argv[0], rec.Cwd, err)
	}
	pid := cmd.Process.Pid
	if err := cgroup.LimitPids(cg, cgroupLimits(spec.Cgroup)); err != nil {
		// A session believed bounded must be.
		unix.Kill(-pid, unix.SIGKILL)
		cgroup.Kill(context.Background(), cg, killBound)
		cgroup.Remove(cg)
		ptmx.Close()
		lw.Close()
		return nil, fmt.Errorf("start %s: apply the session's limits: %w", rec.Argv[0], err)
	}
	info, err := proc.Lookup(pid)
	if err != nil {
		// The agent exited (and is a zombie we have not reaped) or vanished
		// before we could read its start: still a started session.
		info = proc.Info{Identity: proc.Identity{PID: pid}, PGID: pid}
	}
	self, _ := proc.Lookup(os.Getpid())
	rec.Process = info.Identity
	rec.PGID = pid // setsid: the agent leads its own session and group
	rec.Shim = self.Identity
	rec.NotesDrawing = true
	rec.Protocol = MonitorProtocol

	master, err := nonblocking(ptmx)
	if err != nil {
		ptmx.Close()
		return nil, fmt.Errorf("start %s: %w", rec.Argv[0], err)
	}
	if err := atomicfile.WriteJSON(filepath.Join(dir, home.LaunchFile), rec, 0o600); err != nil {
		// Without its record the session would be invisible: end it.
		unix.Kill(-pid, unix.SIGKILL)
		master.Close()
		return nil, fmt.Errorf("start %s: %w", rec.Argv[0], err)
	}
	s := &shim{
		dir: dir, rec: rec, serviceLock: spec.ServiceLock, log: lw, master: master, logger: logger,
		health: health, exitSlot: exitSlot,
		term:     newTerminalWatch(dir, rec.ID, logger),
		echo:     echo,
		cg:       cg,
		viewers:  map[*viewer]struct{}{},
		screen:   newScreen(rec.Rows, rec.Cols),
		reaped:   make(chan struct{}),
		finished: make(chan struct{}),
		readDone: make(chan struct{}),
	}
	go s.reap(sigs, pid)
	go s.readLoop()
	if len(spec.Stdin) > 0 {
		go func() {
			if _, err := s.master.Write(spec.Stdin); err != nil {
				logger.Warn("write initial input", "err", err)
			}
		}()
	}
	// The socket listens before the start is reported, so a viewer that
	// attaches the moment the launch returns (run -it) finds it; run
	// serves it.
	if ln, err := listen(filepath.Join(dir, home.SocketFile)); err != nil {
		logger.Error("serve session socket; attach and stop through it are unavailable", "err", err)
	} else {
		s.ln = ln
	}
	return s, nil
}

// enterCgroup creates the session's cgroup, applies its limits, names it in
// the session folder and moves the monitor into it, so that the agent
// starts there: its whole tree is inside from its first instruction. It
// returns the cgroup and the monitor's own cgroups, to go back to. A cgroup
// that cannot be made fails the start only when it has limits to enforce:
// without them the session runs as it would without one.
func enterCgroup(dir string, spec *CgroupSpec, logger *slog.Logger) (cg, origin cgroup.Paths, err error) {
	if spec == nil || spec.Paths.Empty() {
		return cgroup.Paths{}, cgroup.Paths{}, nil
	}
	fail := func(err error) (cgroup.Paths, cgroup.Paths, error) {
		cgroup.Remove(spec.Paths)
		os.Remove(filepath.Join(dir, home.CgroupFile))
		if !spec.Limits.Zero() {
			return cgroup.Paths{}, cgroup.Paths{}, fmt.Errorf("apply the session's limits: %w", err)
		}
		logger.Warn("the session runs without a cgroup of its own", "err", err)
		return cgroup.Paths{}, cgroup.Paths{}, nil
	}
	if err := cgroup.Create(spec.Paths, spec.Limits); err != nil {
		return fail(err)
	}
	if err := atomicfile.WriteJSON(filepath.Join(dir, home.CgroupFile), spec.Paths, 0o600); err != nil {
		return fail(err)
	}
	origin, err = cgroup.Join(spec.Paths)
	if err != nil {
		return fail(err)
	}
	return spec.Paths, origin, nil
}

// nonblocking re-opens the pty master in non-blocking mode so reads go
// through the runtime poller and Close interrupts them.
func nonblocking(ptmx *os.File) (*os.File, error) {
	fd, err := unix.Dup(int(ptmx.Fd()))
	if err != nil {
		return nil, fmt.Errorf("dup pty master: %w", err)
	}
	ptmx.Close()
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pty master non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), "ptmx"), nil
}

func (s *shim) setSize(rows, cols uint16) {
	if rows == 0 || cols == 0 {
		return
	}
	rc, err := s.master.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	})
	s.mu.Lock()
	s.screen.resize(rows, cols)
	s.mu.Unlock()
}

// reap waits for children: the agent, and as subreaper any orphan that was
// reparented to us. Reaping here rather than in exec.Cmd.Wait keeps one
// reaper, so no wait call steals another's child.
func (s *shim) reap(sigs <-chan os.Signal, agent int) {
	for sig := range sigs {
		switch sig {
		case syscall.SIGTERM, syscall.SIGINT:
			go s.stop(StopOptions{Signal: s.rec.StopSignal, Grace: DefaultGrace}, "signal to monitor")
			continue
		}
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err == unix.EINTR {
				continue
			}
			if pid <= 0 || err != nil {
				break
			}
			if pid != agent {
				continue
			}
			e := ExitRecord{EndedAt: time.Now().UTC()}
			switch {
			case ws.Exited():
				code := ws.ExitStatus()
				e.ExitCode = &code
			case ws.Signaled():
				e.Signal = unix.SignalName(ws.Signal())
			}
			s.mu.Lock()
			e.StoppedBy = s.stoppedBy
			s.exit = &e
			s.mu.Unlock()
			close(s.reaped)
		}
	}
}

// readBatch bounds the output the read loop takes from the pty before
// writing it to the log.
const readBatch = 256 << 10

// readLoop copies the agent's output to the log, then to the screen kept
// for viewers and to the viewers. It takes from the pty whatever is there,
// up to readBatch, in as many reads as that takes, and writes it to the log
// in one write before it shows it to anyone and before it reads again: the
// log holds everything a viewer or a log reader was shown, and a monitor
// that crashes loses at most the batch it was handling (output the agent
// wrote in its last moments, never yet shown). The log is written to the
// file system, not synced: a machine that crashes keeps what the kernel
// had written back.
func (s *shim) readLoop() {
	defer close(s.readDone)
	buf := make([]byte, readBatch)
	rc, err := s.master.SyscallConn()
	if err != nil {
		s.logger.Error("read the agent's output", "err", err)
		return
	}
	for {
		n, err := readAvailable(rc, buf)
		if n > 0 {
			chunk := buf[:n]
			written, werr := s.log.Write(chunk)
			if s.health.wrote(n, written, werr) {
				if werr != nil {
					s.logger.Error("output is being dropped", "err", werr)
				} else {
					s.logger.Info("the output log takes output again")
				}
			}
			s.term.output(chunk)
			if s.echo != nil {
				s.echo.Write(chunk)
			}
			s.broadcast(chunk)
		}
		if err != nil {
			// EIO: every slave fd is closed. Anything else ends reading too.
			return
		}
	}
}

// readAvailable reads into buf until it is full or the pty has nothing
// more for now, waiting (in the runtime's poller) only for the first
// bytes: a pty gives a few KiB a read, and one write to the log per read
// cost more than the copy itself.
func readAvailable(rc syscall.RawConn, buf []byte) (int, error) {
	n := 0
	var rerr error
	err := rc.Read(func(fd uintptr) bool {
		for n < len(buf) {
			m, err := unix.Read(int(fd), buf[n:])
			switch {
			case m > 0:
				n += m
			case errors.Is(err, unix.EINTR):
			case errors.Is(err, unix.EAGAIN):
				return n > 0 // nothing yet: wait for the poller
			case err != nil:
				rerr = err
				return true
			default:
				rerr = io.EOF
				return true
			}
		}
		return true
	})
	if rerr == nil {
		rerr = err
	}
	return n, rerr
}

func (s *shim) broadcast(chunk []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.screen.write(chunk)
	if len(s.viewers) == 0 {
		return
	}
	cp := append([]byte(nil), chunk...)
	for v := range s.viewers {
		select {
		case v.out <- frame{api.FrameOutput, cp}:
		default:
			// A viewer that cannot keep up is dropped rather than
			// slowing the agent; it can attach again.
			delete(s.viewers, v)
			close(v.out)
		}
	}
}

// run serves the socket and holds the session until it is over.
func (s *shim) run() {
	ln := s.ln
	if ln != nil {
		go s.serve(ln)
	}
	reportCtx, stopReports := context.WithCancel(context.Background())
	go s.term.report(reportCtx)
	<-s.reaped
	stopReports()
	s.term.stop()
	s.finish()
	if ln != nil {
		ln.Close()
		os.Remove(filepath.Join(s.dir, home.SocketFile))
	}
	// Let in-flight answers (a stop waiting for the end) go out.
	done := make(chan struct{})
	go func() { s.requests.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
}

// finish runs after the agent was reaped: it ends what the agent left
// behind, drains the terminal into the log, and writes exit.json last, so a
// reader that sees exit.json has every byte.
func (s *shim) finish() {
	tree := s.tree()
	n, err := tree.Signal(unix.SIGTERM)
	if err != nil {
		s.logger.Warn("read process table", "err", err)
	}
	if n += cgroup.Signal(s.cg, unix.SIGTERM); n > 0 {
		s.logger.Info("ending processes the agent left behind", "count", n)
		if !s.waitEmpty(leftoverGrace) {
			s.killTree(5 * time.Second)
		}
	}
	select {
	case <-s.readDone:
	case <-time.After(time.Second):
	}
	s.master.Close()
	<-s.readDone
	// Readers see the log through the page cache; no fsync stands between
	// the agent's exit and its exit record.
	s.log.Close()
	// What the cgroup counted is read before it goes.
	u := cgroup.ReadUsage(s.cg)
	s.mu.Lock()
	s.exit.MemoryPeakBytes, s.exit.OOM = u.MemoryPeak, u.OOM
	exit := *s.exit
	if exit.StoppedBy == "" {
		exit.StoppedBy = s.stoppedBy
	}
	s.mu.Unlock()
	s.writeExit(exit)
	if err := cgroup.Remove(s.cg); err != nil {
		s.logger.Warn("remove the session's cgroup", "err", err)
	}
	payload, _ := json.Marshal(exit)
	s.mu.Lock()
	for v := range s.viewers {
		select {
		case v.out <- frame{api.FrameExit, payload}:
		default:
		}
		close(v.out)
		delete(s.viewers, v)
	}
	s.mu.Unlock()
	close(s.finished)
}

// exitRetryFor bounds how long a monitor tries to write an exit record it
// cannot write for a reason other than a full disk: a session folder removed
// while the agent ran, or made unwritable.
const exitRetryFor = 5 * time.Second

// writeExit writes the exit record into the space reserved at the start.
// Should even that fail, it tries again with back-off: for as long as the
// disk is full and the folder is there (an exit code is not given up while
// space may come back), for exitRetryFor otherwise. Then it says so in its
// log and gives up: the monitor has nothing left to do, and the service,
// which follows the agent's end by itself, has the last word.
func (s *shim) writeExit(exit ExitRecord) {
	s.health.slot.Close()
	err := writeExit(s.dir, exit, s.exitSlot)
	giveUp := time.Now().Add(exitRetryFor)
	for wait := 100 * time.Millisecond; err != nil; wait = min(2*wait, 5*time.Second) {
		if !waitForSpace(s.dir, err) && time.Now().After(giveUp) {
			b, _ := json.Marshal(exit)
			s.logger.Error("the exit record cannot be written; the monitor ends without it", "err", err, "exit", string(b))
			return
		}
		s.logger.Error("write exit record; trying again", "err", err, "in", wait)
		time.Sleep(wait)
		err = writeExit(s.dir, exit, nil)
	}
	removeReserve(s.dir)
}

// waitForSpace says whether a failed write of a record in dir is worth
// waiting for without bound: the disk is full and the folder still there.
func waitForSpace(dir string, err error) bool {
	if !errors.Is(err, unix.ENOSPC) && !errors.Is(err, unix.EDQUOT) {
		return false
	}
	st, serr := os.Stat(dir)
	return serr == nil && st.IsDir()
}

// stop ends the session: the agent's graceful signal to its group, then
// SIGKILL to every process of the session after the grace period (its
// whole cgroup where it has one). It returns once the agent is reaped and
// exit.json is written, with the processes that survived (none, unless
// SIGKILL could not end them) and how many processes the session had when
// the stop began.
func (s *shim) stop(opts StopOptions, by string) (*ExitRecord, []int, int) {
	ended := s.count()
	s.mu.Lock()
	if s.stoppedBy == "" {
		s.stoppedBy = by
	}
	s.mu.Unlock()
	if !opts.Force {
		sig := unix.SIGTERM
		if opts.Signal != "" {
			if n := unix.SignalNum(opts.Signal); n != 0 {
				sig = n
			}
		}
		grace := opts.Grace
		if grace <= 0 {
			grace = DefaultGrace
		}
		unix.Kill(-s.rec.PGID, sig)
		unix.Kill(s.rec.Process.PID, sig)
		select {
		case <-s.reaped:
		case <-time.After(grace):
		}
	}
	var survivors []int
	select {
	case <-s.finished:
	default:
		survivors = s.killTree(killBound)
	}
	<-s.finished
	s.mu.Lock()
	defer s.mu.Unlock()
	e := *s.exit
	return &e, survivors, ended
}

// count is how many processes the session has: its tree and its cgroup.
func (s *shim) count() int {
	pids := map[int]bool{}
	if table, err := proc.Table(); err == nil {
		for _, p := range s.tree().Members(table) {
			pids[p.PID] = true
		}
	}
	for _, pid := range cgroup.Procs(s.cg) {
		pids[pid] = true
	}
	return len(pids)
}

// waitEmpty waits up to d for the session to have no process left, in its
// tree and in its cgroup.
func (s *shim) waitEmpty(d time.Duration) bool {
	deadline := time.Now().Add(d)
	if !s.tree().WaitEmpty(context.Background(), d) {
		return false
	}
	return cgroup.WaitEmpty(context.Background(), s.cg, time.Until(deadline))
}

// tree is this session's processes: every descendant of the shim (as
// subreaper it inherits orphans, so no process of the session escapes it
// and the session marker need not be looked for), plus anything still in
// the agent's process group or session, less the service if one was
// started from inside the session.
func (s *shim) tree() Tree {
	service := s.servicePID()
	return Tree{
		Leader: s.rec.Process,
		PGID:   s.rec.PGID,
		Root:   os.Getpid(),
		Spare:  func(p proc.Info) bool { return p.PID == service },
	}
}

// servicePID reads the agentctl service's pid from its lock file (0 when
// there is none).
func (s *shim) servicePID() int {
	if s.serviceLock == "" {
		return 0
	}
	return home.LockHolder(s.serviceLock)
}

// killTree SIGKILLs every process of the session until none remains,
// bounded by d, and returns the pids of those that survived: its cgroup
// first (nothing escapes it), then its tree (a session without a cgroup,
// or a process that got out of it).
func (s *shim) killTree(d time.Duration) []int {
	left := cgroup.Kill(context.Background(), s.cg, d)
	survivors, err := KillTree(context.Background(), s.tree(), d, nil)
	if err != nil {
		s.logger.Warn("end the session's processes", "err", err)
	}
	for _, pid := range pidsOf(survivors) {
		if !slices.Contains(left, pid) {
			left = append(left, pid)
		}
	}
	if len(left) > 0 {
		s.logger.Error("processes of the session survived SIGKILL", "pids", left)
	}
	return left
}

func listen(path string) (net.Listener, error) {
	if len(path) > home.MaxSocketPath {
		return nil, fmt.Errorf("socket path %s is %d bytes, over the system's limit of %d: use a shorter AGENTCTL_HOME", path, len(path), home.MaxSocketPath)
	}
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	os.Chmod(path, 0o600)
	return ln, nil
}

func (s *shim) serve(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		if !peerAllowed(conn) {
			conn.Close()
			continue
		}
		s.requests.Add(1)
		go func() {
			defer s.requests.Done()
			s.handle(conn)
		}()
	}
}

func (s *shim) handle(conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReader(io.LimitReader(conn, 4<<20))
	line, err := r.ReadBytes('\n')
	if err != nil {
		return
	}
	reply := func(resp controlResponse) { answer(conn, resp) }
	var req controlRequest
	if err := json.Unmarshal(line, &req); err != nil {
		reply(controlResponse{Error: "bad request: " + err.Error()})
		return
	}
	if v := protocolVersion(req.Protocol); v < MinMonitorProtocol || v > MonitorProtocol {
		reply(controlResponse{Error: fmt.Sprintf("this session monitor speaks monitor protocol %d–%d, not %d", MinMonitorProtocol, MonitorProtocol, v)})
		return
	}
	switch req.Op {
	case "input":
		if _, err := s.master.Write(req.Data); err != nil {
			reply(controlResponse{Error: "write to terminal: " + err.Error()})
			return
		}
		s.term.input()
		reply(controlResponse{OK: true})
	case "resize":
		s.setSize(req.Rows, req.Cols)
		reply(controlResponse{OK: true})
	case "record":
		rec := s.rec
		reply(controlResponse{OK: true, Record: &rec})
	case "stop":
		grace, _ := time.ParseDuration(req.Grace)
		exit, survivors, ended := s.stop(StopOptions{Signal: req.Signal, Grace: grace, Force: req.Force}, "agentctl stop")
		reply(controlResponse{OK: true, Exit: exit, Survivors: survivors, Ended: ended})
	case "attach":
		s.attach(conn, bufio.NewReader(conn), req)
	default:
		reply(controlResponse{Error: "unknown op " + req.Op})
	}
}

func (s *shim) attach(conn net.Conn, r *bufio.Reader, req controlRequest) {
	v := &viewer{out: make(chan frame, 512)}
	s.mu.Lock()
	select {
	case <-s.finished:
		s.mu.Unlock()
		answer(conn, controlResponse{Error: "session has ended"})
		return
	default:
	}
	// The current screen first, then what follows it: both under the lock
	// that orders output, so nothing is shown twice or missed.
	v.out <- frame{api.FrameOutput, s.screen.redraw()}
	s.viewers[v] = struct{}{}
	s.mu.Unlock()
	if err := answer(conn, controlResponse{OK: true}); err != nil {
		return
	}
	// A resize makes full-screen programs redraw for the new viewer.
	s.setSize(req.Rows, req.Cols)

	typed := make(chan struct{})
	go func() {
		defer close(typed)
		for {
			typ, payload, err := api.ReadFrame(r)
			if err != nil {
				s.mu.Lock()
				if _, ok := s.viewers[v]; ok {
					delete(s.viewers, v)
					close(v.out)
				}
				s.mu.Unlock()
				return
			}
			switch typ {
			case api.FrameInput:
				s.master.Write(payload)
				s.term.input()
			case api.FrameResize:
				if len(payload) == 4 {
					s.setSize(uint16(payload[0])<<8|uint16(payload[1]), uint16(payload[2])<<8|uint16(payload[3]))
				}
			}
		}
	}()
	for f := range v.out {
		if err := api.WriteFrame(conn, f.typ, f.data); err != nil {
			// The viewer left: what it typed just before is still to
			// be read, and goes to the terminal.
			conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			<-typed
			return
		}
	}
}
