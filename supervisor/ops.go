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

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/config"
	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/spawn"
	"github.com/agentctl/agentctl/supervisor/events"
	"github.com/agentctl/agentctl/supervisor/fuses"
	"github.com/agentctl/agentctl/supervisor/hooks"
	"github.com/agentctl/agentctl/supervisor/locks"
	"github.com/agentctl/agentctl/supervisor/metrics"
	"github.com/agentctl/agentctl/supervisor/webhook"
)

// Files of the operational layer.
const (
	// lifecycleFile is written in a session's folder before it starts: the
	// lock and hooks it asked for, read again when it ends, also by a
	// service started after that.
	lifecycleFile = "lifecycle.json"
	// endedFile marks a session's end as announced (event, webhook,
	// metrics), so a restarted service does not announce it again.
	endedFile = "ended.json"
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
// lifecycle hooks, webhooks, the event stream and metrics. It hears of
// sessions' starts and ends as a Lifecycle observer.
type ops struct {
	home    Home
	log     *slog.Logger
	records *records
	cfg     config.Config
	self    proc.Identity

	bus      *events.Bus
	locks    *locks.Table
	fuses    *fuses.Engine
	webhooks *webhook.Sender
	metrics  *metrics.Metrics

	ctx context.Context
	wg  sync.WaitGroup

	mu       sync.Mutex
	watched  map[proc.Identity]bool
	activity map[string]string     // session id → last busy/idle seen
	native   map[string]api.Status // discovered session id → last status pushed
}

// newOps opens the state of the operational layer in home. Problems with
// its files are logged and worked around (a corrupt file is moved aside);
// only what makes the layer unusable is an error.
func newOps(ctx context.Context, home Home, recs *records, log *slog.Logger, version string) (*ops, error) {
	o := &ops{home: home, log: log, records: recs, ctx: ctx, watched: map[proc.Identity]bool{}, activity: map[string]string{}, native: map[string]api.Status{}}
	info, err := proc.Lookup(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("identify the service process: %w", err)
	}
	o.self = info.Identity

	cfg, warnings, err := config.Load(config.Path(string(home)))
	for _, w := range warnings {
		log.Warn(w)
	}
	if err != nil {
		log.Error("configuration ignored", "err", err)
		cfg = config.Config{}
	}
	if o.cfg, err = cfg.WithEnv(os.Getenv); err != nil {
		log.Error("configuration from the environment ignored", "err", err)
		o.cfg = cfg
	}

	if o.bus, err = events.Open(events.Options{JournalPath: filepath.Join(string(home), "events.jsonl"), Logger: log}); err != nil {
		return nil, err
	}
	o.metrics = metrics.New(metrics.Sources{
		Sessions:      o.sessionCounts,
		Locks:         o.lockCounts,
		Fuses:         func() int { return o.fuses.Count() },
		EventsDropped: o.bus.Dropped,
	})
	o.webhooks = webhook.New(webhook.Options{
		UserAgent: "agentctl/" + version,
		Logger:    log,
		OnResult:  func(r webhook.Result) { o.metrics.WebhookDelivery(r.Outcome) },
	})
	o.locks, warnings, err = locks.Open(filepath.Join(string(home), "locks.json"), locks.Options{Logger: log, OnChange: o.lockChanged})
	if err != nil {
		o.bus.Close()
		return nil, err
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	o.fuses, warnings, err = fuses.Open(filepath.Join(string(home), "fuses.json"), fuses.Options{
		OnChange:      o.fuseChanged,
		Webhook:       o.webhooks,
		WebhookSecret: o.cfg.WebhookSecret,
		ScriptLog:     filepath.Join(string(home), "fuses.log"),
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
		rec, err := spawn.ReadRecord(o.home.SessionDir(sess.ID))
		if err != nil {
			continue
		}
		if _, err := o.locks.Acquire(locks.Request{Dir: sess.Cwd, Type: locks.Auto, SessionID: sess.ID, Owner: rec.Process, Force: true}); err != nil {
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
	o.bus.Close()
}

// wantsLock says whether a session holds its directory's lock: agents
// always, plain commands when asked.
func (o *ops) wantsLock(adapter string, lc lifecycle) bool {
	return adapter != ExecAdapter && adapter != "" || lc.Lock
}

// reserve runs before a session starts: it takes the directory lock (in
// the service's name until the session's process exists) and records what
// the session asked for. A locked directory refuses the start unless
// req.Force.
func (o *ops) reserve(id, dir, adapter string, req api.RunRequest) error {
	lc := lifecycle{Lock: req.Lock, OnCreate: req.OnCreate, OnComplete: req.OnComplete, HookTimeout: req.HookTimeout}
	if lc.HookTimeout != "" {
		if d, err := time.ParseDuration(lc.HookTimeout); err != nil || d <= 0 {
			return api.Errorf(api.CodeInvalid, "hook timeout %q: want a positive duration such as 5m", lc.HookTimeout)
		}
	}
	if lc.OnCreate != "" || lc.OnComplete != "" {
		// Hooks may run after a restart, so their environment is kept on
		// disk: without credentials, which records never hold.
		lc.Env = spawn.WithoutSecrets(spawn.MergeEnv(req.Env, req.EnvOverrides...))
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
	if err := atomicfile.WriteJSON(filepath.Join(dir, lifecycleFile), lc, 0o600); err != nil {
		o.locks.ReleaseSession(id)
		return fmt.Errorf("record the session's hooks: %w", err)
	}
	return nil
}

// started hands the session's lock to its process, which the lock follows
// from now on.
func (o *ops) started(id string, rec spawn.Record, took time.Duration) {
	o.metrics.Spawned(rec.Adapter, took)
	if err := o.locks.SetOwner(id, rec.Process); err == nil {
		o.watchOwner(rec.Process)
	}
}

// abandon undoes reserve for a start that failed.
func (o *ops) abandon(id string) { o.locks.ReleaseSession(id) }

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
		if err := spawn.WaitExit(o.ctx, id); err != nil {
			return // the service is stopping
		}
		o.locks.Sweep()
	}()
}

// SessionStarted announces a start and runs the on-create hook.
func (o *ops) SessionStarted(sess api.Session) {
	s := sess
	o.bus.Publish(events.Event{Type: events.SessionStarted, Adapter: sess.Adapter, SessionID: sess.ID, Session: &s})
	dir := o.home.SessionDir(sess.ID)
	lc, err := readLifecycle(dir)
	if err != nil || lc.OnCreate == "" {
		return
	}
	go o.runHook(dir, hooks.OnCreate, lc.OnCreate, lc, sess)
}

// SessionEnded releases the session's locks, announces the end once per
// session (event, metrics, webhook) and runs the on-complete hook once.
// It is called for every ended session at each service start, too.
func (o *ops) SessionEnded(sess api.Session) {
	o.locks.ReleaseSession(sess.ID)
	dir := o.home.SessionDir(sess.ID)
	o.mu.Lock()
	delete(o.activity, sess.ID)
	o.mu.Unlock()
	if claimed, err := claimFile(filepath.Join(dir, endedFile), map[string]any{"status": sess.Status, "announced_at": time.Now().UTC()}); err != nil {
		o.log.Warn("record session end", "session", sess.ID, "err", err)
	} else if claimed {
		o.announceEnd(sess)
	}
	lc, err := readLifecycle(dir)
	if err != nil {
		o.log.Warn("read session hooks", "session", sess.ID, "err", err)
		return
	}
	if lc.OnComplete != "" {
		go o.runHook(dir, hooks.OnComplete, lc.OnComplete, lc, sess)
	}
}

func (o *ops) announceEnd(sess api.Session) {
	typ := events.SessionStopped
	if sess.Status == api.StatusLost {
		typ = events.SessionLost
	}
	s := sess
	o.bus.Publish(events.Event{Type: typ, Adapter: sess.Adapter, SessionID: sess.ID, Session: &s})
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
		switch {
		case sess.ExitCode != nil:
			code := *sess.ExitCode
			vars.ExitCode = &code
		case sess.Signal != "":
			if n := unix.SignalNum(sess.Signal); n != 0 {
				code := 128 + int(n)
				vars.ExitCode = &code
			}
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
	o.bus.Publish(events.Event{Type: events.HookFailed, Adapter: sess.Adapter, SessionID: sess.ID, Session: &s, Meta: meta})
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

// nativeChanged announces a change an adapter pushed for a session agentctl
// did not start: started when it begins running, stopped when it ends, and
// busy/idle in between.
func (o *ops) nativeChanged(sess api.Session) {
	o.mu.Lock()
	prev, seen := o.native[sess.ID]
	o.native[sess.ID] = sess.Status
	o.mu.Unlock()
	switch {
	case sess.Status == api.StatusRunning && (!seen || prev != api.StatusRunning):
		o.bus.Publish(events.Event{Type: events.SessionStarted, Adapter: sess.Adapter, SessionID: sess.ID, Session: &sess})
	case sess.Status.Ended() && (!seen || prev == api.StatusRunning):
		o.bus.Publish(events.Event{Type: events.SessionStopped, Adapter: sess.Adapter, SessionID: sess.ID, Session: &sess})
	}
	o.observeActivity([]api.Session{sess})
}

// observeActivity announces busy/idle changes an adapter reports, as they
// are seen.
func (o *ops) observeActivity(all []api.Session) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range all {
		s := all[i]
		if s.Activity == "" || s.Status != api.StatusRunning {
			continue
		}
		prev, seen := o.activity[s.ID]
		o.activity[s.ID] = s.Activity
		if !seen || prev == s.Activity {
			continue
		}
		typ := events.SessionIdle
		if s.Activity == "busy" {
			typ = events.SessionBusy
		}
		o.bus.Publish(events.Event{Type: typ, Adapter: s.Adapter, SessionID: s.ID, Session: &s})
	}
}

func (o *ops) lockChanged(c locks.Change) {
	meta := map[string]any{"directory": c.Lock.Directory, "type": string(c.Lock.Type)}
	if c.Lock.LockedBy != "" {
		meta["lockedBy"] = c.Lock.LockedBy
	}
	if c.Lock.Reason != "" {
		meta["reason"] = c.Lock.Reason
	}
	if c.Lock.PID > 0 && c.Lock.PID != o.self.PID {
		// (A lock reserved for a session being started is the service's
		// until the session's process exists.)
		meta["pid"] = c.Lock.PID
	}
	typ := events.LockAcquired
	if c.Kind == locks.Released {
		typ = events.LockReleased
		meta["released_because"] = c.Reason
	}
	o.bus.Publish(events.Event{Type: typ, SessionID: c.Lock.SessionID, Meta: meta})
}

func (o *ops) fuseChanged(c fuses.Change) {
	f := c.Fuse
	meta := map[string]any{"directory": f.Directory, "ttlMs": f.TTLMs, "expiresAt": f.ExpiresAt}
	if f.Label != "" {
		meta["label"] = f.Label
	}
	var typ string
	switch c.Kind {
	case fuses.Set:
		typ = events.FuseSet
	case fuses.Extended:
		typ = events.FuseExtended
	case fuses.Cancelled:
		typ = events.FuseCancelled
	case fuses.Expired:
		typ = events.FuseExpired
		o.metrics.FuseExpired()
		o.fuseWebhook(f, c.At)
	case fuses.ScriptDone:
		if c.Script == nil || c.Script.OK() {
			return
		}
		typ = events.HookFailed
		meta["phase"], meta["command"], meta["status"], meta["result"] = "fuse", c.Script.Command, c.Script.Outcome(), c.Script.Describe()
		meta["log"] = filepath.Join(string(o.home), "fuses.log")
		o.metrics.HookRun("fuse", c.Script.Outcome())
	default:
		return
	}
	o.bus.Publish(events.Event{Type: typ, SessionID: f.SessionID, Meta: meta})
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
	all, _, err := o.records.all()
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
	b, err := os.ReadFile(filepath.Join(dir, lifecycleFile))
	if errors.Is(err, fs.ErrNotExist) {
		return lc, nil
	}
	if err != nil {
		return lc, fmt.Errorf("read %s: %w", lifecycleFile, err)
	}
	if err := json.Unmarshal(b, &lc); err != nil {
		return lc, fmt.Errorf("parse %s: %w", filepath.Join(dir, lifecycleFile), err)
	}
	return lc, nil
}

// claimFile creates path with v in it unless it exists: true when this
// call created it. The creation is durable before it returns.
func claimFile(path string, v any) (bool, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, werr := f.Write(append(b, '\n'))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return true, err
	}
	return true, atomicfile.SyncDir(filepath.Dir(path))
}
