package systemd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/proc"
)

// readPID waits for a pid written to path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	waitFor(t, "a pid in "+path, func() bool {
		b, err := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// cgroupOf is pid's cgroup2 path.
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return rest
		}
	}
	t.Fatalf("pid %d has no cgroup2 path: %q", pid, b)
	return ""
}

// sessionEvents reads the session.* events of session id journaled so far.
func (e *env) sessionEvents(id string) []string {
	cmd := exec.Command(e.bin, "events", "--since", "0", "--type", "session.*")
	cmd.Env = append(slices.Clone(e.vars), "AGENTCTL_NO_AUTOSTART=1")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	timer := time.AfterFunc(2*time.Second, func() { cmd.Process.Kill() })
	cmd.Wait()
	timer.Stop()
	var types []string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var ev api.Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.SessionID == id {
			types = append(types, ev.Type)
		}
	}
	return types
}

// The service of a unit with Delegate=yes gives each session a cgroup below
// the unit's: it holds the agent's tree, a daemon that double-forked into a
// session and group of its own included, which `stop` ends with the rest;
// --memory-max 50M ends a program allocating 200 MB as an OOM kill (through
// the v1 memory controller where cgroup2 lacks it, delegated to the user's
// manager as a system manager would).
func TestCgroupUnderSystemdUnit(t *testing.T) {
	e := newEnv(t)
	e.must("service", "install")
	e.servedByUnit(0)
	var st api.DaemonStatus
	e.mustJSON(&st, "daemon", "status", "--json")
	if st.Cgroups == nil || !st.Cgroups.Enabled || !strings.Contains(st.Cgroups.V2, "/"+unit) {
		t.Fatalf("per-session cgroups of the unit's service: %+v", st.Cgroups)
	}
	if out := e.must("daemon", "status"); !strings.Contains(out, "per-session cgroups: yes (v2 at ") {
		t.Errorf("daemon status:\n%s", out)
	}
	t.Logf("per-session cgroups: %s", st.Cgroups.Summary)

	pidFile := filepath.Join(e.home, "daemon.pid")
	var s api.Session
	e.mustJSON(&s, "run", "--json", "--", "sh", "-c", `setsid sh -c 'sleep 1000 & echo $! > `+pidFile+`'; sleep 1000`)
	daemon := readPID(t, pidFile)
	info, err := proc.Lookup(daemon)
	if err != nil {
		t.Fatal(err)
	}
	want := "/" + unit + "/" + s.ID
	for _, pid := range []int{s.PID, daemon} {
		if cg := cgroupOf(t, pid); !strings.HasSuffix(cg, want) {
			t.Errorf("pid %d is in cgroup %s, want the session's (…%s)", pid, cg, want)
		}
	}
	out := e.must("stop", s.ID)
	if !strings.Contains(out, "(3 processes ended)") {
		t.Errorf("stop said %q, want the sh, its sleep and the daemon ended", out)
	}
	if proc.Alive(info.Identity) {
		t.Fatalf("the daemon (pid %d) survived the stop", daemon)
	}

	if !slices.Contains(st.Cgroups.Controllers, "memory") {
		// The harness of scripts/systemd-harness.sh delegates one (and
		// says so); a user manager elsewhere may have none.
		if os.Getenv("AGENTCTL_CGROUP_MEMORY") == "1" {
			t.Fatalf("no memory controller for the sessions: %s", st.Cgroups.Summary)
		}
		t.Skipf("no memory controller for the sessions here: %s", st.Cgroups.Summary)
	}
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("perl allocates the memory here, and is not installed")
	}
	e.mustJSON(&s, "run", "--json", "--memory-max", "50M", "--", perl, "-e", `my $x = "a" x (200*1024*1024); sleep 30`)
	var got api.Session
	waitFor(t, "the session to end", func() bool {
		e.mustJSON(&got, "status", "--json", s.ID)
		return got.Status.Ended()
	})
	if got.Status != api.StatusKilled || got.Signal != "SIGKILL" || !got.OOM {
		t.Fatalf("session %s is %s (signal %q, oom %v); want killed by SIGKILL with oom", s.ID, got.Status, got.Signal, got.OOM)
	}
	waitFor(t, "a session.oom event", func() bool { return slices.Contains(e.sessionEvents(s.ID), api.EventSessionOOM) })
}

// Without delegation (a service auto-started outside any unit, in a cgroup
// the user may not write), the service says so, sessions still run and
// stop, and a limit is refused with the reason.
func TestCgroupDelegationAbsent(t *testing.T) {
	e := newEnv(t)
	if _, errOut, code := e.agentctl(nil, "list"); code != 0 {
		t.Fatalf("list with an auto-started service: exit %d: %s", code, errOut)
	}
	var st api.DaemonStatus
	e.mustJSON(&st, "daemon", "status", "--json")
	if st.Cgroups == nil || st.Cgroups.Enabled || st.Cgroups.Reason == "" {
		t.Fatalf("a service outside any unit, in cgroup %s: %+v; want no cgroups, and why", cgroupOf(t, st.PID), st.Cgroups)
	}
	if out := e.must("daemon", "status"); !strings.Contains(out, "per-session cgroups: no: ") {
		t.Errorf("daemon status:\n%s", out)
	}
	pidFile := filepath.Join(e.home, "daemon.pid")
	var s api.Session
	e.mustJSON(&s, "run", "--json", "--", "sh", "-c", `setsid sh -c 'sleep 1000 & echo $! > `+pidFile+`'; sleep 1000`)
	daemon := readPID(t, pidFile)
	info, err := proc.Lookup(daemon)
	if err != nil {
		t.Fatal(err)
	}
	e.must("stop", s.ID)
	if proc.Alive(info.Identity) {
		t.Fatalf("the daemon (pid %d) survived the stop", daemon)
	}
	_, errOut, code := e.agentctl(nil, "run", "--memory-max", "50M", "--", "true")
	if code == 0 || !strings.Contains(errOut, st.Cgroups.Reason) {
		t.Errorf("--memory-max without cgroups: exit %d: %s; want refused with %q", code, errOut, st.Cgroups.Reason)
	}
}
