package metrics

import (
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/proc"
)

// runtimeFamilies are the Go runtime's figures under the names the client
// library's Go collector used, so existing dashboards keep working.
func runtimeFamilies() []*family {
	samples := []metrics.Sample{
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/gc/heap/goal:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/objects:objects"},
	}
	metrics.Read(samples)
	u := func(i int) float64 {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return float64(samples[i].Value.Uint64())
	}
	threads, _ := runtime.ThreadCreateProfile(nil)
	info := newFamily("go_info", "gauge", "Information about the Go environment.", nil, "version")
	info.set(1, runtime.Version())
	return []*family{
		gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine())),
		gauge("go_threads", "Number of OS threads created.", float64(threads)),
		info,
		counter("go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already.", u(0)),
		gauge("go_memstats_sys_bytes", "Number of bytes obtained from system.", u(1)),
		gauge("go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", u(2)),
		gauge("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", u(3)),
		gauge("go_memstats_heap_objects", "Number of currently allocated objects.", u(4)),
	}
}

// processFamilies are the process's own figures under the client library's
// process collector names; a figure the system does not give is left out.
func processFamilies() []*family {
	var out []*family
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		out = append(out, counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", cpu.Seconds()))
	}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 2 {
			page := float64(os.Getpagesize())
			vsz, _ := strconv.ParseFloat(f[0], 64)
			rss, _ := strconv.ParseFloat(f[1], 64)
			out = append(out,
				gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", vsz*page),
				gauge("process_resident_memory_bytes", "Resident memory size in bytes.", rss*page))
		}
	}
	if fds, err := os.ReadDir(fdDir()); err == nil {
		out = append(out, gauge("process_open_fds", "Number of open file descriptors.", float64(len(fds)-1))) // less the one reading the folder
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		out = append(out, gauge("process_max_fds", "Maximum number of open file descriptors.", float64(lim.Cur)))
	}
	if self, err := proc.Lookup(os.Getpid()); err == nil {
		out = append(out, gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", float64(self.StartTime.UnixNano())/1e9))
	}
	return out
}

// fdDir lists the process's open descriptors: /proc/self/fd on Linux,
// /dev/fd on macOS.
func fdDir() string {
	if runtime.GOOS == "linux" {
		return "/proc/self/fd"
	}
	return "/dev/fd"
}

func counter(name, help string, v float64) *family {
	f := newFamily(name, "counter", help, nil)
	f.set(v)
	return f
}
