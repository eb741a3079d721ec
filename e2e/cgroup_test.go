package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/cgroup"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

// cgroupEnv is an installation whose service gives sessions cgroups of
// their own, or skips with the reason the service gives (and the
// controllers it lacks, when need names some).
func cgroupEnv(t *testing.T, need ...string) *Env {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("cgroups are Linux-only")
	}
	e := NewEnv(t)
	e.MustRun("list") // starts the service
	var st api.DaemonStatus
	e.JSON(&st, "daemon", "status", "--json")
	if st.Cgroups == nil || !st.Cgroups.Enabled {
		t.Skipf("this service gives sessions no cgroups: %+v", st.Cgroups)
	}
	for _, c := range need {
		if !slices.Contains(st.Cgroups.Controllers, c) {
			t.Skipf("this service's cgroups have no %s controller: %s", c, st.Cgroups.Summary)
		}
	}
	return e
}

// readPID waits for a pid written to path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	WaitFor(t, 10*time.Second, "a pid in "+path, func() bool {
		b, err := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// A session's cgroup holds the agent's tree, a daemon it double-forked into
// a session and group of its own included; `stop` ends them all and says
// how many processes it ended; daemon status says where the cgroups are.
func TestCgroupStopEndsADoubleForkedDaemon(t *testing.T) {
	e := cgroupEnv(t)
	if out := e.MustRun("daemon", "status"); !strings.Contains(out, "per-session cgroups: yes (") {
		t.Errorf("daemon status does not say where sessions' cgroups are:\n%s", out)
	}
	pidFile := filepath.Join(t.TempDir(), "daemon.pid")
	s := e.Start("--", "sh", "-c", `setsid sh -c 'sleep 1000 & echo $! > `+pidFile+`'; sleep 1000`)
	daemon := readPID(t, pidFile)
	info, err := proc.Lookup(daemon)
	if err != nil {
		t.Fatal(err)
	}
	if info.SID == s.PID || info.PGID == s.PID {
		t.Fatalf("the daemon did not leave the agent's session and group: %+v", info)
	}
	var paths cgroup.Paths
	b, err := os.ReadFile(filepath.Join(e.SessionDir(s.ID), home.CgroupFile))
	if err != nil || json.Unmarshal(b, &paths) != nil || paths.Empty() {
		t.Fatalf("cgroup.json: %q, %v", b, err)
	}
	procs := cgroup.Procs(paths)
	for _, pid := range []int{s.PID, daemon} {
		if !slices.Contains(procs, pid) {
			t.Errorf("pid %d is not in the session's cgroup %+v: %v", pid, paths, procs)
		}
	}

	out := e.MustRun("stop", s.ID)
	if !strings.Contains(out, s.ID+" killed(SIGTERM) (3 processes ended)") {
		t.Errorf("stop said %q, want the sh, its sleep and the daemon ended", out)
	}
	if proc.Alive(info.Identity) {
		t.Fatalf("the daemon (pid %d) survived the stop", daemon)
	}
	if _, err := os.Stat(paths.V2); paths.V2 != "" && !os.IsNotExist(err) {
		t.Errorf("the session's cgroup %s is left behind: %v", paths.V2, err)
	}
}

// A daemon that left the agent's session, group and tree, and dropped the
// session's marker, is out of every tree the session has once its monitor
// died: it is still ended (by the stop, or by the service when it sees the
// session lost), through the cgroup, and the stop's answer says how many
// processes it ended.
func TestCgroupEscapeAfterTheMonitorDied(t *testing.T) {
	e := cgroupEnv(t)
	pidFile := filepath.Join(t.TempDir(), "daemon.pid")
	s := e.Start("--", "sh", "-c", `setsid sh -c 'exec env -u `+home.SessionEnv+` sh -c "sleep 1000 & echo \$! > `+pidFile+`"'; sleep 1000`)
	daemon := readPID(t, pidFile)
	info, err := proc.Lookup(daemon)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Shim proc.Identity `json:"shim"`
	}
	b, _ := os.ReadFile(filepath.Join(e.SessionDir(s.ID), home.LaunchFile))
	if err := json.Unmarshal(b, &rec); err != nil || rec.Shim.PID == 0 {
		t.Fatalf("launch.json: %v", err)
	}
	killPID(t, rec.Shim.PID, 9)
	waitGone(t, rec.Shim.PID, 10*time.Second)

	var got api.Session
	e.JSON(&got, "stop", "--json", "--timeout", "1s", s.ID)
	// The agent died with its terminal (the monitor held it); the daemon
	// did not, and the service may have ended it already, as it ends what
	// a lost session left: the count may be 0, never absent.
	if got.StoppedProcesses == nil {
		t.Errorf("stop's answer says nothing of the processes it ended: %+v", got)
	}
	if proc.Alive(info.Identity) {
		t.Fatalf("the daemon (pid %d) survived the stop", daemon)
	}
}

// --memory-max 50M on a program that allocates 200 MB: the kernel's OOM
// killer ends it; the session reads killed(SIGKILL) with oom, never lost,
// and a session.oom event follows its session.stopped.
func TestOOMUnderMemoryMax(t *testing.T) {
	e := cgroupEnv(t, cgroup.Memory)
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("perl allocates the memory here, and is not installed")
	}
	s := e.Start("--memory-max", "50M", "--", perl, "-e", `my $x = "a" x (200*1024*1024); sleep 30`)
	if s.Limits == nil || s.Limits.MemoryMaxBytes != 50<<20 {
		t.Errorf("the session's limits: %+v", s.Limits)
	}
	got := e.WaitStatus(s.ID, api.StatusKilled, 20*time.Second)
	if got.Signal != "SIGKILL" || !got.OOM {
		t.Fatalf("session %+v: want killed by SIGKILL with oom", got)
	}
	if out := e.MustRun("status", s.ID); !strings.Contains(out, "oom") || !strings.Contains(out, "memory 50 MiB") {
		t.Errorf("status does not show the OOM kill and the limit:\n%s", out)
	}
	WaitFor(t, 10*time.Second, "session.stopped, then session.oom", func() bool {
		types := eventTypes(e.events(t, s.ID))
		i, j := slices.Index(types, api.EventSessionStopped), slices.Index(types, api.EventSessionOOM)
		return i >= 0 && j > i
	})
}

// A limit the service cannot enforce refuses the launch, saying why; a bad
// size is a usage error.
func TestLimitRefused(t *testing.T) {
	e := NewEnv(t)
	if _, errOut, code := e.Run("run", "--memory-max", "lots", "--", "true"); code != 2 || !strings.Contains(errOut, "--memory-max") {
		t.Errorf("--memory-max lots: exit %d, %s", code, errOut)
	}
	e.MustRun("list") // starts the service
	var st api.DaemonStatus
	e.JSON(&st, "daemon", "status", "--json")
	if st.Cgroups == nil {
		t.Fatal("daemon status says nothing of cgroups")
	}
	if st.Cgroups.Enabled && slices.Contains(st.Cgroups.Controllers, cgroup.Pids) {
		t.Skipf("this service can bound pids: %s", st.Cgroups.Summary)
	}
	_, errOut, code := e.Run("run", "--pids-max", "10", "--", "true")
	if code == 0 || !strings.Contains(errOut, "limits need") {
		t.Errorf("--pids-max without the controller: exit %d, %s", code, errOut)
	}
}

// A monitor killed with SIGKILL while the service was down removes
// nothing, and the service, which ends what a lost session left when it
// sees it end, never sees this one end: its cgroup, empty once the agent
// died with its terminal, is swept away when the service starts (and now
// and then), though nobody stops or waits for the session.
func TestCgroupLeftByAKilledMonitorIsRemoved(t *testing.T) {
	e := cgroupEnv(t)
	s := e.Start("--", "sleep", "1000")
	var paths cgroup.Paths
	b, err := os.ReadFile(filepath.Join(e.SessionDir(s.ID), home.CgroupFile))
	if err != nil || json.Unmarshal(b, &paths) != nil || paths.Empty() {
		t.Fatalf("cgroup.json: %q, %v", b, err)
	}
	e.MustRun("daemon", "stop")
	killPID(t, monitorPID(t, e, s.ID), 9)
	WaitFor(t, 10*time.Second, "the agent to end with its terminal", func() bool { return len(cgroup.Procs(paths)) == 0 })
	if !paths.Exists() {
		t.Fatal("the cgroup went with its monitor: nothing left to sweep")
	}
	e.MustRun("list")
	WaitFor(t, 10*time.Second, "the service to remove the cgroup", func() bool { return !paths.Exists() })
}
