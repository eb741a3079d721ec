//go:build linux

package proc

import (
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// TableReader reads the process table again and again, as a live view's
// refresh does. It keeps each process's stat file open, so that a read
// costs one pread rather than an open, a read and a close (a third of the
// time, measured); a kept descriptor reads only its own process, and
// fails once that process is gone, even if its pid was given to another.
// At most a bounded number are kept, beyond which a file is opened for
// each read.
//
// Shape spares reading what a caller does not need: the processes it
// read before keep their last row (a process's parent, group and session
// change only when its parent ends, or by its own setsid or setpgid, which
// cannot make it part of another session's tree), and Refresh then reads
// the few the caller asks about. It is not safe for concurrent use; Close
// releases the descriptors.
type TableReader struct {
	procs map[int]*keptProc
	open  int // descriptors kept
	max   int
	buf   [1024]byte
	seen  map[int]bool
	gen   uint64
	// shaped is when every process was last read: a row older than
	// fullEvery is read again, so that a pid given to another process in
	// the meantime is not taken for its former owner.
	shaped time.Time
	boot   time.Time
}

// keptProc is what the reader knows of one process: its descriptor (-1:
// none kept), its last row, and in which pass it was read.
type keptProc struct {
	fd    int
	row   Info
	fresh uint64
}

// fullEvery bounds how old the rows Shape gives may be.
const fullEvery = 10 * time.Second

// NewTableReader keeps at most max descriptors open (0: a quarter of the
// process's limit on open files, at most 4096).
func NewTableReader(max int) *TableReader {
	if max <= 0 {
		var lim unix.Rlimit
		max = 256
		if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
			max = int(min(lim.Cur/4, 4096))
		}
	}
	return &TableReader{procs: map[int]*keptProc{}, max: max, seen: map[int]bool{}}
}

// Table reads every process the caller may see, as Table does.
func (r *TableReader) Table() ([]Info, error) { return r.pass(true) }

// Shape lists every process the caller may see, reading only those it has
// not read before (or whose parent ended since): the others' rows are as
// last read, their CPU and memory figures included. Refresh reads those
// that matter again.
func (r *TableReader) Shape() ([]Info, error) {
	return r.pass(time.Since(r.shaped) > fullEvery)
}

// Refresh reads again, in the pass of the last Shape or Table, each of ps
// not read in it, and returns their rows now; those that ended are left
// out.
func (r *TableReader) Refresh(ps []Info) []Info {
	out := ps[:0:0]
	for _, p := range ps {
		kp, ok := r.procs[p.PID]
		if ok && kp.fresh == r.gen {
			out = append(out, kp.row)
			continue
		}
		if row, ok := r.read(p.PID); ok {
			out = append(out, row)
		}
	}
	return out
}

// pass lists /proc and reads each process, or, unless all, only those not
// known with a live parent.
func (r *TableReader) pass(all bool) ([]Info, error) {
	pids, err := pids()
	if err != nil {
		return nil, fmt.Errorf("read process table: %w", err)
	}
	r.gen++
	r.boot = bootTime()
	if all {
		r.shaped = time.Now()
	}
	clear(r.seen)
	for _, pid := range pids {
		r.seen[pid] = true
	}
	// The processes that ended give their descriptors back.
	for pid, kp := range r.procs {
		if !r.seen[pid] {
			r.forget(pid, kp)
		}
	}
	out := make([]Info, 0, len(pids))
	for _, pid := range pids {
		if kp, ok := r.procs[pid]; ok && !all && kp.fd >= 0 && (kp.row.PPID == 0 || r.seen[kp.row.PPID]) {
			out = append(out, kp.row)
			continue
		}
		if row, ok := r.read(pid); ok {
			out = append(out, row)
		}
	}
	return out, nil
}

// read reads pid's stat through its kept descriptor, or opens it (and
// keeps it while there is room), and notes the row.
func (r *TableReader) read(pid int) (Info, bool) {
	kp := r.procs[pid]
	var b []byte
	if kp != nil && kp.fd >= 0 {
		n, err := unix.Pread(kp.fd, r.buf[:], 0)
		if err == nil && n > 0 {
			b = r.buf[:n]
		} else {
			// That process is gone; the pid may be another's now.
			r.forget(pid, kp)
			kp = nil
		}
	}
	if b == nil {
		path := "/proc/" + strconv.Itoa(pid) + "/stat"
		fd := -1
		if r.open < r.max {
			var err error
			if fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0); err != nil {
				return Info{}, false
			}
			n, err := unix.Pread(fd, r.buf[:], 0)
			if err != nil || n == 0 {
				unix.Close(fd)
				return Info{}, false
			}
			b = r.buf[:n]
		} else {
			got, err := ReadSmall(path, r.buf[:])
			if err != nil {
				return Info{}, false
			}
			b = got
		}
		if kp == nil {
			kp = &keptProc{fd: -1}
			r.procs[pid] = kp
		}
		if fd >= 0 {
			kp.fd = fd
			r.open++
		}
	}
	row, err := parseStat(pid, b, r.boot)
	if err != nil {
		return Info{}, false
	}
	kp.row, kp.fresh = row, r.gen
	return row, true
}

func (r *TableReader) forget(pid int, kp *keptProc) {
	if kp.fd >= 0 {
		unix.Close(kp.fd)
		r.open--
	}
	delete(r.procs, pid)
}

// Close releases the kept descriptors.
func (r *TableReader) Close() {
	for pid, kp := range r.procs {
		r.forget(pid, kp)
	}
}
