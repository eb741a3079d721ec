//go:build linux

package resources

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/cgroup"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/testutil"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/spawn"
)

// hogEnv makes the test binary a program that waits for a line on its
// input, then takes that many MiB of memory (touched, so resident) and
// spins a CPU until killed.
const hogEnv = "AGENTCTL_RESOURCES_HOG"

func TestMain(m *testing.M) {
	if os.Getenv(hogEnv) != "" {
		hog()
		return
	}
	os.Exit(m.Run())
}

func hog() {
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	mib, _ := strconv.Atoi(strings.TrimSpace(line))
	mem := make([]byte, mib<<20)
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	fmt.Println("ready")
	x := 0
	for {
		x += int(mem[x%len(mem)])
		if x < 0 {
			fmt.Println(x)
		}
	}
}

// startHog starts the hog in a session of its own, after writing its pid
// to each of cgroupProcs; allocate tells it to take mib MiB and waits
// until it has.
func startHog(t *testing.T, cgroupProcs ...string) (cmd *exec.Cmd, allocate func(mib int)) {
	t.Helper()
	cmd = exec.Command("/bin/sh", "-c", `for f in "$@"; do echo $$ > "$f" || exit 1; done; exec "$HOG" -test.run='^$'`, "sh")
	cmd.Args = append(cmd.Args, cgroupProcs...)
	cmd.Env = append(cmd.Env, "HOG="+os.Args[0])
	cmd.Env = append(append(cmd.Env, os.Environ()...), hogEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, func(mib int) {
		fmt.Fprintf(in, "%d\n", mib)
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("the hog said %q, %v", line, err)
		}
	}
}

// target is a session of one process: the tree spawn stops.
func target(t testing.TB, pid int, dir string) Target {
	t.Helper()
	info, err := proc.Lookup(pid)
	if err != nil {
		t.Fatal(err)
	}
	tree := spawn.Tree{Leader: info.Identity, PGID: info.PGID}
	return Target{ID: "s" + strconv.Itoa(pid), Dir: dir, Started: info.StartTime, Members: tree.MembersIn}
}

// kernelCPU is the CPU time /proc/PID/stat gives pid.
func kernelCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	info, err := proc.Lookup(pid)
	if err != nil {
		t.Fatal(err)
	}
	return info.CPU
}

// checkCPU holds a sample's CPU percent against the kernel's own figure
// over a window just around it: the spinning hog is over 50% of a core,
// unless the machine's other load took more than half of its core away
// (the kernel's figure says so).
func checkCPU(t *testing.T, got api.Resources, kernel float64) {
	t.Helper()
	switch {
	case got.CPUPercent == nil || got.CPUWindowS < 0.9:
		t.Errorf("cpu %v%% over %.2fs; want a percent over the second between samples", deref(got.CPUPercent), got.CPUWindowS)
	case math.Abs(*got.CPUPercent-kernel) > 15:
		t.Errorf("cpu %.1f%%; the kernel's ticks over about the same second say %.1f%%", *got.CPUPercent, kernel)
	case kernel >= 55 && *got.CPUPercent <= 50:
		t.Errorf("cpu %.1f%% of a spinning process; want over 50%%", *got.CPUPercent)
	}
	t.Logf("cpu %.1f%% (the kernel: %.1f%%)", *got.CPUPercent, kernel)
}

func within(got, want uint64, frac float64) bool {
	return math.Abs(float64(got)-float64(want)) <= frac*float64(want)
}

// A session of a program that holds 100 MiB and spins a CPU reads its
// memory within 5% of the kernel's own figure, and more than 50% CPU over
// the interval between two samples.
func TestSampleProcessTree(t *testing.T) {
	cmd, allocate := startHog(t)
	allocate(100)
	dir := t.TempDir()
	tg := target(t, cmd.Process.Pid, dir)
	s := New()
	before, at := kernelCPU(t, cmd.Process.Pid), time.Now()
	s.Sample(context.Background(), []Target{tg}, Options{IO: true})
	time.Sleep(time.Second)
	got := s.Sample(context.Background(), []Target{tg}, Options{IO: true})[tg.ID]
	kernel := 100 * (kernelCPU(t, cmd.Process.Pid) - before).Seconds() / time.Since(at).Seconds()
	rss := testutil.ProcStatus(t, cmd.Process.Pid, "VmRSS")
	if got.Source != "processes" || got.MemoryBytes == nil || !within(*got.MemoryBytes, rss, 0.05) {
		t.Errorf("memory %v (%s); the kernel says %d", deref(got.MemoryBytes), got.Source, rss)
	}
	checkCPU(t, got, kernel)
	threads := testutil.ProcStatus(t, cmd.Process.Pid, "Threads")
	if got.PIDs == nil || uint64(*got.PIDs) != threads || got.Processes == nil || *got.Processes != 1 {
		t.Errorf("tasks %v, processes %v; want %d tasks of 1 process", deref(got.PIDs), deref(got.Processes), threads)
	}
	if got.IOReadBytes == nil || got.IOWriteBytes == nil {
		t.Error("no I/O figures for a process of the caller's")
	}
	// The peak is kept in the session's folder: an ended session says it.
	if got.MemoryPeakBytes == nil || *got.MemoryPeakBytes < *got.MemoryBytes {
		t.Fatalf("peak %v below the memory %d", deref(got.MemoryPeakBytes), *got.MemoryBytes)
	}
	ended := Ended(dir)
	if ended == nil || ended.MemoryPeakBytes == nil || !within(*ended.MemoryPeakBytes, rss, 0.05) {
		t.Errorf("Ended = %+v; want the peak %d kept", ended, rss)
	}
}

// A session's cgroup, where cgroup.json names one, is where its figures
// come from; they agree with the kernel's figures for its process.
func TestSampleCgroupV1(t *testing.T) {
	mem, pids, cpuacct := ownCgroupV1(t, "memory"), ownCgroupV1(t, "pids"), ownCgroupV1(t, "cpuacct")
	spec := cgroupSpec{V1: map[string]string{}}
	name := fmt.Sprintf("agentctl-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	var procsFiles []string
	for ctl, parent := range map[string]string{"memory": mem, "pids": pids, "cpuacct": cpuacct} {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Skipf("cannot make a cgroup here: %v", err)
		}
		t.Cleanup(func() {
			// A cgroup is removed once empty: after the hog's end (the
			// hog's own cleanup runs first, registered later).
			for range 100 {
				if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Errorf("cgroup %s left behind", dir)
		})
		spec.V1[ctl] = dir
		procsFiles = append(procsFiles, filepath.Join(dir, "cgroup.procs"))
	}
	// The hog starts inside the cgroup, so that everything it takes is
	// charged there (v1 does not move charges with a process).
	cmd, allocate := startHog(t, procsFiles...)
	// Only now does it allocate: memory is charged where it is taken.
	allocate(100)
	sessionDir := t.TempDir()
	b, _ := json.Marshal(spec)
	if err := os.WriteFile(filepath.Join(sessionDir, home.CgroupFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	tg := target(t, cmd.Process.Pid, sessionDir)
	s := New()
	before, at := kernelCPU(t, cmd.Process.Pid), time.Now()
	s.Sample(context.Background(), []Target{tg}, Options{IO: true})
	time.Sleep(time.Second)
	got := s.Sample(context.Background(), []Target{tg}, Options{IO: true})[tg.ID]
	kernel := 100 * (kernelCPU(t, cmd.Process.Pid) - before).Seconds() / time.Since(at).Seconds()
	// The cgroup is charged what its processes took, not the pages of
	// files cached before it (the test binary's own, read by whoever ran
	// it first): its memory is the process's anonymous resident set.
	anon := testutil.ProcStatus(t, cmd.Process.Pid, "RssAnon") + testutil.ProcStatus(t, cmd.Process.Pid, "RssShmem")
	if got.Source != "cgroup" {
		t.Fatalf("source %q; want cgroup", got.Source)
	}
	if got.MemoryBytes == nil || !within(*got.MemoryBytes, anon, 0.05) {
		t.Errorf("cgroup memory %v; the kernel says %d resident and anonymous (%d in all)", deref(got.MemoryBytes), anon, testutil.ProcStatus(t, cmd.Process.Pid, "VmRSS"))
	}
	if got.MemoryPeakBytes == nil || *got.MemoryPeakBytes < *got.MemoryBytes {
		t.Errorf("peak %v", deref(got.MemoryPeakBytes))
	}
	checkCPU(t, got, kernel)
	threads := testutil.ProcStatus(t, cmd.Process.Pid, "Threads")
	if got.PIDs == nil || uint64(*got.PIDs) != threads || got.Processes == nil || *got.Processes != 1 {
		t.Errorf("tasks %v, processes %v; want %d tasks of 1 process", deref(got.PIDs), deref(got.Processes), threads)
	}
	if got.IOReadBytes == nil {
		t.Error("no I/O figures: the cgroup's processes' own counters were to stand in")
	}
}

// ownCgroupV1 is the directory of this process's cgroup of a v1
// controller; the test is skipped where there is none to write.
func ownCgroupV1(t *testing.T, ctl string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && f[1] == ctl {
			dir := filepath.Join("/sys/fs/cgroup", ctl, f[2])
			if syscall.Access(dir, 2) != nil {
				t.Skipf("cgroup %s is not writable here", dir)
			}
			return dir
		}
	}
	t.Skipf("no cgroup v1 %s controller here", ctl)
	return ""
}

// A cgroup.json whose cgroup is gone (removed, or never made) leaves the
// session's figures to its process tree; a process that ended between the
// table's read and its I/O counters' is left out of the sum, not a reason
// to know nothing.
func TestSampleFallsBackAndSkipsTheGone(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, home.CgroupFile), []byte(`{"v2":"/sys/fs/cgroup/unified/agentctl-gone","v1":{"memory":"/sys/fs/cgroup/memory/agentctl-gone"}}`), 0o600)
	tg := target(t, cmd.Process.Pid, dir)
	s := New()
	defer s.Close()
	clock := time.Now()
	s.now = func() time.Time { return clock }
	// Twice: the second finds the cgroup gone as the first left it.
	for range 2 {
		got, ok := s.Sample(context.Background(), []Target{tg}, Options{IO: true})[tg.ID]
		if !ok || got.Source != "processes" || got.MemoryBytes == nil || *got.MemoryBytes == 0 {
			t.Errorf("sample %+v, %v; want the process tree's figures", got, ok)
		}
		clock = clock.Add(2 * time.Second)
	}
	if len(s.rd.files) != 0 {
		t.Errorf("%d sessions' cgroup files kept for a cgroup that is gone", len(s.rd.files))
	}

	gone := exec.Command("true")
	gone.Run()
	r, w := processIO([]int{gone.Process.Pid, cmd.Process.Pid}, make([]byte, statBuf))
	if r == nil || w == nil {
		t.Error("an ended process among the members made the I/O unknown")
	}
}

// A session's first sample measures its CPU since its start; the next, over
// the interval since the last; one within minWindow of the last gives that
// one's again; a sum that went down (a process ended unwaited-for) is not
// a negative percent.
func TestPercent(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New()
	k := &kept{}
	tg := Target{Started: start}
	steps := []struct {
		at     time.Duration
		cpu    time.Duration
		pct    float64
		window time.Duration
	}{
		{10 * time.Second, 5 * time.Second, 50, 10 * time.Second},
		{12 * time.Second, 7 * time.Second, 100, 2 * time.Second},
		{12*time.Second + 100*time.Millisecond, 7 * time.Second, 100, 2 * time.Second},
		{14 * time.Second, 6 * time.Second, 0, 2*time.Second - 0},
	}
	for i, st := range steps {
		pct, window := s.percent(k, tg, st.cpu, start.Add(st.at))
		if math.Abs(pct-st.pct) > 0.001 || window != st.window {
			t.Errorf("step %d: %.2f%% over %s; want %.2f%% over %s", i, pct, window, st.pct, st.window)
		}
	}
}

// An ended session's peak is its exit record's (the cgroup's), else the
// one the sampler kept; nil when neither says.
func TestEnded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		exit, kept string
		want       uint64
	}{
		{"the exit record's", `{"exit_code":0,"ended_at":"2026-01-01T00:00:00Z","memory_peak_bytes":500}`, `{"memory_peak_bytes":400}`, 500},
		{"the kept one", `{"exit_code":0,"ended_at":"2026-01-01T00:00:00Z"}`, `{"memory_peak_bytes":400}`, 400},
		{"neither", `{"exit_code":0}`, ``, 0},
		{"a damaged record", `{"exit_code":`, `not json`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, home.ExitFile), []byte(tc.exit), 0o600)
			if tc.kept != "" {
				os.WriteFile(filepath.Join(dir, home.PeakFile), []byte(tc.kept), 0o600)
			}
			got := Ended(dir)
			switch {
			case tc.want == 0 && got != nil:
				t.Errorf("Ended = %+v; want nil", got)
			case tc.want != 0 && (got == nil || *got.MemoryPeakBytes != tc.want):
				t.Errorf("Ended = %+v; want a peak of %d", got, tc.want)
			}
		})
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return "nil"
	}
	return *p
}

// A session's cgroup files, kept open between samples, say what is true at
// each: a process that joins is counted; the cgroup can still be removed
// once its processes ended, and the sampler then gives its descriptors
// back. Both as the service makes cgroups here, and with v1's alone (whose
// cgroup.procs, kept open, would go on listing what it first listed).
func TestSampleKeptCgroupFiles(t *testing.T) {
	m := cgroup.Detect(t.TempDir())
	if !m.Status().Enabled {
		t.Skipf("no cgroups here: %s", m.Status().Reason)
	}
	t.Cleanup(m.Close)
	for i, tc := range []struct {
		name string
		v1   bool
	}{{"as made here", false}, {"v1 alone", true}} {
		t.Run(tc.name, func(t *testing.T) {
			p := m.Paths(fmt.Sprintf("kept%d", i))
			if err := cgroup.Create(p, cgroup.Limits{}); err != nil {
				t.Skipf("cannot make a cgroup here: %v", err)
			}
			t.Cleanup(func() { cgroup.Remove(p) })
			spec := p
			if tc.v1 {
				if len(p.V1) == 0 {
					t.Skip("no v1 controllers in use here")
				}
				spec.V2 = ""
			}
			var procs []string
			for _, d := range p.V1 {
				procs = append(procs, filepath.Join(d, "cgroup.procs"))
			}
			if p.V2 != "" {
				procs = append(procs, filepath.Join(p.V2, "cgroup.procs"))
			}
			start := func() *exec.Cmd {
				cmd := exec.Command("/bin/sh", "-c", `for f in "$@"; do echo $$ > "$f" || exit 1; done; exec sleep 60`, "sh")
				cmd.Args = append(cmd.Args, procs...)
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
				return cmd
			}
			dir := t.TempDir()
			b, _ := json.Marshal(spec)
			if err := os.WriteFile(filepath.Join(dir, home.CgroupFile), b, 0o600); err != nil {
				t.Fatal(err)
			}
			s := New()
			defer s.Close()
			clock := time.Now()
			s.now = func() time.Time { return clock }
			left := s.rd.fds.left
			first := start()
			tg := target(t, first.Process.Pid, dir)
			count := func(want int) {
				t.Helper()
				// The sleeps are in once they run sleep, no longer sh.
				var got api.Resources
				for range 200 {
					clock = clock.Add(time.Second)
					got = s.Sample(context.Background(), []Target{tg}, Options{})[tg.ID]
					if got.Source == "cgroup" && deref(got.Processes) == want && deref(got.PIDs) == want {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
				t.Fatalf("%s: %v processes, %v tasks; want %d of each", got.Source, deref(got.Processes), deref(got.PIDs), want)
			}
			count(1)
			second := start()
			count(2)
			if s.rd.fds.left >= left {
				t.Errorf("%d descriptors left of %d: none kept open", s.rd.fds.left, left)
			}
			for _, cmd := range []*exec.Cmd{first, second} {
				cmd.Process.Kill()
				cmd.Wait()
			}
			if err := cgroup.Remove(p); err != nil {
				t.Fatalf("remove the cgroup while its files are kept open: %v", err)
			}
			clock = clock.Add(time.Second)
			if got, ok := s.Sample(context.Background(), []Target{tg}, Options{})[tg.ID]; ok && got.Source == "cgroup" {
				t.Errorf("figures %+v of a removed cgroup", got)
			}
			if s.rd.fds.left != left || len(s.rd.files) != 0 {
				t.Errorf("%d descriptors left of %d, %d sessions' files kept, once the cgroup is gone", s.rd.fds.left, left, len(s.rd.files))
			}
		})
	}
}
