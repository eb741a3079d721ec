//go:build linux

package cgroup

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseMountinfoAndProcCgroup(t *testing.T) {
	t.Parallel()
	mi := []byte(`25 19 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
30 25 0:27 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
31 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
32 25 0:29 /ns /sys/fs/cgroup/pids\040x rw,nosuid - cgroup cgroup rw,pids
`)
	v2, v1 := parseMountinfo(mi)
	if v2 != (mount{point: "/sys/fs/cgroup/unified", root: "/"}) {
		t.Errorf("v2 mount %+v", v2)
	}
	if v1[Memory].point != "/sys/fs/cgroup/memory" || v1[CPU].point != "/sys/fs/cgroup/cpu,cpuacct" || v1[Pids] != (mount{point: "/sys/fs/cgroup/pids x", root: "/ns"}) {
		t.Errorf("v1 mounts %+v", v1)
	}
	own, has, ownV1 := parseProcCgroup([]byte("4:memory:/process_api/x\n2:cpu,cpuacct:/\n0::/user.slice/a.service\n"))
	if !has || own != "/user.slice/a.service" || ownV1[Memory] != "/process_api/x" || ownV1[CPU] != "/" || ownV1["cpuacct"] != "/" {
		t.Errorf("own %q %v %+v", own, has, ownV1)
	}
	for _, tc := range []struct {
		mt   mount
		own  string
		want string
		ok   bool
	}{
		{mount{"/sys/fs/cgroup", "/"}, "/", "/sys/fs/cgroup", true},
		{mount{"/sys/fs/cgroup", "/"}, "/a/b", "/sys/fs/cgroup/a/b", true},
		{mount{"/c", "/ns"}, "/ns/a", "/c/a", true},
		{mount{"/c", "/ns"}, "/ns", "/c", true},
		{mount{"/c", "/ns"}, "/other", "", false},
		{mount{}, "/a", "", false},
		{mount{"/sys/fs/cgroup", "/"}, "/../../init.scope", "", false},
	} {
		if got, ok := dirOf(tc.mt, tc.own); got != tc.want || ok != tc.ok {
			t.Errorf("dirOf(%+v, %q) = %q, %v; want %q, %v", tc.mt, tc.own, got, ok, tc.want, tc.ok)
		}
	}
}

// Without a cgroup2 mount or a writable cgroup, the service says why and
// gets no cgroups.
func TestDetectWithoutDelegation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, mountinfo, cgroup, reason string
	}{
		{"no cgroup2", "1 0 0:1 / / rw - ext4 /dev/root rw\n", "0::/\n", "no cgroup2 file system is mounted"},
		{"outside", "26 25 0:23 /ns /x rw - cgroup2 cgroup2 rw\n", "0::/elsewhere\n", "outside the cgroup2 hierarchy"},
		{"not writable", "26 25 0:23 / " + t.TempDir() + " rw - cgroup2 cgroup2 rw\n", "0::/missing\n", "not delegated"},
	} {
		m := &Manager{v1: map[string]string{}}
		m.detect([]byte(tc.mountinfo), []byte(tc.cgroup), "agentctl-test")
		st := m.Status()
		if st.Enabled || !contains(st.Reason, tc.reason) {
			t.Errorf("%s: status %+v, want disabled because %q", tc.name, st, tc.reason)
		}
		if !m.Paths("x").Empty() {
			t.Errorf("%s: paths for a session without cgroups: %+v", tc.name, m.Paths("x"))
		}
		if got := st.String(); !contains(got, "no: ") {
			t.Errorf("%s: %q", tc.name, got)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// This machine, as the service sees it: where sessions' cgroups go.
func TestDetectHere(t *testing.T) {
	m := Detect(t.TempDir())
	defer m.Close()
	st := m.Status()
	t.Logf("per-session cgroups: %s", st)
	if !st.Enabled {
		return
	}
	p := m.Paths("probe")
	if err := Create(p, Limits{}); err != nil {
		t.Fatal(err)
	}
	for _, d := range p.dirs() {
		if _, err := os.Stat(filepath.Join(d, "cgroup.procs")); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	if procs := Procs(p); len(procs) != 0 || slices.Contains(procs, os.Getpid()) {
		t.Errorf("a new cgroup holds %v", procs)
	}
	if err := Remove(p); err != nil {
		t.Fatal(err)
	}
	// The service's own directory goes with its last session, and comes
	// back with the next.
	for _, d := range p.dirs() {
		if parent := filepath.Dir(d); isOwnBase(parent) {
			if _, err := os.Stat(parent); !os.IsNotExist(err) {
				t.Errorf("%s stayed after its last session: %v", parent, err)
			}
		}
	}
	if err := Create(p, Limits{}); err != nil {
		t.Fatalf("a session after the last: %v", err)
	}
	if err := Remove(p); err != nil {
		t.Fatal(err)
	}
}

func TestStatusCheck(t *testing.T) {
	t.Parallel()
	st := Status{Enabled: true, V2: "/c", Controllers: []string{Memory}}
	if err := st.Check(Limits{MemoryMax: 1}); err != nil {
		t.Error(err)
	}
	if err := st.Check(Limits{PidsMax: 1}); err == nil || !contains(err.Error(), "pids controller") {
		t.Errorf("pids without the controller: %v", err)
	}
	if err := (Status{Reason: "because"}).Check(Limits{CPUs: 1}); err == nil || !contains(err.Error(), "because") {
		t.Errorf("limits without cgroups: %v", err)
	}
	if err := (Status{}).Check(Limits{}); err != nil {
		t.Errorf("no limits: %v", err)
	}
}

// Where a delegated service puts its sessions: a systemd unit without
// DelegateSubgroup= (the service moves itself into a leaf, and leaves the
// controllers alone, or the unit's next start would fail), and one that
// started it in its "service" leaf already.
func TestDetectDelegated(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mk := func(dir string, files ...string) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("memory pids\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	unit := filepath.Join(root, "app.slice", "agentctl.service")
	mk(unit, "cgroup.procs", "cgroup.controllers", "cgroup.subtree_control")
	mk(filepath.Join(unit, "service"))
	os.WriteFile(filepath.Join(unit, "service", "cgroup.procs"), nil, 0o644)
	mountinfo := []byte("26 25 0:23 / " + root + " rw - cgroup2 cgroup2 rw\n")

	m := &Manager{v1: map[string]string{}}
	m.detect(mountinfo, []byte("0::/app.slice/agentctl.service\n"), "agentctl-test")
	st := m.Status()
	if !st.Enabled || st.V2 != unit || st.Note == "" || len(st.Controllers) != 0 {
		t.Errorf("at the top of a unit: %+v; want sessions below the unit, no controllers, and why", st)
	}
	if b, _ := os.ReadFile(filepath.Join(unit, "service", "cgroup.procs")); string(b) != strconv.Itoa(os.Getpid()) {
		t.Errorf("the service did not move into its leaf: %q", b)
	}
	if got := m.Paths("s1").V2; got != filepath.Join(unit, "s1") {
		t.Errorf("session cgroup %s", got)
	}

	m = &Manager{v1: map[string]string{}}
	m.detect(mountinfo, []byte("0::/app.slice/agentctl.service/service\n"), "agentctl-test")
	if st := m.Status(); !st.Enabled || st.V2 != unit || st.Note != "" {
		t.Errorf("in the unit's service leaf: %+v; want sessions below the unit", st)
	}

	// Started from inside a session (its CLI auto-started it): the
	// service leaves the session's cgroup, which the session's end kills.
	os.WriteFile(filepath.Join(unit, "service", "cgroup.procs"), nil, 0o644)
	mk(filepath.Join(unit, "01session"), "cgroup.procs")
	m = &Manager{v1: map[string]string{}}
	m.detect(mountinfo, []byte("0::/app.slice/agentctl.service/01session\n"), "agentctl-test")
	if st := m.Status(); !st.Enabled || st.V2 != unit {
		t.Errorf("started inside a session: %+v; want sessions below the unit", st)
	}
	if b, _ := os.ReadFile(filepath.Join(unit, "service", "cgroup.procs")); string(b) != strconv.Itoa(os.Getpid()) {
		t.Errorf("the service did not leave the session's cgroup for its leaf: %q", b)
	}
}

// A service started inside a session of a service without delegation
// (root, no systemd) leaves for where that service was.
func TestDetectLeavesASessionsCgroup(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "agentctl-k", "01session"), 0o755)
	os.WriteFile(filepath.Join(root, "cgroup.procs"), nil, 0o644)
	if got := leaveSession(mount{point: root, root: "/"}, "/agentctl-k/01session"); got != "/" {
		t.Errorf("left for %q, want the root cgroup", got)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "cgroup.procs")); string(b) != strconv.Itoa(os.Getpid()) {
		t.Errorf("the service did not move: %q", b)
	}
	for _, own := range []string{"/", "/top", "/user.slice/app.slice/x.scope"} {
		if got := leaveSession(mount{point: root, root: "/"}, own); got != own {
			t.Errorf("%s: moved to %q", own, got)
		}
	}
}
