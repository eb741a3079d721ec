//go:build linux

package spawn

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/cgroup"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

// cgroups returns a cgroup manager of the test's own, or skips with the
// reason this machine gives none (or none with the controllers needed).
func cgroups(t *testing.T, need ...string) *cgroup.Manager {
	t.Helper()
	m := cgroup.Detect(t.TempDir())
	t.Cleanup(m.Close)
	st := m.Status()
	if !st.Enabled {
		t.Skipf("no cgroup per session on this machine: %s", st.Reason)
	}
	for _, c := range need {
		if !slices.Contains(st.Controllers, c) {
			t.Skipf("no %s controller for sessions' cgroups on this machine: %s", c, st)
		}
	}
	return m
}

// startInCgroup starts argv as a session with a cgroup of its own.
func startInCgroup(t *testing.T, m *cgroup.Manager, limits cgroup.Limits, argv ...string) (Record, string, cgroup.Paths) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "s")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	id := "cg" + strconv.FormatInt(time.Now().UnixNano(), 36)
	paths := m.Paths(id)
	s := NewStarter(context.Background(), os.Args[0], false, slog.New(slog.DiscardHandler))
	rec, err := s.Start(context.Background(), dir, Spec{
		Record: Record{ID: id, Argv: argv, Cwd: t.TempDir()},
		Env:    []string{"PATH=" + os.Getenv("PATH")},
		Cgroup: &CgroupSpec{Paths: paths, Limits: limits},
	})
	if err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, home.ShimLog))
		t.Fatalf("%v; the monitor's log: %s", err, b)
	}
	t.Cleanup(func() {
		StopWithoutShim(context.Background(), dir, rec, StopOptions{Force: true})
		WaitExitBounded(context.Background(), rec.Shim, 10*time.Second)
		cgroup.Remove(paths)
	})
	return rec, dir, paths
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The agent's whole tree is in the session's cgroup from its start, the
// monitor is not (an OOM kill or a stop of the session must not end it),
// the folder names the cgroup, a stop says how many processes it ended, and
// the cgroup is gone with the session.
func TestCgroupHoldsTheAgentsTree(t *testing.T) {
	m := cgroups(t)
	rec, dir, paths := startInCgroup(t, m, cgroup.Limits{}, "sh", "-c", "sleep 1000 & sleep 1000")
	got, err := ReadCgroup(dir)
	if err != nil || got.V2 != paths.V2 || len(got.V1) != len(paths.V1) {
		t.Fatalf("cgroup.json %+v, %v; want %+v", got, err, paths)
	}
	if fi, err := os.Stat(filepath.Join(dir, home.CgroupFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cgroup.json: %v, %v; want mode 0600", fi, err)
	}
	waitFor(t, "the agent and its two sleeps in the cgroup", func() bool { return len(cgroup.Procs(paths)) == 3 })
	procs := cgroup.Procs(paths)
	if !slices.Contains(procs, rec.Process.PID) {
		t.Errorf("the agent (pid %d) is not in its cgroup: %v", rec.Process.PID, procs)
	}
	if slices.Contains(procs, rec.Shim.PID) {
		t.Errorf("the monitor (pid %d) stayed in the session's cgroup", rec.Shim.PID)
	}
	stopped, err := Stop(context.Background(), dir, StopOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if stopped.Processes != 3 {
		t.Errorf("stop ended %d processes, want 3 (sh and two sleeps)", stopped.Processes)
	}
	if stopped.Exit == nil || stopped.Exit.Signal != "SIGKILL" || stopped.Exit.OOM {
		t.Errorf("exit %+v, want killed by SIGKILL, no OOM", stopped.Exit)
	}
	WaitExitBounded(context.Background(), rec.Shim, 10*time.Second)
	for _, d := range append([]string{paths.V2}, mapValues(paths.V1)...) {
		if d == "" {
			continue
		}
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the session's cgroup %s is left behind: %v", d, err)
		}
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// A daemon that double-forked into a session and process group of its own
// and dropped the session's marker from its environment leaves the tree
// for good once the monitor is gone (killed): the stop without a monitor
// still ends it, through the cgroup.
func TestCgroupStopEscape(t *testing.T) {
	m := cgroups(t)
	pidFile := filepath.Join(t.TempDir(), "daemon.pid")
	script := `setsid sh -c 'exec env -u ` + home.SessionEnv + ` sh -c "sleep 1000 & echo \$! > ` + pidFile + `"' ; sleep 1000`
	rec, dir, _ := startInCgroup(t, m, cgroup.Limits{}, "env", home.SessionEnv+"=escape", "sh", "-c", script)
	var daemon int
	waitFor(t, "the daemon's pid", func() bool {
		b, err := os.ReadFile(pidFile)
		daemon, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && daemon > 0
	})
	// The monitor dies: the daemon goes to another reaper, outside every
	// tree the session has.
	unix.Kill(rec.Shim.PID, unix.SIGKILL)
	WaitExitBounded(context.Background(), rec.Shim, 10*time.Second)
	info, err := proc.Lookup(daemon)
	if err != nil {
		t.Fatalf("the daemon (pid %d) is not running: %v", daemon, err)
	}
	if info.SID == rec.PGID || info.PGID == rec.PGID {
		t.Fatalf("the daemon did not leave the agent's session and group: %+v", info)
	}
	n, err := StopWithoutShim(context.Background(), dir, rec, StopOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	// The agent may have died with its terminal, which the monitor held.
	if n < 1 {
		t.Errorf("stop ended %d processes, want the daemon at least", n)
	}
	if proc.Alive(info.Identity) {
		t.Fatalf("the daemon (pid %d) survived the stop", daemon)
	}
}

// A session over its memory limit is ended by the kernel's OOM killer: the
// agent reads killed by SIGKILL, the exit record says oom and the peak.
func TestCgroupOOMKill(t *testing.T) {
	m := cgroups(t, cgroup.Memory)
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("perl allocates the memory here, and is not installed")
	}
	const limit = 50 << 20
	rec, dir, _ := startInCgroup(t, m, cgroup.Limits{MemoryMax: limit}, perl, "-e", `my $x = "a" x (200*1024*1024); sleep 30`)
	WaitExitBounded(context.Background(), rec.Shim, 20*time.Second)
	exit, err := ReadExit(dir)
	if err != nil || exit == nil {
		t.Fatalf("exit record %+v, %v", exit, err)
	}
	if exit.Signal != "SIGKILL" || !exit.OOM {
		t.Fatalf("exit %+v, want SIGKILL with oom", exit)
	}
	if exit.MemoryPeakBytes <= 0 || exit.MemoryPeakBytes > limit+(1<<20) {
		t.Errorf("memory peak %d bytes, want above 0 and about the %d limit at most", exit.MemoryPeakBytes, limit)
	}
}

// A limit that cannot be applied fails the start; the session's folder
// names no cgroup.
func TestCgroupLimitRefused(t *testing.T) {
	m := cgroups(t)
	dir := filepath.Join(t.TempDir(), "s")
	os.Mkdir(dir, 0o700)
	paths := m.Paths("refused")
	paths.V2 = filepath.Join(t.TempDir(), "not-a-cgroup")
	if paths.V1 != nil {
		for c := range paths.V1 {
			paths.V1[c] = filepath.Join(t.TempDir(), "not-a-cgroup")
		}
	}
	s := NewStarter(context.Background(), os.Args[0], false, slog.New(slog.DiscardHandler))
	_, err := s.Start(context.Background(), dir, Spec{
		Record: Record{ID: "refused", Argv: []string{"true"}, Cwd: t.TempDir()},
		Env:    []string{"PATH=" + os.Getenv("PATH")},
		Cgroup: &CgroupSpec{Paths: paths, Limits: cgroup.Limits{PidsMax: 10}},
	})
	if err == nil || !strings.Contains(err.Error(), "limits") {
		t.Fatalf("start with a limit that cannot apply: %v, want an error about the limits", err)
	}
}

// Each limit is written where the session's cgroup has its controller:
// cgroup2, or the v1 hierarchy standing in for it on a hybrid host.
func TestCgroupLimitsApplied(t *testing.T) {
	m := cgroups(t, cgroup.Memory, cgroup.Pids, cgroup.CPU)
	_, _, paths := startInCgroup(t, m, cgroup.Limits{MemoryMax: 64 << 20, PidsMax: 7, CPUs: 0.5}, "sleep", "1000")
	dir := func(c string) string {
		if d := paths.V1[c]; d != "" {
			return d
		}
		return paths.V2
	}
	for _, tc := range []struct {
		controller string
		v1, v2     string // file in a v1 hierarchy, in cgroup2
		want1      string
		want2      string
	}{
		{cgroup.Memory, "memory.limit_in_bytes", "memory.max", "67108864", "67108864"},
		{cgroup.Pids, "pids.max", "pids.max", "7", "7"},
		{cgroup.CPU, "cpu.cfs_quota_us", "cpu.max", "50000", "50000 100000"},
	} {
		file, want := tc.v2, tc.want2
		if paths.V1[tc.controller] != "" {
			file, want = tc.v1, tc.want1
		}
		b, err := os.ReadFile(filepath.Join(dir(tc.controller), file))
		if got := strings.TrimSpace(string(b)); err != nil || got != want {
			t.Errorf("%s: %s is %q, %v; want %q", tc.controller, file, got, err, want)
		}
	}
}

// A monitor killed with SIGKILL leaves its session's cgroup behind, empty
// once the agent is gone: RemoveLeftCgroup removes it then, and not while
// the session runs.
func TestRemoveLeftCgroup(t *testing.T) {
	m := cgroups(t)
	rec, dir, paths := startInCgroup(t, m, cgroup.Limits{}, "sleep", "1000")
	waitFor(t, "the agent in its cgroup", func() bool { return len(cgroup.Procs(paths)) == 1 })
	if removed, err := RemoveLeftCgroup(dir); removed || err != nil || !paths.Exists() {
		t.Fatalf("RemoveLeftCgroup of a running session = %v, %v; the cgroup there: %v", removed, err, paths.Exists())
	}
	unix.Kill(rec.Shim.PID, unix.SIGKILL)
	WaitExitBounded(context.Background(), rec.Shim, 10*time.Second)
	// The pty's hangup ends the agent; whatever it did, it is ended here.
	unix.Kill(rec.Process.PID, unix.SIGKILL)
	waitFor(t, "the agent's end", func() bool { return !proc.Alive(rec.Process) && len(cgroup.Procs(paths)) == 0 })
	if !paths.Exists() {
		t.Fatal("the cgroup went with its monitor: nothing left to test")
	}
	if removed, err := RemoveLeftCgroup(dir); !removed || err != nil {
		t.Fatalf("RemoveLeftCgroup of an ended session = %v, %v; want it removed", removed, err)
	}
	if paths.Exists() {
		t.Errorf("the session's cgroup %+v is still there", paths)
	}
	if removed, err := RemoveLeftCgroup(dir); removed || err != nil {
		t.Errorf("RemoveLeftCgroup again = %v, %v; want nothing to do", removed, err)
	}
}
