package opencode

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/proc"
)

// maxArgPrompt is the largest prompt passed in argv; larger ones go
// through stdin from a file.
const maxArgPrompt = 100_000

// Binary is the executable the adapter runs.
func (a *Adapter) Binary() string { return "opencode" }

// installHint says how to get the binary.
const installHint = "install OpenCode with: npm install -g opencode-ai"

// InstallHint says how to get the binary.
func (a *Adapter) InstallHint() string { return installHint }

// StopSignal is SIGTERM: `opencode run` ignores SIGINT and runs on to the
// end. On SIGTERM it exits at once but leaves its running tool command
// behind (in its own session), so the supervisor must end the tool's
// process group itself.
func (a *Adapter) StopSignal() syscall.Signal { return syscall.SIGTERM }

// Launch builds `opencode run [--model provider/model] -- WORDS…`. OpenCode
// chooses the session id; FindNativeID learns it from the store.
func (a *Adapter) Launch(req adapters.LaunchRequest) (adapters.LaunchSpec, error) {
	if err := adapters.NoPermissionModes(Name, req.PermissionMode, permissionsHow); err != nil {
		return adapters.LaunchSpec{}, err
	}
	if req.Interactive {
		return a.interactive(req)
	}
	if strings.TrimSpace(req.Prompt) == "" {
		return adapters.LaunchSpec{}, errors.New("launch opencode: empty prompt")
	}
	argv, err := withPrompt(a.Binary(), runArgs(req.Model, "", req.Args), req)
	if err != nil {
		return adapters.LaunchSpec{}, fmt.Errorf("launch opencode: %w", err)
	}
	return adapters.LaunchSpec{Argv: argv, Env: append([]string(nil), req.Env...)}, nil
}

// sessionIDPattern matches OpenCode session ids (ses_ and 26 characters).
// Compiled on first use: package init runs at every CLI start.
var sessionIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ses_[0-9A-Za-z]{10,40}$`) })

// Resume builds `opencode run --session ID -- WORDS…`, which appends to the
// same session.
func (a *Adapter) Resume(req adapters.LaunchRequest) (adapters.LaunchSpec, error) {
	id := strings.TrimSpace(req.NativeID)
	if !sessionIDPattern().MatchString(id) {
		return adapters.LaunchSpec{}, fmt.Errorf("resume opencode: %q is not an opencode session id", req.NativeID)
	}
	if strings.TrimSpace(req.Prompt) == "" {
		return adapters.LaunchSpec{}, fmt.Errorf("resume opencode session %s: empty prompt", id)
	}
	if err := adapters.NoPermissionModes(Name, req.PermissionMode, permissionsHow); err != nil {
		return adapters.LaunchSpec{}, err
	}
	argv, err := withPrompt(a.Binary(), runArgs(req.Model, id, req.Args), req)
	if err != nil {
		return adapters.LaunchSpec{}, fmt.Errorf("resume opencode session %s: %w", id, err)
	}
	return adapters.LaunchSpec{Argv: argv, Env: append([]string(nil), req.Env...), NativeID: id}, nil
}

func runArgs(model, session string, callerArgs []string) []string {
	args := []string{"run"}
	if m := strings.TrimSpace(model); m != "" {
		args = append(args, "--model", m)
	}
	if session != "" {
		args = append(args, "--session", session)
	}
	return append(args, callerArgs...)
}

// permissionsHow says how OpenCode decides what it may do.
const permissionsHow = "its configuration's permission rules decide (opencode.json); a headless run refuses what they would ask about"

// withPrompt passes the prompt as the message words after "--". OpenCode
// joins its message words with single spaces and wraps any word that
// contains a space in quotes, so the prompt is split at each space: joined
// back, the words are the prompt exactly. Its argument parser turns
// number-like words into numbers, on which `opencode run` crashes, so a
// prompt with such a word, or too large for argv, is written to a file in
// the session folder and given as stdin through /bin/sh: OpenCode reads a
// non-terminal stdin to its end as the message, exactly (under agentctl's
// pty its stdin is otherwise the terminal, which it leaves alone).
func withPrompt(bin string, args []string, req adapters.LaunchRequest) ([]string, error) {
	p := req.Prompt
	words := strings.Split(p, " ")
	if argvSafe(p, words) {
		argv := append(append([]string{bin}, args...), "--")
		return append(argv, words...), nil
	}
	return req.PromptOnStdin(args)
}

// numberLike matches what OpenCode's argument parser converts to a number
// (decimal, exponent, hex; with a sign), checked loosely: a false positive
// only sends the prompt through stdin.
var numberLike = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[+-]?(\.?[0-9]|0[xX])|^[+-]?(Infinity|NaN)$`) })

func argvSafe(p string, words []string) bool {
	if len(p) > maxArgPrompt || strings.ContainsRune(p, 0) {
		return false
	}
	for _, w := range words {
		if numberLike().MatchString(w) {
			return false
		}
	}
	return true
}

// Native id discovery.
const findInterval = 200 * time.Millisecond

// FindNativeID learns the session id of the OpenCode a launch started: the
// id of --session in its argv, else the one session of its folder begun
// after the start whose first prompt is the process's message (from its
// argv words, or the file that is its stdin; the launch's prompt once the
// process has exited). It waits until the session appears or ctx ends. Two
// sessions that fit are an error, never a guess.
func (a *Adapter) FindNativeID(ctx context.Context, started adapters.Started) (string, error) {
	pid, cwd, since := started.PID, started.Cwd, started.Since
	var p *liveProc
	var id string
	var last error // the database may be being created, or busy: that passes
	err := storeio.Poll(ctx, findInterval, func() (bool, error) {
		gone := false
		if p == nil {
			lp, state := lookProcess(pid, since)
			switch state {
			case procOpencode:
				if lp.inv.session != "" {
					id = lp.inv.session
					return true, nil
				}
				p = &lp
			case procGone:
				// It exited before it was seen: only the folder and the
				// start time are left to go by.
				gone = true
			}
		}
		if p != nil || gone {
			id, last = a.findSession(ctx, p, cwd, since, started.Prompt)
		}
		if errors.Is(last, errAmbiguous) {
			return false, last
		}
		return id != "", nil
	})
	switch {
	case id != "":
		return id, nil
	case errors.Is(err, errAmbiguous):
		return "", err
	case last != nil:
		err = last
	}
	return "", fmt.Errorf("no opencode session for pid %d in %s: %w", pid, cwd, err)
}

// What lookProcess found.
const (
	procOpencode = iota // a live OpenCode
	procNotYet          // alive, not OpenCode yet (the shell that passes a prompt file)
	procGone            // exited, or the pid is another process's now
)

// lookProcess describes pid if it is a live OpenCode started after since.
func lookProcess(pid int, since time.Time) (liveProc, int) {
	info, err := proc.Lookup(pid)
	if err != nil || info.Zombie || info.StartTime.Before(since.Add(-startSlack)) {
		return liveProc{}, procGone
	}
	argv, err := proc.Cmdline(pid)
	if err != nil {
		return liveProc{}, procGone
	}
	inv, ok := parseArgv(argv)
	if !ok {
		return liveProc{}, procNotYet
	}
	return describe(info, inv), procOpencode
}

// findSession returns the session that fits: of cwd (or the process's
// folder), created after since, with the process's prompt when it is
// known (else the launch's). "" with no error while none fits yet.
func (a *Adapter) findSession(ctx context.Context, p *liveProc, cwd string, since time.Time, launchPrompt string) (string, error) {
	ss, err := a.sessions(ctx)
	if err != nil {
		return "", err
	}
	dirs := sameDirs(cwd)
	prompt := launchPrompt
	if p != nil {
		for d := range sameDirs(p.dir) {
			dirs[d] = true
		}
		prompt = p.prompt
	}
	var ids []string
	for _, s := range ss {
		if !dirs[s.directory] || s.created.Before(since.Add(-startSlack)) {
			continue
		}
		if prompt != "" && s.firstPrompt != text.Ellipsis(prompt, promptRunes) {
			continue
		}
		ids = append(ids, s.id)
	}
	switch len(ids) {
	case 0:
		return "", nil
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("%d opencode sessions in %s begun after %s fit: %w", len(ids), cwd, since.Format(time.RFC3339), errAmbiguous)
}

// errAmbiguous means several sessions fit a process equally.
var errAmbiguous = errors.New("cannot tell which is the process's")
