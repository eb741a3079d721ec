package pi

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/attribute"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/proc"
)

// envSessionMarker is set in the environment of every Pi agentctl starts,
// naming its session file. Pi overwrites its process title (argv shows only
// "pi"), but not its environment, so the marker links the process to its
// session even after the service restarts.
const envSessionMarker = "AGENTCTL_PI_SESSION"

// Evidence for a process match not named by adapters.ProcessRef's doc.
const evidenceEnviron = "environ"

// liveProc is a running Pi or pi-rust process.
type liveProc struct {
	info proc.Info
	argv []string
	cwd  string
	// marker is the session file named by envSessionMarker, if set.
	marker string
	rust   bool
}

// piKind tells whether argv is Pi's or pi-rust's.
func piKind(argv []string) (isPi, rust bool) {
	if len(argv) == 0 {
		return false, false
	}
	switch filepath.Base(argv[0]) {
	case "pi":
		return true, false
	case "pi-rust":
		return true, true
	case "node", "nodejs", "bun":
		for _, a := range argv[1:] {
			if strings.HasPrefix(a, "-") {
				continue
			}
			// The first non-flag argument is the script.
			return filepath.Base(a) == "pi" || strings.Contains(a, "pi-coding-agent/dist/cli.js"), false
		}
	}
	return false, false
}

// livePis lists the running Pi and pi-rust processes of the store at
// agentDir (this user's, under that folder).
// It reads each process's argv first and the kernel's process record only
// for Pi's, which halves the work of a Discover on a busy machine.
func livePis(snap *proc.Snapshot, agentDir string) ([]liveProc, error) {
	pids, err := snap.PIDs()
	if err != nil {
		return nil, err
	}
	var out []liveProc
	for _, pid := range pids {
		argv, err := snap.Cmdline(pid)
		if err != nil {
			continue // gone, or not ours to read
		}
		isPi, rust := piKind(argv)
		if !isPi || !storeio.UsesStore(snap, pid, agentDir, agentDirOf) {
			continue
		}
		info, err := snap.Lookup(pid)
		if err != nil || info.Zombie {
			continue
		}
		p := liveProc{info: info, argv: argv, rust: rust}
		p.cwd, _ = proc.Cwd(pid)
		p.marker = proc.EnvValue(pid, envSessionMarker)
		out = append(out, p)
	}
	return out, nil
}

// candidate is what matching needs of a session.
type candidate struct {
	path    string
	id      string
	cwd     string
	created time.Time
	updated time.Time
}

func candidatesOf(files []scanned) []candidate {
	out := make([]candidate, 0, len(files))
	for _, s := range files {
		if s.facts == nil || s.facts.bad != nil {
			continue
		}
		out = append(out, candidate{path: s.path, id: s.facts.id, cwd: s.facts.cwd, created: s.facts.created, updated: s.facts.mtime})
	}
	return out
}

// match is what the facts say of a session: the process tied to it; or
// the live processes of which one runs it (holders, running); or those
// that may be working on it (contenders, unknown).
type match struct {
	ref        *adapters.ProcessRef
	rust       bool
	holders    []int
	contenders []int
	evidence   []adapters.Evidence
	warning    string
}

// running says a live process runs the session, tied or not.
func (m match) running() bool { return m.ref != nil || len(m.holders) > 0 }

// matchProcesses attributes live processes to sessions (by path) through
// the shared solver (adapters/attribute), over these facts: the env marker
// agentctl set and a --session argument pin a pair; a Pi holds a session
// of its folder begun or (as its title hides -c and --session) written
// since it started, one at a time, the latest written it can; mem adds the
// pairs proven before (nil: none); an integration's reports (ties) pin the
// process that sent them.
func matchProcesses(sessions []candidate, procs []liveProc, ties []adapters.HookTie, mem *attribute.Memory, now time.Time) map[string]match {
	ss := make([]attribute.Session, len(sessions))
	for i, s := range sessions {
		ss[i] = attribute.Session{ID: s.path, Dir: s.cwd, Created: s.created, Updated: s.updated}
	}
	ps := make([]attribute.Proc, len(procs))
	for i, p := range procs {
		ap := attribute.Proc{PID: p.info.PID, Stamp: p.info.Start, Start: p.info.StartTime, Resumes: true}
		if p.cwd != "" {
			ap.Dirs = sameDirs(p.cwd)
		}
		switch {
		case p.marker != "":
			ap.Pin, ap.PinBy = p.marker, evidenceEnviron
		default:
			if path := sessionArg(p, sessions); path != "" {
				ap.Pin, ap.PinBy = path, "argv"
			}
		}
		ps[i] = ap
	}
	attribute.PinTies(ps, ties, func(id string) string {
		for _, s := range sessions {
			if s.id == id {
				return s.path
			}
		}
		return ""
	})
	ps, res := mem.Solve(now, ps, ss)
	out := make(map[string]match, len(res.Sessions))
	for _, s := range sessions {
		at := attribute.Of("pi", ps, res, s.path)
		if !at.Running && !at.Unknown {
			continue
		}
		m := match{ref: at.Ref, evidence: at.Evidence, warning: at.Warning}
		if at.Unknown {
			m.contenders = at.Holders
		} else {
			m.holders = at.Holders
		}
		// Reported as pi-rust's only when every process that may run it is
		// a pi-rust.
		m.rust = true
		for _, o := range res.Sessions[s.path].Holders {
			m.rust = m.rust && procs[o].rust
		}
		out[s.path] = m
	}
	return out
}

// sameDirs returns the spellings of dir a session may carry: as given,
// and with symlinks resolved.
func sameDirs(dir string) []string {
	out := []string{filepath.Clean(dir)}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != out[0] {
		out = append(out, real)
	}
	return out
}

// sessionArg resolves a --session argument in p's argv to a session path.
func sessionArg(p liveProc, sessions []candidate) string {
	val := ""
	for i, a := range p.argv {
		if a == "--session" && i+1 < len(p.argv) {
			val = p.argv[i+1]
		} else if v, ok := strings.CutPrefix(a, "--session="); ok {
			val = v
		}
	}
	if val == "" {
		return ""
	}
	// Pi treats a value with a separator or a .jsonl suffix as a path.
	if strings.ContainsAny(val, `/\`) || strings.HasSuffix(val, ".jsonl") {
		if !filepath.IsAbs(val) {
			if p.cwd == "" {
				return ""
			}
			val = filepath.Join(p.cwd, val)
		}
		val = filepath.Clean(val)
		for _, s := range sessions {
			if s.path == val {
				return s.path
			}
		}
		return ""
	}
	found := ""
	for _, s := range sessions {
		if strings.HasPrefix(s.id, val) {
			if found != "" {
				return "" // an ambiguous prefix
			}
			found = s.path
		}
	}
	return found
}
