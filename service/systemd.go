package service

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// systemdPaths are the places systemd detection and installation look at;
// tests point them into a temporary directory.
type systemdPaths struct {
	// Booted exists when systemd runs the machine (sd_booted).
	Booted string
	// SystemUnitDir holds system units written by the administrator.
	SystemUnitDir string
	// LingerDir holds one file per user whose manager runs without a login.
	LingerDir string
}

func defaultSystemdPaths() systemdPaths {
	return systemdPaths{
		Booted:        "/run/systemd/system",
		SystemUnitDir: "/etc/systemd/system",
		LingerDir:     "/var/lib/systemd/linger",
	}
}

// checkSystemd says whether the service manager spec needs is reachable:
// systemd must run the machine, and for a user unit the user's manager must
// be running (its private socket in XDG_RUNTIME_DIR).
func checkSystemd(spec Spec, paths systemdPaths, getenv func(string) string) error {
	if _, err := os.Stat(paths.Booted); err != nil {
		pid1 := "an init that is not systemd"
		if b, err := os.ReadFile("/proc/1/comm"); err == nil {
			pid1 = strings.TrimSpace(string(b))
		}
		return fmt.Errorf("%w: this machine does not run systemd (PID 1 is %s; %s is missing), and agentctl installs only systemd units or launchd jobs; without one, the CLI starts the agentctl service on demand (agentctl daemon start)", ErrUnsupported, pid1, paths.Booted)
	}
	if spec.Scope == ScopeSystem {
		return nil
	}
	rt := getenv("XDG_RUNTIME_DIR")
	if rt == "" {
		return fmt.Errorf("%w: XDG_RUNTIME_DIR is not set, so your systemd user manager cannot be reached; log in through a session that sets it (ssh, a desktop login; not su), or use --system --user NAME", ErrUnsupported)
	}
	private := filepath.Join(rt, "systemd", "private")
	bus := filepath.Join(rt, "bus")
	if !fileExists(private) && !fileExists(bus) {
		return fmt.Errorf("%w: your systemd user manager is not running (neither %s nor %s exists); enable it with `loginctl enable-linger %s` or log in again, or use --system --user NAME", ErrUnsupported, private, bus, spec.User)
	}
	return nil
}

// systemdController drives one agentctl unit through systemctl.
type systemdController struct {
	spec     Spec
	unitPath string
	paths    systemdPaths
	run      commandRunner
	// uid and gid of the account the service runs as.
	uid, gid int
}

// newSystemd returns the controller for spec; userHome is the home of the
// account whose user manager owns a user unit.
func newSystemd(spec Spec, paths systemdPaths, run commandRunner, userHome string, uid, gid int) *systemdController {
	dir := paths.SystemUnitDir
	if spec.Scope == ScopeUser {
		// The user manager reads $XDG_CONFIG_HOME/systemd/user of its own
		// environment, which login sessions leave unset: ~/.config.
		dir = filepath.Join(userHome, ".config", "systemd", "user")
	}
	return &systemdController{
		spec:     spec,
		unitPath: filepath.Join(dir, spec.SystemdUnitName()),
		paths:    paths,
		run:      run,
		uid:      uid,
		gid:      gid,
	}
}

func (c *systemdController) systemctl(ctx context.Context, args ...string) (string, error) {
	if c.spec.Scope == ScopeUser {
		args = append([]string{"--user"}, args...)
	}
	return c.run.Run(ctx, "systemctl", args...)
}

func (c *systemdController) unit() string { return c.spec.SystemdUnitName() }

func (c *systemdController) logs() string {
	if c.spec.Scope == ScopeUser {
		return "journalctl --user -u " + c.unit()
	}
	return "journalctl -u " + c.unit()
}

func (c *systemdController) Install(ctx context.Context) (InstallResult, error) {
	if err := requireRoot(c.spec, "installing"); err != nil {
		return InstallResult{}, err
	}
	text, err := RenderSystemdUnit(c.spec)
	if err != nil {
		return InstallResult{}, err
	}
	before, err := c.Status(ctx)
	if err != nil {
		return InstallResult{}, err
	}
	changed, err := writeFileIfChanged(c.unitPath, text, 0o644)
	if err != nil {
		return InstallResult{}, fmt.Errorf("install %s: %w", c.unit(), err)
	}
	if err := ensureHome(c.spec.Home, c.uid, c.gid); err != nil {
		return InstallResult{}, err
	}
	if _, err := c.systemctl(ctx, "daemon-reload"); err != nil {
		return InstallResult{}, fmt.Errorf("install %s: %w", c.unit(), err)
	}
	if _, err := c.systemctl(ctx, "enable", c.unit()); err != nil {
		return InstallResult{}, fmt.Errorf("enable %s: %w", c.unit(), err)
	}
	res := InstallResult{Changed: changed}
	stopped, err := takeOver(ctx, c.spec.SocketPath(), before.PID, c.uid)
	if err != nil {
		return InstallResult{}, err
	}
	if stopped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("stopped the auto-started agentctl service (pid %d) so the unit's service takes over %s; sessions keep running", stopped, c.spec.Home))
	}
	action := "start"
	if changed && before.Running {
		action = "restart" // pick up the new unit
	}
	if _, err := c.systemctl(ctx, action, c.unit()); err != nil {
		return InstallResult{}, fmt.Errorf("%s %s: %w; its log: %s", action, c.unit(), err, c.logs())
	}
	res.Status, err = waitReady(ctx, c.spec, c.Status)
	if err != nil {
		return res, err
	}
	if c.spec.Scope == ScopeUser && !fileExists(filepath.Join(c.paths.LingerDir, c.spec.User)) {
		res.Notes = append(res.Notes, fmt.Sprintf("lingering is off for %s: the service (and its sessions) stop when your last login session ends; `loginctl enable-linger %s` keeps them running", c.spec.User, c.spec.User))
	}
	if res.Status.UnitPath != "" && res.Status.UnitPath != c.unitPath {
		res.Notes = append(res.Notes, fmt.Sprintf("systemd loads %s from %s, which overrides %s", c.unit(), res.Status.UnitPath, c.unitPath))
	}
	return res, nil
}

func (c *systemdController) Uninstall(ctx context.Context) ([]string, error) {
	if err := requireRoot(c.spec, "uninstalling"); err != nil {
		return nil, err
	}
	st, err := c.Status(ctx)
	if err != nil {
		return nil, err
	}
	if st.State != StateNotInstalled && st.State != StateStopped {
		if _, err := c.systemctl(ctx, "stop", c.unit()); err != nil {
			return nil, fmt.Errorf("stop %s: %w", c.unit(), err)
		}
	}
	links := c.enablementLinks()
	var removed []string
	if fileExists(c.unitPath) {
		// disable removes the links the [Install] section made.
		if _, err := c.systemctl(ctx, "disable", c.unit()); err != nil {
			return nil, fmt.Errorf("disable %s: %w", c.unit(), err)
		}
	}
	// Links made by hand, or left by a unit file removed by hand.
	for _, l := range links {
		if fileExists(l) {
			if _, err := removeIfExists(l); err != nil {
				return removed, err
			}
		}
		removed = append(removed, l)
		// systemctl enable made the .wants directory; drop it when empty.
		_ = os.Remove(filepath.Dir(l))
	}
	gone, err := removeIfExists(c.unitPath)
	if err != nil {
		return removed, err
	}
	if gone {
		removed = append(removed, c.unitPath)
	}
	if _, err := c.systemctl(ctx, "daemon-reload"); err != nil {
		return removed, fmt.Errorf("reload after removing %s: %w", c.unit(), err)
	}
	// Forget a failed state; fails when systemd has nothing to forget.
	_, _ = c.systemctl(ctx, "reset-failed", c.unit())
	return removed, nil
}

// enablementLinks lists the symlinks to the unit in the unit directory's
// .wants/ and .requires/ directories.
func (c *systemdController) enablementLinks() []string {
	var links []string
	for _, pattern := range []string{"*.wants", "*.requires"} {
		matches, _ := filepath.Glob(filepath.Join(filepath.Dir(c.unitPath), pattern, c.unit()))
		links = append(links, matches...)
	}
	return links
}

func (c *systemdController) Start(ctx context.Context) (Status, error) {
	return c.act(ctx, "start")
}

func (c *systemdController) Restart(ctx context.Context) (Status, error) {
	return c.act(ctx, "restart")
}

func (c *systemdController) Stop(ctx context.Context) (Status, error) {
	if err := requireRoot(c.spec, "stopping"); err != nil {
		return Status{}, err
	}
	st, err := c.Status(ctx)
	if err != nil {
		return st, err
	}
	if !st.Installed {
		return st, ErrNotInstalled
	}
	if _, err := c.systemctl(ctx, "stop", c.unit()); err != nil {
		return st, fmt.Errorf("stop %s: %w", c.unit(), err)
	}
	return c.Status(ctx)
}

func (c *systemdController) act(ctx context.Context, action string) (Status, error) {
	if err := requireRoot(c.spec, action+"ing"); err != nil {
		return Status{}, err
	}
	st, err := c.Status(ctx)
	if err != nil {
		return st, err
	}
	if !st.Installed {
		return st, ErrNotInstalled
	}
	if _, err := takeOver(ctx, c.spec.SocketPath(), st.PID, c.uid); err != nil {
		return st, err
	}
	if _, err := c.systemctl(ctx, action, c.unit()); err != nil {
		return st, fmt.Errorf("%s %s: %w; its log: %s", action, c.unit(), err, c.logs())
	}
	return waitReady(ctx, c.spec, c.Status)
}

// systemdShowProps are the unit properties Status reads.
var systemdShowProps = []string{"LoadState", "ActiveState", "SubState", "MainPID", "FragmentPath", "UnitFileState", "NRestarts", "Result"}

func (c *systemdController) Status(ctx context.Context) (Status, error) {
	st := Status{
		Manager: "systemd",
		Scope:   c.spec.Scope,
		User:    c.spec.User,
		Unit:    c.unit(),
		Logs:    c.logs(),
		State:   StateUnknown,
	}
	fillSocket(&st, c.spec)
	onDisk := fileExists(c.unitPath)
	if onDisk {
		st.UnitPath = c.unitPath
	}
	out, err := c.systemctl(ctx, "show", c.unit(), "--property="+strings.Join(systemdShowProps, ","))
	if err != nil {
		st.Installed = onDisk
		st.Detail = err.Error()
		return st, fmt.Errorf("ask systemd about %s: %w", c.unit(), err)
	}
	props := parseSystemdShow(out)
	if props["FragmentPath"] != "" {
		st.UnitPath = props["FragmentPath"]
	}
	st.Installed = onDisk || props["LoadState"] == "loaded"
	switch props["UnitFileState"] {
	case "enabled", "enabled-runtime", "linked", "linked-runtime", "alias":
		st.Enabled = true
	}
	if pid, err := strconv.Atoi(props["MainPID"]); err == nil && pid > 0 {
		st.PID = pid
	}
	if n, err := strconv.Atoi(props["NRestarts"]); err == nil {
		st.Restarts = &n
	}
	switch props["ActiveState"] {
	case "active", "reloading":
		st.State = StateRunning
	case "activating":
		st.State = StateStarting
	case "deactivating":
		st.State = StateStopping
	case "failed":
		st.State = StateFailed
		st.Detail = "result: " + props["Result"]
	case "inactive":
		st.State = StateStopped
	default:
		st.Detail = fmt.Sprintf("systemd reports ActiveState=%q", props["ActiveState"])
	}
	if !st.Installed {
		st.State = StateNotInstalled
	}
	st.Running = st.State == StateRunning
	return st, nil
}

// parseSystemdShow parses `systemctl show` output: one Key=Value a line.
func parseSystemdShow(out string) map[string]string {
	props := map[string]string{}
	for line := range strings.Lines(out) {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\n"), "=")
		if ok {
			props[k] = v
		}
	}
	return props
}
