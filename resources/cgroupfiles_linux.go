//go:build linux

package resources

import (
	"fmt"
	"os"
	"time"

	"github.com/agentctl/agentctl/proc"
	"golang.org/x/sys/unix"
)

// slowEvery and statDrift bound how stale the figures a sample does not
// read every time may be: memory.stat (the costliest file of a sample: the
// kernel adds up its counters over every CPU to write a few kilobytes),
// whose inactive file pages are taken off the memory usage, and the
// memory's peak are read again once slowEvery has passed, or the usage
// has moved by more than a statDrift-th of itself, since they were last
// read; the list of processes once slowEvery has passed, or the count of
// tasks changed.
const (
	slowEvery = 10 * time.Second
	statDrift = 64
)

// filesIdle is how long a session's cgroup files are kept open unread: an
// ended session's cgroup is gone, and nobody asks for it again.
const filesIdle = time.Minute

// descriptors hands out the number of cgroup files a sampler may keep
// open; a file beyond it is opened at each read.
type descriptors struct{ left int }

// newDescriptors allows a quarter of the process's limit on open files,
// at most 8192 (some 1000 sessions of 7 files): the process table's
// reader keeps as many again.
func newDescriptors() *descriptors {
	n := 256
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		n = int(min(lim.Cur/4, 8192))
	}
	return &descriptors{left: n}
}

// cgroupFile is one file a session's figure is read from: kept open (fd),
// or opened at each read (fd -1); no path, no such file.
type cgroupFile struct {
	path string
	fd   int
}

// openFile opens path, kept open while d has descriptors left and the
// file says what is true now when read again from its start (reread);
// ok is false when it cannot be opened at all.
func openFile(path string, d *descriptors, reread bool) (cgroupFile, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return cgroupFile{fd: -1}, false
	}
	if !reread || d.left <= 0 {
		unix.Close(fd)
		return cgroupFile{path: path, fd: -1}, true
	}
	d.left--
	return cgroupFile{path: path, fd: fd}, true
}

// read reads the whole file into buf: one pread of a kept descriptor (a
// cgroup file's content is made whole at offset 0, and a read gives all of
// it that fits), else an open, a read and a close. A file that fills buf
// is an error: it was cut.
func (f cgroupFile) read(buf []byte) ([]byte, error) {
	var b []byte
	if f.fd < 0 {
		var err error
		if b, err = proc.ReadSmall(f.path, buf); err != nil {
			return nil, err
		}
	} else {
		n, err := unix.Pread(f.fd, buf, 0)
		for err == unix.EINTR {
			n, err = unix.Pread(f.fd, buf, 0)
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: f.path, Err: err}
		}
		b = buf[:n]
	}
	if len(b) == len(buf) {
		return nil, fmt.Errorf("read %s: larger than %d bytes", f.path, len(buf))
	}
	return b, nil
}

func (f *cgroupFile) close(d *descriptors) {
	if f.fd >= 0 {
		unix.Close(f.fd)
		d.left++
		f.fd = -1
	}
}

// cgroupFiles are the files a session's figures are read from, each found
// once (cgroup v2's where it is there, else its v1 controller's) and kept
// open, so that a sample costs a pread per file rather than an open, a
// read and a close, and no open of a file the machine does not have.
type cgroupFiles struct {
	spec cgroupSpec
	// cpuV1 says cpu is cpuacct.usage (nanoseconds), not cpu.stat.
	cpu   cgroupFile
	cpuV1 bool
	// mem is memory.current or v1's usage_in_bytes; stat the memory.stat
	// beside it, whose inactiveKey is taken off it; peak its high-water
	// mark.
	mem, stat, peak cgroupFile
	inactiveKey     string
	tasks           cgroupFile
	procsFile       cgroupFile
	// io is io.stat (ioV2), or v1's blkio; ioFound says it was looked
	// for (only once I/O is asked for).
	io      cgroupFile
	ioV2    bool
	ioFound bool

	// slowAt is when every figure was last read (slowRead: once), which
	// they are again once every has passed.
	every    time.Duration
	slowAt   time.Time
	slowRead bool
	// inactive is memory.stat's inactive file pages and peakV the peak,
	// as read when the usage was memAt (memRead: once); each have says
	// it could be read.
	inactive, peakV, memAt          uint64
	haveInactive, havePeak, memRead bool
	// procs lists the processes as read when the tasks were procsTasks
	// (procsRead: it could be).
	procs      []int
	procsTasks uint64
	procsRead  bool
	// used is when the files were last read.
	used time.Time
}

// openCgroup finds and opens the files of spec's cgroup, whose slow
// figures are read again at least every so often; nil when it has none of
// them (the cgroup is gone, or was never made).
func openCgroup(spec cgroupSpec, d *descriptors, every time.Duration) *cgroupFiles {
	c := &cgroupFiles{spec: spec, every: every, cpu: cgroupFile{fd: -1}, mem: cgroupFile{fd: -1}, stat: cgroupFile{fd: -1},
		peak: cgroupFile{fd: -1}, tasks: cgroupFile{fd: -1}, procsFile: cgroupFile{fd: -1}, io: cgroupFile{fd: -1}}
	found := false
	// first opens the first of files that is there: a directory and a
	// file name in it, in turn.
	first := func(reread bool, files ...string) (cgroupFile, int) {
		for i := 0; i+1 < len(files); i += 2 {
			if files[i] == "" {
				continue
			}
			if f, ok := openFile(files[i]+"/"+files[i+1], d, reread); ok {
				found = true
				return f, i / 2
			}
		}
		return cgroupFile{fd: -1}, -1
	}
	v1 := func(ctl string) string { return spec.V1[ctl] }
	var which int
	c.cpu, which = first(true, spec.V2, "cpu.stat", v1("cpuacct"), "cpuacct.usage")
	c.cpuV1 = which == 1
	c.mem, which = first(true, spec.V2, "memory.current", v1("memory"), "memory.usage_in_bytes")
	switch which {
	case 0:
		c.stat, _ = first(true, spec.V2, "memory.stat")
		c.peak, _ = first(true, spec.V2, "memory.peak")
		c.inactiveKey = "inactive_file"
	case 1:
		c.stat, _ = first(true, v1("memory"), "memory.stat")
		c.peak, _ = first(true, v1("memory"), "memory.max_usage_in_bytes")
		c.inactiveKey = "total_inactive_file"
	}
	c.tasks, _ = first(true, spec.V2, "pids.current", v1("pids"), "pids.current")
	// The processes: cgroup.procs of any of its directories (in v1 each
	// controller's holds the same). v1's is opened at each read: a kept
	// one gives the list made when it was first read, for as long as the
	// kernel keeps that list.
	c.procsFile, which = first(true, spec.V2, "cgroup.procs")
	if which < 0 {
		c.procsFile, _ = first(false, v1("pids"), "cgroup.procs", v1("memory"), "cgroup.procs", v1("cpuacct"), "cgroup.procs")
	}
	if !found {
		return nil
	}
	return c
}

// close gives back the descriptors c keeps.
func (c *cgroupFiles) close(d *descriptors) {
	for _, f := range []*cgroupFile{&c.cpu, &c.mem, &c.stat, &c.peak, &c.tasks, &c.procsFile, &c.io} {
		f.close(d)
	}
}

// read reads a session's figures from its cgroup files at now. nil when no
// file could be read at all (the cgroup is gone).
func (c *cgroupFiles) read(buf []byte, o Options, d *descriptors, now time.Time) *figures {
	c.used = now
	f := &figures{source: "cgroup"}
	got := false
	get := func(file cgroupFile) ([]byte, bool) {
		if file.path == "" {
			return nil, false
		}
		b, err := file.read(buf)
		if err != nil {
			return nil, false
		}
		got = true
		return b, true
	}
	number := func(file cgroupFile) (uint64, bool) {
		if b, ok := get(file); ok {
			return parseUint(b)
		}
		return 0, false
	}
	slow := !c.slowRead || now.Sub(c.slowAt) >= c.every || now.Before(c.slowAt)

	if b, ok := get(c.cpu); ok {
		if c.cpuV1 {
			if ns, ok := parseUint(b); ok {
				d := time.Duration(ns)
				f.cpu = &d
			}
		} else if us, ok := parseKeyed(b, "usage_usec"); ok {
			d := time.Duration(us) * time.Microsecond
			f.cpu = &d
		}
	}

	if cur, ok := number(c.mem); ok {
		// The usage moved: what the inactive pages and the peak were
		// may have moved too.
		if slow || !c.memRead || max(cur, c.memAt)-min(cur, c.memAt) > c.memAt/statDrift {
			c.memRead, c.memAt = true, cur
			c.inactive, c.haveInactive = 0, false
			if b, ok := get(c.stat); ok {
				c.inactive, c.haveInactive = parseKeyed(b, c.inactiveKey)
			}
			c.peakV, c.havePeak = number(c.peak)
		}
		if c.haveInactive && c.inactive < cur {
			cur -= c.inactive
		}
		f.mem = &cur
		if c.havePeak {
			peak := c.peakV
			f.peak = &peak
		}
	}

	tasks, tasksOK := number(c.tasks)
	if tasksOK {
		t := int(tasks)
		f.tasks = &t
	}

	// The processes are listed again when the tasks are not what they
	// were (one started or ended), or the list is wanted (I/O).
	if slow || o.IO || !c.procsRead || !tasksOK || tasks != c.procsTasks {
		c.procs, c.procsRead = c.procs[:0], false
		if b, ok := get(c.procsFile); ok {
			c.procs, c.procsRead, c.procsTasks = pidsOf(b), true, tasks
		}
	}
	if c.procsRead {
		n := len(c.procs)
		f.processes = &n
	}

	if o.IO {
		f.ioRead, f.ioWrite = c.readIO(c.procs, c.procsRead, buf, d)
	}
	if slow {
		c.slowRead, c.slowAt = true, now
	}
	if !got {
		return nil
	}
	return f
}

// readIO is the cgroup's storage I/O: v2's io.stat, v1's blkio, else its
// processes' own counters added up.
func (c *cgroupFiles) readIO(procs []int, procsRead bool, buf []byte, d *descriptors) (*uint64, *uint64) {
	if !c.ioFound {
		c.ioFound = true
		if c.spec.V2 != "" {
			c.io, c.ioV2 = openFile(c.spec.V2+"/io.stat", d, true)
		}
		if !c.ioV2 && c.spec.V1["blkio"] != "" {
			c.io, _ = openFile(c.spec.V1["blkio"]+"/blkio.throttle.io_service_bytes", d, true)
		}
	}
	if c.io.path != "" {
		if b, err := c.io.read(buf); err == nil {
			var r, w uint64
			if c.ioV2 {
				r, w = parseIOStat(b)
			} else {
				r, w = parseBlkio(b)
			}
			return &r, &w
		}
	}
	if procsRead {
		return processIO(procs, buf)
	}
	return nil, nil
}
