// Package systemd drives the real agentctl binary through `agentctl service`
// against a real systemd user manager: install, sessions that outlive
// restarts and kill -9 of the unit's service, Restart=on-failure, uninstall.
//
// The tests install units for the user running them, so they run only with
// AGENTCTL_SYSTEMD_TEST=1 and AGENTCTL_BIN set to the agentctl binary:
// scripts/systemd-e2e.sh runs them in the harness of
// scripts/systemd-harness.sh.
package systemd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/service"
)

const unit = "agentctl.service"

// env is the agentctl installation under test.
type env struct {
	t    *testing.T
	bin  string
	home string // AGENTCTL_HOME
	vars []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if os.Getenv("AGENTCTL_SYSTEMD_TEST") != "1" {
		t.Skip("set AGENTCTL_SYSTEMD_TEST=1 and AGENTCTL_BIN to install agentctl into your systemd user manager (scripts/systemd-e2e.sh does, in a harness)")
	}
	bin := os.Getenv("AGENTCTL_BIN")
	if bin == "" || !filepath.IsAbs(bin) {
		t.Fatal("AGENTCTL_BIN must be the absolute path of the agentctl binary")
	}
	// A short AGENTCTL_HOME keeps socket paths under the system limit.
	home, err := os.MkdirTemp("", "acsd")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, bin: bin, home: home}
	e.vars = append(os.Environ(), "AGENTCTL_HOME="+home)
	t.Cleanup(e.teardown)
	return e
}

// teardown leaves the user manager and the machine as they were: no unit,
// no session, no service.
func (e *env) teardown() {
	e.agentctl(nil, "service", "uninstall")
	var list api.SessionList
	if out, _, code := e.agentctl(nil, "list", "--json"); code == 0 && json.Unmarshal([]byte(out), &list) == nil {
		for _, s := range list.Sessions {
			if s.Status == api.StatusRunning {
				e.agentctl(nil, "stop", "--force", s.ID)
			}
		}
	}
	e.agentctl(nil, "daemon", "stop")
	if e.t.Failed() {
		if out, err := exec.Command("journalctl", "--user", "-u", unit, "--no-pager", "-q", "-n", "100").CombinedOutput(); err == nil {
			e.t.Logf("journalctl --user -u %s:\n%s", unit, out)
		}
		e.t.Logf("kept AGENTCTL_HOME %s for inspection", e.home)
		return
	}
	os.RemoveAll(e.home)
}

// agentctl runs the binary with extra environment and returns stdout,
// stderr and the exit code.
func (e *env) agentctl(extra []string, args ...string) (string, string, int) {
	cmd := exec.Command(e.bin, args...)
	cmd.Env = append(slices.Clone(e.vars), extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return stdout.String(), stderr.String(), code
}

// must runs agentctl without auto-start, so only the unit's service can
// answer, and fails the test unless it exits 0.
func (e *env) must(args ...string) string {
	e.t.Helper()
	out, errOut, code := e.agentctl([]string{"AGENTCTL_NO_AUTOSTART=1"}, args...)
	if code != 0 {
		e.t.Fatalf("agentctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func (e *env) mustJSON(v any, args ...string) {
	e.t.Helper()
	out := e.must(args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		e.t.Fatalf("agentctl %s: bad JSON %q: %v", strings.Join(args, " "), out, err)
	}
}

func systemctl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("systemctl", append([]string{"--user"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("systemctl --user %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func unitProp(t *testing.T, prop string) string {
	return systemctl(t, "show", unit, "--property="+prop, "--value")
}

func mainPID(t *testing.T) int {
	pid, err := strconv.Atoi(unitProp(t, "MainPID"))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// servedByUnit waits until the unit's main process answers the CLI, and
// returns its pid.
func (e *env) servedByUnit(notPID int) int {
	e.t.Helper()
	var pid int
	waitFor(e.t, "the unit's service to answer", func() bool {
		if unitProp(e.t, "ActiveState") != "active" {
			return false
		}
		pid = mainPID(e.t)
		if pid == 0 || pid == notPID {
			return false
		}
		out, _, code := e.agentctl([]string{"AGENTCTL_NO_AUTOSTART=1"}, "daemon", "status", "--json")
		var st api.DaemonStatus
		return code == 0 && json.Unmarshal([]byte(out), &st) == nil && st.PID == pid
	})
	return pid
}

type session struct {
	id  string
	pid int
	log string
}

func logSize(t *testing.T, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("session log: %v", err)
	}
	return fi.Size()
}

func alive(pid int) bool {
	info, err := proc.Lookup(pid)
	return err == nil && !info.Zombie
}

// checkSessions asserts that `list` (answered by the unit's service) shows
// every session running with its original pid, and that every log grows.
func (e *env) checkSessions(sessions []session, when string) {
	e.t.Helper()
	sizes := map[string]int64{}
	for _, s := range sessions {
		sizes[s.id] = logSize(e.t, s.log)
	}
	var list api.SessionList
	e.mustJSON(&list, "list", "--json")
	byID := map[string]api.Session{}
	for _, s := range list.Sessions {
		byID[s.ID] = s
	}
	for _, s := range sessions {
		got, ok := byID[s.id]
		if !ok {
			e.t.Fatalf("%s: session %s missing from list", when, s.id)
		}
		if got.Status != api.StatusRunning || got.PID != s.pid {
			e.t.Fatalf("%s: session %s is %s with pid %d, want running with pid %d", when, s.id, got.Status, got.PID, s.pid)
		}
	}
	waitFor(e.t, when+": every session log to grow", func() bool {
		for _, s := range sessions {
			if logSize(e.t, s.log) <= sizes[s.id] {
				return false
			}
		}
		return true
	})
}

func TestServiceOnRealSystemd(t *testing.T) {
	e := newEnv(t)
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	unitPath := filepath.Join(home, ".config", "systemd", "user", unit)
	wantsLink := filepath.Join(home, ".config", "systemd", "user", "default.target.wants", unit)

	if _, _, code := e.agentctl(nil, "service", "status"); code != 1 {
		t.Fatalf("service status before install: exit %d, want 1", code)
	}

	// A session started by an auto-started service before the unit
	// exists: installing takes the service over, not the session.
	out, errOut, code := e.agentctl(nil, "run", "--json", "--", "sh", "-c", "i=0; while :; do i=$((i+1)); echo early $i; sleep 0.2; done")
	if code != 0 {
		t.Fatalf("run under the auto-started service: exit %d: %s", code, errOut)
	}
	var early api.Session
	if err := json.Unmarshal([]byte(out), &early); err != nil {
		t.Fatal(err)
	}
	var autoSt api.DaemonStatus
	e.mustJSON(&autoSt, "daemon", "status", "--json")

	// 1. install: enabled, running, and the CLI talks to it.
	out = e.must("service", "install")
	t.Logf("service install:\n%s", out)
	if got := systemctl(t, "is-enabled", unit); got != "enabled" {
		t.Fatalf("is-enabled: %s", got)
	}
	if got := systemctl(t, "is-active", unit); got != "active" {
		t.Fatalf("is-active: %s", got)
	}
	pid := e.servedByUnit(0)
	if pid == autoSt.PID || alive(autoSt.PID) {
		t.Fatalf("the auto-started service (pid %d) was not replaced by the unit's (pid %d)", autoSt.PID, pid)
	}
	var st service.Status
	e.mustJSON(&st, "service", "status", "--json")
	if !st.Installed || !st.Enabled || !st.Running || st.PID != pid || st.SocketPID != pid || st.UnitPath != unitPath || st.Home != e.home {
		t.Fatalf("service status: %+v (MainPID %d)", st, pid)
	}
	if env := unitProp(t, "Environment"); !strings.Contains(env, "AGENTCTL_HOME="+e.home) {
		t.Fatalf("unit environment %q lacks AGENTCTL_HOME=%s", env, e.home)
	}

	// 2. five sessions, started through the unit's service.
	sessions := []session{{id: early.ID, pid: early.PID}}
	for i := range 4 {
		var s api.Session
		e.mustJSON(&s, "run", "--json", "--name", fmt.Sprintf("ticker-%d", i), "--",
			"sh", "-c", fmt.Sprintf("i=0; while :; do i=$((i+1)); echo ticker %d line $i; sleep 0.2; done", i))
		if s.Status != api.StatusRunning || s.PID == 0 {
			t.Fatalf("run: %+v", s)
		}
		sessions = append(sessions, session{id: s.ID, pid: s.PID})
	}
	for i := range sessions {
		sessions[i].log = filepath.Join(e.home, "sessions", sessions[i].id, "output.log")
	}
	e.checkSessions(sessions, "before any restart")
	// Sessions started by the unit's service live in the unit's cgroup:
	// only KillMode=process keeps a stop or restart of the unit from
	// killing them.
	for _, s := range sessions[1:] {
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", s.pid))
		if err != nil || !strings.Contains(string(cg), "/"+unit) {
			t.Fatalf("session %s (pid %d) is not in the unit's cgroup: %q %v", s.id, s.pid, cg, err)
		}
	}

	// systemctl restart: a new service, the same sessions.
	systemctl(t, "restart", unit)
	pid = e.servedByUnit(pid)
	e.checkSessions(sessions, "after systemctl --user restart")

	// 3. kill -9 of the main pid: Restart=on-failure brings the service
	// back, and the sessions never noticed.
	restarts, _ := strconv.Atoi(unitProp(t, "NRestarts"))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := pid
	pid = e.servedByUnit(killed)
	if got, _ := strconv.Atoi(unitProp(t, "NRestarts")); got != restarts+1 {
		t.Errorf("NRestarts %d after kill -9, want %d", got, restarts+1)
	}
	e.checkSessions(sessions, "after kill -9 of the service")

	// service restart goes through the same unit.
	e.must("service", "restart")
	pid = e.servedByUnit(pid)
	e.checkSessions(sessions, "after agentctl service restart")

	// 4. uninstall: nothing left in the user manager; sessions keep
	// running, and the CLI starts a service on demand again.
	out = e.must("service", "uninstall")
	t.Logf("service uninstall:\n%s", out)
	for _, p := range []string{unitPath, wantsLink, filepath.Dir(wantsLink)} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s left behind", p)
		}
	}
	if got := unitProp(t, "LoadState"); got != "not-found" {
		t.Errorf("systemd still loads %s: %s", unit, got)
	}
	// list-unit-files exits 1 when no unit file matches.
	if out, _ := exec.Command("systemctl", "--user", "list-unit-files", "--no-legend", "agentctl*").Output(); strings.TrimSpace(string(out)) != "" {
		t.Errorf("unit files left: %s", out)
	}
	if alive(pid) {
		t.Errorf("the unit's service (pid %d) still runs after uninstall", pid)
	}
	if _, _, code := e.agentctl(nil, "service", "status"); code != 1 {
		t.Errorf("service status after uninstall: exit %d, want 1", code)
	}
	for _, s := range sessions {
		if !alive(s.pid) {
			t.Errorf("session %s (pid %d) died with the uninstall", s.id, s.pid)
		}
	}
	if _, errOut, code := e.agentctl(nil, "list"); code != 0 {
		t.Fatalf("list with an auto-started service after uninstall: exit %d: %s", code, errOut)
	}
}

// A CLI command that finds the service down while the unit restarts it
// (after kill -9, during RestartSec) starts the unit's service through
// systemd instead of spawning one of its own, which would hold the home's
// lock and make the unit fail on every restart.
func TestAutostartGoesThroughTheUnit(t *testing.T) {
	e := newEnv(t)
	e.must("service", "install")
	pid := e.servedByUnit(0)
	restarts, _ := strconv.Atoi(unitProp(t, "NRestarts"))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Once it is gone (a request that races the kill itself may fail), at
	// once, with auto-start allowed, as a hook or a script would.
	waitFor(t, "the killed service to be gone", func() bool { return !alive(pid) })
	if out, errOut, code := e.agentctl(nil, "list"); code != 0 {
		t.Fatalf("list right after kill -9 of the service: exit %d\n%s%s", code, out, errOut)
	}
	pid = e.servedByUnit(pid)
	// Long enough for a unit that lost its lock to fail and restart again.
	time.Sleep(3 * time.Second)
	if got := unitProp(t, "ActiveState"); got != "active" {
		t.Fatalf("unit is %s after an auto-start during its restart", got)
	}
	if got := mainPID(t); got != pid {
		t.Fatalf("MainPID changed from %d to %d: the unit's service kept failing", pid, got)
	}
	if got, _ := strconv.Atoi(unitProp(t, "NRestarts")); got > restarts+1 {
		t.Fatalf("NRestarts went from %d to %d: the unit's service kept failing", restarts, got)
	}
	var st api.DaemonStatus
	e.mustJSON(&st, "daemon", "status", "--json")
	if st.PID != pid {
		t.Fatalf("the CLI talks to pid %d, not to the unit's service %d", st.PID, pid)
	}
}
