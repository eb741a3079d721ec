package codex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/proc"
)

// maxArgPrompt is the largest prompt passed in argv; larger ones go through
// stdin from a file (Linux caps one argument at 128 kB).
const maxArgPrompt = 100_000

// Binary is the executable the adapter runs.
func (a *Adapter) Binary() string { return "codex" }

// installHint says how to get the binary.
const installHint = "install the Codex CLI with: npm install -g @openai/codex"

// InstallHint says how to get the binary.
func (a *Adapter) InstallHint() string { return installHint }

// StopSignal is SIGINT: Codex's graceful stop. It aborts the turn, kills
// the running tool, records turn_aborted in the rollout and exits 1;
// SIGTERM kills it without a record.
func (a *Adapter) StopSignal() syscall.Signal { return syscall.SIGINT }

// execArgs are the flags every headless run gets. Outside a git repository
// `codex exec` refuses to start without --skip-git-repo-check. Approvals
// and the sandbox are bypassed as the tool agentctl replaces did: a
// headless agent cannot ask for approval, and Codex's bubblewrap sandbox
// does not work in many containers.
func execArgs(req adapters.LaunchRequest) ([]string, error) {
	perm, err := permissionArgs(req.PermissionMode, false, req.Args)
	if err != nil {
		return nil, err
	}
	args := append([]string{"exec", "--skip-git-repo-check"}, perm...)
	if m := strings.TrimSpace(req.Model); m != "" {
		args = append(args, "--model", m)
	}
	return append(args, req.Args...), nil
}

// permissionArgs maps a permission mode onto Codex's sandbox and approval
// flags: plan is the read-only sandbox, acceptEdits the workspace-write
// one, bypassPermissions no sandbox and no approvals, default Codex's own
// configuration. A headless run never asks (codex exec has no one to ask),
// so there it sets the sandbox alone. Nothing when the caller's own
// arguments set them; without a mode, the default above.
func permissionArgs(mode string, interactive bool, callerArgs []string) ([]string, error) {
	switch mode {
	case "default":
		return nil, nil
	case "plan", "acceptEdits":
		sandbox := "read-only"
		if mode == "acceptEdits" {
			sandbox = "workspace-write"
		}
		if interactive {
			return []string{"--sandbox", sandbox, "--ask-for-approval", "on-request"}, nil
		}
		return []string{"--sandbox", sandbox}, nil
	case "bypassPermissions":
		return []string{"--dangerously-bypass-approvals-and-sandbox"}, nil
	case "":
	default:
		return nil, fmt.Errorf("codex has no permission mode %q", mode)
	}
	for _, a := range callerArgs {
		switch name, _, _ := strings.Cut(a, "="); name {
		case "-s", "--sandbox", "-a", "--ask-for-approval", "--full-auto", "--dangerously-bypass-approvals-and-sandbox":
			return nil, nil
		}
	}
	if interactive {
		return nil, nil
	}
	return []string{"--dangerously-bypass-approvals-and-sandbox"}, nil
}

// Launch builds `codex exec … -- PROMPT`, or for an interactive session
// `codex --no-daemon [--model M] [-- PROMPT]`. The session id is Codex's to
// choose; FindNativeID learns it from the rollout the process opens.
func (a *Adapter) Launch(req adapters.LaunchRequest) (adapters.LaunchSpec, error) {
	if req.Interactive {
		return a.interactive(req)
	}
	if strings.TrimSpace(req.Prompt) == "" {
		return adapters.LaunchSpec{}, errors.New("launch codex: empty prompt")
	}
	args, err := execArgs(req)
	if err != nil {
		return adapters.LaunchSpec{}, fmt.Errorf("launch codex: %w", err)
	}
	argv, err := withPrompt(a.Binary(), args, req)
	if err != nil {
		return adapters.LaunchSpec{}, fmt.Errorf("launch codex: %w", err)
	}
	return adapters.LaunchSpec{Argv: argv, Env: append([]string(nil), req.Env...)}, nil
}

// Resume builds `codex exec … resume ID -- PROMPT`, which appends to the
// same rollout.
func (a *Adapter) Resume(req adapters.LaunchRequest) (adapters.LaunchSpec, error) {
	id := strings.TrimSpace(req.NativeID)
	if !uuidOnly().MatchString(id) {
		return adapters.LaunchSpec{}, fmt.Errorf("resume codex: %q is not a codex session id", req.NativeID)
	}
	if strings.TrimSpace(req.Prompt) == "" {
		return adapters.LaunchSpec{}, fmt.Errorf("resume codex session %s: empty prompt", id)
	}
	args, err := execArgs(req)
	if err != nil {
		return adapters.LaunchSpec{}, fmt.Errorf("resume codex session %s: %w", id, err)
	}
	argv, err := withPrompt(a.Binary(), append(args, "resume", id), req)
	if err != nil {
		return adapters.LaunchSpec{}, fmt.Errorf("resume codex session %s: %w", id, err)
	}
	return adapters.LaunchSpec{Argv: argv, Env: append([]string(nil), req.Env...), NativeID: id}, nil
}

// interactive builds Codex's TUI, in the approval and sandbox modes the
// user configured (a person answers its prompts). --no-daemon keeps its
// turns and their tools in the TUI's own process: without it Codex runs
// them in a background app-server shared by every TUI of the store, which
// outlives the TUI, so the session's process would hold neither its
// rollout nor its tools, and a stop of the TUI would not reach them.
func (a *Adapter) interactive(req adapters.LaunchRequest) (adapters.LaunchSpec, error) {
	perm, err := permissionArgs(req.PermissionMode, true, req.Args)
	if err != nil {
		return adapters.LaunchSpec{}, fmt.Errorf("launch codex: %w", err)
	}
	args := append([]string{a.Binary(), "--no-daemon"}, perm...)
	if m := strings.TrimSpace(req.Model); m != "" {
		args = append(args, "--model", m)
	}
	args = append(args, req.Args...)
	if req.Prompt != "" {
		if len(req.Prompt) > maxArgPrompt || strings.ContainsRune(req.Prompt, 0) {
			return adapters.LaunchSpec{}, fmt.Errorf("launch codex: an interactive prompt is at most %d bytes, without NUL", maxArgPrompt)
		}
		args = append(args, "--", req.Prompt)
	}
	return adapters.LaunchSpec{Argv: args, Env: append([]string(nil), req.Env...)}, nil
}

// withPrompt appends "-- PROMPT" to argv ("--" keeps a prompt starting
// with '-' a prompt). A prompt too large for argv, or with a NUL byte, is
// written to a file in the session folder and given to Codex as stdin
// through /bin/sh, with "-" as the prompt argument: Codex reads a
// non-terminal stdin to its end, but under agentctl's pty stdin is the
// terminal, which Codex leaves alone when a prompt is given.
func withPrompt(bin string, args []string, req adapters.LaunchRequest) ([]string, error) {
	p := req.Prompt
	if len(p) <= maxArgPrompt && !strings.ContainsRune(p, 0) {
		return append(append([]string{bin}, args...), "--", p), nil
	}
	return req.PromptOnStdin(append(args, "--", "-"))
}

// Native id discovery.
const (
	findInterval = 100 * time.Millisecond
	// startSlack covers the resolution of start times and file names
	// (whole seconds).
	startSlack = 2 * time.Second
)

// FindNativeID learns the session id of the Codex started at pid in cwd
// after since: the `resume <id>` its argv names, else the thread its
// process tree holds open (its thread-writer lock, or its rollout) that
// was begun after since, whose rollout, once written, is in cwd, and that
// no Codex outside the tree holds; of several (sub-agents), the first
// begun. A starting Codex reads other threads' rollouts (it lists recent
// threads), which are not holds, and opens their writer locks for a
// moment (it checks for stale ones), so an id is taken only when two looks
// in a row give it. It waits until one appears or ctx ends. If the process
// has already exited, it falls back to the one rollout begun in cwd after
// since that no live Codex holds; of several, the one whose first prompt
// is the launch's; several still are ambiguous and yield an error, never a
// guess.
func (a *Adapter) FindNativeID(ctx context.Context, started adapters.Started) (string, error) {
	pid, cwd, since := started.PID, started.Cwd, started.Since
	var id, last string
	var err error
	perr := storeio.Poll(ctx, findInterval, func() (bool, error) {
		found, pinned, alive := a.idOfProcessTree(pid, cwd, since)
		switch {
		case !alive:
			id, err = a.idOfExited(ctx, started)
			return true, nil
		case pinned || found != "" && found == last:
			id = found
			return true, nil
		}
		last = found
		return false, nil
	})
	if perr != nil {
		return "", fmt.Errorf("codex pid %d opened no rollout of its own: %w", pid, perr)
	}
	return id, err
}

// idOfProcessTree returns the thread pid's tree works on (see
// FindNativeID), "" when none is told yet; pinned when its argv names it;
// and whether pid is still alive (and started after since).
func (a *Adapter) idOfProcessTree(pid int, cwd string, since time.Time) (id string, pinned, alive bool) {
	info, err := proc.Lookup(pid)
	if err != nil || info.Zombie || info.StartTime.Before(since.Add(-startSlack)) {
		return "", false, false
	}
	tree := map[int]bool{pid: true}
	if table, err := proc.Table(); err == nil {
		for _, d := range proc.Descendants(table, pid) {
			tree[d.PID] = true
		}
	}
	held := map[string]string{} // id → the rollout held, "" for a lock alone
	for p := range tree {
		if argv, err := proc.Cmdline(p); err == nil {
			if id := resumeArg(argv); id != "" {
				return id, true, true
			}
		}
		files, _ := proc.WritableFiles(p)
		for _, f := range files {
			if id := idFromRolloutPath(f); id != "" {
				held[id] = f
			} else if id := idFromOpenFile(f); id != "" && held[id] == "" {
				held[id] = ""
			}
		}
	}
	var ids []string
	for id, rollout := range held {
		if a.begunAfter(id, rollout, since) && a.inDir(id, rollout, cwd) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return "", false, true
	}
	// UUIDv7 ids sort by creation: the one it was started for comes first.
	sort.Strings(ids)
	others := a.heldOutside(tree)
	for _, id := range ids {
		if !others[id] {
			return id, false, true
		}
	}
	return "", false, true
}

// begunAfter says whether thread id was begun after since: by the time its
// UUIDv7 id carries, else by its rollout's first record (a thread known by
// its lock alone cannot tell).
func (a *Adapter) begunAfter(id, rollout string, since time.Time) bool {
	if t, ok := uuidV7Time(id); ok {
		return !t.Before(since.Truncate(time.Millisecond))
	}
	if x := a.rolloutFacts(id, rollout); x != nil && !x.created.IsZero() {
		return !x.created.Before(since.Add(-startSlack))
	}
	return false
}

// inDir says whether thread id works in cwd, as far as its rollout tells:
// a thread whose rollout is not written yet (a TUI before its first
// message) is taken to be where the process runs.
func (a *Adapter) inDir(id, rollout, cwd string) bool {
	if cwd == "" {
		return true
	}
	x := a.rolloutFacts(id, rollout)
	if x == nil || x.cwd == "" {
		return true
	}
	return sameDirs(cwd)[x.cwd]
}

// rolloutFacts reads the facts of thread id's rollout: the one given, else
// the one the last scan found; nil when there is none (yet).
func (a *Adapter) rolloutFacts(id, rollout string) *facts {
	if rollout == "" {
		a.mu.Lock()
		rollout = a.paths[id]
		a.mu.Unlock()
	}
	if rollout == "" {
		return nil
	}
	fi, err := os.Stat(rollout)
	if err != nil {
		return nil
	}
	return a.readOne(rolloutFile{key: storeio.KeyOf(rollout, fi), id: id}, nil).facts
}

// heldOutside returns the threads the live Codex processes of the store
// outside tree hold open.
func (a *Adapter) heldOutside(tree map[int]bool) map[string]bool {
	out := map[string]bool{}
	procs, err := liveCodexes(proc.NewSnapshot(), a.home())
	if err != nil {
		return out
	}
	for p := range procs {
		if tree[p] {
			continue
		}
		for _, id := range openIDs(p) {
			out[id] = true
		}
	}
	return out
}

// uuidV7Time is the creation time a UUIDv7 carries (its first 48 bits are
// Unix milliseconds); ok is false for ids of other versions.
func uuidV7Time(id string) (time.Time, bool) {
	if !isUUID(id) || id[14] != '7' {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(id[:8]+id[9:13], 16, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// idOfExited finds the rollout of a Codex that exited before it was seen
// holding one: the single rollout in its folder begun after its start and
// held by no live Codex; of several (runs begun beside it), the single one
// whose first prompt is the launch's.
func (a *Adapter) idOfExited(ctx context.Context, started adapters.Started) (string, error) {
	cwd, since, pid := started.Cwd, started.Since, started.PID
	scan, err := a.scan(ctx)
	if err != nil {
		return "", err
	}
	files := scan.files
	held := map[string]bool{}
	if procs, err := liveCodexes(proc.NewSnapshot(), a.home()); err == nil {
		for p := range procs {
			for _, id := range openIDs(p) {
				held[id] = true
			}
		}
	}
	want := sameDirs(cwd)
	prompt := promptKey(started.Prompt)
	var ids, prompted []string
	for _, s := range files {
		if s.facts == nil || s.id == "" || held[s.id] || !want[s.facts.cwd] {
			continue
		}
		if s.facts.created.IsZero() || s.facts.created.Before(since.Add(-startSlack)) {
			continue
		}
		ids = append(ids, s.id)
		if prompt != "" && promptKey(s.facts.firstPrompt) == prompt {
			prompted = append(prompted, s.id)
		}
	}
	switch {
	case len(ids) == 1:
		return ids[0], nil
	case len(ids) == 0:
		return "", fmt.Errorf("codex pid %d exited and no rollout in %s begun after %s", pid, cwd, since.Format(time.RFC3339))
	case len(prompted) == 1:
		return prompted[0], nil
	}
	return "", fmt.Errorf("codex pid %d exited; %d rollouts in %s begun after %s (%d with its prompt): cannot tell which is its", pid, len(ids), cwd, since.Format(time.RFC3339), len(prompted))
}

// promptKey is how a prompt is compared with a rollout's first prompt:
// without the space around it (a prompt given in a file may end in a
// newline), and to the length a rollout's first prompt is kept to.
func promptKey(p string) string { return text.Ellipsis(strings.TrimSpace(p), promptRunes) }

// sameDirs returns the spellings of dir a rollout may carry: as given, and
// with symlinks resolved (Codex records the physical working directory).
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
