package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/config"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/internal/envvar"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/session"
	"github.com/agentctl/agentctl/supervisor/desktop"
	"github.com/agentctl/agentctl/supervisor/events"
	"github.com/agentctl/agentctl/supervisor/fuses"
	"github.com/agentctl/agentctl/supervisor/hooks"
	"github.com/agentctl/agentctl/supervisor/locks"
	"github.com/agentctl/agentctl/supervisor/metrics"
	"github.com/agentctl/agentctl/supervisor/webhook"
)

// lockSweepEvery is the backstop for lock owners whose exit nobody
// reported; each owner's exit is watched directly.
const lockSweepEvery = time.Minute

// lifecycle is lifecycle.json.
type lifecycle struct {
	Lock        bool   `json:"lock,omitempty"`
	OnCreate    string `json:"on_create,omitempty"`
	OnComplete  string `json:"on_complete,omitempty"`
	HookTimeout string `json:"hook_timeout,omitempty"`
	// Env is the caller's environment less credentials, which the hooks
	// run with (written only when there are hooks).
	Env []string `json:"env,omitempty"`
}

func (l lifecycle) hookTimeout() time.Duration {
	d, _ := time.ParseDuration(l.HookTimeout)
	return d
}

// ops is the service's operational layer: directory locks, fuses,
// lifecycle hooks, webhooks, the event stream and metrics. It guards
// launches (session.Gate) and hears of sessions' starts, ends and
// transitions from the service.
type ops struct {
	home home.Home
	log  *slog.Logger
	// sessions is the session core the layer reads (it is built from it):
	// nil in tests of the layer alone.
	sessions launchedSessions
	cfg      config.Config
	self     proc.Identity

	bus      *events.Bus
	locks    *locks.Table
	fuses    *fuses.Engine
	webhooks *webhook.Sender
	metrics  *metrics.Metrics
	// desktop tells a graphical session of waiting sessions; nil when off.
	desktop *desktop.Notifier

	ctx context.Context
	wg  sync.WaitGroup

	mu      sync.Mutex
	watched map[proc.Identity]bool
	// limits keeps the book of usage limits; set before the layer starts.
	limits *limitKeeper
}

// heldByLimit counts the sessions usage limits hold, by provider.
func (o *ops) heldByLimit() map[string]int {
	if o.limits == nil {
		return nil
	}
	return o.limits.heldCounts()
}

// launchedSessions is what the operational layer reads of the session
// core: the sessions this service launched (metrics, waiting counts) and
// the process of one (its lock, restored at start).
type launchedSessions interface {
	AllLaunched() ([]api.Session, []string, error)
	Process(id string) (proc.Identity, error)
	// Resources samples what the running sessions cost (metrics).
	Resources(ctx context.Context) []api.SessionStats
	// QueuedBy counts the queued sessions by what holds them (metrics).
	QueuedBy() map[string]int
	// WaitingByHand counts the running sessions it did not launch that
	// wait for a person, by what for (metrics).
	WaitingByHand() map[string]int
}

// loadConfig is the service's configuration: config.json under home, then
// the environment over it. A file or a variable in error is logged and
// ignored: the service runs on what is valid.
func loadConfig(h home.Home, log *slog.Logger) config.Config {
	cfg, warnings, err := config.Load(config.Path(string(h)))
	for _, w := range warnings {
		log.Warn(w)
	}
	if err != nil {
		log.Error("configuration ignored", "err", err)
		cfg = config.Config{}
	}
	withEnv, err := cfg.WithEnv(os.Getenv)
	if err != nil {
		log.Error("configuration from the environment ignored", "err", err)
		return cfg
	}
	return withEnv
}

// newOps opens the state of the operational layer in home, over the
// session core's sessions. Problems with its files are logged and worked
// around (a corrupt file is moved aside); only what makes the layer
// unusable is an error.
func newOps(ctx context.Context, h home.Home, log *slog.Logger, version string, cfg config.Config, sessions launchedSessions) (*ops, error) {
	o := &ops{home: h, log: log, ctx: ctx, cfg: cfg, sessions: sessions, watched: map[proc.Identity]bool{}}
	info, err := proc.Lookup(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("identify the service process: %w", err)
	}
	o.self = info.Identity
	var warnings []string
	if o.bus, err = events.Open(events.Options{JournalPath: filepath.Join(string(h), "events.jsonl"), Logger: log}); err != nil {
		return nil, err
	}
	o.metrics = metrics.New(metrics.Sources{
		Sessions:      o.sessionCounts,
		Locks:         o.lockCounts,
		Fuses:         func() int { return o.fuses.Count() },
		EventsDropped: o.bus.Dropped,
		Waiting:       o.waitingCounts,
		HeldByLimit:   o.heldByLimit,
		Resources:     o.sessionResources,
		Queued:        o.queuedCounts,
	})
	o.desktop = openDesktop(o.cfg.Notify, log)
	o.webhooks = webhook.New(webhook.Options{
		UserAgent: "agentctl/" + version,
		Logger:    log,
		OnResult:  func(r webhook.Result) { o.metrics.WebhookDelivery(r.Outcome) },
	})
	o.locks, warnings, err = locks.Open(filepath.Join(string(h), "locks.json"), locks.Options{Logger: log, OnChange: o.lockChanged})
	if err != nil {
		o.bus.Close()
		return nil, err
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	o.fuses, warnings, err = fuses.Open(filepath.Join(string(h), "fuses.json"), fuses.Options{
		OnChange:      o.fuseChanged,
		Webhook:       o.webhooks,
		WebhookSecret: o.cfg.WebhookSecret,
		ScriptLog:     filepath.Join(string(h), "fuses.log"),
		ScriptEnv:     os.Environ(),
		Logger:        log,
	})
	if err != nil {
		o.bus.Close()
		return nil, err
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	return o, nil
}

// start brings the layer up to date with the sessions on disk and arms
// what runs by itself: lock owners' exit watches, fuses, metrics.
func (o *ops) start(running []api.Session) {
	// A running session that asked for a lock holds it, whatever the
	// table says (the service may have died between reserving and handing
	// the lock over).
	for _, sess := range running {
		lc, err := readLifecycle(o.home.SessionDir(sess.ID))
		if err != nil || !o.wantsLock(sess.Adapter, lc) {
			continue
		}
		owner, err := o.sessions.Process(sess.ID)
		if err != nil {
			continue
		}
		if _, err := o.locks.Acquire(locks.Request{Dir: sess.Cwd, Type: locks.Auto, SessionID: sess.ID, Owner: owner, Force: true}); err != nil {
			o.log.Warn("restore session lock", "session", sess.ID, "err", err)
		}
	}
	o.locks.Sweep()
	for _, l := range o.locks.List() {
		if l.Type == locks.Auto {
			o.watchOwner(l.Owner())
		}
	}
	o.fuses.Start()
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		t := time.NewTicker(lockSweepEvery)
		defer t.Stop()
		for {
			select {
			case <-o.ctx.Done():
				return
			case <-t.C:
				o.locks.Sweep()
			}
		}
	}()
	if o.cfg.MetricsPort > 0 {
		ln, err := metrics.Listen(o.cfg.MetricsPort)
		if err != nil {
			o.log.Error("metrics not served", "err", err)
			return
		}
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			if err := metrics.Serve(o.ctx, ln, o.metrics.Handler(), o.log); err != nil {
				o.log.Error("metrics server stopped", "err", err)
			}
		}()
	}
}

// close stops timers and deliveries once the service stops (its context
// is cancelled by then).
func (o *ops) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := o.fuses.Close(ctx); err != nil {
		o.log.Warn("fuse actions cut short", "err", err)
	}
	if err := o.webhooks.Close(ctx); err != nil {
		o.log.Warn("webhook deliveries abandoned", "err", err)
	}
	o.wg.Wait()
	if o.desktop != nil {
		o.desktop.Close()
	}
	o.bus.Close()
}

// wantsLock says whether a session holds its directory's lock: agents
// always, plain commands when asked.
func (o *ops) wantsLock(adapter string, lc lifecycle) bool {
	return adapter != api.ExecAdapter && adapter != "" || lc.Lock
}

// Reserve runs before a session starts: it takes the directory lock (in
// the service's name until the session's process exists) and records what
// the session asked for. A locked directory refuses the start unless
// req.Force. req is normalised (api.RunRequest.Normalize checked its hook
// timeout).
func (o *ops) Reserve(id, dir, adapter string, req api.RunRequest) error {
	lc := lifecycle{Lock: req.Lock, OnCreate: req.OnCreate, OnComplete: req.OnComplete, HookTimeout: req.HookTimeout}
	if lc.OnCreate != "" || lc.OnComplete != "" {
		// Hooks may run after a restart, so their environment is kept on
		// disk: without credentials, which records never hold.
		lc.Env = envvar.WithoutSecrets(envvar.Merge(req.Env, req.EnvOverrides...))
	}
	if o.wantsLock(adapter, lc) {
		_, err := o.locks.Acquire(locks.Request{Dir: req.Cwd, Type: locks.Auto, SessionID: id, Owner: o.self, Force: req.Force})
		var le *locks.LockedError
		if errors.As(err, &le) {
			return api.Errorf(api.CodeLocked, "%s", err.Error())
		}
		if err != nil {
			return fmt.Errorf("lock %s: %w", req.Cwd, err)
		}
	}
	if !lc.Lock && lc.OnCreate == "" && lc.OnComplete == "" {
		return nil
	}
	if err := atomicfile.WriteJSON(filepath.Join(dir, home.LifecycleFile), lc, 0o600); err != nil {
		o.locks.ReleaseSession(id)
		return fmt.Errorf("record the session's hooks: %w", err)
	}
	return nil
}

// Started hands the session's lock to its process, which the lock follows
// from now on.
func (o *ops) Started(id, adapter string, process proc.Identity, took time.Duration) {
	o.metrics.Spawned(adapter, took)
	if err := o.locks.SetOwner(id, process); err == nil {
		o.watchOwner(process)
	}
}

// Abandon undoes Reserve for a start that failed.
func (o *ops) Abandon(id string) { o.locks.ReleaseSession(id) }

// watchOwner releases the locks of a process the moment it exits: the
// kernel says so (pidfd), nobody polls.
func (o *ops) watchOwner(id proc.Identity) {
	o.mu.Lock()
	if o.watched[id] {
		o.mu.Unlock()
		return
	}
	o.watched[id] = true
	o.mu.Unlock()
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		defer func() { o.mu.Lock(); delete(o.watched, id); o.mu.Unlock() }()
		if err := proc.WaitExit(o.ctx, id); err != nil {
			return // the service is stopping
		}
		o.locks.Sweep()
	}()
}

// sessionStarted announces a start and runs the on-create hook.
// sessionQueued announces a session admission queued.
func (o *ops) sessionQueued(sess api.Session) {
	s := sess
	o.bus.Publish(api.Event{Type: api.EventSessionQueued, Adapter: sess.Adapter, SessionID: sess.ID, Session: &s})
}

// queuedCounts are the queued sessions by what holds them (metrics).
func (o *ops) queuedCounts() map[string]int {
	if o.sessions == nil {
		return nil
	}
	return o.sessions.QueuedBy()
}

func (o *ops) sessionStarted(sess api.Session) {
	s := sess
	o.bus.Publish(api.Event{Type: api.EventSessionStarted, Adapter: sess.Adapter, SessionID: sess.ID, Session: &s})
	dir := o.home.SessionDir(sess.ID)
	lc, err := readLifecycle(dir)
	if err != nil || lc.OnCreate == "" {
		return
	}
	go o.runHook(dir, hooks.OnCreate, lc.OnCreate, lc, sess)
}

// sessionEnded releases the session's locks, announces the end once per
// session (event, metrics, webhook) and runs the on-complete hook once.
// It is called for every ended session at each service start, too.
func (o *ops) sessionEnded(sess api.Session) {
	o.locks.ReleaseSession(sess.ID)
	if o.desktop != nil {
		o.desktop.Resumed(sess.ID)
	}
	dir := o.home.SessionDir(sess.ID)
	o.claimEnd(sess)
	lc, err := readLifecycle(dir)
	if err != nil {
		o.log.Warn("read session hooks", "session", sess.ID, "err", err)
		return
	}
	if lc.OnComplete != "" {
		go o.runHook(dir, hooks.OnComplete, lc.OnComplete, lc, sess)
	}
}

// claimEnd announces a session's end once: the first to claim it in the
// session's folder announces it. A claim the disk refuses (full) is tried
// again until it is made, so the end is announced when space comes back.
func (o *ops) claimEnd(sess api.Session) {
	path := filepath.Join(o.home.SessionDir(sess.ID), home.EndedFile)
	claim := func() (done bool) {
		claimed, err := claimFile(path, map[string]any{"status": sess.Status, "announced_at": time.Now().UTC()})
		if err != nil {
			if _, serr := os.Stat(filepath.Dir(path)); errors.Is(serr, fs.ErrNotExist) {
				// Removed (rm --force) before its end was claimed: no
				// folder, so no later claim either; this is the one
				// announcement.
				o.announceEnd(sess)
				return true
			}
			return false
		}
		if claimed {
			o.announceEnd(sess)
		}
		return true
	}
	if claim() {
		return
	}
	o.log.Warn("record session end; trying again until the disk takes it", "session", sess.ID)
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
			select {
			case <-o.ctx.Done():
				return
			case <-time.After(wait):
			}
			if claim() {
				o.log.Info("session end recorded", "session", sess.ID)
				return
			}
		}
	}()
}

func (o *ops) announceEnd(sess api.Session) {
	typ := api.EventSessionStopped
	if sess.Status == api.StatusLost {
		typ = api.EventSessionLost
	}
	s := sess
	o.bus.Publish(api.Event{Type: typ, Adapter: sess.Adapter, SessionID: sess.ID, Session: &s})
	if sess.OOM {
		// Its own event, so a consumer of OOM kills need not read every end.
		meta := map[string]any{"signal": sess.Signal}
		if sess.Limits != nil && sess.Limits.MemoryMaxBytes > 0 {
			meta["memory_max_bytes"] = sess.Limits.MemoryMaxBytes
		}
		o.bus.Publish(api.Event{Type: api.EventSessionOOM, Adapter: sess.Adapter, SessionID: sess.ID, Session: &s, Meta: meta})
	}
	ran := time.Duration(-1) // unknown
	if sess.EndedAt != nil {
		start := sess.CreatedAt
		if sess.StartTime != nil {
			start = *sess.StartTime
		}
		// The start comes from the kernel's clock ticks (10 ms), the end
		// from the wall clock: a session over within a tick can come out
		// below zero. It ran for about no time, and still counts.
		ran = max(sess.EndedAt.Sub(start), 0)
	}
	o.metrics.SessionEnded(sess.Adapter, sess.Status, sess.ExitCode, ran)
	if o.cfg.WebhookURL == "" {
		return
	}
	body, err := json.Marshal(webhook.SessionEnded(sess, time.Now()))
	if err != nil {
		o.log.Warn("encode session webhook", "session", sess.ID, "err", err)
		return
	}
	o.webhooks.Send(webhook.Delivery{URL: o.cfg.WebhookURL, Secret: o.cfg.WebhookSecret, Event: webhook.HookSessionStopped, ID: sess.ID + "-stopped", Body: body})
}

// runHook runs one of a session's hooks at most once (hooks.RunOnce) and
// reports a failure as hook.failed. Hooks are not tied to the service's
// life: one still running when the service stops runs on, and is shown as
// interrupted afterwards.
func (o *ops) runHook(dir, phase, script string, lc lifecycle, sess api.Session) {
	vars := hooks.Vars{SessionID: sess.ID, Cwd: sess.Cwd, Adapter: sess.Adapter, Group: sess.Group, Model: sess.Model, Branch: sess.Labels["branch"]}
	if phase == hooks.OnComplete {
		if code, ok := sess.ExitStatus(); ok {
			vars.ExitCode = &code
		}
	}
	rec, ran, err := hooks.RunOnce(context.Background(), dir, hooks.Command{
		Phase: phase, Script: script, Dir: sess.Cwd, Env: lc.Env, Vars: vars, Timeout: lc.hookTimeout(),
	})
	if err != nil {
		o.log.Warn("hook", "session", sess.ID, "phase", phase, "err", err)
	}
	if !ran {
		return
	}
	o.metrics.HookRun(phase, rec.Outcome())
	if rec.OK() {
		o.log.Info("hook ran", "session", sess.ID, "phase", phase)
		return
	}
	o.log.Warn("hook failed", "session", sess.ID, "phase", phase, "result", rec.Describe())
	meta := map[string]any{"phase": phase, "command": script, "status": rec.Outcome(), "result": rec.Describe(), "log": filepath.Join(dir, hooks.LogName)}
	if rec.ExitCode != nil {
		meta["exit_code"] = *rec.ExitCode
	}
	s := sess
	o.bus.Publish(api.Event{Type: api.EventHookFailed, Adapter: sess.Adapter, SessionID: sess.ID, Session: &s, Meta: meta})
}

// hookRuns reads a session's hook records for status.
func (o *ops) hookRuns(id string) []api.HookRun {
	dir := o.home.SessionDir(id)
	var out []api.HookRun
	for _, phase := range []string{hooks.OnCreate, hooks.OnComplete} {
		rec, err := hooks.ReadRecord(dir, phase)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			out = append(out, api.HookRun{Phase: phase, Status: "unknown", Error: err.Error()})
			continue
		}
		run := api.HookRun{Phase: phase, Command: rec.Command, Status: rec.Status(), ExitCode: rec.ExitCode, Signal: rec.Signal, Error: rec.Error, Log: filepath.Join(dir, hooks.LogName)}
		if !rec.StartedAt.IsZero() {
			t := rec.StartedAt
			run.StartedAt = &t
		}
		if !rec.EndedAt.IsZero() {
			t := rec.EndedAt
			run.EndedAt = &t
		}
		out = append(out, run)
	}
	return out
}

// changed announces a transition the session core saw in the adapters'
// answers.
func (o *ops) changed(ch session.Change) {
	var typ string
	switch ch.Kind {
	case session.ChangeStarted:
		typ = api.EventSessionStarted
	case session.ChangeEnded:
		typ = api.EventSessionStopped
	case session.ChangeBusy:
		typ = api.EventSessionBusy
	case session.ChangeIdle:
		typ = api.EventSessionIdle
	case session.ChangeWaiting, session.ChangeResumed:
		o.attentionChanged(ch)
		return
	default:
		return
	}
	s := ch.Session
	o.bus.Publish(api.Event{Type: typ, Adapter: s.Adapter, SessionID: s.ID, Session: &s})
}

func (o *ops) lockChanged(c locks.Change) {
	meta := map[string]any{"directory": c.Lock.Directory, "type": string(c.Lock.Type)}
	if c.Lock.LockedBy != "" {
		meta["locked_by"] = c.Lock.LockedBy
	}
	if c.Lock.Reason != "" {
		meta["reason"] = c.Lock.Reason
	}
	if c.Lock.PID > 0 && c.Lock.PID != o.self.PID {
		// (A lock reserved for a session being started is the service's
		// until the session's process exists.)
		meta["pid"] = c.Lock.PID
	}
	typ := api.EventLockAcquired
	if c.Kind == locks.Released {
		typ = api.EventLockReleased
		meta["released_because"] = c.Reason
	}
	o.bus.Publish(api.Event{Type: typ, SessionID: c.Lock.SessionID, Meta: meta})
}

func (o *ops) fuseChanged(c fuses.Change) {
	f := c.Fuse
	meta := map[string]any{"directory": f.Directory, "ttl_ms": f.TTLMs, "expires_at": f.ExpiresAt}
	if f.Label != "" {
		meta["label"] = f.Label
	}
	var typ string
	switch c.Kind {
	case fuses.Set:
		typ = api.EventFuseSet
	case fuses.Extended:
		typ = api.EventFuseExtended
	case fuses.Cancelled:
		typ = api.EventFuseCancelled
	case fuses.Expired:
		typ = api.EventFuseExpired
		o.metrics.FuseExpired()
		o.fuseWebhook(f, c.At)
	case fuses.ScriptDone:
		if c.Script == nil || c.Script.OK() {
			return
		}
		typ = api.EventHookFailed
		meta["phase"], meta["command"], meta["status"], meta["result"] = "fuse", c.Script.Command, c.Script.Outcome(), c.Script.Describe()
		meta["log"] = filepath.Join(string(o.home), "fuses.log")
		o.metrics.HookRun("fuse", c.Script.Outcome())
	default:
		return
	}
	o.bus.Publish(api.Event{Type: typ, SessionID: f.SessionID, Meta: meta})
}

// fuseWebhook posts fuse.expired to the configured webhook_url.
func (o *ops) fuseWebhook(f fuses.Fuse, at time.Time) {
	if o.cfg.WebhookURL == "" {
		return
	}
	body, err := json.Marshal(webhook.FuseExpired(webhook.FuseExpiry{Directory: f.Directory, SessionID: f.SessionID, Label: f.Label, TTL: f.TTL(), ExpiredAt: at}))
	if err != nil {
		return
	}
	o.webhooks.Send(webhook.Delivery{URL: o.cfg.WebhookURL, Secret: o.cfg.WebhookSecret, Event: webhook.HookFuseExpired, ID: "fuse-" + f.Directory + "-" + f.ExpiresAt.Format(time.RFC3339Nano), Body: body})
}

func (o *ops) sessionCounts() []metrics.SessionCount {
	if o.sessions == nil {
		return nil
	}
	all, _, err := o.sessions.AllLaunched()
	if err != nil {
		return nil
	}
	type key struct {
		adapter string
		status  api.Status
	}
	counts := map[key]int{}
	for _, s := range all {
		counts[key{s.Adapter, s.Status}]++
	}
	out := make([]metrics.SessionCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, metrics.SessionCount{Adapter: k.adapter, Status: k.status, Count: n})
	}
	return out
}

// sessionResources is what each running session costs, for the metrics.
func (o *ops) sessionResources() []metrics.SessionResources {
	if o.sessions == nil {
		return nil
	}
	rows := o.sessions.Resources(o.ctx)
	out := make([]metrics.SessionResources, 0, len(rows))
	for _, r := range rows {
		out = append(out, metrics.SessionResources{ID: r.ID, Adapter: r.Adapter, Resources: *r.Resources})
	}
	return out
}

func (o *ops) lockCounts() map[string]int {
	out := map[string]int{}
	for k, n := range o.locks.Count() {
		out[string(k)] = n
	}
	return out
}

// readLifecycle reads a session's lifecycle.json; a session without one
// asked for nothing.
func readLifecycle(dir string) (lifecycle, error) {
	var lc lifecycle
	b, err := os.ReadFile(filepath.Join(dir, home.LifecycleFile))
	if errors.Is(err, fs.ErrNotExist) {
		return lc, nil
	}
	if err != nil {
		return lc, fmt.Errorf("read %s: %w", home.LifecycleFile, err)
	}
	if err := json.Unmarshal(b, &lc); err != nil {
		return lc, fmt.Errorf("parse %s: %w", filepath.Join(dir, home.LifecycleFile), err)
	}
	return lc, nil
}

// claimFile makes path hold v unless a complete claim is there already:
// true when this call made it. The claim is written to a temporary file,
// synced, and linked into place, so path never exists incomplete: a claim
// whose writing failed (a full disk) is no claim, and a later call makes
// it. A path left empty or torn (by a version that wrote it in place) is
// repaired the same way.
func claimFile(path string, v any) (bool, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return false, err
	}
	for attempt := 0; ; attempt++ {
		if claimComplete(path) {
			return false, nil
		}
		if attempt > 0 {
			// A torn claim: nobody can finish it, so replace it.
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return false, fmt.Errorf("repair %s: %w", path, err)
			}
		}
		err := linkNew(path, append(b, '\n'))
		if errors.Is(err, fs.ErrExist) && attempt == 0 {
			continue // raced, or torn: look again
		}
		if err != nil {
			return false, err
		}
		return true, atomicfile.SyncDir(filepath.Dir(path))
	}
}

// claimComplete reports whether path holds a whole JSON claim.
func claimComplete(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && json.Valid(b)
}

// linkNew writes data to a temporary file beside path, syncs it, and links
// it to path: fs.ErrExist when path exists.
func linkNew(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("claim %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("claim %s: %w", path, err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		return fmt.Errorf("claim %s: %w", path, err)
	}
	return nil
}
