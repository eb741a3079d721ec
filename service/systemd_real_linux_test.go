package service

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/proc"
)

// These tests drive a real systemd user manager. They run where one is
// reachable and AGENTCTL_SYSTEMD_TEST=1 says they may install units for the
// user running them: scripts/systemd-e2e.sh runs them inside the harness of
// scripts/systemd-harness.sh.
func realSystemd(t *testing.T) {
	t.Helper()
	if os.Getenv("AGENTCTL_SYSTEMD_TEST") != "1" {
		t.Skip("set AGENTCTL_SYSTEMD_TEST=1 to install units into your systemd user manager (scripts/systemd-e2e.sh does, in a harness)")
	}
}

// realSpec is a user unit running the helper daemon from a path with a space,
// with an AGENTCTL_HOME full of characters systemd treats specially.
func realSpec(t *testing.T, withChild bool) Spec {
	dir := filepath.Join(t.TempDir(), "bin dir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "agent ctl")
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	me, err := userName()
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(t.TempDir(), `state 100% "q" \b $HOME`)
	return Spec{Scope: ScopeUser, User: me, Exe: link, Args: helperArgs(withChild), Home: home, Path: os.Getenv("PATH")}
}

func userName() (string, error) {
	env := OSEnvironment()
	u, err := env.CurrentUser()
	if err != nil {
		return "", err
	}
	return u.Username, nil
}

// readPIDs reads one pid a line.
func readPIDs(t *testing.T, path string) []int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	defer f.Close()
	var pids []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

func alive(pid int) bool {
	info, err := proc.Lookup(pid)
	return err == nil && !info.Zombie
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestSystemdRealLifecycle(t *testing.T) {
	realSystemd(t)
	ctx := context.Background()
	spec := realSpec(t, true)
	c, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctl := c.(*systemdController)
	t.Cleanup(func() {
		ctl.Uninstall(context.Background())
		// The helper's children outlive the unit by design: end them.
		if b, err := os.ReadFile(filepath.Join(spec.Home, "helper.children")); err == nil {
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	})
	home, _ := os.UserHomeDir()
	unitPath := filepath.Join(home, ".config", "systemd", "user", "agentctl.service")
	wantsLink := filepath.Join(home, ".config", "systemd", "user", "default.target.wants", "agentctl.service")

	st, err := ctl.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateNotInstalled || st.Installed {
		t.Fatalf("before install: %+v", st)
	}

	// 1. install: unit written, enabled, running, and its main process is
	// the one answering on the socket in the (oddly named) AGENTCTL_HOME:
	// the quoting of ExecStart= and Environment= survived systemd.
	res, err := ctl.Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st = res.Status
	if !st.Installed || !st.Enabled || !st.Running || st.PID == 0 || st.SocketPID != st.PID || st.UnitPath != unitPath {
		t.Fatalf("after install: %+v", st)
	}
	want, _ := RenderSystemdUnit(spec)
	if got, err := os.ReadFile(unitPath); err != nil || string(got) != string(want) {
		t.Fatalf("unit on disk differs from the rendered one (err %v)", err)
	}
	if target, err := os.Readlink(wantsLink); err != nil || target != unitPath {
		t.Fatalf("enablement link %s -> %q (%v), want -> %s", wantsLink, target, err, unitPath)
	}
	out, err := ctl.systemctl(ctx, "show", "agentctl.service", "--property=KillMode,Restart,RestartUSec")
	if err != nil {
		t.Fatal(err)
	}
	props := parseSystemdShow(out)
	if props["KillMode"] != "process" || props["Restart"] != "on-failure" || props["RestartUSec"] != "1s" {
		t.Fatalf("systemd loaded %v", props)
	}
	children := readPIDs(t, filepath.Join(spec.Home, "helper.children"))

	// Reinstalling the same unit leaves the running service alone.
	res, err = ctl.Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed || res.Status.PID != st.PID {
		t.Fatalf("reinstall: %+v, first pid %d", res, st.PID)
	}

	// 2. restart: a new main process; KillMode=process spares the child
	// the old one started in its own session.
	first := st.PID
	st, err = ctl.Restart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.PID == first || st.SocketPID != st.PID {
		t.Fatalf("after restart: %+v, first pid %d", st, first)
	}
	if !alive(children[0]) {
		t.Fatalf("the service's child %d died with a restart", children[0])
	}

	// 3. kill -9 of the main process: Restart=on-failure brings it back.
	killed := st.PID
	restartsBefore := *st.Restarts
	if err := syscall.Kill(killed, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "systemd to restart the killed service", func() bool {
		st, err = ctl.Status(ctx)
		return err == nil && st.Running && st.PID != killed && st.SocketPID == st.PID
	})
	if *st.Restarts != restartsBefore+1 {
		t.Errorf("NRestarts %d, want %d", *st.Restarts, restartsBefore+1)
	}
	for _, pid := range children {
		if !alive(pid) {
			t.Errorf("the service's child %d died with a kill -9 of the service", pid)
		}
	}

	// stop and start.
	st, err = ctl.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Running || st.State != StateStopped || st.SocketPID != 0 || !st.Installed {
		t.Fatalf("after stop: %+v", st)
	}
	st, err = ctl.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Running || st.SocketPID != st.PID {
		t.Fatalf("after start: %+v", st)
	}

	// 4. uninstall: no unit file, no link, systemd forgot the unit.
	removed, err := ctl.Uninstall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if wantRemoved := []string{unitPath, wantsLink}; !slices.Equal(removed, wantRemoved) {
		t.Errorf("removed %v, want %v", removed, wantRemoved)
	}
	for _, p := range []string{unitPath, wantsLink, filepath.Dir(wantsLink)} {
		if fileExists(p) {
			t.Errorf("%s left behind", p)
		}
	}
	st, err = ctl.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateNotInstalled || st.SocketPID != 0 {
		t.Fatalf("after uninstall: %+v", st)
	}
	out, err = ctl.systemctl(ctx, "show", "agentctl.service", "--property=LoadState")
	if err != nil || strings.TrimSpace(out) != "LoadState=not-found" {
		t.Fatalf("systemd still knows the unit: %q %v", out, err)
	}
	if _, err := ctl.Start(ctx); err != ErrNotInstalled {
		t.Fatalf("start after uninstall: %v, want ErrNotInstalled", err)
	}
}

func TestSystemdRealInstallTakesOverAutostartedService(t *testing.T) {
	realSystemd(t)
	ctx := context.Background()
	spec := realSpec(t, false)
	if err := os.MkdirAll(spec.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	auto := startHelperDaemon(t, spec.Home)
	c, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Uninstall(context.Background()) })
	res, err := c.Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status.PID == auto || res.Status.SocketPID != res.Status.PID {
		t.Fatalf("the unit does not serve the socket: %+v (auto-started pid %d)", res.Status, auto)
	}
	if alive(auto) {
		t.Errorf("the auto-started service (pid %d) still runs", auto)
	}
}

// A unit file removed by hand leaves its enablement link dangling;
// uninstall still removes the link.
func TestSystemdRealUninstallAfterManualRemoval(t *testing.T) {
	realSystemd(t)
	ctx := context.Background()
	spec := realSpec(t, false)
	c, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctl := c.(*systemdController)
	t.Cleanup(func() { ctl.Uninstall(context.Background()) })
	if _, err := ctl.Install(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(ctl.unitPath); err != nil {
		t.Fatal(err)
	}
	links := ctl.enablementLinks()
	if len(links) != 1 {
		t.Fatalf("enablement links %v, want one", links)
	}
	removed, err := ctl.Uninstall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, links) || fileExists(links[0]) {
		t.Fatalf("removed %v; link %s exists: %v", removed, links[0], fileExists(links[0]))
	}
}

// The CLI's auto-start while the unit's service is down (here: right after
// kill -9, during RestartSec) starts the unit, not a service of its own.
func TestSystemdRealStartInstalledAfterKill(t *testing.T) {
	realSystemd(t)
	ctx := context.Background()
	spec := realSpec(t, false)
	c, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Uninstall(context.Background()) })
	res, err := c.Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(res.Status.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	handled, err := StartInstalled(ctx, spec.Home)
	if err != nil || !handled {
		t.Fatalf("StartInstalled = %v, %v; want true, nil", handled, err)
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Running || st.PID == res.Status.PID || st.SocketPID != st.PID {
		t.Fatalf("after StartInstalled: %+v (killed pid %d)", st, res.Status.PID)
	}
	starts := readPIDs(t, filepath.Join(spec.Home, "helper.starts"))
	if len(starts) != 2 || starts[1] != st.PID {
		t.Fatalf("service starts %v: want the killed one and the unit's new one (%d), nothing else", starts, st.PID)
	}
	if handled, err := StartInstalled(ctx, spec.Home+"-other"); err != nil || handled {
		t.Fatalf("StartInstalled for a home no unit serves = %v, %v; want false, nil", handled, err)
	}
}
