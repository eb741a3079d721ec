package pi

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/adapters"
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

// startSlack covers the start time's resolution (boot time is known to the
// second) and Pi writing its header after it has started.
const startSlack = 2 * time.Second

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

// match is the process found for a session; or, when none was, the live
// processes that could be working on it (two claiming it, or a Pi in its
// folder that nothing ties to a session), which make its end unprovable.
type match struct {
	ref        *adapters.ProcessRef
	rust       bool
	contenders []int
}

// matchProcesses links live processes to sessions by evidence, strongest
// first: the env marker agentctl set, a --session argument, or (for a Pi
// started in a terminal) its cwd and start time. A session claimed by two
// processes, or a cwd with two candidates, is left unmatched: unknown, not
// a guess.
func matchProcesses(sessions []candidate, procs []liveProc) map[string]match {
	byPath := make(map[string]candidate, len(sessions))
	for _, s := range sessions {
		byPath[s.path] = s
	}
	claims := map[string][]int{} // session path -> indexes into procs
	evidence := map[int]string{}
	unmatched := map[int]bool{}
	for i, p := range procs {
		if p.marker != "" {
			if _, ok := byPath[p.marker]; ok {
				claims[p.marker] = append(claims[p.marker], i)
				evidence[i] = evidenceEnviron
				continue
			}
		}
		if path := sessionArg(p, sessions); path != "" {
			claims[path] = append(claims[path], i)
			evidence[i] = "argv"
			continue
		}
		if p.marker == "" {
			unmatched[i] = true
		}
	}

	// cwd + start: one unmatched process in a cwd, and exactly one session
	// of that cwd begun after it started and written since.
	perCwd := map[string][]int{}
	for i := range unmatched {
		if procs[i].cwd != "" {
			perCwd[procs[i].cwd] = append(perCwd[procs[i].cwd], i)
		}
	}
	for cwd, idx := range perCwd {
		if len(idx) != 1 {
			continue
		}
		p := procs[idx[0]]
		start := p.info.StartTime
		var found []string
		for _, s := range sessions {
			if s.cwd == cwd && len(claims[s.path]) == 0 && !s.created.Before(start.Add(-startSlack)) && !s.updated.Before(start.Add(-startSlack)) {
				found = append(found, s.path)
			}
		}
		if len(found) == 1 {
			claims[found[0]] = append(claims[found[0]], idx[0])
			evidence[idx[0]] = "cwd+start"
		}
	}

	out := make(map[string]match, len(claims))
	for path, idx := range claims {
		if len(idx) != 1 {
			// Two processes on one session: ambiguous.
			for _, i := range idx {
				out[path] = match{contenders: append(out[path].contenders, procs[i].info.PID)}
			}
			continue
		}
		p := procs[idx[0]]
		out[path] = match{
			ref:  &adapters.ProcessRef{PID: p.info.PID, Start: p.info.Start, Evidence: evidence[idx[0]]},
			rust: p.rust,
		}
	}
	// A Pi tied to no session may be working on any session of its folder
	// written since it started (or of any folder, when its own cannot be
	// read): those sessions' ends cannot be told while it lives.
	for i := range unmatched {
		if _, owns := evidence[i]; owns {
			continue
		}
		p := procs[i]
		for _, s := range sessions {
			if m := out[s.path]; m.ref != nil || (p.cwd != "" && s.cwd != p.cwd) || s.updated.Before(p.info.StartTime.Add(-startSlack)) {
				continue
			}
			m := out[s.path]
			m.contenders = append(m.contenders, p.info.PID)
			out[s.path] = m
		}
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
