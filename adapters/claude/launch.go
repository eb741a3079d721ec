package claude

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/internal/envvar"
)

// Binary is the Claude Code executable.
const Binary = "claude"

// InstallHint says how to install Claude Code.
const InstallHint = "npm install -g @anthropic-ai/claude-code"

// UseAPIKeyVar is the variable that keeps Claude's API credentials in the
// agent's environment. See Launch.
const UseAPIKeyVar = "AGENTCTL_CLAUDE_USE_API_KEY"

// strippedVars are removed from the agent's environment unless UseAPIKeyVar
// is "1": with them Claude Code bills an API account instead of the
// subscription the user is logged in with.
var strippedVars = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"}

// maxArgPrompt is the largest prompt passed as an argument; larger ones go
// through a file on the agent's stdin (one argument may not exceed 128 kB
// on Linux).
const maxArgPrompt = 100_000

// Launch implements adapters.Launcher. The agent runs headless:
//
//	claude -p --session-id <new uuid> --output-format stream-json --verbose
//	       <permissions> [--model M] -- PROMPT
//
// The session id is assigned up front, so the native id is known before the
// agent starts. Permissions: --dangerously-skip-permissions, which Claude
// refuses for root (unless IS_SANDBOX=1); as root it is
// --permission-mode acceptEdits --allowedTools Bash instead, which lets the
// agent edit files and run commands without a prompt.
//
// Billing: ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN and ANTHROPIC_BASE_URL are
// removed from the agent's environment, so that Claude Code uses the
// subscription the user logged in with rather than billing an API key
// found in the caller's shell. Set AGENTCTL_CLAUDE_USE_API_KEY=1 (in the
// caller's environment or with --env) to keep them, e.g. to use an API key
// or a gateway on purpose.
//
// A prompt over 100 kB is written to prompt.txt in the session's folder and
// given to claude on stdin (through /bin/sh, which then execs claude).
func (a *Adapter) Launch(req adapters.LaunchRequest) (adapters.LaunchSpec, error) {
	id := uuid.NewString()
	return a.build(req, []string{"--session-id", id}, id)
}

// Resume implements adapters.Launcher: claude -p --resume <id> ..., which
// appends to the same transcript.
func (a *Adapter) Resume(req adapters.LaunchRequest) (adapters.LaunchSpec, error) {
	if !validID(req.NativeID) {
		return adapters.LaunchSpec{}, fmt.Errorf("resume: %q is not a Claude session id", req.NativeID)
	}
	return a.build(req, []string{"--resume", req.NativeID}, req.NativeID)
}

func (a *Adapter) build(req adapters.LaunchRequest, session []string, nativeID string) (adapters.LaunchSpec, error) {
	if req.Prompt == "" && !req.Interactive {
		return adapters.LaunchSpec{}, errors.New("no prompt given")
	}
	env := launchEnv(req.Env)
	perm, err := permissionArgs(env, req.PermissionMode, req.Interactive, req.Args)
	if err != nil {
		return adapters.LaunchSpec{}, err
	}
	var args []string
	if req.Interactive {
		// Claude's own TUI, in the permission mode the user configured
		// (or asked for): a person answers its prompts (attach, or
		// approve/deny/answer).
		if len(req.Prompt) > maxArgPrompt {
			return adapters.LaunchSpec{}, fmt.Errorf("an interactive prompt is at most %d bytes", maxArgPrompt)
		}
		args = append(args, session...)
	} else {
		args = append([]string{"-p"}, session...)
		args = append(args, "--output-format", "stream-json", "--verbose")
	}
	args = append(args, perm...)
	if len(req.HookCommand) > 0 {
		settings, err := hookSettings(req.HookCommand, req.Interactive)
		if err != nil {
			return adapters.LaunchSpec{}, fmt.Errorf("hook settings: %w", err)
		}
		args = append(args, "--settings", settings)
	}
	if req.Model != "" {
		args = append(args, "--model", req.Model)
	}
	args = append(args, req.Args...)
	spec := adapters.LaunchSpec{Env: env, NativeID: nativeID}
	if req.Prompt == "" {
		// The TUI at its prompt, waiting for the person's first message.
		spec.Argv = append([]string{Binary}, args...)
		return spec, nil
	}
	if len(req.Prompt) <= maxArgPrompt {
		// "--" ends the options, so a prompt starting with '-' stays a prompt.
		spec.Argv = append(append([]string{Binary}, args...), "--", req.Prompt)
		return spec, nil
	}
	// claude -p reads the prompt from stdin when it is not a terminal and no
	// prompt argument is given.
	argv, err := req.PromptOnStdin(args)
	if err != nil {
		return adapters.LaunchSpec{}, err
	}
	spec.Argv = argv
	return spec, nil
}

// StopSignal implements adapters.Launcher: on SIGTERM Claude Code kills its
// tool commands, closes the transcript and exits 143 (SIGINT would make it
// exit 0, as if the turn had succeeded).
func (a *Adapter) StopSignal() syscall.Signal { return syscall.SIGTERM }

// Binary implements adapters.Launcher.
func (a *Adapter) Binary() string { return Binary }

// InstallHint implements adapters.Launcher.
func (a *Adapter) InstallHint() string { return InstallHint }

// launchEnv is env without Claude's API credentials, unless
// AGENTCTL_CLAUDE_USE_API_KEY=1 keeps them.
func launchEnv(env []string) []string {
	if envvar.Value(env, UseAPIKeyVar) == "1" {
		return append([]string(nil), env...)
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		strip := false
		for _, s := range strippedVars {
			if k == s {
				strip = true
			}
		}
		if !strip {
			out = append(out, kv)
		}
	}
	return out
}

// isPermissionFlag says whether a Claude option sets what it may do: when
// the caller passes one, agentctl adds none of its own.
func isPermissionFlag(name string) bool {
	switch name {
	case "--permission-mode", "--dangerously-skip-permissions", "--allowedTools", "--allowed-tools",
		"--disallowedTools", "--disallowed-tools", "--permission-prompt-tool":
		return true
	}
	return false
}

// permissionArgs are the flags that set what the agent may do: the mode
// asked for (Claude's own --permission-mode), nothing when the caller's
// own arguments set it, else the default: a headless agent works
// unattended (every tool allowed, or as root, where Claude refuses that
// outside a sandbox, edits and Bash); an interactive one as the user's
// settings say.
func permissionArgs(env []string, mode string, interactive bool, callerArgs []string) ([]string, error) {
	root := os.Geteuid() == 0 && envvar.Value(env, "IS_SANDBOX") != "1"
	if mode != "" {
		if mode == "bypassPermissions" && root {
			return nil, errors.New("claude refuses --permission-mode bypassPermissions as root (outside a sandbox; in one, set IS_SANDBOX=1)")
		}
		return []string{"--permission-mode", mode}, nil
	}
	for _, a := range callerArgs {
		name, _, _ := strings.Cut(a, "=")
		if isPermissionFlag(name) {
			return nil, nil
		}
	}
	if interactive {
		return nil, nil
	}
	if !root {
		return []string{"--dangerously-skip-permissions"}, nil
	}
	return []string{"--permission-mode", "acceptEdits", "--allowedTools", "Bash"}, nil
}
