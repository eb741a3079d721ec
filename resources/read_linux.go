//go:build linux

package resources

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

// statBuf holds the largest file a sample reads (memory.stat).
const statBuf = 16 << 10

// read reads each target's figures: from its cgroup, else from one read
// of the process table that the targets without a cgroup share.
func (s *Sampler) read(ctx context.Context, targets []Target, o Options) []*figures {
	out := make([]*figures, len(targets))
	buf := make([]byte, statBuf)
	var ix *proc.Index
	now := s.now()
	for i, t := range targets {
		if ctx.Err() != nil {
			break
		}
		spec, ok, known := s.cachedSpec(t.ID, now)
		if !known {
			spec, ok = readSpec(t.Dir, buf)
			s.keepSpec(t.ID, spec, ok, now)
		}
		if ok {
			if f := readCgroup(spec, buf, o); f != nil {
				out[i] = f
				continue
			}
			// The cgroup is gone (or was never made): read the file again
			// next time, the process tree meanwhile.
			s.keepSpec(t.ID, cgroupSpec{}, false, now)
		}
		if t.Members == nil {
			continue
		}
		if ix == nil {
			// Held until the members are read again: Refresh reads in the
			// pass of this Shape.
			s.tableMu.Lock()
			defer s.tableMu.Unlock()
			table, err := s.table.Shape()
			if err != nil {
				return out
			}
			ix = proc.NewIndex(table)
		}
		out[i] = sumProcesses(live(s.table.Refresh(t.Members(ix))), buf, o)
	}
	return out
}

// live leaves out the zombies of ps (ended, not yet waited for).
func live(ps []proc.Info) []proc.Info {
	out := ps[:0]
	for _, p := range ps {
		if !p.Zombie {
			out = append(out, p)
		}
	}
	return out
}

// readSpec reads a session's home.CgroupFile.
func readSpec(dir string, buf []byte) (cgroupSpec, bool) {
	if dir == "" {
		return cgroupSpec{}, false
	}
	b, err := proc.ReadSmall(filepath.Join(dir, home.CgroupFile), buf)
	if err != nil || len(b) == len(buf) {
		return cgroupSpec{}, false
	}
	return parseSpec(b)
}

// sumProcesses adds up the figures of a session's processes, as the
// process table gave them. A process that ended since is not counted; one
// whose I/O counters cannot be read (another user's) makes the I/O unknown.
func sumProcesses(members []proc.Info, buf []byte, o Options) *figures {
	var cpu time.Duration
	var rss uint64
	tasks := 0
	for _, p := range members {
		if !p.Usage {
			return &figures{source: "processes"}
		}
		cpu += p.CPU
		rss += p.RSS
		tasks += p.Threads
	}
	n := len(members)
	f := &figures{source: "processes", cpu: &cpu, mem: &rss, tasks: &tasks, processes: &n}
	if o.IO {
		f.ioRead, f.ioWrite = processIO(pidList(members), buf)
	}
	return f
}

func pidList(ps []proc.Info) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.PID
	}
	return out
}

// processIO adds up /proc/PID/io over pids; nil when one that still runs
// cannot be read.
func processIO(pids []int, buf []byte) (*uint64, *uint64) {
	var read, write uint64
	for _, pid := range pids {
		b, err := proc.ReadSmall("/proc/"+strconv.Itoa(pid)+"/io", buf)
		if errors.Is(err, fs.ErrNotExist) {
			continue // it ended since
		}
		if err != nil {
			return nil, nil
		}
		r, w, ok := parseProcIO(b)
		if !ok {
			return nil, nil
		}
		read += r
		write += w
	}
	return &read, &write
}

// readCgroup reads a session's figures from its cgroup: each from cgroup
// v2 where its file is there, else from the v1 controller's. nil when no
// file could be read at all (the cgroup is gone).
func readCgroup(spec cgroupSpec, buf []byte, o Options) *figures {
	f := &figures{source: "cgroup"}
	got := false
	number := func(dir, name string) (uint64, bool) {
		if dir == "" {
			return 0, false
		}
		b, err := proc.ReadSmall(dir+"/"+name, buf)
		if err != nil {
			return 0, false
		}
		got = true
		return parseUint(b)
	}
	keyed := func(dir, name, key string) (uint64, bool) {
		if dir == "" {
			return 0, false
		}
		b, err := proc.ReadSmall(dir+"/"+name, buf)
		if err != nil {
			return 0, false
		}
		got = true
		return parseKeyed(b, key)
	}
	v1 := func(ctl string) string { return spec.V1[ctl] }

	if us, ok := keyed(spec.V2, "cpu.stat", "usage_usec"); ok {
		d := time.Duration(us) * time.Microsecond
		f.cpu = &d
	} else if ns, ok := number(v1("cpuacct"), "cpuacct.usage"); ok {
		d := time.Duration(ns)
		f.cpu = &d
	}

	if cur, ok := number(spec.V2, "memory.current"); ok {
		if inactive, ok := keyed(spec.V2, "memory.stat", "inactive_file"); ok && inactive < cur {
			cur -= inactive
		}
		f.mem = &cur
		if peak, ok := number(spec.V2, "memory.peak"); ok {
			f.peak = &peak
		}
	} else if cur, ok := number(v1("memory"), "memory.usage_in_bytes"); ok {
		if inactive, ok := keyed(v1("memory"), "memory.stat", "total_inactive_file"); ok && inactive < cur {
			cur -= inactive
		}
		f.mem = &cur
		if peak, ok := number(v1("memory"), "memory.max_usage_in_bytes"); ok {
			f.peak = &peak
		}
	}

	if n, ok := number(spec.V2, "pids.current"); ok {
		t := int(n)
		f.tasks = &t
	} else if n, ok := number(v1("pids"), "pids.current"); ok {
		t := int(n)
		f.tasks = &t
	}

	// The processes: cgroup.procs of any of its directories (in v1 each
	// controller's holds the same).
	var procs []int
	procsRead := false
	for _, dir := range []string{spec.V2, v1("pids"), v1("memory"), v1("cpuacct")} {
		if dir == "" {
			continue
		}
		if b, err := proc.ReadSmall(dir+"/cgroup.procs", buf); err == nil && len(b) < len(buf) {
			got, procsRead = true, true
			procs = pidsOf(b)
			break
		}
	}
	if procsRead {
		n := len(procs)
		f.processes = &n
	}

	if o.IO {
		f.ioRead, f.ioWrite = cgroupIO(spec, procs, procsRead, buf)
	}
	if !got {
		return nil
	}
	return f
}

// cgroupIO is a cgroup's storage I/O: v2's io.stat, v1's blkio, else its
// processes' own counters added up.
func cgroupIO(spec cgroupSpec, procs []int, procsRead bool, buf []byte) (*uint64, *uint64) {
	if spec.V2 != "" {
		if b, err := proc.ReadSmall(spec.V2+"/io.stat", buf); err == nil {
			r, w := parseIOStat(b)
			return &r, &w
		}
	}
	if dir := spec.V1["blkio"]; dir != "" {
		if b, err := proc.ReadSmall(dir+"/blkio.throttle.io_service_bytes", buf); err == nil {
			r, w := parseBlkio(b)
			return &r, &w
		}
	}
	if procsRead {
		return processIO(procs, buf)
	}
	return nil, nil
}
