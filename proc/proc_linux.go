//go:build linux

package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

func lookup(pid int) (Info, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if os.IsNotExist(err) {
			return Info{}, fmt.Errorf("look up pid %d: %w", pid, ErrNotFound)
		}
		return Info{}, fmt.Errorf("look up pid %d: %w", pid, err)
	}
	return parseStat(pid, b, bootTime())
}

// parseStat parses /proc/<pid>/stat. The command name sits in parentheses
// and may itself contain spaces and parentheses, so fields are counted from
// the last ')'.
func parseStat(pid int, b []byte, boot time.Time) (Info, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 || end+2 >= len(b) {
		return Info{}, fmt.Errorf("parse /proc/%d/stat: no command field", pid)
	}
	// Split into a fixed array: no allocation for a row read thousands
	// of times a refresh. f[0] is field 3 (state); starttime is field 22.
	var fa [22][]byte
	f := splitFields(b[end+2:], fa[:0])
	if len(f) < 20 {
		return Info{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	num := func(i int) int { n, _ := strconv.Atoi(string(f[i])); return n }
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return Info{}, fmt.Errorf("parse /proc/%d/stat starttime: %w", pid, err)
	}
	info := Info{
		Identity: Identity{PID: pid, Start: start, StartTime: boot.Add(time.Duration(start) * time.Second / clockTicks)},
		PPID:     num(1),
		PGID:     num(2),
		SID:      num(3),
		Zombie:   len(f[0]) > 0 && (f[0][0] == 'Z' || f[0][0] == 'X'),
		Stopped:  len(f[0]) > 0 && (f[0][0] == 'T' || f[0][0] == 't'),
	}
	// utime, stime, cutime, cstime are fields 14-17, num_threads 20, rss
	// (in pages) 24.
	if len(f) > 21 {
		ticks := uint64(0)
		for i := 11; i <= 14; i++ {
			n, _ := strconv.ParseUint(string(f[i]), 10, 64)
			ticks += n
		}
		rss, _ := strconv.ParseUint(string(f[21]), 10, 64)
		info.CPU = time.Duration(ticks) * time.Second / clockTicks
		info.RSS = rss * uint64(os.Getpagesize())
		info.Threads = num(17)
		info.Usage = true
	}
	return info, nil
}

// splitFields appends to f the space-separated fields of b, up to f's
// capacity.
func splitFields(b []byte, f [][]byte) [][]byte {
	start := -1
	for i := 0; i <= len(b) && len(f) < cap(f); i++ {
		space := i == len(b) || b[i] == ' ' || b[i] == '\n'
		switch {
		case space && start >= 0:
			f = append(f, b[start:i])
			start = -1
		case !space && start < 0:
			start = i
		}
	}
	return f
}

func table() ([]Info, error) {
	all, err := pids()
	if err != nil {
		return nil, fmt.Errorf("read process table: %w", err)
	}
	out := make([]Info, 0, len(all))
	boot := bootTime()
	var buf [1024]byte
	for _, pid := range all {
		b, err := ReadSmall("/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
		if err != nil {
			continue // exited between readdir and read
		}
		if info, err := parseStat(pid, b, boot); err == nil {
			out = append(out, info)
		}
	}
	return out, nil
}

// bootTime is when the system booted, to 10 ms: now less /proc/uptime.
// (/proc/stat's btime is in whole seconds, too coarse to order a start
// against times agentctl records.) It is read each time: a clock step
// moves it, and identity never depends on it, only on the raw ticks.
func bootTime() time.Time {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return time.Time{}
	}
	f := bytes.Fields(b)
	if len(f) == 0 {
		return time.Time{}
	}
	up, err := strconv.ParseFloat(string(f[0]), 64)
	if err != nil {
		return time.Time{}
	}
	return time.Now().Add(-time.Duration(up * float64(time.Second))).Round(10 * time.Millisecond)
}

// Cmdline returns the argv of pid.
func Cmdline(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, fmt.Errorf("read cmdline of %d: %w", pid, err)
	}
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil, nil
	}
	parts := bytes.Split(b, []byte{0})
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out, nil
}

// Cwd returns the working directory of pid.
func Cwd(pid int) (string, error) {
	s, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	if err != nil {
		return "", fmt.Errorf("read cwd of %d: %w", pid, err)
	}
	return s, nil
}

// WritableFiles returns the paths pid has open for writing (write-only or
// read-write): what it writes, less what it only reads.
func WritableFiles(pid int) ([]string, error) { return openFiles(pid, true) }

// OpenFiles returns the paths pid has open.
func OpenFiles(pid int) ([]string, error) { return openFiles(pid, false) }

// openFiles returns the paths pid has open; writable keeps those open for
// writing only, by each descriptor's flags in /proc/<pid>/fdinfo.
func openFiles(pid int, writable bool) ([]string, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("list open files of %d: %w", pid, err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list open files of %d: %w", pid, err)
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		p, err := os.Readlink(dir + "/" + n)
		if err != nil || len(p) == 0 || p[0] != '/' {
			continue
		}
		if writable && !openForWriting(pid, n) {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// openForWriting says whether descriptor fd of pid was opened write-only or
// read-write: the access mode in the octal flags of its fdinfo.
func openForWriting(pid int, fd string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + fd)
	if err != nil {
		return false
	}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		v, ok := bytes.CutPrefix(line, []byte("flags:"))
		if !ok {
			continue
		}
		flags, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 8, 64)
		return err == nil && flags&3 != 0 // O_ACCMODE: O_RDONLY is 0
	}
	return false
}

// ReadSmall reads a small file (a /proc or cgroup file) into buf and
// returns what it read: no more than buf holds. It opens, reads and closes
// with plain system calls and no allocation of its own, where os.ReadFile
// also stats, registers with the poller and allocates: that matters across
// a table of thousands, read every refresh.
func ReadSmall(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
	}
	return buf[:n], nil
}
