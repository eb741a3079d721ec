//go:build linux

package resources

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/cgroup"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

// BenchmarkSample500 is one refresh of stats or top at 500 live sessions
// without cgroups: one read of the process table, 500 walks over it.
// At a refresh every 2 s, 1% of a core is 20 ms per refresh.
func BenchmarkSample500(b *testing.B) {
	const n = 500
	targets := make([]Target, 0, n)
	for range n {
		cmd := exec.Command("sleep", "3600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		targets = append(targets, target(b, cmd.Process.Pid, b.TempDir()))
	}
	s := New()
	b.Cleanup(s.Close)
	// Each sample is a refresh 2 s after the last: none is given again
	// from the last one's (reuseWithin).
	clock := time.Now()
	s.now = func() time.Time { return clock }
	ctx := context.Background()
	// The first sample reads and writes each session's peak record.
	s.Sample(ctx, targets, Options{})
	for _, o := range []struct {
		name string
		opts Options
	}{{"cpu-memory-tasks", Options{}}, {"with-io", Options{IO: true}}} {
		b.Run(o.name, func(b *testing.B) {
			used := cpuTime()
			for b.Loop() {
				clock = clock.Add(2 * time.Second)
				if got := s.Sample(ctx, targets, o.opts); len(got) != n {
					b.Fatalf("%d sessions sampled, want %d", len(got), n)
				}
			}
			// The CPU time per sample, not the wall time: what the service
			// pays, however busy the machine.
			b.ReportMetric(float64(cpuTime()-used)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// BenchmarkSampleCgroups500 is one refresh of top at 500 live sessions
// that each have a cgroup, made where the service would make them here (on
// a hybrid machine: cgroup2 for membership and CPU, v1 for memory and
// tasks). At a refresh every 2 s, 1% of a core is 20 ms per refresh.
//
// "each-file-opened" is the read as it was, the baseline: every file
// opened, read and closed, and read at every sample (no descriptor kept,
// the slow figures read every time); "kept-open" is the sampler's.
func BenchmarkSampleCgroups500(b *testing.B) {
	const n = 500
	m := cgroup.Detect(b.TempDir())
	if !m.Status().Enabled {
		b.Skipf("no cgroups here: %s", m.Status().Reason)
	}
	b.Cleanup(m.Close)
	targets := make([]Target, 0, n)
	for i := range n {
		p := m.Paths(fmt.Sprintf("bench%03d", i))
		if err := cgroup.Create(p, cgroup.Limits{}); err != nil {
			b.Skipf("cannot make a cgroup here: %v", err)
		}
		var procs []string
		for _, d := range []string{p.V2, p.V1[cgroup.Memory], p.V1[cgroup.Pids], p.V1[cgroup.CPU]} {
			if d != "" {
				procs = append(procs, filepath.Join(d, "cgroup.procs"))
			}
		}
		// Started inside its cgroup, as a monitor starts an agent.
		cmd := exec.Command("/bin/sh", "-c", `for f in "$@"; do echo $$ > "$f" || exit 1; done; exec sleep 3600`, "sh")
		cmd.Args = append(cmd.Args, procs...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			cgroup.Remove(p)
		})
		dir := b.TempDir()
		spec, _ := json.Marshal(p)
		if err := os.WriteFile(filepath.Join(dir, home.CgroupFile), spec, 0o600); err != nil {
			b.Fatal(err)
		}
		targets = append(targets, target(b, cmd.Process.Pid, dir))
	}
	for _, o := range []struct {
		name     string
		opts     Options
		baseline bool
	}{
		{"each-file-opened/cpu-memory-tasks", Options{}, true},
		{"kept-open/cpu-memory-tasks", Options{}, false},
		{"each-file-opened/with-io", Options{IO: true}, true},
		{"kept-open/with-io", Options{IO: true}, false},
	} {
		b.Run(o.name, func(b *testing.B) {
			s := New()
			defer s.Close()
			if o.baseline {
				s.rd.fds.left, s.rd.every = 0, 0
			}
			clock := time.Now()
			s.now = func() time.Time { return clock }
			ctx := context.Background()
			if got := s.Sample(ctx, targets, o.opts); len(got) != n {
				b.Fatalf("%d sessions sampled, want %d", len(got), n)
			}
			for _, r := range s.Sample(ctx, targets[:1], o.opts) {
				if r.Source != "cgroup" {
					b.Fatalf("figures from %s, want the cgroup's", r.Source)
				}
			}
			used := cpuTime()
			for b.Loop() {
				clock = clock.Add(2 * time.Second)
				if got := s.Sample(ctx, targets, o.opts); len(got) != n {
					b.Fatalf("%d sessions sampled, want %d", len(got), n)
				}
			}
			b.ReportMetric(float64(cpuTime()-used)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// BenchmarkTable is the read of the whole process table alone: each
// process's file opened, read and closed, or kept open and read again.
func BenchmarkTable(b *testing.B) {
	b.Run("open-read-close", func(b *testing.B) {
		used := cpuTime()
		for b.Loop() {
			if _, err := proc.Table(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuTime()-used)/float64(b.N)/1e6, "cpu-ms/op")
	})
	b.Run("kept-open", func(b *testing.B) {
		r := proc.NewTableReader(0)
		defer r.Close()
		used := cpuTime()
		for b.Loop() {
			if _, err := r.Table(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuTime()-used)/float64(b.N)/1e6, "cpu-ms/op")
	})
}

// cpuTime is the CPU this process used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
