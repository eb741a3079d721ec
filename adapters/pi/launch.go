package pi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/attribute"
	"github.com/agentctl/agentctl/adapters/storeio"
)

// maxArgPrompt is the largest prompt passed in argv; larger ones, and ones
// Pi's argument parser would misread, go through stdin.
const maxArgPrompt = 100_000

// Binary is the executable the adapter runs.
func (a *Adapter) Binary() string {
	if a.name == NamePiRust {
		return "pi-rust"
	}
	return "pi"
}

// InstallHint says how to get the binary.
func (a *Adapter) InstallHint() string {
	if a.name == NamePiRust {
		return "pi-rust is not published to npm: build pi_agent_rust from source and put its binary on PATH as pi-rust"
	}
	return "install Pi with: npm install -g @mariozechner/pi-coding-agent (Node.js 20.6 or newer)"
}

// StopSignal is SIGTERM for both: Pi exits 143 and kills its running tool
// command on SIGTERM, but leaves the tool running (orphaned) on SIGINT.
// pi-rust's reaction was not measured; SIGTERM is the safe default.
func (a *Adapter) StopSignal() syscall.Signal { return syscall.SIGTERM }

// Launch starts a new headless session. For Pi the session file is chosen up
// front: agentctl writes its header (with a fresh UUIDv7 id, as Pi would)
// and passes --session <file>; Pi adopts the header's id and appends to the
// file, so the native id is known before the agent starts.
//
// Interactive (Pi only), the same without -p: Pi's TUI on that file, with
// the prompt, if any, as its first message.
func (a *Adapter) Launch(req adapters.LaunchRequest) (adapters.LaunchSpec, error) {
	if err := adapters.NoPermissionModes(a.name, req.PermissionMode, permissionsHow, "bypassPermissions"); err != nil {
		return adapters.LaunchSpec{}, err
	}
	if strings.TrimSpace(req.Prompt) == "" && !req.Interactive {
		return adapters.LaunchSpec{}, errors.New("launch pi: empty prompt")
	}
	if a.name == NamePiRust {
		if req.Interactive {
			return adapters.LaunchSpec{}, errors.New("launch pi-rust: its interactive interface is not supported; give a prompt (-p) for a headless run")
		}
		return a.rustSpec(req, nil)
	}
	cwd, err := realCwd(req.Cwd)
	if err != nil {
		return adapters.LaunchSpec{}, fmt.Errorf("launch pi: %w", err)
	}
	file, id, err := a.createSession(cwd, time.Now())
	if err != nil {
		return adapters.LaunchSpec{}, fmt.Errorf("launch pi in %s: %w", cwd, err)
	}
	spec, err := a.piSpec(req, file)
	if err != nil {
		os.Remove(file)
		return adapters.LaunchSpec{}, err
	}
	spec.NativeID = id
	a.mu.Lock()
	a.paths[id] = file
	a.mu.Unlock()
	return spec, nil
}

// Resume continues req.NativeID with req.Prompt, appending to its file.
func (a *Adapter) Resume(req adapters.LaunchRequest) (adapters.LaunchSpec, error) {
	if strings.TrimSpace(req.Prompt) == "" {
		return adapters.LaunchSpec{}, fmt.Errorf("resume %s session %s: empty prompt", a.name, req.NativeID)
	}
	if err := adapters.NoPermissionModes(a.name, req.PermissionMode, permissionsHow, "bypassPermissions"); err != nil {
		return adapters.LaunchSpec{}, err
	}
	file, err := a.pathOf(context.Background(), req.NativeID)
	if err != nil {
		return adapters.LaunchSpec{}, fmt.Errorf("resume %s session: %w", a.name, err)
	}
	var spec adapters.LaunchSpec
	if a.name == NamePiRust {
		spec, err = a.rustSpec(req, &file)
	} else {
		spec, err = a.piSpec(req, file)
	}
	if err != nil {
		return adapters.LaunchSpec{}, err
	}
	spec.NativeID = req.NativeID
	return spec, nil
}

// piSpec builds `pi -p [--provider P] --model M --session FILE PROMPT`,
// and without -p for the interactive TUI.
func (a *Adapter) piSpec(req adapters.LaunchRequest, file string) (adapters.LaunchSpec, error) {
	var args []string
	if !req.Interactive {
		args = []string{"-p"}
	}
	args = append(args, modelArgs(req.Model)...)
	args = append(args, "--session", file)
	args = append(args, req.Args...)
	env := withDefault(req.Env, "PI_OFFLINE", "1")
	env = withValue(env, envSessionMarker, file)
	if req.Interactive {
		// The TUI reads its terminal, so the prompt can only go in argv.
		p := req.Prompt
		if len(p) > maxArgPrompt || strings.ContainsRune(p, 0) || strings.HasPrefix(p, "-") || strings.HasPrefix(p, "@") {
			return adapters.LaunchSpec{}, fmt.Errorf("launch pi: an interactive prompt is at most %d bytes and does not start with '-' or '@'", maxArgPrompt)
		}
		argv := append([]string{a.Binary()}, args...)
		if p != "" {
			argv = append(argv, p)
		}
		return adapters.LaunchSpec{Argv: argv, Env: env}, nil
	}
	argv, err := withPrompt(a.Binary(), a.InstallHint(), args, req, "")
	if err != nil {
		return adapters.LaunchSpec{}, err
	}
	return adapters.LaunchSpec{Argv: argv, Env: env}, nil
}

// rustSpec builds pi-rust's argv as the tool agentctl replaces ran it:
// `pi-rust [--provider P] [--model M] --print -- PROMPT`, and for a resume
// `pi-rust --session FILE --print -p MESSAGE`. Its native id is learned
// from the store afterwards (FindNativeID).
func (a *Adapter) rustSpec(req adapters.LaunchRequest, resumeFile *string) (adapters.LaunchSpec, error) {
	var args []string
	before := "--"
	if resumeFile != nil {
		args = []string{"--session", *resumeFile}
		before = "-p"
	}
	args = append(args, modelArgs(req.Model)...)
	args = append(args, "--print")
	args = append(args, req.Args...)
	argv, err := withPrompt(a.Binary(), a.InstallHint(), args, req, before)
	if err != nil {
		return adapters.LaunchSpec{}, err
	}
	return adapters.LaunchSpec{Argv: argv, Env: append([]string(nil), req.Env...)}, nil
}

// permissionsHow says what Pi may do: it has no permissions.
const permissionsHow = "its tools always run (Pi asks for nothing): only bypassPermissions describes it"

// modelArgs splits "provider/model" at the first '/' into --provider and
// --model; a model without a provider is passed as is.
func modelArgs(model string) []string {
	model = strings.TrimSpace(model)
	if model == "" {
		return nil
	}
	if p, m, ok := strings.Cut(model, "/"); ok && p != "" && m != "" {
		return []string{"--provider", p, "--model", m}
	}
	return []string{"--model", model}
}

// withPrompt appends the prompt to argv, after before when set, or, when it
// is too large for argv or would be read as an option ('-') or, by Pi, as a
// file argument ('@'), writes it to a file in the session folder and runs
// the agent through /bin/sh with that file as its stdin: Pi reads a piped
// stdin as the prompt, but ignores stdin when it is a terminal, as it is
// under agentctl's pty. before "--" (pi-rust accepts it; Pi has no such
// marker) makes any prompt safe in argv.
func withPrompt(bin, hint string, args []string, req adapters.LaunchRequest, before string) ([]string, error) {
	p := req.Prompt
	viaFile := len(p) > maxArgPrompt || strings.ContainsRune(p, 0) ||
		(before != "--" && (strings.HasPrefix(p, "-") || strings.HasPrefix(p, "@")))
	if !viaFile {
		argv := append([]string{bin}, args...)
		if before != "" {
			argv = append(argv, before)
		}
		return append(argv, p), nil
	}
	return req.PromptOnStdin(args)
}

// createSession writes the header of a new session file where Pi itself
// would put it, named as Pi names it, and returns its path and id.
func (a *Adapter) createSession(cwd string, now time.Time) (string, string, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", "", fmt.Errorf("new session id: %w", err)
	}
	id := u.String()
	dir := a.layout().dirFor(cwd)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("create pi session folder: %w", err)
	}
	ts := now.UTC().Format("2006-01-02T15:04:05.000Z")
	name := strings.NewReplacer(":", "-", ".", "-").Replace(ts) + "_" + id + ".jsonl"
	file := filepath.Join(dir, name)
	header, err := json.Marshal(struct {
		Type      string `json:"type"`
		Version   int    `json:"version"`
		ID        string `json:"id"`
		Timestamp string `json:"timestamp"`
		Cwd       string `json:"cwd"`
	}{typeSession, 3, id, ts, cwd})
	if err != nil {
		return "", "", fmt.Errorf("encode pi session header: %w", err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", "", fmt.Errorf("create pi session file: %w", err)
	}
	if _, err := f.Write(append(header, '\n')); err != nil {
		f.Close()
		os.Remove(file)
		return "", "", fmt.Errorf("write pi session header: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(file)
		return "", "", fmt.Errorf("write pi session header: %w", err)
	}
	return file, id, nil
}

// realCwd resolves cwd as Pi sees it: process.cwd() is the physical path.
func realCwd(cwd string) (string, error) {
	if cwd == "" {
		return "", errors.New("no working directory given")
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", fmt.Errorf("resolve cwd %s: %w", cwd, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("resolve cwd %s: %w", cwd, err)
	}
	return real, nil
}

// withDefault sets key=value in env unless env already sets key (a --env
// override wins).
func withDefault(env []string, key, value string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			return append([]string(nil), env...)
		}
	}
	return append(append([]string(nil), env...), key+"="+value)
}

// withValue sets key=value in env, replacing any earlier value.
func withValue(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// FindNativeID learns the id of a session whose id was not pre-assigned
// (pi-rust): the one session file for the folder begun after the start. It
// waits for the file until ctx ends (an agent writes it after its first
// answer), and fails at once when several fit.
func (a *Adapter) FindNativeID(ctx context.Context, started adapters.Started) (string, error) {
	pid, cwd, since := started.PID, started.Cwd, started.Since
	real, err := realCwd(cwd)
	if err != nil {
		real = cwd
	}
	var id string
	err = storeio.Poll(ctx, 500*time.Millisecond, func() (bool, error) {
		files, _, _, err := a.scan(ctx)
		if err != nil {
			return false, err
		}
		var ids []string
		for _, s := range files {
			if s.facts == nil || s.facts.bad != nil || s.facts.cwd != real {
				continue
			}
			if !s.facts.created.Before(since.Add(-attribute.Slack)) {
				ids = append(ids, s.facts.id)
			}
		}
		switch {
		case len(ids) == 1:
			id = ids[0]
			return true, nil
		case len(ids) > 1:
			return false, fmt.Errorf("%d %s sessions in %s begun after %s: cannot tell which is pid %d's", len(ids), a.name, real, since.Format(time.RFC3339), pid)
		}
		return false, nil
	})
	if errors.Is(err, ctx.Err()) && ctx.Err() != nil {
		return "", fmt.Errorf("no %s session in %s begun after %s (pid %d): %w", a.name, real, since.Format(time.RFC3339), pid, err)
	}
	return id, err
}
