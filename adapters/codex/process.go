package codex

import (
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/attribute"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/proc"
)

// Evidence for process matches (see adapters.ProcessRef).
const (
	evidenceOpenFile = "open-file"
	evidenceArgv     = "argv"
	evidenceCwdStart = "cwd+start"
	// evidenceDaemonTurn: the app-server daemon holds the thread and its
	// rollout says a turn runs.
	evidenceDaemonTurn = "app-server turn"
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

// codexArgs returns the arguments Codex was given: argv after the native
// binary, or after the script of the Node wrapper.
func codexArgs(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	switch filepath.Base(argv[0]) {
	case "node", "nodejs", "bun":
		for i, a := range argv[1:] {
			if !strings.HasPrefix(a, "-") {
				return argv[i+2:]
			}
		}
		return nil
	}
	return argv[1:]
}

// subcommands are Codex's commands; any other first positional argument
// is the TUI's prompt.
var subcommands = map[string]bool{
	"agents": true, "exec": true, "e": true, "review": true, "login": true, "logout": true, "mcp": true,
	"plugin": true, "app-server": true, "remote-control": true, "completion": true, "update": true,
	"doctor": true, "sandbox": true, "debug": true, "apply": true, "a": true, "resume": true, "queue": true,
	"archive": true, "delete": true, "migrate-rollouts": true, "migrate-nfs-db": true, "unarchive": true,
	"fork": true, "cloud": true, "exec-server": true, "features": true, "help": true, "mcp-server": true,
}

// subcommand returns the Codex command argv runs ("exec", "app-server",
// "resume", ...), or "" for the interactive TUI.
func subcommand(argv []string) string {
	args := codexArgs(argv)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return ""
		case valueOptions[a]:
			i++
		case strings.HasPrefix(a, "-"):
		case subcommands[a]:
			return a
		default:
			return "" // the TUI's prompt
		}
	}
	return ""
}

// isDaemon says whether argv is Codex's shared app-server, which runs the
// turns of every TUI of the store: holding a thread open there says no
// more than that some TUI uses it.
func isDaemon(argv []string) bool { return subcommand(argv) == "app-server" }

// isTUI says whether argv is Codex's interactive interface.
func isTUI(argv []string) bool {
	switch subcommand(argv) {
	case "", "resume", "fork":
		return true
	}
	return false
}

// outermost climbs from pid to the topmost Codex ancestor: the process a
// user or agentctl started (the Node wrapper over the native binary). The
// app-server daemon is its own top: the TUI that happened to start it
// does not own the threads it runs for others.
func outermost(procs map[int]liveProc, pid int) int {
	seen := map[int]bool{}
	for !seen[pid] {
		seen[pid] = true
		if isDaemon(procs[pid].argv) {
			break
		}
		parent, ok := procs[procs[pid].info.PPID]
		if !ok {
			break
		}
		pid = parent.info.PID
	}
	return pid
}

// openIDs returns the session ids whose files pid holds open for writing,
// sorted: a Codex that only reads another thread's rollout (a starting TUI
// lists its folder's threads) is not that thread's process.
func openIDs(pid int) []string {
	files, err := proc.WritableFiles(pid)
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
// unmatched: unknown, not a guess; contenders names those trees.
//
// Threads the app-server daemon holds are returned apart (daemonHeld, by
// the daemon's pid): the daemon is not their process, but for a turn it
// still runs (see daemonTurns).
func matchProcesses(procs map[int]liveProc) (refs map[string]*adapters.ProcessRef, contenders map[string][]int, daemonHeld map[string]int) {
	holders := map[string]map[int]bool{}
	argv := map[string]map[int]bool{}
	daemonHeld = map[string]int{}
	add := func(m map[string]map[int]bool, id string, pid int) {
		if m[id] == nil {
			m[id] = map[int]bool{}
		}
		m[id][pid] = true
	}
	for pid, p := range procs {
		top := outermost(procs, pid)
		if isDaemon(procs[top].argv) {
			for _, id := range openIDs(pid) {
				daemonHeld[id] = top
			}
			continue
		}
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
	contenders = map[string][]int{}
	for id, tops := range holders {
		if len(tops) > 1 {
			out[id] = nil
			for pid := range tops {
				contenders[id] = append(contenders[id], pid)
			}
		}
	}
	pick(argv, evidenceArgv)
	for id, ref := range out {
		if ref == nil {
			delete(out, id)
		}
	}
	return out, contenders, daemonHeld
}

// daemonThread is what matching a thread the daemon holds needs of it.
type daemonThread struct {
	id, cwd          string
	created, updated time.Time
}

// attributeDaemonThreads decides, through the shared solver (see
// adapters/attribute), which TUIs hold the threads the app-server daemon
// holds. Nothing the daemon says names a thread's TUI, so the facts are
// those of the TUIs of the store: a TUI works in its folder (its cwd, or
// -C) on one thread at a time, begun after it started (written since, for
// a `resume` without an id); a TUI tied by an open file or `resume <id>`
// (refs) holds that one; mem adds what earlier answers proved (nil:
// none). A thread every consistent assignment gives a live TUI is running
// (tied when which one is known), one none does is not running whatever
// the daemon keeps loaded (it unloads a thread about a minute after its
// TUI quits), and the rest are unknown with their candidates. Threads in
// refs are left out (their process is known first-hand), and so are those
// two process trees hold open (contended: unknown, first-hand).
func attributeDaemonThreads(procs map[int]liveProc, refs map[string]*adapters.ProcessRef, contended map[string][]int, threads []daemonThread, mem *attribute.Memory, now time.Time) map[string]attribute.Attribution {
	owned := map[int]string{}
	for id, r := range refs {
		// A tree holding several files keeps the smallest id's pin: any
		// of them excludes the TUI from the daemon's threads.
		if old, ok := owned[r.PID]; !ok || id < old {
			owned[r.PID] = id
		}
	}
	pids := make([]int, 0, len(procs))
	for pid := range procs {
		pids = append(pids, pid)
	}
	sort.Ints(pids) // a stable order of processes: stable answers
	var ps []attribute.Proc
	for _, pid := range pids {
		p := procs[pid]
		if outermost(procs, pid) != pid || !isTUI(p.argv) {
			continue
		}
		if _, ok := owned[pid]; !ok && noDaemon(p.argv) {
			continue // its turns run in itself: it holds none of the daemon's threads
		}
		ap := attribute.Proc{PID: pid, Stamp: p.info.Start, Start: p.info.StartTime}
		switch id, ok := owned[pid]; {
		case ok:
			ap.Pin, ap.PinBy = id, refs[id].Evidence
		case resumeArg(p.argv) != "":
			// Resuming a thread not among the daemon's: it holds none of them.
			ap.Pin, ap.PinBy = resumeArg(p.argv), evidenceArgv
		case subcommand(p.argv) == "resume":
			ap.Resumes = true // a picker or --last: an older thread it writes to
		}
		if dir, err := proc.Cwd(pid); err == nil {
			if cd := cdArg(p.argv); cd != "" {
				if !filepath.IsAbs(cd) {
					cd = filepath.Join(dir, cd)
				}
				dir = cd
			}
			for d := range sameDirs(dir) {
				ap.Dirs = append(ap.Dirs, d)
			}
			sort.Strings(ap.Dirs)
		} else if ap.Pin == "" {
			continue // its folder unknown, it could hold any thread: not a fact to build on
		}
		ps = append(ps, ap)
	}
	var ss []attribute.Session
	for _, t := range threads {
		if refs[t.id] != nil || len(contended[t.id]) > 0 {
			continue
		}
		ss = append(ss, attribute.Session{ID: t.id, Dir: t.cwd, Created: t.created, Updated: t.updated})
	}
	if len(ss) == 0 {
		return nil
	}
	ps, res := mem.Solve(now, ps, ss)
	out := map[string]attribute.Attribution{}
	for _, s := range ss {
		if at := attribute.Of(Name, ps, res, s.ID); at.Running || at.Unknown {
			out[s.ID] = at
		}
	}
	return out
}

// noDaemon says whether argv runs the TUI with --no-daemon: its threads
// run in its own process, never in the shared app-server.
func noDaemon(argv []string) bool {
	for _, a := range codexArgs(argv) {
		switch a {
		case "--":
			return false
		case "--no-daemon":
			return true
		}
	}
	return false
}

// cdArg returns the folder of -C/--cd in argv, or "".
func cdArg(argv []string) string {
	args := codexArgs(argv)
	for i, a := range args {
		switch {
		case a == "--":
			return ""
		case (a == "-C" || a == "--cd") && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "--cd="):
			return strings.TrimPrefix(a, "--cd=")
		}
	}
	return ""
}

// daemonTurns gives the daemon's process to each thread it holds whose
// turn still runs there and that no TUI was tied to: the turn goes on in
// the daemon whatever happened to the TUI that started it (a terminal
// killed mid-tool leaves the tool, the model's requests and the tokens
// going), and the thread is running until its rollout records the turn's
// end or the daemon lets the thread go.
func daemonTurns(procs map[int]liveProc, refs map[string]*adapters.ProcessRef, held map[string]int, running func(id string) bool) {
	for id, pid := range held {
		if refs[id] != nil || !running(id) {
			continue
		}
		d := procs[pid].info
		refs[id] = &adapters.ProcessRef{PID: d.PID, Start: d.Start, Evidence: evidenceDaemonTurn}
	}
}
