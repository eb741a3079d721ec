package systemd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/service"
)

// systemEnv drives a system unit: root installs it, the account it runs as
// uses it.
type systemEnv struct {
	t       *testing.T
	bin     string
	account *user.User
	uid     int
	gid     int
	unit    string
}

// newSystemEnv needs root on a machine that runs systemd as its system
// manager: scripts/systemd-e2e.sh runs it inside the container of
// scripts/systemd-nspawn-harness.sh, with AGENTCTL_SYSTEMD_SYSTEM_TEST=1.
func newSystemEnv(t *testing.T) *systemEnv {
	t.Helper()
	if os.Getenv("AGENTCTL_SYSTEMD_SYSTEM_TEST") != "1" {
		t.Skip("set AGENTCTL_SYSTEMD_SYSTEM_TEST=1, AGENTCTL_BIN and AGENTCTL_TEST_USER to install system units as root (scripts/systemd-e2e.sh does, in a container)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("system unit tests run as root")
	}
	bin := os.Getenv("AGENTCTL_BIN")
	if !filepath.IsAbs(bin) {
		t.Fatal("AGENTCTL_BIN must be the absolute path of the agentctl binary")
	}
	name := os.Getenv("AGENTCTL_TEST_USER")
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("AGENTCTL_TEST_USER %q: %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	e := &systemEnv{t: t, bin: bin, account: u, uid: uid, gid: gid, unit: "agentctl@" + u.Username + ".service"}
	t.Cleanup(e.teardown)
	return e
}

func (e *systemEnv) teardown() {
	e.root("service", "uninstall", "--system", "--user", e.account.Username)
	var list api.SessionList
	if out, _, code := e.asUser(nil, "list", "--json"); code == 0 && json.Unmarshal([]byte(out), &list) == nil {
		for _, s := range list.Sessions {
			if s.Status == api.StatusRunning {
				e.asUser(nil, "stop", "--force", s.ID)
			}
		}
	}
	e.asUser(nil, "daemon", "stop")
	if e.t.Failed() {
		if out, err := exec.Command("journalctl", "-u", e.unit, "--no-pager", "-q", "-n", "100").CombinedOutput(); err == nil {
			e.t.Logf("journalctl -u %s:\n%s", e.unit, out)
		}
	}
	os.RemoveAll(filepath.Join(e.account.HomeDir, ".agentctl"))
}

func runCmd(cmd *exec.Cmd) (string, string, int) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return stdout.String(), stderr.String(), code
}

// root runs agentctl as root with a clean environment.
func (e *systemEnv) root(args ...string) (string, string, int) {
	cmd := exec.Command(e.bin, args...)
	cmd.Env = []string{"HOME=/root", "USER=root", "PATH=/usr/local/bin:/usr/bin:/bin"}
	return runCmd(cmd)
}

func (e *systemEnv) mustRoot(args ...string) string {
	e.t.Helper()
	out, errOut, code := e.root(args...)
	if code != 0 {
		e.t.Fatalf("agentctl %s (root): exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// asUser runs agentctl as the account the unit runs as, with its login
// environment and default AGENTCTL_HOME.
func (e *systemEnv) asUser(extra []string, args ...string) (string, string, int) {
	cmd := exec.Command(e.bin, args...)
	cmd.Env = append([]string{"HOME=" + e.account.HomeDir, "USER=" + e.account.Username, "LOGNAME=" + e.account.Username,
		"PATH=/usr/local/bin:/usr/bin:/bin"}, extra...)
	cmd.Dir = e.account.HomeDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(e.uid), Gid: uint32(e.gid)}}
	return runCmd(cmd)
}

func (e *systemEnv) mustUserJSON(v any, args ...string) {
	e.t.Helper()
	out, errOut, code := e.asUser([]string{"AGENTCTL_NO_AUTOSTART=1"}, args...)
	if code != 0 {
		e.t.Fatalf("agentctl %s (as %s): exit %d\n%s%s", strings.Join(args, " "), e.account.Username, code, out, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		e.t.Fatalf("agentctl %s: bad JSON %q: %v", strings.Join(args, " "), out, err)
	}
}

func (e *systemEnv) prop(p string) string {
	out, err := exec.Command("systemctl", "show", e.unit, "--property="+p, "--value").Output()
	if err != nil {
		e.t.Fatalf("systemctl show %s: %v", e.unit, err)
	}
	return strings.TrimSpace(string(out))
}

// served waits until the unit's main process, not notPID, answers the
// account's CLI, and returns its pid.
func (e *systemEnv) served(notPID int) int {
	e.t.Helper()
	var pid int
	waitFor(e.t, "the system unit's service to answer", func() bool {
		if e.prop("ActiveState") != "active" {
			return false
		}
		pid, _ = strconv.Atoi(e.prop("MainPID"))
		if pid == 0 || pid == notPID {
			return false
		}
		out, _, code := e.asUser([]string{"AGENTCTL_NO_AUTOSTART=1"}, "daemon", "status", "--json")
		var st api.DaemonStatus
		return code == 0 && json.Unmarshal([]byte(out), &st) == nil && st.PID == pid
	})
	return pid
}

func procUID(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			uid, _ := strconv.Atoi(strings.Fields(rest)[0])
			return uid
		}
	}
	t.Fatalf("no Uid line in /proc/%d/status", pid)
	return -1
}

func TestSystemServiceOnRealSystemd(t *testing.T) {
	e := newSystemEnv(t)
	name := e.account.Username
	unitPath := "/etc/systemd/system/" + e.unit
	link := "/etc/systemd/system/multi-user.target.wants/" + e.unit
	home := filepath.Join(e.account.HomeDir, ".agentctl")

	// 1. install as root, for the account.
	out := e.mustRoot("service", "install", "--system", "--user", name)
	t.Logf("service install --system --user %s:\n%s", name, out)
	if target, err := os.Readlink(link); err != nil || target != unitPath {
		t.Fatalf("enablement link %s -> %q (%v)", link, target, err)
	}
	pid := e.served(0)
	if uid := procUID(t, pid); uid != e.uid {
		t.Fatalf("the service runs as uid %d, want %s's %d", uid, name, e.uid)
	}
	fi, err := os.Stat(home)
	if err != nil || fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != uint32(e.uid) {
		t.Fatalf("AGENTCTL_HOME %s: %v, %v; want 0700 owned by %s", home, fi, err, name)
	}
	// Status needs no root; changing the unit does.
	var st service.Status
	e.mustUserJSON(&st, "service", "status", "--system", "--user", name, "--json")
	if !st.Running || st.PID != pid || st.SocketPID != pid || st.UnitPath != unitPath || st.Home != home {
		t.Fatalf("service status as %s: %+v", name, st)
	}
	if _, errOut, code := e.asUser(nil, "service", "stop", "--system", "--user", name); code == 0 || !strings.Contains(errOut, "root") {
		t.Fatalf("service stop --system as %s: exit %d, %q; want a refusal naming root", name, code, errOut)
	}

	// 2. sessions of the account survive systemctl restart and kill -9.
	var sessions []api.Session
	for i := range 2 {
		var s api.Session
		e.mustUserJSON(&s, "run", "--json", "--", "sh", "-c", fmt.Sprintf("while :; do echo sys %d; sleep 0.2; done", i))
		sessions = append(sessions, s)
	}
	check := func(when string) {
		t.Helper()
		var list api.SessionList
		e.mustUserJSON(&list, "list", "--json")
		running := map[string]int{}
		for _, s := range list.Sessions {
			if s.Status == api.StatusRunning {
				running[s.ID] = s.PID
			}
		}
		for _, s := range sessions {
			if running[s.ID] != s.PID {
				t.Fatalf("%s: session %s not running with pid %d: %v", when, s.ID, s.PID, running)
			}
		}
	}
	if out, err := exec.Command("systemctl", "restart", e.unit).CombinedOutput(); err != nil {
		t.Fatalf("systemctl restart: %v %s", err, out)
	}
	pid = e.served(pid)
	check("after systemctl restart")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	pid = e.served(pid)
	check("after kill -9")
	if n := e.prop("NRestarts"); n != "1" {
		t.Errorf("NRestarts %s after one kill -9, want 1", n)
	}

	// 4. uninstall the way sudo users do: --system, the account from SUDO_USER.
	cmd := exec.Command(e.bin, "service", "uninstall", "--system")
	cmd.Env = []string{"HOME=/root", "PATH=/usr/local/bin:/usr/bin:/bin", "SUDO_USER=" + name}
	if out, errOut, code := runCmd(cmd); code != 0 {
		t.Fatalf("service uninstall --system with SUDO_USER=%s: exit %d\n%s%s", name, code, out, errOut)
	}
	for _, p := range []string{unitPath, link} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s left behind", p)
		}
	}
	if got := e.prop("LoadState"); got != "not-found" {
		t.Errorf("systemd still loads %s: %s", e.unit, got)
	}
	if alive(pid) {
		t.Errorf("the unit's service (pid %d) still runs after uninstall", pid)
	}
	for _, s := range sessions {
		if !alive(s.PID) {
			t.Errorf("session %s died with the uninstall", s.ID)
		}
	}
}
