package resources

import (
	"testing"
)

func TestParseSpec(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		ok   bool
		v2   string
		mem  string
	}{
		{name: "v2 only", in: `{"v2":"/sys/fs/cgroup/agentctl/s1"}`, ok: true, v2: "/sys/fs/cgroup/agentctl/s1"},
		{name: "v1 controllers", in: `{"v1":{"memory":"/sys/fs/cgroup/memory/a","pids":"/sys/fs/cgroup/pids/a","cpuacct":"/sys/fs/cgroup/cpuacct/a"}}`, ok: true, mem: "/sys/fs/cgroup/memory/a"},
		{name: "hybrid", in: `{"v2":"/sys/fs/cgroup/unified/a","v1":{"memory":"/sys/fs/cgroup/memory/a"}}`, ok: true, v2: "/sys/fs/cgroup/unified/a", mem: "/sys/fs/cgroup/memory/a"},
		{name: "empty object", in: `{}`},
		{name: "relative directory", in: `{"v2":"agentctl/s1"}`},
		{name: "relative v1 directory", in: `{"v1":{"memory":"memory/a"}}`},
		{name: "not JSON", in: `v2=/sys/fs/cgroup`},
		{name: "empty file", in: ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, ok := parseSpec([]byte(tc.in))
			if ok != tc.ok || s.V2 != tc.v2 || s.V1["memory"] != tc.mem {
				t.Errorf("parseSpec(%s) = %+v, %v; want v2 %q, memory %q, %v", tc.in, s, ok, tc.v2, tc.mem, tc.ok)
			}
		})
	}
}

func TestParseFiles(t *testing.T) {
	t.Parallel()
	// Shapes as the kernel writes them (6.x): cgroup v2 and v1 files,
	// /proc/PID/io and /proc/meminfo.
	const v2MemoryStat = "anon 104857600\nfile 4096000\nkernel 1228800\nactive_anon 104857600\ninactive_anon 0\nactive_file 1024000\ninactive_file 3072000\n"
	const v1MemoryStat = "cache 4096000\nrss 104857600\nmapped_file 0\ninactive_file 3072000\ntotal_cache 4096000\ntotal_rss 104857600\ntotal_inactive_file 2048000\ntotal_active_file 2048000\n"
	const v2CPUStat = "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 0\n"
	const procIO = "rchar: 4096\nwchar: 2048\nsyscr: 12\nsyscw: 4\nread_bytes: 8192\nwrite_bytes: 16384\ncancelled_write_bytes: 0\n"
	const ioStat = "8:0 rbytes=1000 wbytes=2000 rios=1 wios=2 dbytes=0 dios=0\n259:0 rbytes=30 wbytes=40 rios=1 wios=1 dbytes=0 dios=0\n"
	const blkio = "8:0 Read 1000\n8:0 Write 2000\n8:0 Sync 3000\n8:0 Async 0\n8:0 Discard 0\n8:0 Total 3000\n259:0 Read 30\n259:0 Write 40\nTotal 3070\n"
	const meminfo = "MemTotal:       16318148 kB\nMemFree:         1160264 kB\nMemAvailable:   10489804 kB\nBuffers:          454360 kB\n"

	for _, tc := range []struct {
		name   string
		got    uint64
		ok     bool
		want   uint64
		wantOK bool
	}{
		{"memory.current", must(parseUint([]byte("108003328\n"))), true, 108003328, true},
		{"memory.max is not a number", first(parseUint([]byte("max\n"))), second(parseUint([]byte("max\n"))), 0, false},
		{"v2 inactive_file", first(parseKeyed([]byte(v2MemoryStat), "inactive_file")), second(parseKeyed([]byte(v2MemoryStat), "inactive_file")), 3072000, true},
		{"v1 total_inactive_file, not inactive_file", first(parseKeyed([]byte(v1MemoryStat), "total_inactive_file")), true, 2048000, true},
		{"cpu.stat usage_usec", first(parseKeyed([]byte(v2CPUStat), "usage_usec")), true, 2500000, true},
		{"a key that is a prefix of another is not it", first(parseKeyed([]byte("usage_usec_x 5\n"), "usage_usec")), second(parseKeyed([]byte("usage_usec_x 5\n"), "usage_usec")), 0, false},
		{"a missing key", first(parseKeyed([]byte(v2CPUStat), "throttled_usec")), second(parseKeyed([]byte(v2CPUStat), "throttled_usec")), 0, false},
		{"an empty file", first(parseKeyed(nil, "anon")), second(parseKeyed(nil, "anon")), 0, false},
	} {
		if tc.got != tc.want || tc.ok != tc.wantOK {
			t.Errorf("%s: %d, %v; want %d, %v", tc.name, tc.got, tc.ok, tc.want, tc.wantOK)
		}
	}
	if r, w, ok := parseProcIO([]byte(procIO)); !ok || r != 8192 || w != 16384 {
		t.Errorf("parseProcIO = %d, %d, %v; want 8192, 16384", r, w, ok)
	}
	if _, _, ok := parseProcIO([]byte("rchar: 1\n")); ok {
		t.Error("parseProcIO of a file without read_bytes says ok")
	}
	if r, w := parseIOStat([]byte(ioStat)); r != 1030 || w != 2040 {
		t.Errorf("parseIOStat = %d, %d; want 1030, 2040", r, w)
	}
	if r, w := parseBlkio([]byte(blkio)); r != 1030 || w != 2040 {
		t.Errorf("parseBlkio = %d, %d; want 1030, 2040 (the Total lines not counted again)", r, w)
	}
	if tot, avail := parseMeminfo([]byte(meminfo)); tot != 16318148*1024 || avail != 10489804*1024 {
		t.Errorf("parseMeminfo = %d, %d", tot, avail)
	}
	if p := pidsOf([]byte("12\n13\nx\n0\n")); len(p) != 2 || p[0] != 12 || p[1] != 13 {
		t.Errorf("pidsOf = %v, want [12 13]", p)
	}
}

func first(n uint64, _ bool) uint64 { return n }
func second(_ uint64, ok bool) bool { return ok }
func must(n uint64, ok bool) uint64 {
	if !ok {
		return 1<<64 - 1
	}
	return n
}
