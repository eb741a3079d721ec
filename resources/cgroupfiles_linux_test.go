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
			got := readCgroup(tc.spec, make([]byte, statBuf), Options{})
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
	got := readCgroup(cgroupSpec{V2: v2}, make([]byte, statBuf), Options{IO: true})
	if show(got.ioRead) != "4096" || show(got.ioWrite) != "8192" {
		t.Errorf("v2 I/O %s/%s, want 4096/8192", show(got.ioRead), show(got.ioWrite))
	}
}

// show prints a figure that may be unknown.
func show[T any](p *T) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprint(*p)
}
