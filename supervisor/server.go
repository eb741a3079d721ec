// Package supervisor is the running agentctl service: the API on a unix
// socket (each route decodes, makes one call to the session core, and
// encodes), recovery at start, the watch on every running session, pruning,
// and the operational layer below it (locks, fuses, hooks, webhooks, events,
// metrics).
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/cgroup"
	"github.com/agentctl/agentctl/config"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/session"
)

// Options configure the service.
type Options struct {
	Home    home.Home
	Version string
	// Exe is the agentctl binary the service runs as each session's shim.
	Exe string
	// Adapters are the adapters the service reads and launches with
	// (adapters/registry builds a machine's).
	Adapters *adapters.Set
	// DiscoveryTimeout bounds each adapter's discovery (default 3 s).
	DiscoveryTimeout time.Duration
	// PruneTTL is how long ended sessions' folders are kept (default 7 days).
	PruneTTL time.Duration
	// PruneEvery is how often the service prunes (default 1 h).
	PruneEvery time.Duration
	// ReadTimeout bounds reading one request, body included (default 1 min).
	ReadTimeout time.Duration
	// EventStreams is how many event streams one uid may hold open
	// (default 256).
	EventStreams int
	// BodyWait is how long a request with a large body waits for its turn
	// before it is answered busy (default 20 s).
	BodyWait time.Duration
	// KeepAlive is how long a stream may be silent before it sends an
	// empty line (default 15 s).
	KeepAlive time.Duration
	Logger    *slog.Logger
	// Watch, when set, reports how the adapters' stores are watched
	// (`daemon status`).
	Watch func() api.WatchStatus
	// Web makes the dashboard config.json's "web" asks for, which the
	// service then serves while it runs (checked against the same rules
	// as `agentctl web`'s flags); nil serves none.
	Web func(config.Web) (Dashboard, error)
	// Book keeps the integrations' reports (session.Options.Book): the
	// same the adapters were given as their adapters.Env.Hooks.
	Book *session.Book
}

// Server is the running service.
type Server struct {
	opts    Options
	log     *slog.Logger
	started time.Time
	core    *session.Core
	ops     *ops
	// cgroups gives sessions cgroups of their own, where the machine
	// allows it (found once, at the start).
	cgroups *cgroup.Manager

	ctx    context.Context
	cancel context.CancelFunc

	// bodies admits large request bodies within a budget of bytes.
	bodies *admission
	// streams counts the event streams each uid holds open.
	streams *streamCounts

	mu       sync.Mutex
	watching map[string]bool
	// web is where the dashboard is served, or why not (nil: not asked).
	web *api.WebStatus
	// refusals* bound the log lines of refused integration reports.
	refusalsAt                      time.Time
	refusalsLogged, refusalsDropped int
	// limits keeps the book of usage limits and resumes held sessions.
	limits *limitKeeper
	wg     sync.WaitGroup
}

// The server is the core's gate and observer, passing both on to the
// operational layer; the layer reads the core.
var (
	_ session.Gate          = (*Server)(nil)
	_ session.Observer      = (*Server)(nil)
	_ session.QueueObserver = (*Server)(nil)
	_ launchedSessions      = (*session.Core)(nil)
)

// ErrAlreadyRunning means another service holds the home's lock.
var ErrAlreadyRunning = errors.New("an agentctl service is already running for this AGENTCTL_HOME")

// Run starts the service and blocks until ctx ends or a shutdown is asked
// for. Sessions are not touched by the service's exit.
func Run(ctx context.Context, opts Options) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if opts.DiscoveryTimeout <= 0 {
		opts.DiscoveryTimeout = 3 * time.Second
	}
	if opts.PruneTTL <= 0 {
		opts.PruneTTL = 7 * 24 * time.Hour
	}
	if opts.PruneEvery <= 0 {
		opts.PruneEvery = time.Hour
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = time.Minute
	}
	if opts.EventStreams <= 0 {
		opts.EventStreams = maxEventStreams
	}
	if opts.BodyWait <= 0 {
		opts.BodyWait = largeBodyWait
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 15 * time.Second
	}
	if opts.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find the agentctl binary: %w", err)
		}
		opts.Exe = exe
	}
	if err := opts.Home.Ensure(); err != nil {
		return err
	}
	lock, err := lockHome(opts.Home)
	if err != nil {
		return err
	}
	defer lock.Close()
	ln, err := listenSocket(opts.Home.Socket())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &Server{
		opts:     opts,
		log:      opts.Logger,
		started:  time.Now(),
		ctx:      ctx,
		cancel:   cancel,
		watching: map[string]bool{},
		bodies:   newAdmission(largeBodyBytes),
		streams:  &streamCounts{max: opts.EventStreams, n: map[int]int{}},
	}
	// Before the first monitor starts: the service may move itself into a
	// leaf of its cgroup, and the monitors start where it is.
	s.cgroups = cgroup.Detect(string(opts.Home))
	defer s.cgroups.Close()
	s.log.Info("per-session cgroups: " + s.cgroups.Status().String())
	cfg := loadConfig(opts.Home, s.log)
	// The core first, then the operational layer over it: what the core
	// tells (launches, transitions, discovery times) and asks (the gate)
	// reaches the layer through the server (Reserve, Launched, ...).
	limits := newLimitKeeper(cfg, s.log)
	s.core = session.New(ctx, session.Options{
		Home:             opts.Home,
		Exe:              opts.Exe,
		StandbyMonitor:   true,
		Adapters:         opts.Adapters,
		DiscoveryTimeout: opts.DiscoveryTimeout,
		Logger:           s.log,
		Observers:        []session.Observer{s},
		Gate:             s,
		ObserveDiscovery: s.discovered,
		Cgroups:          s.cgroups,
		Limits:           cfg.SessionLimits(),
		Admission:        newAdmissionConfig(opts.Home, cfg, s.log).policy,
		// A queued session waits while its provider's usage limit holds.
		Holds: limits.book,
		Book:  opts.Book,
	})
	if s.ops, err = newOps(ctx, opts.Home, s.log, opts.Version, cfg, s.core); err != nil {
		cancel()
		s.core.Wait() // its standby monitor, already started
		return err
	}
	s.startLimits(limits)
	srv := &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		// A request is read whole within this; streams lift it once they
		// start (a trickled body never holds a connection for good).
		ReadTimeout: opts.ReadTimeout,
		IdleTimeout: 2 * time.Minute,
		ConnContext: withPeer,
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	s.recover()
	s.ops.start(s.running())
	s.core.WatchAdapters(ctx)
	s.core.WatchTransitions(ctx)
	s.core.SweepCgroups(ctx)
	// After recover: the queue counts what runs, and takes up where a
	// service before this one left it.
	s.core.RunQueue(ctx)
	// A first discovery in the background warms the adapters' caches, so
	// the first list after a start does not pay for reading every store.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		restore := warmGC()
		s.core.Warm(s.ctx)
		restore()
		// The first read of the stores went through every native file
		// (gigabytes for a large store): what it allocated to read them is
		// garbage now, and handed back at once rather than kept resident
		// until the runtime returns it bit by bit.
		debug.FreeOSMemory()
	}()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.pruneLoop() }()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.limits.loop(s.ctx) }()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("agentctl service started", "pid", os.Getpid(), "version", opts.Version, "socket", opts.Home.Socket())
	// Once the socket serves: the dashboard is a client of it.
	s.serveWeb(cfg.Web)

	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			cancel()
			return fmt.Errorf("serve %s: %w", opts.Home.Socket(), err)
		}
	}
	shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	srv.Shutdown(shutdownCtx)
	os.Remove(opts.Home.Socket())
	cancel()
	s.wg.Wait()
	s.core.Wait()
	s.ops.close()
	s.log.Info("agentctl service stopped; sessions keep running")
	return nil
}

// lockHome takes the home's lock file, so two services never share one home.
func lockHome(h home.Home) (*os.File, error) {
	f, err := os.OpenFile(h.LockFile(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", h.LockFile(), err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrAlreadyRunning
		}
		return nil, fmt.Errorf("lock %s: %w", h.LockFile(), err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return f, nil
}

// listenSocket listens on path. We hold the home's lock, so a socket file
// already there is a crashed service's leftover: remove it.
func listenSocket(path string) (net.Listener, error) {
	if len(path) > home.MaxSocketPath {
		return nil, fmt.Errorf("socket path %s is too long (%d bytes, limit %d): use a shorter AGENTCTL_HOME", path, len(path), home.MaxSocketPath)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	// No umask dance: the umask is the whole process's (a test's other
	// goroutines, the web server) and the home is private (Home.Ensure
	// made it 0700), so nobody else reaches the socket before the chmod.
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("secure %s: %w", path, err)
	}
	return peerListener{ln}, nil
}

// recover re-derives every session at start-up: sessions still running get
// an exit watch; sessions that ended while the service was down are
// announced as ended.
func (s *Server) recover() {
	ids, err := s.core.LaunchedIDs()
	if err != nil {
		s.log.Error("read sessions at start-up", "err", err)
		return
	}
	for _, id := range ids {
		sess, err := s.core.Launched(id)
		if err != nil {
			if !errors.Is(err, session.ErrIncomplete) {
				s.log.Warn("skip unreadable session", "session", id, "err", err)
			}
			continue
		}
		if sess.Status.Ended() {
			s.notifyEnded(sess)
			continue
		}
		s.watch(id)
		s.core.WatchAgentServer(id)
	}
}

// running returns the launched sessions running now.
func (s *Server) running() []api.Session {
	all, _, err := s.core.AllLaunched()
	if err != nil {
		s.log.Error("read sessions", "err", err)
		return nil
	}
	var out []api.Session
	for _, sess := range all {
		if sess.Status == api.StatusRunning {
			out = append(out, sess)
		}
	}
	return out
}

// watch follows a running session to its end, without polling, and
// announces the end.
func (s *Server) watch(id string) {
	s.mu.Lock()
	if s.watching[id] {
		s.mu.Unlock()
		return
	}
	s.watching[id] = true
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { s.mu.Lock(); delete(s.watching, id); s.mu.Unlock() }()
		sess, err := s.core.WaitEnded(s.ctx, id)
		if errors.Is(err, session.ErrNotFound) {
			// Its folder was removed while it ran: nothing is left to say
			// how it ended, and it is listed no more.
			s.log.Info("session ended after its folder was removed", "session", id)
			return
		}
		if err != nil {
			if s.ctx.Err() == nil {
				s.log.Warn("follow session to its end", "session", id, "err", err)
			}
			return
		}
		s.notifyEnded(sess)
	}()
}

// Launched hears of a session the core started: it is announced and
// watched to its end.
func (s *Server) Launched(sess api.Session) {
	s.log.Info("session started", "session", sess.ID, "adapter", sess.Adapter, "pid", sess.PID)
	s.ops.sessionStarted(sess)
	s.watch(sess.ID)
	if s.limits != nil {
		s.limits.wake()
	}
}

// Queued hears of a session admission queued: it is announced.
func (s *Server) Queued(sess api.Session) { s.ops.sessionQueued(sess) }

// Changed hears of a transition the core saw in the adapters' answers.
func (s *Server) Changed(ch session.Change) { s.ops.changed(ch) }

// Reserve asks the operational layer before a launch (session.Gate).
func (s *Server) Reserve(id, dir, adapter string, req api.RunRequest) error {
	return s.ops.Reserve(id, dir, adapter, req)
}

// Started hands a launch's reservation to its process (session.Gate).
func (s *Server) Started(id, adapter string, process proc.Identity, took time.Duration) {
	s.ops.Started(id, adapter, process, took)
}

// Abandon undoes Reserve for a start that failed (session.Gate).
func (s *Server) Abandon(id string) { s.ops.Abandon(id) }

// discovered hears how long an adapter's discovery took (metrics).
func (s *Server) discovered(adapter string, took time.Duration, err error) {
	s.ops.metrics.Discovered(adapter, took, err)
	// A slow read (a first one over a big store, a cold page cache) is
	// worth a line: what a slow first list waited for.
	if took >= slowDiscovery {
		s.log.Info("slow store read", "adapter", adapter, "took", took.Round(time.Millisecond), "err", err)
	}
}

// slowDiscovery is how long an adapter's read of its store takes before
// the service logs it.
const slowDiscovery = time.Second

func (s *Server) notifyEnded(sess api.Session) {
	attrs := []any{"session", sess.ID, "status", sess.Status}
	if sess.ExitCode != nil {
		attrs = append(attrs, "exit_code", *sess.ExitCode)
	}
	if sess.Signal != "" {
		attrs = append(attrs, "signal", sess.Signal)
	}
	s.log.Info("session ended", attrs...)
	s.ops.sessionEnded(sess)
	// A slot may have freed.
	s.core.WakeQueue()
}

func (s *Server) pruneLoop() {
	t := time.NewTicker(s.opts.PruneEvery)
	defer t.Stop()
	for {
		if removed, err := s.prune(s.opts.PruneTTL, false); err != nil {
			s.log.Warn("prune ended sessions", "err", err)
		} else if len(removed) > 0 {
			s.log.Info("pruned ended sessions", "count", len(removed))
		}
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// prune removes the folders of sessions that ended more than olderThan ago,
// and of failed starts that left no launch record. A dry run names them and
// removes nothing.
func (s *Server) prune(olderThan time.Duration, dryRun bool) ([]string, error) {
	ids, err := s.core.LaunchedIDs()
	if err != nil {
		return nil, err
	}
	removed := []string{}
	for _, id := range ids {
		dir := s.opts.Home.SessionDir(id)
		sess, err := s.core.Launched(id)
		var ended time.Time
		switch {
		case errors.Is(err, session.ErrIncomplete):
			continue
		case err != nil:
			// No launch record: a start that failed; corrupt records are
			// kept for a person to look at.
			if _, statErr := os.Stat(filepath.Join(dir, home.LaunchFile)); !errors.Is(statErr, os.ErrNotExist) {
				continue
			}
			st, statErr := os.Stat(dir)
			if statErr != nil {
				continue
			}
			ended = st.ModTime()
		case sess.Status.Ended():
			ended = sess.CreatedAt
			if sess.EndedAt != nil {
				ended = *sess.EndedAt
			}
		default:
			continue
		}
		if time.Since(ended) < olderThan {
			continue
		}
		if dryRun {
			removed = append(removed, id)
			continue
		}
		if err := s.core.RemoveFolder(id); err != nil {
			return removed, err
		}
		removed = append(removed, id)
	}
	return removed, nil
}
