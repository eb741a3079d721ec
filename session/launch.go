package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/cgroup"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/internal/envvar"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/spawn"
)

// maxRecordPrompt is how much of a prompt the launch record keeps.
const maxRecordPrompt = 16 << 10

// nativeIDTimeout bounds how long the service looks for a native id that
// the adapter could not pre-assign.
const nativeIDTimeout = 2 * time.Minute

// nativeIDRetry is how long the service waits before it asks the adapter
// again, when the id it told was another session's.
const nativeIDRetry = time.Second

// launcher is the launch side of the core: it holds a request to the
// launch contract, makes the session's folder and record, asks the gate,
// builds the agent's command through its adapter, starts the monitor, and
// tells the observers. It reads through the read side (resumes, names).
type launcher struct {
	*reader
	// starter starts the sessions' monitors.
	starter *spawn.Starter
	// naming is held from the check that a launch's name is free until
	// its record is on disk, so two launches cannot take one name.
	naming sync.Mutex
}

// Launch starts a session and returns it once the command is confirmed
// started (the exec succeeded and launch.json is on disk), and follows the
// agent's own server, if it has one (WatchAgentServer).
// A launch admission holds back (a cap, the memory floor, a provider's
// limit) is refused, or queued when the request asks (api.RunRequest.Queue).
func (c *Core) Launch(ctx context.Context, req api.RunRequest) (api.Session, error) {
	if pol := c.admission(); !pol.Zero() || req.Queue || c.providerHeld(req) {
		return c.admitLaunch(ctx, req, pol)
	}
	return c.launchAs(ctx, req, "")
}

// providerHeld reports whether a usage limit of the launch's provider
// holds now: such a launch would only meet the limit again, so it goes
// through admission (refused, or queued with --queue) even when no cap is
// set. --force starts it anyway (the book may know of one account only).
func (c *base) providerHeld(req api.RunRequest) bool {
	if req.Force || c.opts.Holds == nil {
		return false
	}
	p := api.Provider(req.Adapter, req.Model)
	if p == "" {
		return false
	}
	_, held := c.opts.Holds.Held(p)
	return held
}

// launchAs is Launch past admission; queuedID, when set, is the queued
// session whose claimed start it is (its folder and id are kept).
func (c *Core) launchAs(ctx context.Context, req api.RunRequest, queuedID string) (api.Session, error) {
	sess, err := c.launch(ctx, req, queuedID)
	if err != nil {
		return api.Session{}, err
	}
	c.WatchAgentServer(sess.ID)
	return sess, nil
}

// launch starts a session. A caller that goes away mid-launch does not cut
// it short: a half-started session would be worse than an unread answer.
// The request is held to the launch contract (api.RunRequest.Normalize)
// first; a launch that fails after its folder is made takes back what it
// made, in one place (launchUndo).
func (c *launcher) launch(ctx context.Context, req api.RunRequest, queuedID string) (api.Session, error) {
	ctx = context.WithoutCancel(ctx)
	if err := req.Normalize(); err != nil {
		return api.Session{}, invalid(err)
	}
	limits, err := c.limits(req)
	if err != nil {
		return api.Session{}, err
	}
	lineage, err := c.lineage(ctx, req)
	if err != nil {
		return api.Session{}, err
	}
	if req.Name != "" {
		c.naming.Lock()
		defer c.naming.Unlock()
		if err := c.nameFree(req.Name, queuedID); err != nil {
			return api.Session{}, err
		}
	}
	l := c.newLaunch(req, lineage, limits, queuedID)
	undo := &launchUndo{}
	defer undo.run()
	if err := c.prepare(ctx, l, undo); err != nil {
		return api.Session{}, err
	}
	// The command may ask the service something before its start is
	// reported: it is known as the session's, with its lineage, from the
	// moment its monitor is handed it.
	c.mons.begin(l.id, lineage)
	defer c.mons.end(l.id)
	began := time.Now()
	started, err := c.starter.StartTelling(ctx, l.dir, l.spec, func(pid int) { c.mons.told(l.id, pid) })
	if err != nil {
		if !errors.Is(err, spawn.ErrStart) {
			// The monitor may hold the folder: it stays.
			undo.dir = ""
			return api.Session{}, err
		}
		return api.Session{}, faultf(ErrSpawn, "%s", strings.TrimPrefix(err.Error(), spawn.ErrStart.Error()+": "))
	}
	undo.disarm()
	return c.launched(l, started, time.Since(began))
}

// launching is one launch under way: the request, and what is made of it.
type launching struct {
	req  api.RunRequest
	id   string
	dir  string
	rec  spawn.Record
	spec spawn.Spec
	// queued says the folder is a queued session's, made before: a start
	// that fails leaves it, with its claim, to say so.
	queued bool
	// finder looks for the native id the adapter could not pre-assign;
	// hasServer says the agent has its own server (WatchAgentServer).
	finder    adapters.NativeIDFinder
	hasServer bool
}

// launchUndo is what a launch that fails takes back: its folder, and the
// gate's reservation. disarm keeps both once the session runs.
type launchUndo struct {
	dir     string
	abandon func()
}

func (u *launchUndo) run() {
	if u.dir != "" {
		os.RemoveAll(u.dir)
	}
	if u.abandon != nil {
		u.abandon()
	}
}

func (u *launchUndo) disarm() { *u = launchUndo{} }

// newLaunch names the session and drafts its record, from the normalised
// request; nothing is made yet.
func (c *launcher) newLaunch(req api.RunRequest, lineage []string, limits cgroup.Limits, queuedID string) *launching {
	// PWD follows the session's cwd, not the caller's: some agents
	// (OpenCode) work in $PWD rather than in their real working directory.
	now := time.Now().UTC()
	id := home.NewID(now)
	if queuedID != "" {
		id = queuedID
	}
	env := envvar.Merge(envvar.Merge(req.Env, "PWD="+req.Cwd), req.EnvOverrides...)
	env = envvar.Merge(env, home.SessionEnv+"="+id)
	l := &launching{
		req: req, id: id, dir: c.opts.Home.SessionDir(id),
		rec: spawn.Record{
			ID: id, Adapter: req.Adapter, Name: req.Name, Group: req.Group, Labels: req.Labels,
			Cwd: req.Cwd, Prompt: req.Prompt, Model: req.Model, ResumeOf: req.ResumeOf,
			PermissionMode: req.PermissionMode, AgentArgs: req.AgentArgs, OnLimit: req.OnLimit,
			RestartOf: req.RestartOf, LaunchedFrom: lineage,
			CreatedAt: now, Rows: req.Rows, Cols: req.Cols,
			StopSignal: "SIGTERM",
		},
		spec:   spawn.Spec{Env: env, ServiceLock: c.opts.Home.LockFile()},
		queued: queuedID != "",
	}
	if c.opts.Cgroups != nil {
		if paths := c.opts.Cgroups.Paths(id); !paths.Empty() {
			l.spec.Cgroup = &spawn.CgroupSpec{Paths: paths, Limits: limits}
		}
	}
	if !limits.Zero() {
		l.rec.Limits = &limits
	}
	return l
}

// prepare makes the session's folder, keeps what the record does not hold,
// asks the gate, and builds the command: everything before the monitor
// starts. What it makes, undo takes back.
func (c *launcher) prepare(ctx context.Context, l *launching, undo *launchUndo) error {
	if !l.queued {
		if err := os.Mkdir(l.dir, 0o700); err != nil {
			return fmt.Errorf("create session folder: %w", err)
		}
		undo.dir = l.dir
	}
	if err := c.keepRequest(l); err != nil {
		return err
	}
	if c.opts.Gate != nil {
		if err := c.opts.Gate.Reserve(l.id, l.dir, l.rec.Adapter, l.req); err != nil {
			return err
		}
		undo.abandon = func() { c.opts.Gate.Abandon(l.id) }
	}
	if err := c.buildCommand(ctx, l); err != nil {
		return err
	}
	l.rec.EnvKeys = envvar.Keys(l.spec.Env)
	sort.Strings(l.rec.EnvKeys)
	l.spec.Record = l.rec
	return nil
}

// keepRequest writes beside the record what it does not hold: the --env
// values (for a restart), and a prompt too long for it.
func (c *launcher) keepRequest(l *launching) error {
	envSet, err := keepEnv(l.dir, l.req.EnvOverrides)
	if err != nil {
		return err
	}
	l.rec.EnvSet = envSet
	if len(l.rec.Prompt) > maxRecordPrompt {
		// The record stays small (every list reads it); the whole prompt
		// is kept beside it.
		if err := atomicfile.Write(filepath.Join(l.dir, home.PromptFile), []byte(l.rec.Prompt), 0o600); err != nil {
			return fmt.Errorf("keep the prompt: %w", err)
		}
		l.rec.Prompt, l.rec.PromptCut = text.Truncate(l.rec.Prompt, maxRecordPrompt), true
	}
	return nil
}

// buildCommand sets the session's argv and environment: a plain command's
// own, or an agent's as its adapter builds it.
func (c *launcher) buildCommand(ctx context.Context, l *launching) error {
	if l.rec.Adapter == api.ExecAdapter {
		l.rec.Argv = l.req.Command
		return nil
	}
	ls, finder, err := c.adapterSpec(l.req, &l.rec, l.spec.Env, l.dir)
	if err != nil {
		return err
	}
	l.rec.Argv, l.spec.Env, l.spec.Stdin, l.rec.NativeID, l.spec.Path = ls.Argv, ls.Env, ls.Stdin, ls.NativeID, ls.Path
	l.finder, l.hasServer = finder, ls.Server != ""
	if l.req.ResumeOf != "" && l.rec.NativeID != "" {
		l.rec.Baseline = c.nativeUsage(ctx, l.rec.Adapter, l.rec.NativeID)
	}
	return noteServer(l.dir, ls.Server)
}

// launched completes a start: the gate hands the lock to the session's
// process, the observers hear of it, and the core starts learning what the
// start could not say (the native id, the agent a command runs).
func (c *launcher) launched(l *launching, started spawn.Record, took time.Duration) (api.Session, error) {
	c.mons.add(started.Shim, l.id)
	if c.opts.Gate != nil {
		c.opts.Gate.Started(l.id, started.Adapter, started.Process, took)
	}
	sess, err := c.records.get(l.id)
	if err != nil {
		return api.Session{}, err
	}
	for _, o := range c.opts.Observers {
		o.Launched(sess)
	}
	// An agent with its own server (OpenCode's TUI) says which session it
	// works on through the server's events (WatchAgentServer); a search of
	// the store could only go by folder and time, and a TUI without a
	// prompt gives nothing more to tell its session from another's.
	if started.NativeID == "" && l.finder != nil && !l.hasServer {
		c.learnNativeID(l.id, l.finder, started)
	}
	if l.rec.Adapter == api.ExecAdapter {
		if a := c.agentOfCommand(l.rec.Argv); a != nil {
			c.followCommandAgent(l.id, a, started.Process)
		}
	}
	return sess, nil
}

// limits are the session's limits: those asked for, over its adapter's in
// the configuration. A limit this service cannot enforce refuses the
// launch: a session believed bounded must be.
func (c *launcher) limits(req api.RunRequest) (cgroup.Limits, error) {
	var l api.Limits
	if req.Limits != nil {
		l = *req.Limits
	}
	if l.MemoryMaxBytes < 0 || l.CPUs < 0 || l.PidsMax < 0 {
		return cgroup.Limits{}, faultf(ErrInvalid, "limits cannot be negative: %+v", l)
	}
	def := c.opts.Limits[req.Adapter]
	if l.MemoryMaxBytes == 0 {
		l.MemoryMaxBytes = def.MemoryMaxBytes
	}
	if l.CPUs == 0 {
		l.CPUs = def.CPUs
	}
	if l.PidsMax == 0 {
		l.PidsMax = def.PidsMax
	}
	out := cgroup.Limits{MemoryMax: l.MemoryMaxBytes, CPUs: l.CPUs, PidsMax: l.PidsMax}
	if out.Zero() {
		return out, nil
	}
	st := cgroup.Status{Reason: "the service detected no cgroups"}
	if c.opts.Cgroups != nil {
		st = c.opts.Cgroups.Status()
	}
	if err := st.Check(out); err != nil {
		return cgroup.Limits{}, faultf(ErrInvalid, "%v", err)
	}
	return out, nil
}

// nameFree refuses a name a running or queued session other than self
// has, or that is how another session's id begins (its handle in a list).
// Hold c.naming from this check until the name is recorded.
func (c *launcher) nameFree(name, self string) error {
	if other, taken := c.records.holdingName(name, self); taken {
		return faultf(ErrInvalid, "name %s is taken by %s session %s: stop it, or choose another name", text.Quote(name), other.Status, other.ID)
	}
	if other, ok := c.records.idStartingWith(name); ok {
		return faultf(ErrInvalid, "name %q is how session %s's id begins (its handle in a list): a command given %q would reach the wrong one; choose another name", name, other, name)
	}
	return nil
}

// agentLaunch is an agent's launch as its adapter built it, with the
// resolved path of the program that argv[0] names.
type agentLaunch struct {
	adapters.LaunchSpec
	Path string
}

// adapterSpec builds an agent's argv and environment through its adapter.
// The agent's binary is resolved once, here, with the launch's own PATH and
// working directory: a missing agent fails the launch with its name, also
// when a wrapper (a shell feeding a prompt file) comes first in argv.
func (c *launcher) adapterSpec(req api.RunRequest, rec *spawn.Record, env []string, dir string) (agentLaunch, adapters.NativeIDFinder, error) {
	nativeID := ""
	if req.ResumeOf != "" {
		prev, err := c.records.get(req.ResumeOf)
		if err != nil {
			return agentLaunch{}, nil, err
		}
		if prev.NativeID == "" {
			return agentLaunch{}, nil, faultf(ErrInvalid, "session %s has no native session id yet, so it cannot be resumed", prev.ID)
		}
		nativeID = prev.NativeID
	}
	return c.agentSpec(req, rec, env, dir, nativeID, []string{c.opts.Exe, "hook", "--home", string(c.opts.Home)})
}

// agentSpec is adapterSpec once the native session a resume continues
// (nativeID, "" for a new one) is known; hook is the agent's hook command
// (nil where no service hears hooks).
func (c *launcher) agentSpec(req api.RunRequest, rec *spawn.Record, env []string, dir, nativeID string, hook []string) (agentLaunch, adapters.NativeIDFinder, error) {
	a := c.adapters.Get(rec.Adapter)
	launcher, ok := a.(adapters.Launcher)
	if !ok {
		return agentLaunch{}, nil, faultf(ErrInvalid, "unknown adapter %s (known: %s)", text.Quote(rec.Adapter), strings.Join(append([]string{api.ExecAdapter}, c.adapters.Launchers()...), ", "))
	}
	var out agentLaunch
	bin, err := spawn.LookPath(launcher.Binary(), env, req.Cwd)
	if err != nil {
		return out, nil, faultf(ErrSpawn, "start %s: %s is not installed or not on PATH (%v); install it: %s", rec.Adapter, launcher.Binary(), err, launcher.InstallHint())
	}
	// An agent started without a prompt is its interactive interface, at
	// its prompt, for a person (attach) or send to give it work.
	interactive := req.Interactive || (req.Prompt == "" && req.ResumeOf == "")
	lreq := adapters.LaunchRequest{Prompt: req.Prompt, Model: req.Model, Cwd: req.Cwd, Env: env, SessionDir: dir, BinaryPath: bin,
		Interactive: interactive, HookCommand: hook, PermissionMode: req.PermissionMode, Args: req.AgentArgs}
	var ls adapters.LaunchSpec
	if nativeID != "" {
		lreq.NativeID = nativeID
		ls, err = launcher.Resume(lreq)
		if err == nil && ls.NativeID == "" {
			ls.NativeID = nativeID
		}
	} else {
		ls, err = launcher.Launch(lreq)
	}
	if err != nil {
		return out, nil, faultf(ErrInvalid, "%s: %v", rec.Adapter, err)
	}
	if len(ls.Argv) == 0 {
		return out, nil, fmt.Errorf("adapter %s built no command", rec.Adapter)
	}
	out.LaunchSpec = ls
	switch ls.Argv[0] {
	case launcher.Binary(), bin:
		out.Path = bin
	default:
		// A wrapper comes first (a shell feeding a prompt file).
		if out.Path, err = spawn.LookPath(ls.Argv[0], ls.Env, req.Cwd); err != nil {
			return out, nil, faultf(ErrSpawn, "start %s: %s is not installed or not on PATH (%v)", rec.Adapter, ls.Argv[0], err)
		}
	}
	rec.StopSignal = unix.SignalName(launcher.StopSignal())
	finder, _ := a.(adapters.NativeIDFinder)
	return out, finder, nil
}

// learnNativeID asks the adapter for the native id of a just-started agent
// and records it once found. An id another launched session of the agent
// is bound to is never recorded (it would take that session's row, prompt
// and tokens): the adapter is asked again until it tells another, or the
// time is up.
func (c *launcher) learnNativeID(id string, finder adapters.NativeIDFinder, rec spawn.Record) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.ctx, nativeIDTimeout)
		defer cancel()
		warned := false
		for {
			nid, err := finder.FindNativeID(ctx, adapters.Started{PID: rec.Process.PID, Cwd: rec.Cwd, Since: rec.CreatedAt, Prompt: rec.Prompt})
			if err != nil || nid == "" {
				c.log.Warn("native session id not found", "session", id, "adapter", rec.Adapter, "err", err)
				return
			}
			owner, err := c.records.bindNativeID(id, rec.Adapter, nid)
			if err != nil {
				c.log.Warn("record native session id", "session", id, "err", err)
				return
			}
			if owner == "" {
				return
			}
			if !warned {
				c.log.Warn("the native session id found is another session's; looking again", "session", id, "adapter", rec.Adapter, "native_id", nid, "bound_to", owner)
				warned = true
			}
			select {
			case <-ctx.Done():
				c.log.Warn("native session id not found", "session", id, "adapter", rec.Adapter, "err", ctx.Err())
				return
			case <-time.After(nativeIDRetry):
			}
		}
	}()
}

// nativeUsage is what the native session id of adapter has counted so far:
// a resume's baseline, from which its own tokens and cost are told. nil
// when its adapter cannot say now (the resume's own counts are then
// unknown, never the native session's total).
func (c *launcher) nativeUsage(ctx context.Context, adapter, id string) *api.Usage {
	a := c.adapters.Get(adapter)
	if a == nil {
		return nil
	}
	found := c.disc.runOf(ctx, []adapters.Adapter{a})
	ns := findNative(found, adapter, id)
	if ns == nil {
		c.log.Warn("resume: the native session's counts at its start are not known; its own tokens and cost will not be", "adapter", adapter, "native_id", id, "warnings", found.warnings)
		return nil
	}
	return &api.Usage{TokensIn: ns.TokensIn, TokensOut: ns.TokensOut, CostUSD: ns.CostUSD}
}
