//go:build linux

package resources

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// readCgroup over cgroup folders as the kernel lays them out (v2, v1
// controllers, a hybrid of both), made of real files: each figure from v2
// where its file is there, else v1's; a missing file is an unknown figure,
// not a zero; no readable file at all is no cgroup.
func TestReadCgroupFiles(t *testing.T) {
	t.Parallel()
	write := func(dir string, files map[string]string) string {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	root := t.TempDir()
	v2 := write(filepath.Join(root, "v2"), map[string]string{
		"cpu.stat":       "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n",
		"memory.current": "110000000\n",
		"memory.stat":    "anon 100000000\nfile 10000000\ninactive_file 4000000\nactive_file 6000000\n",
		"memory.peak":    "150000000\n",
		"pids.current":   "9\n",
		"cgroup.procs":   "101\n102\n",
		"io.stat":        "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n",
	})
	// cgroup2 with no controllers (a hybrid machine's): cpu.stat and
	// cgroup.procs only.
	bare := write(filepath.Join(root, "unified"), map[string]string{
		"cpu.stat":     "usage_usec 1000000\n",
		"cgroup.procs": "101\n",
	})
	mem := write(filepath.Join(root, "memory"), map[string]string{
		"memory.usage_in_bytes":     "50000000\n",
		"memory.stat":               "cache 9000000\ninactive_file 1\ntotal_inactive_file 2000000\n",
		"memory.max_usage_in_bytes": "60000000\n",
		"cgroup.procs":              "101\n",
	})
	pids := write(filepath.Join(root, "pids"), map[string]string{"pids.current": "4\n", "cgroup.procs": "101\n"})
	cpuacct := write(filepath.Join(root, "cpuacct"), map[string]string{"cpuacct.usage": "3000000000\n", "cgroup.procs": "101\n"})
	memOnly := write(filepath.Join(root, "memonly"), map[string]string{"memory.usage_in_bytes": "50000000\n"})

	u := func(v uint64) *uint64 { return &v }
	d := func(v time.Duration) *time.Duration { return &v }
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		name string
		spec cgroupSpec
		want *figures
	}{
		{"v2", cgroupSpec{V2: v2}, &figures{source: "cgroup", cpu: d(2500 * time.Millisecond), mem: u(106000000), peak: u(150000000), tasks: n(9), processes: n(2), ioRead: u(4096), ioWrite: u(8192)}},
		{"v1", cgroupSpec{V1: map[string]string{"memory": mem, "pids": pids, "cpuacct": cpuacct}},
			&figures{source: "cgroup", cpu: d(3 * time.Second), mem: u(48000000), peak: u(60000000), tasks: n(4), processes: n(1)}},
		{"hybrid: cpu from v2, memory and tasks from v1", cgroupSpec{V2: bare, V1: map[string]string{"memory": mem, "pids": pids}},
			&figures{source: "cgroup", cpu: d(time.Second), mem: u(48000000), peak: u(60000000), tasks: n(4), processes: n(1)}},
		{"memory alone: the rest unknown", cgroupSpec{V1: map[string]string{"memory": memOnly}}, &figures{source: "cgroup", mem: u(50000000)}},
		{"gone", cgroupSpec{V2: filepath.Join(root, "gone")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := readOnce(tc.spec, Options{})
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("readCgroup = %+v, want %+v", got, tc.want)
			}
			if got == nil {
				return
			}
			check := func(what string, g, w any) {
				if g != w {
					t.Errorf("%s = %v, want %v", what, g, w)
				}
			}
			check("cpu", show(got.cpu), show(tc.want.cpu))
			check("memory", show(got.mem), show(tc.want.mem))
			check("peak", show(got.peak), show(tc.want.peak))
			check("tasks", show(got.tasks), show(tc.want.tasks))
			check("processes", show(got.processes), show(tc.want.processes))
		})
	}
	// I/O: v2's io.stat when asked for.
	got := readOnce(cgroupSpec{V2: v2}, Options{IO: true})
	if show(got.ioRead) != "4096" || show(got.ioWrite) != "8192" {
		t.Errorf("v2 I/O %s/%s, want 4096/8192", show(got.ioRead), show(got.ioWrite))
	}
}

// readOnce reads spec's cgroup files once; nil when it has none.
func readOnce(spec cgroupSpec, o Options) *figures {
	d := &descriptors{left: 100}
	c := openCgroup(spec, d, slowEvery)
	if c == nil {
		return nil
	}
	defer c.close(d)
	return c.read(make([]byte, statBuf), o, d, time.Now())
}

// show prints a figure that may be unknown.
func show[T any](p *T) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprint(*p)
}

// What a sample does not read every time stays true enough: memory.stat's
// inactive pages and the peak are read again once the usage moved by more
// than a statDrift-th of itself, or slowEvery passed; the processes once
// the count of tasks changed, or slowEvery passed, or I/O is asked for.
func TestCgroupSlowFigures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	put := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("cpu.stat", "usage_usec 1000000\n")
	put("memory.current", "100000000\n")
	put("memory.stat", "inactive_file 4000000\n")
	put("memory.peak", "120000000\n")
	put("pids.current", "1\n")
	put("cgroup.procs", "101\n")
	d := &descriptors{left: 100}
	c := openCgroup(cgroupSpec{V2: dir}, d, slowEvery)
	if c == nil {
		t.Fatal("no cgroup files found")
	}
	defer c.close(d)
	buf := make([]byte, statBuf)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		name                      string
		at                        time.Duration
		current, stat, peak, pids string
		procs                     string
		io                        bool
		mem, wantPeak             uint64
		processes                 int
	}{
		{"first: all read", 0, "", "", "", "", "", false, 96000000, 120000000, 1},
		{"usage within a 64th: the inactive pages and peak as read", 2 * time.Second, "101000000\n", "inactive_file 9000000\n", "130000000\n", "", "101\n102\n", false, 97000000, 120000000, 1},
		{"tasks changed: the processes again", 4 * time.Second, "", "", "", "2\n", "", false, 97000000, 120000000, 2},
		{"usage moved by more: read again", 6 * time.Second, "110000000\n", "", "", "", "101\n102\n103\n", false, 101000000, 130000000, 2},
		{"I/O asked for: the processes again", 7 * time.Second, "", "", "", "", "", true, 101000000, 130000000, 3},
		{"held still, slowEvery passed: all read", 6*time.Second + slowEvery, "", "inactive_file 1000000\n", "140000000\n", "", "101\n", false, 109000000, 140000000, 1},
	}
	for _, st := range steps {
		for name, v := range map[string]string{"memory.current": st.current, "memory.stat": st.stat, "memory.peak": st.peak, "pids.current": st.pids, "cgroup.procs": st.procs} {
			if v != "" {
				put(name, v)
			}
		}
		f := c.read(buf, Options{IO: st.io}, d, start.Add(st.at))
		if f == nil {
			t.Fatalf("%s: no figures", st.name)
		}
		if show(f.mem) != fmt.Sprint(st.mem) || show(f.peak) != fmt.Sprint(st.wantPeak) || show(f.processes) != fmt.Sprint(st.processes) {
			t.Errorf("%s: memory %s, peak %s, processes %s; want %d, %d, %d", st.name, show(f.mem), show(f.peak), show(f.processes), st.mem, st.wantPeak, st.processes)
		}
	}
}

// A sampler keeps no more descriptors than it is given: the files beyond
// are opened at each read and say the same; every descriptor is given
// back when the files are closed.
func TestCgroupDescriptors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{"cpu.stat": "usage_usec 1000000\n", "memory.current": "5000\n", "memory.stat": "inactive_file 0\n", "memory.peak": "6000\n", "pids.current": "3\n", "cgroup.procs": "101\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, budget := range []int{0, 3, 100} {
		d := &descriptors{left: budget}
		c := openCgroup(cgroupSpec{V2: dir}, d, slowEvery)
		kept := 0
		for _, f := range []cgroupFile{c.cpu, c.mem, c.stat, c.peak, c.tasks, c.procsFile} {
			if f.fd >= 0 {
				kept++
			}
		}
		if kept != min(budget, 6) || d.left != budget-kept {
			t.Errorf("budget %d: %d kept open, %d left", budget, kept, d.left)
		}
		f := c.read(make([]byte, statBuf), Options{}, d, time.Now())
		if f == nil || show(f.cpu) != "1s" || show(f.mem) != "5000" || show(f.peak) != "6000" || show(f.tasks) != "3" || show(f.processes) != "1" {
			t.Errorf("budget %d: figures %+v", budget, f)
		}
		c.close(d)
		if d.left != budget {
			t.Errorf("budget %d: %d left once closed", budget, d.left)
		}
	}
}
