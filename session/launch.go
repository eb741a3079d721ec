package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

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

// Launch starts a session and returns it once the command is confirmed
// started (the exec succeeded and launch.json is on disk). A caller that
// goes away mid-launch does not cut it short: a half-started session would
// be worse than an unread answer.
func (c *Core) Launch(ctx context.Context, req api.RunRequest) (api.Session, error) {
	ctx = context.WithoutCancel(ctx)
	if req.Cwd == "" || !filepath.IsAbs(req.Cwd) {
		return api.Session{}, faultf(ErrInvalid, "working directory %s must be an absolute path", text.Quote(req.Cwd))
	}
	for _, kv := range req.EnvOverrides {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return api.Session{}, faultf(ErrInvalid, "--env %s: want KEY=VALUE", text.Quote(kv))
		}
	}
	if err := checkNames(req); err != nil {
		return api.Session{}, err
	}
	if err := checkAgentOptions(req); err != nil {
		return api.Session{}, err
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
		if err := c.nameFree(req.Name); err != nil {
			return api.Session{}, err
		}
	}
	// PWD follows the session's cwd, not the caller's: some agents
	// (OpenCode) work in $PWD rather than in their real working directory.
	now := time.Now().UTC()
	id := home.NewID(now)
	env := envvar.Merge(envvar.Merge(req.Env, "PWD="+req.Cwd), req.EnvOverrides...)
	env = envvar.Merge(env, home.SessionEnv+"="+id)
	dir := c.opts.Home.SessionDir(id)
	rec := spawn.Record{
		ID: id, Adapter: req.Adapter, Name: req.Name, Group: req.Group, Labels: req.Labels,
		Cwd: req.Cwd, Prompt: req.Prompt, Model: req.Model, ResumeOf: req.ResumeOf,
		PermissionMode: req.PermissionMode, AgentArgs: req.AgentArgs,
		RestartOf: req.RestartOf, LaunchedFrom: lineage,
		CreatedAt: now, Rows: req.Rows, Cols: req.Cols,
		StopSignal: "SIGTERM",
	}
	rec.Adapter = canonicalAdapter(rec.Adapter)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return api.Session{}, fmt.Errorf("create session folder: %w", err)
	}
	envSet, err := keepEnv(dir, req.EnvOverrides)
	if err != nil {
		os.RemoveAll(dir)
		return api.Session{}, err
	}
	rec.EnvSet = envSet
	if len(rec.Prompt) > maxRecordPrompt {
		// The record stays small (every list reads it); the whole prompt
		// is kept beside it.
		if err := atomicfile.Write(filepath.Join(dir, home.PromptFile), []byte(rec.Prompt), 0o600); err != nil {
			os.RemoveAll(dir)
			return api.Session{}, fmt.Errorf("keep the prompt: %w", err)
		}
		rec.Prompt, rec.PromptCut = text.Truncate(rec.Prompt, maxRecordPrompt), true
	}
	if c.opts.Gate != nil {
		if err := c.opts.Gate.Reserve(id, dir, rec.Adapter, req); err != nil {
			os.RemoveAll(dir)
			return api.Session{}, err
		}
	}
	ok := false
	defer func() {
		if !ok && c.opts.Gate != nil {
			c.opts.Gate.Abandon(id)
		}
	}()
	spec := spawn.Spec{Env: env, ServiceLock: c.opts.Home.LockFile()}
	if c.opts.Cgroups != nil {
		if paths := c.opts.Cgroups.Paths(id); !paths.Empty() {
			spec.Cgroup = &spawn.CgroupSpec{Paths: paths, Limits: limits}
		}
	}
	if !limits.Zero() {
		rec.Limits = &limits
	}
	var finder adapters.NativeIDFinder
	hasServer := false
	if rec.Adapter == api.ExecAdapter {
		if len(req.Command) == 0 {
			os.RemoveAll(dir)
			return api.Session{}, faultf(ErrInvalid, "no command given: agentctl run -- COMMAND [ARGS...]")
		}
		rec.Argv = req.Command
	} else {
		ls, f, err := c.adapterSpec(req, &rec, env, dir)
		if err != nil {
			os.RemoveAll(dir)
			return api.Session{}, err
		}
		rec.Argv, spec.Env, spec.Stdin, rec.NativeID, spec.Path = ls.Argv, ls.Env, ls.Stdin, ls.NativeID, ls.Path
		finder, hasServer = f, ls.Server != ""
		if req.ResumeOf != "" && rec.NativeID != "" {
			rec.Baseline = c.nativeUsage(ctx, rec.Adapter, rec.NativeID)
		}
		if err := noteServer(dir, ls.Server); err != nil {
			os.RemoveAll(dir)
			return api.Session{}, err
		}
	}
	rec.EnvKeys = envvar.Keys(spec.Env)
	sort.Strings(rec.EnvKeys)
	spec.Record = rec

	began := time.Now()
	started, err := c.starter.Start(ctx, dir, spec)
	if err != nil {
		if errors.Is(err, spawn.ErrStart) {
			os.RemoveAll(dir)
			return api.Session{}, faultf(ErrSpawn, "%s", strings.TrimPrefix(err.Error(), spawn.ErrStart.Error()+": "))
		}
		return api.Session{}, err
	}
	ok = true
	c.mons.add(started.Shim, id)
	if c.opts.Gate != nil {
		c.opts.Gate.Started(id, started.Adapter, started.Process, time.Since(began))
	}
	sess, err := c.records.get(id)
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
	if started.NativeID == "" && finder != nil && !hasServer {
		c.learnNativeID(id, finder, started)
	}
	if rec.Adapter == api.ExecAdapter {
		if a := c.agentOfCommand(rec.Argv); a != nil {
			c.followCommandAgent(id, a, started.Process)
		}
	}
	c.WatchAgentServer(id)
	return sess, nil
}

// limits are the session's limits: those asked for, over its adapter's in
// the configuration. A limit this service cannot enforce refuses the
// launch: a session believed bounded must be.
func (c *Core) limits(req api.RunRequest) (cgroup.Limits, error) {
	var l api.Limits
	if req.Limits != nil {
		l = *req.Limits
	}
	if l.MemoryMaxBytes < 0 || l.CPUs < 0 || l.PidsMax < 0 {
		return cgroup.Limits{}, faultf(ErrInvalid, "limits cannot be negative: %+v", l)
	}
	def := c.opts.Limits[canonicalAdapter(req.Adapter)]
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

// checkNames refuses id-like fields that could become paths or put control
// sequences on a terminal: they are echoed by list and used in folders.
func checkNames(req api.RunRequest) error {
	if req.ResumeOf != "" && !home.ValidID(req.ResumeOf) {
		return faultf(ErrInvalid, "resume_of %s is not a valid session id", text.Quote(req.ResumeOf))
	}
	if req.RestartOf != "" && !home.ValidID(req.RestartOf) {
		return faultf(ErrInvalid, "restart_of %s is not a valid session id", text.Quote(req.RestartOf))
	}
	if req.Group != "" && !home.ValidID(req.Group) {
		return faultf(ErrInvalid, "group %s: use letters, digits, '-', '_' and '.' (at most 128, not starting with '.')", text.Quote(req.Group))
	}
	if len(req.Name) > 128 || hasControl(req.Name) {
		return faultf(ErrInvalid, "name %s: at most 128 characters, no control characters", text.Quote(req.Name))
	}
	for k, v := range req.Labels {
		if k == "" || len(k) > 128 || strings.ContainsAny(k, "=,") || hasControl(k) || len(v) > 1024 || hasControl(v) {
			return faultf(ErrInvalid, "label %s=%s: a key of at most 128 characters without '=', ',' or control characters, and a value of at most 1024 without control characters", text.Quote(k), text.Quote(v))
		}
	}
	return nil
}

// nameFree refuses a name a running session has, or that is how another
// session's id begins (its handle in a list). Hold c.naming from this check
// until the name is recorded.
func (c *Core) nameFree(name string) error {
	if other, taken := c.records.runningNamed(name); taken {
		return faultf(ErrInvalid, "name %s is taken by running session %s: stop it, or choose another name", text.Quote(name), other)
	}
	if other, ok := c.records.idStartingWith(name); ok {
		return faultf(ErrInvalid, "name %q is how session %s's id begins (its handle in a list): a command given %q would reach the wrong one; choose another name", name, other, name)
	}
	return nil
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, unicode.IsControl)
}

// canonicalAdapter maps the names the old tool used onto today's, and ""
// onto the plain-command adapter.
func canonicalAdapter(name string) string {
	switch name {
	case "":
		return api.ExecAdapter
	case "claude-code":
		return "claude"
	}
	return name
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
func (c *Core) adapterSpec(req api.RunRequest, rec *spawn.Record, env []string, dir string) (agentLaunch, adapters.NativeIDFinder, error) {
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
func (c *Core) agentSpec(req api.RunRequest, rec *spawn.Record, env []string, dir, nativeID string, hook []string) (agentLaunch, adapters.NativeIDFinder, error) {
	a := c.disc.adapter(rec.Adapter)
	launcher, ok := a.(adapters.Launcher)
	if !ok {
		return agentLaunch{}, nil, faultf(ErrInvalid, "unknown adapter %s (known: %s)", text.Quote(rec.Adapter), strings.Join(c.launchers(), ", "))
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

func (c *Core) launchers() []string {
	names := []string{api.ExecAdapter}
	for _, a := range c.opts.Adapters {
		if _, ok := a.(adapters.Launcher); ok {
			names = append(names, a.Name())
		}
	}
	return names
}

// learnNativeID asks the adapter for the native id of a just-started agent
// and records it once found. An id another launched session of the agent
// is bound to is never recorded (it would take that session's row, prompt
// and tokens): the adapter is asked again until it tells another, or the
// time is up.
func (c *Core) learnNativeID(id string, finder adapters.NativeIDFinder, rec spawn.Record) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.ctx, nativeIDTimeout)
		defer cancel()
		warned := false
		for {
			nid, err := finder.FindNativeID(ctx, rec.Process.PID, rec.Cwd, rec.CreatedAt)
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
func (c *Core) nativeUsage(ctx context.Context, adapter, id string) *api.Usage {
	a := c.disc.adapter(adapter)
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

// checkAgentOptions refuses a permission mode agentctl does not know, and
// agent options for a plain command (its argv is the command itself).
func checkAgentOptions(req api.RunRequest) error {
	if req.PermissionMode != "" && !slices.Contains(api.PermissionModes(), req.PermissionMode) {
		return faultf(ErrInvalid, "permission mode %s: want one of %s", text.Quote(req.PermissionMode), strings.Join(api.PermissionModes(), ", "))
	}
	if canonicalAdapter(req.Adapter) == api.ExecAdapter && (req.PermissionMode != "" || len(req.AgentArgs) > 0) {
		return faultf(ErrInvalid, "a permission mode and agent arguments are for agents; a plain command's arguments are its command")
	}
	return nil
}
