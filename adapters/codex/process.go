package codex

import (
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/proc"
)

// Evidence for process matches (see adapters.ProcessRef).
const (
	evidenceOpenFile = "open-file"
	evidenceArgv     = "argv"
)

// uuidPattern matches the session ids Codex uses (UUIDv7, lower case).
const uuidPattern = `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`

var (
	// lockName matches thread-writer-locks/<id>.lock, which Codex also
	// keeps open while it writes a thread.
	// Compiled on first use: package init runs at every CLI start.
	lockName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(` + uuidPattern + `)\.lock$`) })
	uuidOnly = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^` + uuidPattern + `$`) })
)

// idFromRolloutPath returns the session id a rollout's file name carries:
// rollout-YYYY-MM-DDTHH-MM-SS-<id>.jsonl. It runs for every rollout on
// every discovery, so it matches by hand rather than by regular expression.
func idFromRolloutPath(path string) string {
	name := filepath.Base(path)
	const stamp = "YYYY-MM-DDTHH-MM-SS-"
	rest, ok := strings.CutPrefix(name, "rollout-")
	if !ok {
		return ""
	}
	rest, ok = strings.CutSuffix(rest, ".jsonl")
	if !ok || len(rest) != len(stamp)+36 {
		return ""
	}
	for i := 0; i < len(stamp); i++ {
		c := rest[i]
		switch stamp[i] {
		case '-', 'T':
			if c != stamp[i] {
				return ""
			}
		default:
			if c < '0' || c > '9' {
				return ""
			}
		}
	}
	id := rest[len(stamp):]
	if !isUUID(id) {
		return ""
	}
	return strings.ToLower(id)
}

// isUUID says whether s is a UUID in its 8-4-4-4-12 hex form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// idFromOpenFile returns the session a file Codex holds open belongs to: a
// rollout, or a thread writer lock.
func idFromOpenFile(path string) string {
	if id := idFromRolloutPath(path); id != "" {
		return id
	}
	if filepath.Base(filepath.Dir(path)) == "thread-writer-locks" {
		if m := lockName().FindStringSubmatch(filepath.Base(path)); m != nil {
			return strings.ToLower(m[1])
		}
	}
	return ""
}

// isCodex tells whether argv is Codex's: the native binary, or the Node
// wrapper npm installs (node …/bin/codex …).
func isCodex(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	switch filepath.Base(argv[0]) {
	case "codex":
		return true
	case "node", "nodejs", "bun":
		for _, a := range argv[1:] {
			if strings.HasPrefix(a, "-") {
				continue
			}
			// The first non-flag argument is the script.
			return filepath.Base(a) == "codex" || filepath.Base(a) == "codex.js" || strings.Contains(a, "@openai/codex")
		}
	}
	return false
}

// valueOptions are the Codex options that take a separate value, so a
// scan for the resume id skips the value too.
var valueOptions = map[string]bool{
	"-c": true, "--config": true, "-i": true, "--image": true, "--enable": true, "--disable": true,
	"-m": true, "--model": true, "-p": true, "--profile": true, "-s": true, "--sandbox": true,
	"-C": true, "--cd": true, "--add-dir": true, "--color": true, "-o": true, "--output-last-message": true,
	"--output-schema": true, "--local-provider": true, "--thread-source": true, "-a": true, "--ask-for-approval": true,
}

// resumeArg returns the session id of `codex [exec] resume <id>`, or "".
func resumeArg(argv []string) string {
	for i, a := range argv {
		if a != "resume" {
			continue
		}
		rest := argv[i+1:]
		for j := 0; j < len(rest); j++ {
			b := rest[j]
			switch {
			case b == "--":
				continue
			case valueOptions[b]:
				j++ // skip the option's value
				continue
			case strings.HasPrefix(b, "-"):
				continue
			case uuidOnly().MatchString(b):
				return strings.ToLower(b)
			}
			// The first positional is the id; a thread name is not
			// evidence agentctl can check.
			return ""
		}
		return ""
	}
	return ""
}

// liveProc is a running Codex process.
type liveProc struct {
	info proc.Info
	argv []string
}

// liveCodexes lists the Codex processes of the store at codexHome (this
// user's, under that folder), by pid. It
// reads each process's argv first and the kernel's record only for Codex's.
func liveCodexes(snap *proc.Snapshot, codexHome string) (map[int]liveProc, error) {
	pids, err := snap.PIDs()
	if err != nil {
		return nil, err
	}
	out := map[int]liveProc{}
	for _, pid := range pids {
		argv, err := snap.Cmdline(pid)
		if err != nil || !isCodex(argv) || !storeio.UsesStore(snap, pid, codexHome, homeOf) {
			continue
		}
		info, err := snap.Lookup(pid)
		if err != nil || info.Zombie {
			continue
		}
		out[pid] = liveProc{info: info, argv: argv}
	}
	return out, nil
}

// outermost climbs from pid to the topmost Codex ancestor: the process a
// user or agentctl started (the Node wrapper over the native binary).
func outermost(procs map[int]liveProc, pid int) int {
	seen := map[int]bool{}
	for !seen[pid] {
		seen[pid] = true
		parent, ok := procs[procs[pid].info.PPID]
		if !ok {
			break
		}
		pid = parent.info.PID
	}
	return pid
}

// openIDs returns the session ids whose files pid holds open, sorted.
func openIDs(pid int) []string {
	files, err := proc.OpenFiles(pid)
	if err != nil {
		return nil
	}
	set := map[string]bool{}
	for _, f := range files {
		if id := idFromOpenFile(f); id != "" {
			set[id] = true
		}
	}
	ids := make([]string, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// matchProcesses links live Codex processes to session ids by evidence:
// the rollout (or writer lock) a process holds open, else a `resume <id>`
// argument. The match is reported on the outermost Codex process of the
// holder's tree. A session claimed by two separate process trees is left
// unmatched: unknown, not a guess.
func matchProcesses(procs map[int]liveProc) map[string]*adapters.ProcessRef {
	holders := map[string]map[int]bool{}
	argv := map[string]map[int]bool{}
	add := func(m map[string]map[int]bool, id string, pid int) {
		if m[id] == nil {
			m[id] = map[int]bool{}
		}
		m[id][pid] = true
	}
	for pid, p := range procs {
		top := outermost(procs, pid)
		for _, id := range openIDs(pid) {
			add(holders, id, top)
		}
		if id := resumeArg(p.argv); id != "" {
			add(argv, id, top)
		}
	}
	out := map[string]*adapters.ProcessRef{}
	pick := func(m map[string]map[int]bool, evidence string) {
		for id, tops := range m {
			if _, done := out[id]; done || len(tops) != 1 {
				continue
			}
			for pid := range tops {
				out[id] = &adapters.ProcessRef{PID: pid, Start: procs[pid].info.Start, Evidence: evidence}
			}
		}
	}
	pick(holders, evidenceOpenFile)
	// A session held open by two trees is ambiguous; argv must not
	// override that.
	for id, tops := range holders {
		if len(tops) > 1 {
			out[id] = nil
		}
	}
	pick(argv, evidenceArgv)
	for id, ref := range out {
		if ref == nil {
			delete(out, id)
		}
	}
	return out
}
