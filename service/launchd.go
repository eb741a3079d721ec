package service

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// launchctlNotFound is launchctl's exit code for "Could not find service".
const launchctlNotFound = 113

// launchdController drives one agentctl job through launchctl's domain
// commands (bootstrap, bootout, kickstart, print).
type launchdController struct {
	spec      Spec
	plistPath string
	run       commandRunner
	// uid and gid of the account the service runs as.
	uid, gid int
}

// newLaunchd returns the controller for spec. A LaunchAgent lives in the
// user's ~/Library/LaunchAgents, a LaunchDaemon in systemDir
// (/Library/LaunchDaemons).
func newLaunchd(spec Spec, run commandRunner, userHome, systemDir string, uid, gid int) *launchdController {
	dir := systemDir
	if spec.Scope == ScopeUser {
		dir = filepath.Join(userHome, "Library", "LaunchAgents")
	}
	return &launchdController{
		spec:      spec,
		plistPath: filepath.Join(dir, spec.LaunchdLabel()+".plist"),
		run:       run,
		uid:       uid,
		gid:       gid,
	}
}

// domain is the launchd domain the job belongs to: the system, or the
// user's GUI login (gui/UID), falling back to the user's background domain
// (user/UID) when there is no GUI login (an ssh session).
func (c *launchdController) domain(ctx context.Context) string {
	if c.spec.Scope == ScopeSystem {
		return "system"
	}
	gui := "gui/" + strconv.Itoa(c.uid)
	if _, err := c.run.Run(ctx, "launchctl", "print", gui); err == nil {
		return gui
	}
	return "user/" + strconv.Itoa(c.uid)
}

func (c *launchdController) logs() string {
	if c.spec.Home == "" {
		return "launchd discards the output of a job without log paths"
	}
	return filepath.Join(c.spec.Home, LaunchdStderrLog)
}

func (c *launchdController) Install(ctx context.Context) (InstallResult, error) {
	if err := requireRoot(c.spec, "installing"); err != nil {
		return InstallResult{}, err
	}
	text, err := RenderLaunchdPlist(c.spec)
	if err != nil {
		return InstallResult{}, err
	}
	domain := c.domain(ctx)
	target := domain + "/" + c.spec.LaunchdLabel()
	before, err := c.status(ctx, domain)
	if err != nil {
		return InstallResult{}, err
	}
	if err := ensureHome(c.spec.Home, c.uid, c.gid); err != nil {
		return InstallResult{}, err
	}
	if err := c.ensureLogs(); err != nil {
		return InstallResult{}, err
	}
	changed, err := writeFileIfChanged(c.plistPath, text, 0o644)
	if err != nil {
		return InstallResult{}, fmt.Errorf("install %s: %w", c.spec.LaunchdLabel(), err)
	}
	res := InstallResult{Changed: changed}
	loaded := before.loaded
	if loaded && changed {
		// launchd keeps the job description it loaded: reload it.
		if _, err := c.run.Run(ctx, "launchctl", "bootout", target); err != nil {
			return res, fmt.Errorf("unload the previous %s: %w", target, err)
		}
		loaded = false
	}
	unitPID := 0
	if loaded {
		unitPID = before.PID
	}
	stopped, err := takeOver(ctx, c.spec.SocketPath(), unitPID, c.uid)
	if err != nil {
		return res, err
	}
	if stopped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("stopped the auto-started agentctl service (pid %d) so the launchd job takes over %s; sessions keep running", stopped, c.spec.Home))
	}
	if err := c.startLoaded(ctx, domain, loaded, false); err != nil {
		return res, err
	}
	res.Status, err = waitReady(ctx, c.spec, c.Status)
	return res, err
}

// ensureLogs creates the log files launchd appends to, owned by the
// service's account, so a LaunchDaemon running as a user can write them.
func (c *launchdController) ensureLogs() error {
	if c.spec.Home == "" {
		return nil
	}
	for _, name := range []string{LaunchdStdoutLog, LaunchdStderrLog} {
		p := filepath.Join(c.spec.Home, name)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("create log %s: %w", p, err)
		}
		f.Close()
		if c.uid != os.Getuid() {
			if err := os.Chown(p, c.uid, c.gid); err != nil {
				return fmt.Errorf("hand log %s to uid %d: %w", p, c.uid, err)
			}
		}
	}
	return nil
}

// startLoaded starts the job: bootstrap when launchd has not loaded it
// (RunAtLoad starts it), kickstart otherwise; kill first when restart.
func (c *launchdController) startLoaded(ctx context.Context, domain string, loaded, restart bool) error {
	target := domain + "/" + c.spec.LaunchdLabel()
	if loaded {
		args := []string{"kickstart"}
		if restart {
			args = append(args, "-k")
		}
		if _, err := c.run.Run(ctx, "launchctl", append(args, target)...); err != nil {
			return fmt.Errorf("start %s: %w; its log: %s", target, err, c.logs())
		}
		return nil
	}
	if _, err := c.run.Run(ctx, "launchctl", "bootstrap", domain, c.plistPath); err != nil {
		// A job the user disabled earlier (launchctl disable) refuses to
		// load until enabled again.
		if !c.disabled(ctx, domain) {
			return fmt.Errorf("load %s: %w; its log: %s", c.plistPath, err, c.logs())
		}
		if _, err := c.run.Run(ctx, "launchctl", "enable", target); err != nil {
			return fmt.Errorf("enable %s: %w", target, err)
		}
		if _, err := c.run.Run(ctx, "launchctl", "bootstrap", domain, c.plistPath); err != nil {
			return fmt.Errorf("load %s: %w; its log: %s", c.plistPath, err, c.logs())
		}
	}
	return nil
}

// disabled reads launchd's override database for the job.
func (c *launchdController) disabled(ctx context.Context, domain string) bool {
	out, err := c.run.Run(ctx, "launchctl", "print-disabled", domain)
	if err != nil {
		return false
	}
	quoted := strconv.Quote(c.spec.LaunchdLabel())
	for line := range strings.Lines(out) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=>")
		if ok && strings.TrimSpace(k) == quoted {
			v = strings.TrimSpace(v)
			// Older releases print true/false, newer disabled/enabled.
			return v == "disabled" || v == "true"
		}
	}
	return false
}

func (c *launchdController) Uninstall(ctx context.Context) ([]string, error) {
	if err := requireRoot(c.spec, "uninstalling"); err != nil {
		return nil, err
	}
	domain := c.domain(ctx)
	st, err := c.status(ctx, domain)
	if err != nil {
		return nil, err
	}
	if st.loaded {
		if _, err := c.run.Run(ctx, "launchctl", "bootout", domain+"/"+c.spec.LaunchdLabel()); err != nil {
			return nil, fmt.Errorf("unload %s: %w", c.spec.LaunchdLabel(), err)
		}
	}
	gone, err := removeIfExists(c.plistPath)
	if err != nil {
		return nil, err
	}
	if gone {
		return []string{c.plistPath}, nil
	}
	return nil, nil
}

func (c *launchdController) Start(ctx context.Context) (Status, error) {
	return c.start(ctx, false)
}

func (c *launchdController) Restart(ctx context.Context) (Status, error) {
	return c.start(ctx, true)
}

func (c *launchdController) start(ctx context.Context, restart bool) (Status, error) {
	if err := requireRoot(c.spec, "starting"); err != nil {
		return Status{}, err
	}
	domain := c.domain(ctx)
	st, err := c.status(ctx, domain)
	if err != nil {
		return st.Status, err
	}
	if !st.Installed {
		return st.Status, ErrNotInstalled
	}
	unitPID := 0
	if st.loaded {
		unitPID = st.PID
	}
	if _, err := takeOver(ctx, c.spec.SocketPath(), unitPID, c.uid); err != nil {
		return st.Status, err
	}
	if err := c.startLoaded(ctx, domain, st.loaded, restart); err != nil {
		return st.Status, err
	}
	return waitReady(ctx, c.spec, c.Status)
}

// Stop unloads the job: launchd would restart a stopped job that is still
// loaded. The plist stays, so it loads again at the next login (or boot).
func (c *launchdController) Stop(ctx context.Context) (Status, error) {
	if err := requireRoot(c.spec, "stopping"); err != nil {
		return Status{}, err
	}
	domain := c.domain(ctx)
	st, err := c.status(ctx, domain)
	if err != nil {
		return st.Status, err
	}
	if !st.Installed {
		return st.Status, ErrNotInstalled
	}
	if st.loaded {
		if _, err := c.run.Run(ctx, "launchctl", "bootout", domain+"/"+c.spec.LaunchdLabel()); err != nil {
			return st.Status, fmt.Errorf("unload %s: %w", c.spec.LaunchdLabel(), err)
		}
	}
	return c.Status(ctx)
}

func (c *launchdController) Status(ctx context.Context) (Status, error) {
	st, err := c.status(ctx, c.domain(ctx))
	return st.Status, err
}

// launchdStatus is a Status plus whether launchd has the job loaded.
type launchdStatus struct {
	Status
	loaded bool
}

func (c *launchdController) status(ctx context.Context, domain string) (launchdStatus, error) {
	st := launchdStatus{Status: Status{
		Manager: "launchd",
		Scope:   c.spec.Scope,
		User:    c.spec.User,
		Unit:    c.spec.LaunchdLabel(),
		Logs:    c.logs(),
		State:   StateUnknown,
	}}
	fillSocket(&st.Status, c.spec)
	st.Installed = fileExists(c.plistPath)
	if st.Installed {
		st.UnitPath = c.plistPath
		st.Enabled = !c.disabled(ctx, domain)
	}
	target := domain + "/" + c.spec.LaunchdLabel()
	out, err := c.run.Run(ctx, "launchctl", "print", target)
	if err != nil {
		if exitCode(err) != launchctlNotFound {
			st.Detail = err.Error()
			return st, fmt.Errorf("ask launchd about %s: %w", target, err)
		}
		st.State = StateStopped
		if !st.Installed {
			st.State = StateNotInstalled
		}
		return st, nil
	}
	st.loaded = true
	props := parseLaunchctlPrint(out)
	if pid, err := strconv.Atoi(props["pid"]); err == nil && pid > 0 {
		st.PID = pid
	}
	switch state := props["state"]; state {
	case "running":
		st.State = StateRunning
	case "spawn scheduled", "spawning", "xpcproxy":
		st.State = StateStarting
	case "not running":
		st.State = StateStopped
		if code := props["last exit code"]; code != "" && code != "0" && code != "(never exited)" {
			st.Detail = "last exit code: " + code
		}
		if sig := props["last terminating signal"]; sig != "" {
			st.Detail = "last terminating signal: " + sig
		}
	default:
		st.Detail = fmt.Sprintf("launchd reports state %q", state)
	}
	if !st.Installed {
		// Loaded from a plist that is gone: launchd still runs it.
		st.Installed = true
		st.UnitPath = props["path"]
	}
	st.Running = st.State == StateRunning
	return st, nil
}

// parseLaunchctlPrint reads the job's own "key = value" lines (one tab deep)
// from `launchctl print`; nested blocks are skipped.
func parseLaunchctlPrint(out string) map[string]string {
	props := map[string]string{}
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		if !strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "\t\t") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "\t"), " = ")
		if ok && !strings.HasSuffix(v, "{") {
			props[k] = v
		}
	}
	return props
}
