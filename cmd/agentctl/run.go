package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/config"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/hosts"
	"github.com/agentctl/agentctl/internal/envvar"
	"github.com/agentctl/agentctl/internal/text"
)

// runFlags are shared by run, launch and resume.
type runFlags struct {
	adapter string
	prompt  string
	model   string
	cwd     string
	env     []string
	// envFiles hold more KEY=VALUE lines (--env-file), under --env.
	envFiles []string
	name     string
	labels   []string
	meta     []string
	asJSON   bool
	wait     bool
	attach   bool
	// interactive runs the agent's own TUI (launch -i).
	interactive bool
	// permissionMode is --permission-mode.
	permissionMode string
	// onLimit is --on-limit.
	onLimit string
	rows    uint16
	cols    uint16
	// lock, force and the hooks: the operational layer.
	lock        bool
	force       bool
	onCreate    string
	onComplete  string
	hookTimeout string
	// group holds the flags that start several members or worktrees.
	group groupFlags
	// remote says the session starts on another host.
	remote bool
	// image is a cluster session's container image.
	image string
	// queue asks that a launch admission holds back be queued.
	queue bool
	// memoryMax, cpus and pidsMax bound the session through its cgroup.
	memoryMax string
	cpus      float64
	pidsMax   int64
}

func (f *runFlags) register(cmd *cobra.Command, withPrompt bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.cwd, "cwd", "", "working directory (default: the current one)")
	fl.StringArrayVar(&f.env, "env", nil, "set an environment variable KEY=VALUE for the session (repeatable)")
	fl.StringArrayVar(&f.envFiles, "env-file", nil, "set the variables of `FILE`'s KEY=VALUE lines (repeatable; # comments and blank lines skipped; KEY alone takes your value; --env wins)")
	fl.StringVar(&f.name, "name", "", "a name for the session")
	fl.StringArrayVar(&f.labels, "label", nil, "attach a label KEY=VALUE, filterable with list --label (repeatable)")
	fl.StringArrayVar(&f.meta, "meta", nil, "same as --label")
	fl.BoolVar(&f.asJSON, "json", false, "print the session as JSON")
	fl.BoolVar(&f.wait, "wait", false, "stream the session's output and exit with its exit code")
	fl.BoolVar(&f.attach, "attach", false, "attach to the session once it has started (Ctrl-] detaches)")
	fl.BoolVarP(&f.attach, "tty", "t", false, "the same as --attach (-it, as with docker: an agent's own interface, attached)")
	fl.Uint16Var(&f.rows, "rows", 0, "terminal rows (default 40)")
	fl.Uint16Var(&f.cols, "cols", 0, "terminal columns (default 120)")
	fl.BoolVar(&f.lock, "lock", false, "lock the directory while a plain command runs (agents always do)")
	fl.BoolVar(&f.force, "force", false, "start even if the directory is locked, or while a usage limit of the agent's provider holds")
	fl.StringVar(&f.onCreate, "on-create", "", "command run by /bin/sh -c in the session's directory once it has started (AGENTCTL_* variables describe it)")
	fl.StringVar(&f.onComplete, "on-complete", "", "command run by the service once the session has ended, exactly once, also if it ends while the service is down (AGENTCTL_EXIT_CODE and others describe it)")
	fl.StringVar(&f.hookTimeout, "hook-timeout", "", "time limit for each hook (default 5m)")
	fl.StringVar(&f.memoryMax, "memory-max", "", "bound the session's memory to `SIZE` (512M, 4G) through a cgroup of its own; over it, the kernel's OOM killer ends it (status killed, oom)")
	fl.Float64Var(&f.cpus, "cpus", 0, "bound the session to `N` CPUs' worth of time (1.5) through a cgroup of its own")
	fl.Int64Var(&f.pidsMax, "pids-max", 0, "bound the session to `N` processes and threads at once through a cgroup of its own")
	fl.BoolVar(&f.queue, "queue", false, "when a cap on running sessions or the memory floor (config.json's \"admission\") holds the launch back, queue it (status queued) rather than fail: it starts, in order, when admitted; stop or rm cancels it")
	fl.StringVar(&f.onLimit, "on-limit", "", "what the session does when its provider's usage limit stops it: `ACTION` wait (show it, notify) or resume (resume it with \"continue\" once the limit resets, one session of a provider at a time; config on_limit and limit_resume)")
	cmd.RegisterFlagCompletionFunc("on-limit", cobra.FixedCompletions([]string{api.OnLimitWait, api.OnLimitResume}, cobra.ShellCompDirectiveNoFileComp))
	fl.StringVar(&f.image, "image", "", "on a Kubernetes cluster host: the session's container `IMAGE` (default: the host's image=; a resume: the image of the run it continues)")
	if withPrompt {
		fl.StringVarP(&f.prompt, "prompt", "p", "", "the prompt for the agent")
		fl.BoolVarP(&f.interactive, "interactive", "i", false, "run the agent's interactive interface (the prompt, if any, is its first message); a person answers its prompts: attach (-t), or approve/deny/answer from anywhere. A plain command always has its terminal")
		fl.Var(modelFlag{f}, "model", "`MODEL` to use (provider/model for agents that take a provider); after an --adapter, that adapter's model")
		fl.StringVar(&f.permissionMode, "permission-mode", "", "what the agent may do without asking: `MODE` default, acceptEdits, plan or bypassPermissions (see launch --help; default: each adapter's)")
		cmd.RegisterFlagCompletionFunc("permission-mode", cobra.FixedCompletions(api.PermissionModes(), cobra.ShellCompDirectiveNoFileComp))
	}
}

// request builds the RunRequest: the caller's whole environment travels with
// it, since a service started by an init system has almost none.
func (f *runFlags) request(cli *cli, cfg config.Config) (api.RunRequest, error) {
	if f.remote {
		return f.remoteRequest(cli)
	}
	cwd := f.cwd
	if cwd == "" && cfg.Cwd != "" {
		h, _ := os.UserHomeDir()
		cwd = cfg.ExpandCwd(h)
	}
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return api.RunRequest{}, fmt.Errorf("find the working directory (pass --cwd): %w", err)
		}
		cwd = wd
	}
	abs, err := absPath(cwd)
	if err != nil {
		return api.RunRequest{}, err
	}
	labels, err := parseLabels(append(append([]string(nil), f.labels...), f.meta...))
	if err != nil {
		return api.RunRequest{}, err
	}
	env, err := f.envOverrides(cli.lookupEnv)
	if err != nil {
		return api.RunRequest{}, err
	}
	for k, v := range openclawIdentity(cli.environ()) {
		if labels == nil {
			labels = map[string]string{}
		}
		if _, set := labels[k]; !set {
			labels[k] = v
		}
	}
	rows, cols := f.rows, f.cols
	if w, h, err := term.GetSize(fdOf(cli.in)); err == nil && f.attach && rows == 0 && cols == 0 {
		// Attached at once: the session's terminal is the size of ours.
		rows, cols = uint16(h), uint16(w)
	}
	model := f.model
	if model == "" && f.adapter != "" && f.adapter != api.ExecAdapter {
		model = cfg.Model
	}
	limits, err := f.limits()
	if err != nil {
		return api.RunRequest{}, err
	}
	if err := config.ValidOnLimit(f.onLimit); err != nil {
		return api.RunRequest{}, usageError{fmt.Errorf("--%w", err)}
	}
	return api.RunRequest{
		OnLimit: f.onLimit,
		Adapter: f.adapter, Prompt: f.prompt, Model: model, Cwd: abs,
		Env: cli.environ(), EnvOverrides: env, Name: f.name, Labels: labels,
		Rows: rows, Cols: cols, Interactive: f.interactive, PermissionMode: f.permissionMode,
		Lock: f.lock, Force: f.force, OnCreate: f.onCreate, OnComplete: f.onComplete, HookTimeout: f.hookTimeout,
		Image: f.image, Limits: limits, Queue: f.queue,
	}, nil
}

// limits are --memory-max, --cpus and --pids-max; nil when none is given
// (the service's configuration may still bound the session).
func (f *runFlags) limits() (*api.Limits, error) {
	var l api.Limits
	if f.memoryMax != "" {
		n, err := text.ParseBytes(f.memoryMax)
		if err != nil || n == 0 {
			return nil, usageError{fmt.Errorf("--memory-max %q: want a size such as 512M or 4G", f.memoryMax)}
		}
		l.MemoryMaxBytes = n
	}
	if f.cpus < 0 || f.pidsMax < 0 {
		return nil, usageError{fmt.Errorf("--cpus and --pids-max cannot be negative")}
	}
	l.CPUs, l.PidsMax = f.cpus, f.pidsMax
	if l.Zero() {
		return nil, nil
	}
	return &l, nil
}

// farHost reports whether host h is not this machine: neither this
// machine's directories nor its environment mean anything there. Another
// local home (unix://) is this machine.
func farHost(h hosts.Host) bool {
	if r, ok := h.API.(hosts.Remoter); ok {
		return r.Remote()
	}
	return h.Name != hosts.Local
}

// remoteRequest is the RunRequest for another host's service: neither this
// machine's directory nor its environment means anything there, so the
// session runs in --cwd (a path on that host; default its user's home)
// with the far service's environment.
func (f *runFlags) remoteRequest(cli *cli) (api.RunRequest, error) {
	if f.cwd != "" && !strings.HasPrefix(f.cwd, "/") {
		return api.RunRequest{}, usageError{fmt.Errorf("--cwd %q: on another host, give an absolute path there", f.cwd)}
	}
	labels, err := parseLabels(append(append([]string(nil), f.labels...), f.meta...))
	if err != nil {
		return api.RunRequest{}, err
	}
	env, err := f.envOverrides(cli.lookupEnv)
	if err != nil {
		return api.RunRequest{}, err
	}
	rows, cols := f.rows, f.cols
	if w, h, err := term.GetSize(fdOf(cli.in)); err == nil && f.attach && rows == 0 && cols == 0 {
		rows, cols = uint16(h), uint16(w)
	}
	limits, err := f.limits()
	if err != nil {
		return api.RunRequest{}, err
	}
	if err := config.ValidOnLimit(f.onLimit); err != nil {
		return api.RunRequest{}, usageError{fmt.Errorf("--%w", err)}
	}
	return api.RunRequest{
		OnLimit: f.onLimit,
		Adapter: f.adapter, Prompt: f.prompt, Model: f.model, Cwd: f.cwd,
		EnvOverrides: env, Name: f.name, Labels: labels,
		Rows: rows, Cols: cols, Interactive: f.interactive, PermissionMode: f.permissionMode,
		Lock: f.lock, Force: f.force, OnCreate: f.onCreate, OnComplete: f.onComplete, HookTimeout: f.hookTimeout,
		Image: f.image, Limits: limits, Queue: f.queue,
	}, nil
}

// envOverrides are the --env-file lines, in order, then --env; lookup
// reads the caller's environment.
func (f *runFlags) envOverrides(lookup func(string) (string, bool)) ([]string, error) {
	if len(f.envFiles) == 0 {
		return f.env, nil
	}
	var out []string
	for _, path := range f.envFiles {
		kvs, err := readEnvFile(path, lookup)
		if err != nil {
			return nil, err
		}
		out = append(out, kvs...)
	}
	return append(out, f.env...), nil
}

// readEnvFile reads KEY=VALUE lines, as docker's --env-file does: blank
// lines and lines starting with # are skipped, the value is the rest of
// the line as written (no quotes removed), and a KEY alone takes the
// caller's value (lookup) when it has one.
func readEnvFile(path string, lookup func(string) (string, bool)) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageError{fmt.Errorf("--env-file: %w", err)}
	}
	var out []string
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSuffix(line, "\r")
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimLeft(line, " \t"), "=")
		k = strings.TrimSpace(k)
		if k == "" || strings.ContainsAny(k, " \t") {
			return nil, usageError{fmt.Errorf("--env-file %s, line %d: want KEY=VALUE", path, i+1)}
		}
		if !ok {
			val, set := lookup(k)
			if !set {
				continue
			}
			v = val
		}
		out = append(out, k+"="+v)
	}
	return out, nil
}

func parseLabels(in []string) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, l := range in {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, usageError{fmt.Errorf("label %q: want KEY=VALUE", l)}
		}
		out[k] = v
	}
	return out, nil
}

// openclawIdentity picks the OPENCLAW_* variables OpenClaw's exec tool sets
// to say a command comes from a gateway's agent (its shell marker, its CLI
// marker, the gateway's port or URL, and the channel a run came from).
// Other OPENCLAW_* settings say nothing about the caller, and credentials
// are never recorded.
func openclawIdentity(env []string) map[string]string {
	out := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" || envvar.IsSecret(k) {
			continue
		}
		switch k {
		case "OPENCLAW_SHELL", "OPENCLAW_CLI", "OPENCLAW_GATEWAY_PORT", "OPENCLAW_GATEWAY_URL", "OPENCLAW_CHANNEL_CONTEXT":
			out[k] = v
		}
	}
	return out
}

func loadConfig(cli *cli) config.Config {
	h, err := cli.userHome()
	if err != nil {
		return config.Config{}
	}
	return configOf(cli, h)
}

// configOf is the configuration of the agentctl home h, warnings said.
func configOf(cli *cli, h home.Home) config.Config {
	cfg, warnings, err := config.Load(config.Path(string(h)))
	if err != nil {
		cli.warn("%v (using defaults)", err)
		return config.Config{}
	}
	for _, w := range warnings {
		cli.warn("%s", w)
	}
	return cfg
}

// start sends the request and prints the result the way the flags ask.
func start(cli *cli, cmd *cobra.Command, f *runFlags, req api.RunRequest) error {
	h, err := cli.defaultHost()
	if err != nil {
		return err
	}
	return startOn(cli, cmd, h, f, req)
}

// startOn is start on host h.
func startOn(cli *cli, cmd *cobra.Command, h hosts.Host, f *runFlags, req api.RunRequest) error {
	// Every host starts agents: a service builds the agent's command line
	// from its adapter, and so does the agentctl in a cluster's pod.
	if _, service := h.API.(hosts.Service); service && req.Image != "" {
		return cannot(h, "run a container image: --image is for a Kubernetes cluster host (-H k8s://CONTEXT/NAMESPACE)")
	} else if !service && req.Limits != nil {
		// A limit nobody enforces must not look like one.
		return cannot(h, "bound a session with --memory-max, --cpus or --pids-max: an agentctl service does, through a cgroup per session")
	}
	sess, err := h.API.Launch(cmd.Context(), req)
	if err != nil {
		return err
	}
	return showStarted(cli, cmd, f, h, sess)
}

// showStarted prints a started session the way the flags ask, and with
// --wait follows it to its end.
func showStarted(cli *cli, cmd *cobra.Command, f *runFlags, h hosts.Host, sess api.Session) error {
	if f.asJSON {
		if err := printJSON(cli.out, sess); err != nil {
			return err
		}
	} else if !f.wait && !f.attach {
		fmt.Fprintln(cli.out, sess.ID)
	}
	if sess.Status == api.StatusQueued {
		if q := sess.Queue; q != nil && !f.asJSON {
			fmt.Fprintf(cli.errOut, "agentctl: session %s queued (#%d): %s\n", sess.ID, q.Position, q.Reason)
		}
		if !f.wait && !f.attach {
			return nil
		}
		var err error
		if sess, err = awaitStart(cmd.Context(), h.API, sess.ID); err != nil {
			return err
		}
	}
	if f.attach {
		err := attachTo(cli, cmd, h, sess.ID)
		if api.CodeOf(err) != api.CodeNotRunning {
			return err
		}
		// It ended before the terminal could be joined (a quick command,
		// an agent that fails at once): show what it wrote and exit with
		// its code, as `docker run -it` does.
		return waitSession(cmd.Context(), h.API, sess.ID, cli.out)
	}
	if !f.wait {
		return nil
	}
	if !f.asJSON {
		if sess.PID > 0 {
			fmt.Fprintf(cli.errOut, "agentctl: session %s started (pid %d)\n", sess.ID, sess.PID)
		} else {
			fmt.Fprintf(cli.errOut, "agentctl: session %s started on %s\n", sess.ID, h.Name)
		}
	}
	return waitSession(cmd.Context(), h.API, sess.ID, cli.out)
}

// queuePollEvery is how often run --queue --wait looks whether its queued
// session has started.
const queuePollEvery = time.Second

// awaitStart waits until a queued session is no longer queued (started,
// cancelled, or its start failed) and returns it.
func awaitStart(ctx context.Context, c client.Sessions, id string) (api.Session, error) {
	t := time.NewTicker(queuePollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return api.Session{}, ctx.Err()
		case <-t.C:
		}
		sess, err := c.Get(ctx, id)
		if err != nil {
			return sess, err
		}
		if sess.Status != api.StatusQueued {
			return sess, nil
		}
	}
}

// waitSession streams a session's output until it ends and returns an
// exitError with the agent's exit code (128+signal for a signal). A
// terminal gets the raw bytes; a pipe or file the text view `logs -f`
// writes (one rendering for both), with no colour.
func waitSession(ctx context.Context, c client.Sessions, id string, w io.Writer) error {
	var final *api.Session
	f, isFile := w.(*os.File)
	if isFile && term.IsTerminal(int(f.Fd())) {
		mw := &modeWriter{w: w}
		defer mw.restore()
		err := followLogs(ctx, c, id, api.LogOptions{Raw: true, Follow: true}, func(ch api.LogChunk) error {
			if len(ch.Data) > 0 {
				if _, err := mw.Write(ch.Data); err != nil {
					return err
				}
			}
			if ch.End {
				final = ch.Session
			}
			return nil
		})
		if err != nil {
			return err
		}
	} else {
		out := bufio.NewWriterSize(w, 64<<10)
		var v logView
		o := api.LogOptions{Follow: true, Partial: true, TextAsData: true}
		err := followLogs(ctx, c, id, o, func(ch api.LogChunk) error {
			if err := v.write(out, ch, false); err != nil {
				return err
			}
			if ch.End {
				final = ch.Session
			}
			return out.Flush()
		})
		if ferr := out.Flush(); err == nil {
			err = ferr
		}
		if err != nil {
			return err
		}
	}
	if final == nil {
		return exitError{code: 1}
	}
	return exitError{code: exitCodeOf(*final)}
}

// exitCodeOf is the session's exit status, or 1 when it is unknown.
func exitCodeOf(s api.Session) int {
	if code, ok := s.ExitStatus(); ok {
		return code
	}
	return 1
}

func newRunCmd(cli *cli) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run [flags] -- COMMAND [ARGS...]",
		Short: "Start a command (or, with --adapter, an agent) as a supervised session",
		Long: `Start COMMAND under the agentctl service, in its own session and process group
under a pty, and print the session id once the command has started. The
command runs with your environment (plus --env) in --cwd.

run returns at once and nothing it starts stays in your process group or holds
your descriptors, so it is safe from hooks and exec tools that kill their
children. With --wait it streams the output (in a pipe or file, the text view
'logs -f' writes there) and exits with the session's exit code; killing 'run --wait' leaves the session running.

With --adapter it starts an agent like 'launch' does: agentctl run --adapter
claude -p "fix the tests"; without a prompt, the agent's interactive interface. Several --adapter flags, --matrix and --worktree
start a group in git worktrees, as with launch (see 'agentctl launch --help');
an exec member (--adapter exec) runs COMMAND in its worktree.

OPENCLAW_* variables that identify the calling gateway or agent are recorded
as labels (never tokens or keys).`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			return f.dispatch(cli, cmd, loadConfig(cli), "", api.ExecAdapter, a)
		},
	}
	f.register(cmd, true)
	f.registerGroup(cmd)
	cmd.Flags().SetInterspersed(false)
	return cmd
}

func newLaunchCmd(cli *cli) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "launch [ADAPTER] [-p PROMPT] [-- AGENT ARGS...]",
		Short: "Start a coding agent, headless with a prompt or its own interactive interface",
		Long: `Start an agent (claude, codex, opencode, pi, ...) with PROMPT as a supervised
session, and print its id once the agent has started. ADAPTER defaults to the
'adapter' key of config.json, then claude.

Without -p (or with -i) the agent runs its own interactive interface under
the session's terminal, at its prompt: attach to it (-t, or 'agentctl attach'),
or give it work with 'agentctl send ID TEXT'. Its native session id is
assigned up front (Claude, Pi) or learned from the agent (Codex's rollout,
OpenCode's server), as for headless runs. Codex runs with --no-daemon, so its
turns and tools stay in the session's own process.

Comparisons: several --adapter flags (each --model pairs with the --adapter
before it), or --matrix FILE, start a group: every member in its own git
worktree and branch of the repository (--worktree REPO, default the current
one), in parallel, tagged with one group id. Branches are try/<group>/<member>
from --base-branch (origin's, when there is an origin) or HEAD; worktrees sit
next to the repository as <repo>-try-<group>-<member>. A member that fails to
start does not stop the others; the exit status is 1 if any failed. Compare
them with 'agentctl group status GROUP'; remove worktrees with 'agentctl
worktree clean'.

  agentctl launch --adapter claude --model opus --adapter codex -p "fix the flaky test"
  agentctl launch --matrix compare.yaml
  agentctl launch claude --worktree . --branch fix-login -p "fix the login bug"

--file and --spec put files' contents in front of the prompt (relative paths
start from --cwd, or REPO), each at most --max-file-size (default 50k).

Permissions: what an agent may do without asking. By default a headless run
works unattended and an interactive one follows the agent's own settings:
  claude    headless: --dangerously-skip-permissions (as root, where Claude
            refuses that: --permission-mode acceptEdits --allowedTools Bash);
            interactive: Claude's settings
  codex     headless: --dangerously-bypass-approvals-and-sandbox (codex exec
            cannot ask, and its sandbox fails in many containers);
            interactive: Codex's config
  opencode  its configuration's permission rules (a headless run refuses
            what they would ask about); no mode can be set
  pi        no permission system: its tools always run
--permission-mode default|acceptEdits|plan|bypassPermissions (Claude Code's
names) sets it instead: Claude's own --permission-mode; for Codex, plan is
the read-only sandbox, acceptEdits the workspace-write one (interactive:
asking on request), bypassPermissions neither sandbox nor approvals, default
Codex's config. An agent without such a mode refuses it, saying why. A
waiting permission prompt is answered with 'agentctl approve' or 'deny'.

Everything after -- goes to the agent as given, after agentctl's flags and
before the prompt; when it sets the agent's permissions itself (claude
--permission-mode ..., codex --sandbox ...), agentctl adds none of its own:
  agentctl launch claude -p "review the diff" -- --permission-mode plan`,
		Args: func(cmd *cobra.Command, a []string) error {
			if n := cmd.ArgsLenAtDash(); n > 1 || (n < 0 && len(a) > 1) {
				return usageError{fmt.Errorf("%s: one ADAPTER at most; the agent's own arguments go after --", commandName(cmd))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			cfg := loadConfig(cli)
			def := "claude"
			if cfg.Adapter != "" {
				def = cfg.Adapter
			}
			before, after := a, []string(nil)
			if n := cmd.ArgsLenAtDash(); n >= 0 {
				before, after = a[:n], a[n:]
			}
			positional := ""
			if len(before) == 1 {
				positional = before[0]
			}
			return f.dispatch(cli, cmd, cfg, positional, def, after)
		},
	}
	f.register(cmd, true)
	f.registerGroup(cmd)
	return cmd
}

func newResumeCmd(cli *cli) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "resume ID MESSAGE",
		Short: "Continue an agent's native session with a new message",
		Long: `Start a new run of the agent that continues the same native session as ID
(Claude --resume, Codex exec resume, Pi/OpenCode --session), so peek shows the
whole conversation. Prints the new run's id.`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			h, id, err := cli.hostFor(a[0])
			if err != nil {
				return err
			}
			prev, err := h.API.Get(cmd.Context(), id)
			if err != nil {
				return err
			}
			if prev.Origin != api.OriginLaunched {
				return fmt.Errorf("session %s was not started by agentctl; resume it with its own CLI", prev.ID)
			}
			if prev.Adapter == api.ExecAdapter {
				return usageError{fmt.Errorf("session %s is a plain command, not an agent: resume continues an agent's conversation; run the command again with 'agentctl restart %s'", prev.ID, prev.ID)}
			}
			f.adapter, f.prompt, f.remote = prev.Adapter, a[1], farHost(h)
			if f.cwd == "" {
				f.cwd = prev.Cwd
			}
			req, err := f.request(cli, config.Config{})
			if err != nil {
				return err
			}
			req.ResumeOf = prev.ID
			if req.Model == "" {
				req.Model = prev.Model
			}
			// A resumed run stays in its group with its labels, so group
			// views and label filters keep finding it.
			req.Group = prev.Group
			for k, v := range prev.Labels {
				if req.Labels == nil {
					req.Labels = map[string]string{}
				}
				if _, set := req.Labels[k]; !set {
					req.Labels[k] = v
				}
			}
			return startOn(cli, cmd, h, f, req)
		},
	}
	f.register(cmd, false)
	cmd.Flags().StringVar(&f.model, "model", "", "model to use (default: the session's)")
	return cmd
}
