//go:build linux

package resources

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

// statBuf holds the largest file a sample reads (memory.stat).
const statBuf = 16 << 10

// reader keeps open, between samples, what they read: the processes'
// stat files and the sessions' cgroup files.
type reader struct {
	table *proc.TableReader
	// files are the cgroup files of each session that has a cgroup.
	files map[string]*cgroupFiles
	fds   *descriptors
	// every is how often the figures read only when they may have moved
	// are read anyway: slowEvery.
	every time.Duration
}

func newReader() *reader {
	return &reader{table: proc.NewTableReader(0), files: map[string]*cgroupFiles{}, fds: newDescriptors(), every: slowEvery}
}

// forget closes the cgroup files of session id.
func (r *reader) forget(id string) {
	if f := r.files[id]; f != nil {
		f.close(r.fds)
	}
	delete(r.files, id)
}

// forgetIdle closes the cgroup files not read since before.
func (r *reader) forgetIdle(before time.Time) {
	for id, f := range r.files {
		if f.used.Before(before) {
			r.forget(id)
		}
	}
}

// close releases everything r keeps open.
func (r *reader) close() {
	r.table.Close()
	for id := range r.files {
		r.forget(id)
	}
}

// read reads each target's figures: from its cgroup, else from one read
// of the process table that the targets without a cgroup share.
func (s *Sampler) read(ctx context.Context, targets []Target, o Options) []*figures {
	out := make([]*figures, len(targets))
	buf := make([]byte, statBuf)
	var ix *proc.Index
	now := s.now()
	s.readMu.Lock()
	defer s.readMu.Unlock()
	r := s.rd
	r.forgetIdle(now.Add(-filesIdle))
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
			files := r.files[t.ID]
			if files != nil && !sameSpec(files.spec, spec) {
				r.forget(t.ID)
				files = nil
			}
			if files == nil {
				if files = openCgroup(spec, r.fds, r.every); files != nil {
					r.files[t.ID] = files
				}
			}
			if files != nil {
				if f := files.read(buf, o, r.fds, now); f != nil {
					out[i] = f
					continue
				}
			}
			r.forget(t.ID)
			// The cgroup is gone (or was never made): read the file again
			// next time, the process tree meanwhile.
			s.keepSpec(t.ID, cgroupSpec{}, false, now)
		}
		if t.Members == nil {
			continue
		}
		if ix == nil {
			// Refresh reads in the pass of this Shape.
			table, err := r.table.Shape()
			if err != nil {
				return out
			}
			ix = proc.NewIndex(table)
		}
		out[i] = sumProcesses(live(r.table.Refresh(t.Members(ix))), buf, o)
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

// sameSpec reports whether a and b name the same directories.
func sameSpec(a, b cgroupSpec) bool {
	return a.V2 == b.V2 && maps.Equal(a.V1, b.V1)
}
