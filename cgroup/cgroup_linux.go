//go:build linux

package cgroup

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Manager creates sessions' cgroups under the directories found at the
// service's start.
type Manager struct {
	status Status
	v2     string            // cgroup2 directory sessions are created in
	v1     map[string]string // per controller, the v1 directory
	// made are the directories Detect created, removed by Close when empty.
	made []string
}

// basePrefix starts the name of the directory a service makes for its
// sessions' cgroups where it has no cgroup of its own to use.
const basePrefix = "agentctl-"

// mount is a cgroup file system's mount: where, and which of the
// hierarchy's directories is its root (a cgroup namespace or a bind mount
// shows less than all of it).
type mount struct{ point, root string }

// Detect finds where the service may create its sessions' cgroups, once at
// its start. home is the service's home: the service of another home on
// the same machine gets directories of its own. A service that finds none
// says why in its Status and gets no cgroups.
func Detect(home string) *Manager {
	m := &Manager{v1: map[string]string{}}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		m.status.Reason = fmt.Sprintf("read the mount table: %v", err)
		return m
	}
	pc, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		m.status.Reason = fmt.Sprintf("read the service's cgroups: %v", err)
		return m
	}
	sum := sha256.Sum256([]byte(home))
	m.detect(mi, pc, basePrefix+hex.EncodeToString(sum[:6]))
	return m
}

func (m *Manager) detect(mountinfo, procCgroup []byte, name string) {
	v2m, v1m := parseMountinfo(mountinfo)
	ownV2, hasV2, ownV1 := parseProcCgroup(procCgroup)
	if hasV2 {
		ownV2 = leaveSession(v2m, ownV2)
	}
	for c, own := range ownV1 {
		if _, ok := v1m[c]; ok {
			ownV1[c] = leaveSession(v1m[c], own)
		}
	}
	var why []string
	have := map[string]bool{}
	switch {
	case v2m.point == "" || !hasV2:
		why = append(why, "no cgroup2 file system is mounted")
	default:
		base, err := m.v2Base(v2m, ownV2, name)
		if err != nil {
			why = append(why, err.Error())
			break
		}
		m.v2 = base
		m.status.V2 = base
		if m.status.Note != "" {
			if !slices.ContainsFunc(fields(filepath.Join(base, "cgroup.controllers")), func(c string) bool { return c == Memory || c == Pids || c == CPU }) {
				m.status.Note = "" // none to leave alone
			}
			break
		}
		// Best effort: a delegated cgroup that still holds other
		// processes than ours refuses controllers (no internal
		// processes); its sessions then get membership alone.
		for _, c := range fields(filepath.Join(base, "cgroup.controllers")) {
			if c == Memory || c == Pids || c == CPU {
				write(filepath.Join(base, "cgroup.subtree_control"), "+"+c)
			}
		}
		for _, c := range fields(filepath.Join(base, "cgroup.subtree_control")) {
			have[c] = true
		}
	}
	for _, c := range []string{Memory, Pids, CPU} {
		if have[c] {
			continue
		}
		mt, ok := v1m[c]
		own, mine := ownV1[c]
		if !ok || !mine {
			continue
		}
		dir, ok := dirOf(mt, own)
		if !ok || !writable(dir) {
			continue
		}
		base := filepath.Join(dir, name)
		if err := mkdir(base); err != nil {
			continue
		}
		m.made = append(m.made, base)
		m.v1[c] = base
		have[c] = true
	}
	if m.v2 == "" && len(m.v1) == 0 {
		m.status.Reason = strings.Join(why, "; ")
		return
	}
	m.status.Enabled = true
	for _, c := range []string{Memory, Pids, CPU} {
		if have[c] {
			m.status.Controllers = append(m.status.Controllers, c)
		}
	}
	if len(m.v1) > 0 {
		m.status.V1 = m.v1
	}
}

// leaveSession moves the service out of a session's cgroup, where it is
// when it was started from inside a session (a CLI there auto-started it),
// to where the service that made the session's cgroup was: the session's
// end kills everything in its cgroup, and the service is not the
// session's. It returns the cgroup the service is in.
func leaveSession(mt mount, own string) string {
	parent := path.Dir(own)
	var to string
	switch {
	case own == "/" || parent == "/":
		// A session's cgroup is below its service's directory.
	case isOwnBase(parent):
		to = path.Dir(parent)
	case !strings.Contains(path.Base(own), ".") && path.Base(own) != "service":
		// A delegated cgroup: its service's leaf beside the sessions.
		if d, ok := dirOf(mt, path.Join(parent, "service")); ok {
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				to = path.Join(parent, "service")
			}
		}
	}
	if to == "" {
		return own
	}
	d, ok := dirOf(mt, to)
	if !ok || write(filepath.Join(d, "cgroup.procs"), strconv.Itoa(os.Getpid())) != nil {
		return own
	}
	return to
}

// v2Base chooses the cgroup2 directory the sessions' cgroups go in:
//   - the service is in the root cgroup (root, no systemd): a directory of
//     its own there;
//   - the service is in a "service" leaf of a delegated cgroup (systemd's
//     DelegateSubgroup=service, or a service before it): that cgroup;
//   - the service's cgroup is writable (a unit with Delegate=yes): that
//     cgroup, the service moving itself into its "service" leaf first (a
//     cgroup with controllers for its children holds no process itself).
func (m *Manager) v2Base(mt mount, own, name string) (string, error) {
	dir, ok := dirOf(mt, own)
	if !ok {
		return "", fmt.Errorf("the service's cgroup %s is outside the cgroup2 hierarchy mounted at %s", own, mt.point)
	}
	if own == "/" {
		if !writable(dir) {
			return "", fmt.Errorf("the service runs in the root cgroup, which uid %d may not write (install the service as a systemd unit, which delegates it a cgroup: agentctl service install)", os.Getuid())
		}
		base := filepath.Join(dir, name)
		if err := mkdir(base); err != nil {
			return "", err
		}
		m.made = append(m.made, base)
		return base, nil
	}
	if filepath.Base(dir) == "service" && writable(filepath.Dir(dir)) {
		return filepath.Dir(dir), nil
	}
	if !writable(dir) {
		return "", fmt.Errorf("the service's cgroup %s is not delegated to it (not writable by uid %d; a systemd unit with Delegate=yes is: agentctl service install)", own, os.Getuid())
	}
	if filepath.Ext(dir) == ".service" {
		// systemd put the service at the top of its unit's cgroup: it
		// puts the next one there too (a restart), which a cgroup with
		// controllers for its children refuses. Only systemd 254 and
		// later start it in a leaf (DelegateSubgroup=service).
		m.status.Note = "no cgroup2 controllers: systemd starts the service at the top of its unit's cgroup, which must hold none (systemd 254 or later starts it in a leaf, DelegateSubgroup=service)"
	}
	leaf := filepath.Join(dir, "service")
	if err := mkdir(leaf); err != nil {
		return "", err
	}
	if err := write(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(os.Getpid())); err != nil {
		return "", fmt.Errorf("move the service into %s: %w", leaf, err)
	}
	return dir, nil
}

// Status says whether and where sessions get cgroups.
func (m *Manager) Status() Status { return m.status }

// Paths names the cgroup of session id; empty when sessions get none.
func (m *Manager) Paths(id string) Paths {
	var p Paths
	if !m.status.Enabled {
		return p
	}
	if m.v2 != "" {
		p.V2 = filepath.Join(m.v2, id)
	}
	for c, d := range m.v1 {
		if p.V1 == nil {
			p.V1 = map[string]string{}
		}
		p.V1[c] = filepath.Join(d, id)
	}
	return p
}

// Close removes the directories Detect created, once no session's cgroup
// is left in them (a session outlives the service: its cgroup stays).
func (m *Manager) Close() {
	for _, d := range m.made {
		os.Remove(d)
	}
}

// Create makes a session's cgroup and applies l to it, but for its bound
// on processes (LimitPids).
func Create(p Paths, l Limits) error {
	for _, d := range p.dirs() {
		var err error
		// The last session of a service's removed the service's directory
		// (it may do so between the two mkdirs): made again.
		for try := 0; try < 3; try++ {
			if parent := filepath.Dir(d); isOwnBase(parent) {
				if err = mkdir(parent); err != nil {
					return err
				}
				if d == p.V2 {
					for _, c := range fields(filepath.Join(parent, "cgroup.controllers")) {
						if c == Memory || c == Pids || c == CPU {
							write(filepath.Join(parent, "cgroup.subtree_control"), "+"+c)
						}
					}
				}
			}
			if err = mkdir(d); !errors.Is(err, fs.ErrNotExist) {
				break
			}
		}
		if err != nil {
			return err
		}
	}
	if l.MemoryMax > 0 {
		if d := p.V1[Memory]; d != "" {
			if err := write(filepath.Join(d, "memory.limit_in_bytes"), strconv.FormatInt(l.MemoryMax, 10)); err != nil {
				return fmt.Errorf("memory limit: %w", err)
			}
			// With swap accounting, the limit covers swap too: the
			// session is ended at its limit, not swapped out.
			write(filepath.Join(d, "memory.memsw.limit_in_bytes"), strconv.FormatInt(l.MemoryMax, 10))
		} else {
			if err := write(filepath.Join(p.V2, "memory.max"), strconv.FormatInt(l.MemoryMax, 10)); err != nil {
				return fmt.Errorf("memory limit: %w", err)
			}
			write(filepath.Join(p.V2, "memory.swap.max"), "0")
		}
	}
	if l.CPUs > 0 {
		const period = 100000
		quota := max(int64(l.CPUs*period), 1000)
		if d := p.V1[CPU]; d != "" {
			if err := write(filepath.Join(d, "cpu.cfs_period_us"), strconv.Itoa(period)); err != nil {
				return fmt.Errorf("cpu limit: %w", err)
			}
			if err := write(filepath.Join(d, "cpu.cfs_quota_us"), strconv.FormatInt(quota, 10)); err != nil {
				return fmt.Errorf("cpu limit: %w", err)
			}
		} else if err := write(filepath.Join(p.V2, "cpu.max"), fmt.Sprintf("%d %d", quota, period)); err != nil {
			return fmt.Errorf("cpu limit: %w", err)
		}
	}
	return nil
}

// LimitPids applies l's bound on processes to p. It comes once the monitor
// has started the agent inside and left: the monitor's own threads would
// count against it.
func LimitPids(p Paths, l Limits) error {
	if l.PidsMax <= 0 {
		return nil
	}
	d := p.V2
	if v1 := p.V1[Pids]; v1 != "" {
		d = v1
	}
	if err := write(filepath.Join(d, "pids.max"), strconv.FormatInt(l.PidsMax, 10)); err != nil {
		return fmt.Errorf("pids limit: %w", err)
	}
	return nil
}

// Join moves the calling process into p, and returns the cgroups it was
// in (for Move back).
func Join(p Paths) (Paths, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Paths{}, fmt.Errorf("read the mount table: %w", err)
	}
	pc, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return Paths{}, fmt.Errorf("read the process's cgroups: %w", err)
	}
	v2m, v1m := parseMountinfo(mi)
	ownV2, _, ownV1 := parseProcCgroup(pc)
	var origin Paths
	if p.V2 != "" {
		d, ok := dirOf(v2m, ownV2)
		if !ok {
			return Paths{}, fmt.Errorf("the process's cgroup %s is outside the cgroup2 hierarchy at %s", ownV2, v2m.point)
		}
		origin.V2 = d
	}
	for c := range p.V1 {
		d, ok := dirOf(v1m[c], ownV1[c])
		if !ok {
			return Paths{}, fmt.Errorf("the process's %s cgroup %s is outside its hierarchy", c, ownV1[c])
		}
		if origin.V1 == nil {
			origin.V1 = map[string]string{}
		}
		origin.V1[c] = d
	}
	if err := Move(p); err != nil {
		Move(origin)
		return Paths{}, err
	}
	return origin, nil
}

// Move moves the calling process (all its threads) into p.
func Move(p Paths) error {
	pid := strconv.Itoa(os.Getpid())
	for _, d := range p.dirs() {
		if err := write(filepath.Join(d, "cgroup.procs"), pid); err != nil {
			return fmt.Errorf("move into %s: %w", d, err)
		}
	}
	return nil
}

// Procs lists the processes in p's cgroups and below, the caller left out
// (it is never its own target).
func Procs(p Paths) []int {
	seen := map[int]bool{os.Getpid(): true}
	var out []int
	for _, d := range p.dirs() {
		filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(filepath.Join(path, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
					seen[pid] = true
					out = append(out, pid)
				}
			}
			return nil
		})
	}
	slices.Sort(out)
	return out
}

// Signal sends sig to every process in p and returns how many there were.
func Signal(p Paths, sig unix.Signal) int {
	procs := Procs(p)
	for _, pid := range procs {
		unix.Kill(pid, sig)
	}
	return len(procs)
}

// WaitEmpty waits up to d for p to hold no process.
func WaitEmpty(ctx context.Context, p Paths, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for len(Procs(p)) > 0 {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Kill ends every process in p: cgroup.kill where the kernel has it (no
// process can fork its way out of it), SIGKILL to each listed process too
// (v1, older kernels), until none is left or bound passes. It returns the
// processes that survived.
func Kill(ctx context.Context, p Paths, bound time.Duration) []int {
	deadline := time.Now().Add(bound)
	for {
		procs := Procs(p)
		if len(procs) == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return procs
		}
		if p.V2 != "" {
			write(filepath.Join(p.V2, "cgroup.kill"), "1")
		}
		for _, pid := range procs {
			unix.Kill(pid, unix.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ReadUsage reads what p's cgroup counted: the peak of its memory and
// whether the OOM killer ended a process in it.
func ReadUsage(p Paths) Usage {
	var u Usage
	if d := p.V1[Memory]; d != "" {
		u.MemoryPeak = number(filepath.Join(d, "memory.max_usage_in_bytes"))
		u.OOM = keyed(filepath.Join(d, "memory.oom_control"), "oom_kill") > 0
		return u
	}
	if p.V2 != "" {
		u.MemoryPeak = number(filepath.Join(p.V2, "memory.peak"))
		u.OOM = keyed(filepath.Join(p.V2, "memory.events"), "oom_kill") > 0
	}
	return u
}

// Remove removes p's directories, those below them first. A cgroup that
// still holds a process stays.
func Remove(p Paths) error {
	var errs []error
	for _, d := range p.dirs() {
		var dirs []string
		filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			// A cgroup just emptied may take a moment to be removable.
			var err error
			for try := 0; try < 50; try++ {
				if err = unix.Rmdir(dirs[i]); err == nil || errors.Is(err, unix.ENOENT) || !errors.Is(err, unix.EBUSY) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dirs[i], err))
			}
		}
		// The directory a service without delegation made at the top of
		// a hierarchy goes with its last session (the service may be long
		// gone); one still in use is not empty, and stays.
		if parent := filepath.Dir(d); isOwnBase(parent) {
			unix.Rmdir(parent)
		}
	}
	return errors.Join(errs...)
}

// isOwnBase reports whether dir is a directory Detect makes for a service
// (agentctl-<key>), which Create makes again and Remove removes when empty.
func isOwnBase(dir string) bool { return strings.HasPrefix(filepath.Base(dir), basePrefix) }

// parseMountinfo finds the cgroup2 mount and the v1 mount of each
// controller in /proc/self/mountinfo.
func parseMountinfo(b []byte) (mount, map[string]mount) {
	var v2 mount
	v1 := map[string]mount{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := slices.Index(f, "-")
		if sep < 5 || len(f) < sep+4 {
			continue
		}
		mt := mount{point: unescape(f[4]), root: unescape(f[3])}
		switch f[sep+1] {
		case "cgroup2":
			if v2.point == "" {
				v2 = mt
			}
		case "cgroup":
			for _, opt := range strings.Split(f[sep+3], ",") {
				if _, dup := v1[opt]; !dup && (opt == Memory || opt == Pids || opt == CPU) {
					v1[opt] = mt
				}
			}
		}
	}
	return v2, v1
}

// parseProcCgroup reads /proc/self/cgroup: the cgroup2 path (and whether
// there is one), and each v1 controller's.
func parseProcCgroup(b []byte) (string, bool, map[string]string) {
	var v2 string
	has := false
	v1 := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		ctrls, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		if id == "0" && ctrls == "" {
			v2, has = path, true
			continue
		}
		for _, c := range strings.Split(ctrls, ",") {
			v1[c] = path
		}
	}
	return v2, has, v1
}

// dirOf is the directory of cgroup path own under mount mt.
func dirOf(mt mount, own string) (string, bool) {
	// A process outside its cgroup namespace's root sees a path above it
	// ("/../.."): not a directory of this mount.
	if mt.point == "" || !strings.HasPrefix(own, "/") || slices.Contains(strings.Split(own, "/"), "..") {
		return "", false
	}
	if mt.root == "/" {
		return filepath.Join(mt.point, own), true
	}
	if own == mt.root {
		return mt.point, true
	}
	if rest, ok := strings.CutPrefix(own, mt.root+"/"); ok {
		return filepath.Join(mt.point, rest), true
	}
	return "", false
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func writable(dir string) bool {
	return unix.Access(dir, unix.W_OK) == nil && unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK) == nil
}

func mkdir(d string) error {
	if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create cgroup %s: %w", d, err)
	}
	return nil
}

// write writes one value to a cgroup file (which exists: never created).
func write(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s to %s: %w", value, path, err)
	}
	return nil
}

func fields(path string) []string {
	b, _ := os.ReadFile(path)
	return strings.Fields(string(b))
}

func number(path string) int64 {
	b, _ := os.ReadFile(path)
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// keyed reads the value of key in a file of "key value" lines.
func keyed(path, key string) int64 {
	b, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
