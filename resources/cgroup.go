package resources

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/agentctl/agentctl/cgroup"
)

// cgroupSpec is a session's cgroup, as its monitor writes it in
// home.CgroupFile when the session has one (cgroup.Paths: {"v2": DIR,
// "v1": {"memory": DIR, "pids": DIR, ...}}), every part optional, each DIR
// absolute. No file: no cgroup.
type cgroupSpec = cgroup.Paths

// parseSpec reads home.CgroupFile's content; ok is false when it names no
// directory at all, or a relative one (it would be read relative to the
// service's directory).
func parseSpec(b []byte) (cgroupSpec, bool) {
	var s cgroupSpec
	if json.Unmarshal(b, &s) != nil {
		return cgroupSpec{}, false
	}
	abs := func(p string) bool { return p == "" || p[0] == '/' }
	any := s.V2 != ""
	if !abs(s.V2) {
		return cgroupSpec{}, false
	}
	for _, d := range s.V1 {
		if !abs(d) {
			return cgroupSpec{}, false
		}
		any = any || d != ""
	}
	return s, any
}

// parseUint reads a file holding one number (memory.current,
// pids.current, cpuacct.usage); ok is false for anything else ("max").
func parseUint(b []byte) (uint64, bool) {
	n, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	return n, err == nil
}

// parseKeyed finds key in a "key value" file (memory.stat, cpu.stat), or
// a "key: value" one (/proc/PID/io).
func parseKeyed(b []byte, key string) (uint64, bool) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		k, v, ok := bytes.Cut(line, []byte{' '})
		if ok && string(bytes.TrimSuffix(k, []byte{':'})) == key {
			return parseUint(v)
		}
	}
	return 0, false
}

// parseIOStat adds up cgroup v2's io.stat over its devices: lines of
// "MAJ:MIN rbytes=N wbytes=N rios=N …".
func parseIOStat(b []byte) (read, write uint64) {
	for _, f := range bytes.Fields(b) {
		k, v, ok := bytes.Cut(f, []byte{'='})
		if !ok {
			continue
		}
		n, _ := strconv.ParseUint(string(v), 10, 64)
		switch string(k) {
		case "rbytes":
			read += n
		case "wbytes":
			write += n
		}
	}
	return read, write
}

// parseBlkio adds up cgroup v1's blkio.throttle.io_service_bytes over its
// devices: lines of "MAJ:MIN Read N", "MAJ:MIN Write N", …, "Total N".
func parseBlkio(b []byte) (read, write uint64) {
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		f := bytes.Fields(line)
		if len(f) != 3 {
			continue
		}
		n, _ := strconv.ParseUint(string(f[2]), 10, 64)
		switch string(f[1]) {
		case "Read":
			read += n
		case "Write":
			write += n
		}
	}
	return read, write
}

// parseProcIO reads /proc/PID/io's read_bytes and write_bytes (what the
// process made storage read and write, not every read and write call).
func parseProcIO(b []byte) (read, write uint64, ok bool) {
	r, okR := parseKeyed(b, "read_bytes")
	w, okW := parseKeyed(b, "write_bytes")
	return r, w, okR && okW
}

// pidsOf lists the pids of a cgroup.procs file.
func pidsOf(b []byte) []int {
	var out []int
	for _, f := range bytes.Fields(b) {
		if n, err := strconv.Atoi(string(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// parseMeminfo reads /proc/meminfo's MemTotal and MemAvailable (kB).
func parseMeminfo(b []byte) (total, available uint64) {
	kb := func(key string) uint64 {
		n, _ := parseKeyed(bytes.ReplaceAll(b, []byte(" kB"), nil), key)
		return n * 1024
	}
	return kb("MemTotal"), kb("MemAvailable")
}
