package opencode

import (
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/attribute"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/proc"
)

// Evidence for process matches (see adapters.ProcessRef).
const (
	evidenceArgv     = "argv"
	evidenceCwdStart = attribute.ByProof
	// evidencePrompt: its message (argv words, or its stdin's file) is the
	// first prompt of this session alone.
	evidencePrompt = "prompt"
	// evidenceLaunch: agentctl's launch record of the process names the
	// session (learned from its server).
	evidenceLaunch = "launch"
)

// startSlack covers the start time's resolution (the boot time is known to
// the second) when comparing it with a session's creation.
const startSlack = attribute.Slack

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

// matchProcesses attributes live OpenCode processes to sessions through the
// shared solver (adapters/attribute), over these facts: --session pins a
// pair, as does agentctl's launch record of a process (launched: pid ->
// native id); a one-shot's message (its argv words, or the file that is
// its stdin) is the first prompt of the session it holds; a process holds
// a root session of its folder begun after it started (with --continue,
// or written since), one at a time, the latest written it can; mem adds
// the pairs proven before (nil: none); an integration's reports (ties) pin
// the process that sent them. A subagent's session (one with a parent)
// runs while its parent's does and its own turn is unfinished.
func matchProcesses(ss []*session, procs []liveProc, launched map[int]string, ties []adapters.HookTie, mem *attribute.Memory, now time.Time) map[string]attribute.Attribution {
	var roots []attribute.Session
	byID := make(map[string]*session, len(ss))
	for _, s := range ss {
		byID[s.id] = s
		if s.parentID == "" {
			roots = append(roots, attribute.Session{ID: s.id, Dir: s.directory, Created: s.created, Updated: s.updated})
		}
	}
	ps := make([]attribute.Proc, len(procs))
	for i, p := range procs {
		ap := attribute.Proc{PID: p.info.PID, Stamp: p.info.Start, Start: p.info.StartTime, Resumes: p.inv.continues}
		if p.dir != "" {
			for d := range sameDirs(p.dir) {
				ap.Dirs = append(ap.Dirs, d)
			}
			slices.Sort(ap.Dirs)
		}
		switch {
		case launched[p.info.PID] != "":
			ap.Pin, ap.PinBy = launched[p.info.PID], evidenceLaunch
		case p.inv.session != "":
			ap.Pin, ap.PinBy = p.inv.session, evidenceArgv
		case p.prompt != "" && !p.inv.continues:
			ap.Only, ap.OnlyBy = []string{}, evidencePrompt
			want := text.Ellipsis(p.prompt, promptRunes)
			for _, s := range ss {
				// A session without a first prompt yet may be the one it
				// is writing its message to.
				if s.parentID == "" && (s.firstPrompt == want || s.firstPrompt == "") {
					ap.Only = append(ap.Only, s.id)
				}
			}
		}
		ps[i] = ap
	}
	attribute.PinTies(ps, ties, nil)
	ps, res := mem.Solve(now, ps, roots)
	out := map[string]attribute.Attribution{}
	for _, s := range roots {
		if at := attribute.Of(Name, ps, res, s.ID); at.Running || at.Unknown {
			out[s.ID] = at
		}
	}
	for _, s := range ss {
		if s.parentID == "" {
			continue
		}
		parent, ok := out[s.parentID]
		if !ok || (parent.Running && s.state(true) != adapters.NativeBusy) {
			continue
		}
		child := attribute.Attribution{Running: parent.Running, Unknown: parent.Unknown, Holders: parent.Holders, Warning: parent.Warning}
		if parent.Ref != nil {
			child.Holders = []int{parent.Ref.PID}
		}
		for _, pid := range child.Holders {
			kind := adapters.EvidenceCandidate
			if child.Unknown {
				kind = adapters.EvidenceContender
			}
			child.Evidence = append(child.Evidence, adapters.Evidence{Kind: kind, PID: pid,
				Says: "a live opencode process that runs, or may run, this subagent session's parent " + s.parentID})
		}
		out[s.id] = child
	}
	return out
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
