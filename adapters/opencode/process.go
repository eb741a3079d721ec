package opencode

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/proc"
)

// Evidence for process matches (see adapters.ProcessRef).
const (
	evidenceArgv     = "argv"
	evidenceCwdStart = "cwd+start"
)

// startSlack covers the start time's resolution (the boot time is known to
// the second) when comparing it with a session's creation.
const startSlack = 2 * time.Second

// invocation is what an OpenCode command line says about its session.
type invocation struct {
	// session is the id given with --session, if any.
	session string
	// words are the message words of `opencode run`.
	words []string
	// dir is the --dir folder, if given.
	dir string
	// continues is set for --continue: the process works on an older
	// session it names no id of.
	continues bool
}

// isOpencode tells whether argv is OpenCode's: the native binary (npm links
// it as "opencode"; its file is opencode.exe), or a Node/Bun launcher.
func isOpencode(argv []string) bool {
	_, ok := scriptArgs(argv)
	return ok
}

// scriptArgs returns OpenCode's own arguments (after the program, or after
// the launcher's script).
func scriptArgs(argv []string) ([]string, bool) {
	if len(argv) == 0 {
		return nil, false
	}
	switch filepath.Base(argv[0]) {
	case "opencode", "opencode.exe":
		return argv[1:], true
	case "node", "nodejs", "bun":
		for i, a := range argv[1:] {
			if strings.HasPrefix(a, "-") {
				continue
			}
			b := filepath.Base(a)
			if b == "opencode" || b == "opencode.js" || strings.Contains(a, "opencode-ai/bin/") {
				return argv[i+2:], true
			}
			return nil, false
		}
	}
	return nil, false
}

// otherCommands are subcommands that run no session.
var otherCommands = map[string]bool{
	"serve": true, "web": true, "models": true, "auth": true, "agent": true, "upgrade": true,
	"uninstall": true, "mcp": true, "github": true, "export": true, "import": true, "stats": true,
	"debug": true, "acp": true, "completion": true, "session": true, "plugin": true, "db": true,
}

// valueOptions are the options of `opencode run` and the TUI that take a
// separate value.
var valueOptions = map[string]bool{
	"-m": true, "--model": true, "--agent": true, "--format": true, "-f": true, "--file": true,
	"--title": true, "--attach": true, "-p": true, "--password": true, "-u": true, "--username": true,
	"--dir": true, "--port": true, "--variant": true, "--command": true, "--log-level": true,
	"--hostname": true, "--prompt": true,
}

// parseArgv reads an OpenCode command line. ok is false when it is not
// OpenCode or runs no session.
func parseArgv(argv []string) (inv invocation, ok bool) {
	args, ok := scriptArgs(argv)
	if !ok {
		return inv, false
	}
	run := false
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		if otherCommands[args[0]] {
			return inv, false
		}
		run = args[0] == "run"
		if run {
			args = args[1:]
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if run {
				inv.words = append(inv.words, args[i+1:]...)
			}
			return inv, true
		case a == "-s" || a == "--session":
			if i+1 < len(args) {
				inv.session = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "--session="):
			inv.session = strings.TrimPrefix(a, "--session=")
		case a == "--dir":
			if i+1 < len(args) {
				inv.dir = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "--dir="):
			inv.dir = strings.TrimPrefix(a, "--dir=")
		case a == "-c" || a == "--continue":
			inv.continues = true
		case valueOptions[a]:
			i++
		case strings.HasPrefix(a, "-"):
		default:
			if run {
				inv.words = append(inv.words, a)
			}
		}
	}
	return inv, true
}

// liveProc is a running OpenCode process.
type liveProc struct {
	info proc.Info
	inv  invocation
	// dir is the folder its session lives in: --dir, else its cwd.
	dir string
	// prompt is the message of an `opencode run`, from argv or from the
	// file that is its stdin; "" when unknown.
	prompt string
}

// liveOpencodes lists the OpenCode processes of the store at dataDir (this
// user's, under that folder). It reads
// each process's argv first and the kernel's record only for OpenCode's.
func liveOpencodes(snap *proc.Snapshot, dataDir string) ([]liveProc, error) {
	pids, err := snap.PIDs()
	if err != nil {
		return nil, err
	}
	var out []liveProc
	for _, pid := range pids {
		argv, err := snap.Cmdline(pid)
		if err != nil {
			continue
		}
		inv, ok := parseArgv(argv)
		if !ok || !storeio.UsesStore(snap, pid, dataDir, dataDirOf) {
			continue
		}
		info, err := snap.Lookup(pid)
		if err != nil || info.Zombie {
			continue
		}
		out = append(out, describe(info, inv))
	}
	return out, nil
}

// describe completes what a process's argv says with its cwd and prompt.
func describe(info proc.Info, inv invocation) liveProc {
	p := liveProc{info: info, inv: inv}
	cwd, _ := proc.Cwd(info.PID)
	p.dir = cwd
	if inv.dir != "" {
		p.dir = inv.dir
		if !filepath.IsAbs(p.dir) && cwd != "" {
			p.dir = filepath.Join(cwd, p.dir)
		}
	}
	if len(inv.words) > 0 {
		// OpenCode joins the words with spaces (quoting any that contain a
		// space, which agentctl never passes).
		p.prompt = strings.Join(inv.words, " ")
	} else if inv.session == "" {
		p.prompt = stdinPrompt(info.PID)
	}
	return p
}

// candidates returns the sessions p may be working on without naming one:
// of its folder, begun after it started, and with its prompt when known.
func candidates(p liveProc, ss []*session) []*session {
	if p.inv.session != "" || p.inv.continues || p.dir == "" {
		return nil
	}
	dirs := sameDirs(p.dir)
	var out []*session
	for _, s := range ss {
		if !dirs[s.directory] || s.created.Before(p.info.StartTime.Add(-startSlack)) {
			continue
		}
		if p.prompt != "" && s.firstPrompt != text.Ellipsis(p.prompt, promptRunes) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// matchProcesses links live OpenCode processes to sessions: by --session,
// else by folder and start time (and prompt, where known) when exactly one
// session fits the process and no other process fits the session. Anything
// else stays unmatched, with the processes that may be working on it
// (contenders): unknown while they live, not running for every session of
// a folder.
func matchProcesses(ss []*session, procs []liveProc) (refs map[string]*adapters.ProcessRef, contenders map[string][]int) {
	byID := make(map[string]*session, len(ss))
	for _, s := range ss {
		byID[s.id] = s
	}
	claims := map[string][]int{}
	evidence := map[int]string{}
	for i, p := range procs {
		if p.inv.session != "" {
			if _, ok := byID[p.inv.session]; ok {
				claims[p.inv.session] = append(claims[p.inv.session], i)
				evidence[i] = evidenceArgv
			}
		}
	}
	// ambiguous: sessions that are one of several a process may own, so
	// none can be given to another process either.
	ambiguous := map[string][]int{}
	for i, p := range procs {
		c := candidates(p, ss)
		if len(c) == 1 {
			claims[c[0].id] = append(claims[c[0].id], i)
			evidence[i] = evidenceCwdStart
		} else if len(c) > 1 {
			for _, s := range c {
				ambiguous[s.id] = append(ambiguous[s.id], i)
			}
		}
	}
	refs = map[string]*adapters.ProcessRef{}
	contenders = map[string][]int{}
	for id, idx := range claims {
		if len(idx) == 1 && len(ambiguous[id]) == 0 {
			p := procs[idx[0]]
			refs[id] = &adapters.ProcessRef{PID: p.info.PID, Start: p.info.Start, Evidence: evidence[idx[0]]}
			continue
		}
		for _, i := range idx {
			contenders[id] = append(contenders[id], procs[i].info.PID)
		}
	}
	for id, idx := range ambiguous {
		if refs[id] != nil {
			continue
		}
		for _, i := range idx {
			contenders[id] = append(contenders[id], procs[i].info.PID)
		}
	}
	return refs, contenders
}

// sameDirs returns the spellings of dir a session may carry: as given,
// and with symlinks resolved.
func sameDirs(dir string) map[string]bool {
	out := map[string]bool{}
	if dir == "" {
		return out
	}
	out[filepath.Clean(dir)] = true
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		out[real] = true
	}
	return out
}
