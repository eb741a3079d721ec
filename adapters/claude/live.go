package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/proc"
)

// registryEntry is ~/.claude/sessions/<pid>.json, which a running Claude
// Code writes for itself and removes on a normal exit or on
// SIGTERM/SIGINT/SIGHUP (not on SIGKILL, so stale entries exist).
type registryEntry struct {
	PID       int    `json:"pid"`
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	StartedAt int64  `json:"startedAt"` // epoch ms
	// ProcStart is the process's start stamp as the kernel gives it (on
	// Linux the starttime field of /proc/<pid>/stat, in clock ticks).
	ProcStart string `json:"procStart"`
	Status    string `json:"status"` // "busy", "idle" or "waiting"
	// WaitingFor says what a waiting session waits for: "permission
	// prompt", "dialog open".
	WaitingFor      string `json:"waitingFor"`
	UpdatedAt       int64  `json:"updatedAt"`
	StatusUpdatedAt int64  `json:"statusUpdatedAt"`
	Kind            string `json:"kind"`
}

// liveSession is a running Claude process and the session it works on.
type liveSession struct {
	proc     proc.Info
	cwd      string
	state    adapters.NativeState
	evidence string
	started  time.Time // from the registry, when known
	// waitingFor and waitingSince: what the process waits for a person to
	// answer in its terminal (adapters.NativeSession.WaitingFor), since when.
	waitingFor   string
	waitingSince time.Time
	// hook is the integration evidence that tied the process, when it did.
	hook *adapters.HookTie
}

// startSlack is how far apart a process's kernel start time and the
// startedAt it recorded for itself may be (used only where procStart cannot
// be compared exactly).
const startSlack = 10 * time.Second

// readRegistry returns the sessions of live processes registered under dir
// (~/.claude/sessions), by session id. Entries whose pid is gone or now
// belongs to another process (its start differs) are stale and skipped, as
// are unreadable ones (Claude may be writing it; the process is then still
// matched by its argv where that names the session). An error means the
// folder could not be read. rejected holds, by session id, the entries
// turned down as stale, with why.
func readRegistry(dir string) (out map[string]liveSession, rejected map[string][]adapters.Evidence, err error) {
	out = map[string]liveSession{}
	rejected = map[string][]adapters.Evidence{}
	names, err := readDirNames(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return out, rejected, nil
		}
		return out, rejected, fmt.Errorf("read the live-session registry: %w", err)
	}
	for _, n := range names {
		if !strings.HasSuffix(n, ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			continue // removed by its exiting process since the listing
		}
		var e registryEntry
		if err := json.Unmarshal(b, &e); err != nil || e.PID <= 0 || e.SessionID == "" {
			continue
		}
		info, ok := registryProcess(e)
		if !ok {
			rejected[e.SessionID] = append(rejected[e.SessionID], adapters.Evidence{
				Kind: adapters.EvidenceRejected, PID: e.PID, Source: filepath.Join(dir, n),
				Says: "a stale registry entry: its pid is gone, or now runs another process (its start differs)"})
			continue
		}
		ls := liveSession{proc: info, cwd: e.Cwd, state: adapters.NativeRunning, evidence: "registry"}
		if e.StartedAt > 0 {
			ls.started = time.UnixMilli(e.StartedAt)
		}
		switch e.Status {
		case "busy":
			ls.state = adapters.NativeBusy
		case "idle":
			ls.state = adapters.NativeIdle
		case "waiting":
			ls.waitingFor = registryWaiting(e.WaitingFor)
			if at := max(e.StatusUpdatedAt, e.UpdatedAt); at > 0 {
				ls.waitingSince = time.UnixMilli(at)
			}
		}
		out[e.SessionID] = ls
	}
	return out, rejected, nil
}

// registryWaiting maps the registry's waitingFor ("permission prompt",
// "dialog open") to what a session waits for; a wait it does not name is
// for the person's next input.
func registryWaiting(what string) string {
	switch w := strings.ToLower(what); {
	case strings.Contains(w, "permission"):
		return adapters.WaitingPermission
	case strings.Contains(w, "dialog"):
		return adapters.WaitingDialog
	}
	return adapters.WaitingInput
}

// registryProcess finds the live process an entry speaks for, checking its
// identity by start time.
func registryProcess(e registryEntry) (proc.Info, bool) {
	info, err := proc.Lookup(e.PID)
	if err != nil || info.Zombie {
		return proc.Info{}, false
	}
	if runtime.GOOS == "linux" {
		if ticks, err := strconv.ParseUint(e.ProcStart, 10, 64); err == nil {
			return info, ticks == info.Start
		}
	}
	if e.StartedAt <= 0 {
		return proc.Info{}, false
	}
	d := time.UnixMilli(e.StartedAt).Sub(info.StartTime)
	return info, d > -startSlack && d < startSlack
}

// claudeArgv reports whether argv runs Claude Code: the native binary
// (claude, claude.exe) or an older Node install (node .../claude-code/cli.js).
func claudeArgv(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	base := filepath.Base(argv[0])
	if base == "claude" || base == "claude.exe" {
		return true
	}
	if (base == "node" || base == "bun") && len(argv) > 1 {
		return strings.Contains(argv[1], "claude-code") || filepath.Base(argv[1]) == "claude"
	}
	return false
}

// argvSession returns the session a Claude command line works on, from
// --session-id or --resume (not with --fork-session, which starts a new
// one); "" when its args do not say.
func argvSession(argv []string) string {
	var id string
	fork := false
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			break
		}
		switch {
		case a == "--session-id" || a == "--resume" || a == "-r":
			if i+1 < len(argv) {
				id = argv[i+1]
				i++
			}
		case strings.HasPrefix(a, "--session-id="):
			id = strings.TrimPrefix(a, "--session-id=")
		case strings.HasPrefix(a, "--resume="):
			id = strings.TrimPrefix(a, "--resume=")
		case a == "--fork-session":
			fork = true
		}
	}
	if fork && !containsFlag(argv, "--session-id") {
		return ""
	}
	if !validID(id) {
		return ""
	}
	return id
}

func containsFlag(argv []string, flag string) bool {
	for _, a := range argv {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// liveProcesses finds the running Claude processes of this store (this
// user, this config folder): the registry first,
// then command lines for what the registry does not cover. unmatched holds
// the working directories of Claude processes tied to no session, with
// their pids: their presence makes "ended" unprovable for sessions in those
// directories. An
// error means the processes could not all be seen: no session can then be
// said to have ended.
// rejected holds, by session id, the processes and registry entries that
// named a session and were turned down, with why.
func liveProcesses(configDir string, snap *proc.Snapshot, ties []adapters.HookTie) (bySession map[string]liveSession, unmatched map[string][]int, rejected map[string][]adapters.Evidence, err error) {
	bySession, rejected, err = readRegistry(filepath.Join(configDir, "sessions"))
	unmatched = map[string][]int{}
	applyTies(bySession, ties, snap)
	claimed := map[int]bool{}
	for _, ls := range bySession {
		claimed[ls.proc.PID] = true
	}
	pids, perr := snap.PIDs()
	if perr != nil {
		return bySession, unmatched, rejected, errors.Join(err, fmt.Errorf("read the process table: %w", perr))
	}
	self := os.Getpid()
	var trust *trustedFolders // read once, when a process needs it
	for _, pid := range pids {
		if claimed[pid] || pid == self {
			continue
		}
		argv, err := snap.Cmdline(pid)
		if err != nil || !claudeArgv(argv) {
			continue
		}
		if !storeio.UsesStore(snap, pid, configDir, configDirOf) {
			if id := argvSession(argv); id != "" {
				rejected[id] = append(rejected[id], adapters.Evidence{Kind: adapters.EvidenceRejected, PID: pid,
					Says: "names this session in its argv but runs as another user or with another store (HOME, CLAUDE_CONFIG_DIR)"})
			}
			continue
		}
		info, err := snap.Lookup(pid)
		if err != nil || info.Zombie {
			continue
		}
		cwd, _ := proc.Cwd(pid)
		if id := argvSession(argv); id != "" {
			if _, ok := bySession[id]; !ok {
				ls := liveSession{proc: info, cwd: cwd, state: adapters.NativeRunning, evidence: "argv"}
				if trust == nil {
					trust = readTrust(configDir)
				}
				if interactiveArgv(argv) && cwd != "" && !trust.trusted(cwd) {
					// An interactive Claude registers itself only once
					// its folder is trusted: until then it shows the
					// trust dialog, which only a person can answer.
					ls.waitingFor = adapters.WaitingDialog
				}
				bySession[id] = ls
			}
			continue
		}
		if cwd != "" {
			unmatched[cwd] = append(unmatched[cwd], pid)
		}
	}
	return bySession, unmatched, rejected, err
}

// validID accepts what Claude uses as a session id (a UUID) and nothing that
// could step out of a folder.
func validID(id string) bool {
	if len(id) < 8 || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '-') {
			return false
		}
	}
	return true
}

func readDirNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// interactiveArgv reports whether a Claude command line runs its TUI (no
// -p/--print): only the TUI asks whether to trust its folder.
func interactiveArgv(argv []string) bool {
	for _, a := range argv[1:] {
		if a == "--" {
			break
		}
		if a == "-p" || a == "--print" || strings.HasPrefix(a, "--print=") {
			return false
		}
	}
	return true
}

// trustedFolders is what Claude's global config (.claude.json, beside its
// folder ~/.claude, or inside CLAUDE_CONFIG_DIR) says of the folders it was
// told to trust. A config that cannot be read trusts everything: no dialog
// is claimed without evidence.
type trustedFolders struct {
	known    bool
	accepted map[string]bool
}

// trustConfigPath is Claude's global config for the store configDir.
func trustConfigPath(configDir string) string {
	inside := filepath.Join(configDir, ".claude.json")
	if _, err := os.Stat(inside); err != nil && filepath.Base(configDir) == ".claude" {
		return filepath.Join(filepath.Dir(configDir), ".claude.json")
	}
	return inside
}

func readTrust(configDir string) *trustedFolders {
	t := &trustedFolders{}
	b, err := os.ReadFile(trustConfigPath(configDir))
	if err != nil {
		return t
	}
	var cfg struct {
		Projects map[string]struct {
			HasTrustDialogAccepted bool `json:"hasTrustDialogAccepted"`
		} `json:"projects"`
	}
	if json.Unmarshal(b, &cfg) != nil {
		return t
	}
	t.known, t.accepted = true, map[string]bool{}
	for dir, p := range cfg.Projects {
		if p.HasTrustDialogAccepted {
			t.accepted[filepath.Clean(dir)] = true
		}
	}
	return t
}

// trusted reports whether Claude trusts dir: it, or a folder above it, was
// accepted (or the config could not be read).
func (t *trustedFolders) trusted(dir string) bool {
	if !t.known {
		return true
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if t.accepted[d] {
			return true
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}

// applyTies adds what the integration's reports proved (adapters.HookTie):
// the process that reported is tied to the session it named, at once,
// which its registry entry (when it has one) only confirms; its state is
// the reports' where they said one. A tie whose process is gone, or that
// another process's registry entry contradicts, is left out.
func applyTies(bySession map[string]liveSession, ties []adapters.HookTie, snap *proc.Snapshot) {
	for i := range ties {
		t := &ties[i]
		if !validID(t.NativeID) {
			continue
		}
		info, err := snap.Lookup(t.PID)
		if err != nil || info.Zombie || info.Start != t.Start {
			continue
		}
		ls, ok := bySession[t.NativeID]
		switch {
		case ok && ls.proc.PID != t.PID:
			continue // the registry names another live process
		case !ok:
			// The registry may still name this process under the
			// session it held before (/clear, /resume): the report is
			// newer.
			for id, other := range bySession {
				if other.proc.PID == t.PID {
					delete(bySession, id)
				}
			}
			ls = liveSession{proc: info, cwd: t.Cwd, state: adapters.NativeRunning}
		}
		ls.evidence, ls.hook = t.Source(), t
		if t.State != "" {
			ls.state = t.State
		}
		if t.WaitingFor != "" {
			ls.waitingFor, ls.waitingSince = t.WaitingFor, t.WaitingSince
		} else if t.State != "" {
			ls.waitingFor, ls.waitingSince = "", time.Time{}
		}
		bySession[t.NativeID] = ls
	}
}
