package claude

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/uuid"

	"github.com/agentctl/agentctl/adapters"
)

// fakeBin makes a folder holding an executable named claude that prints
// its argv and its stdin, so the built command line can be run for real.
func fakeBin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\nif [ ! -t 0 ]; then printf 'stdin:'; cat; fi\n"
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func permArgs() []string {
	if os.Geteuid() == 0 {
		return []string{"--permission-mode", "acceptEdits", "--allowedTools", "Bash"}
	}
	return []string{"--dangerously-skip-permissions"}
}

func TestLaunchArgv(t *testing.T) {
	t.Parallel()
	bin := fakeBin(t)
	a := newAdapter(t.TempDir())
	env := []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=/h", "ANTHROPIC_API_KEY=sk-1", "ANTHROPIC_AUTH_TOKEN=t", "ANTHROPIC_BASE_URL=http://x", "KEEP=1"}

	spec, err := a.Launch(adapters.LaunchRequest{Prompt: "-rf is a prompt, not a flag", Model: "opus", Cwd: "/w", Env: env, SessionDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := uuid.Parse(spec.NativeID); err != nil {
		t.Fatalf("native id %q: %v", spec.NativeID, err)
	}
	want := append([]string{"claude", "-p", "--session-id", spec.NativeID, "--output-format", "stream-json", "--verbose"}, permArgs()...)
	want = append(want, "--model", "opus", "--", "-rf is a prompt, not a flag")
	if !slices.Equal(spec.Argv, want) {
		t.Errorf("argv\n got %q\nwant %q", spec.Argv, want)
	}
	if !slices.Equal(spec.Env, []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=/h", "KEEP=1"}) {
		t.Errorf("env not stripped of API credentials: %q", spec.Env)
	}

	// Each launch gets its own session id.
	spec2, _ := a.Launch(adapters.LaunchRequest{Prompt: "x", Env: env})
	if spec2.NativeID == spec.NativeID {
		t.Error("two launches share a session id")
	}

	// With AGENTCTL_CLAUDE_USE_API_KEY=1 the credentials stay.
	keep := append(slices.Clone(env), "AGENTCTL_CLAUDE_USE_API_KEY=1")
	spec, err = a.Launch(adapters.LaunchRequest{Prompt: "x", Env: keep})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(spec.Env, keep) {
		t.Errorf("env with the opt-in: %q", spec.Env)
	}
	// Any other value strips them.
	spec, _ = a.Launch(adapters.LaunchRequest{Prompt: "x", Env: append(slices.Clone(env), "AGENTCTL_CLAUDE_USE_API_KEY=yes")})
	if slices.Contains(spec.Env, "ANTHROPIC_API_KEY=sk-1") {
		t.Error("credentials kept without AGENTCTL_CLAUDE_USE_API_KEY=1")
	}

	// Running the argv for real: the prompt arrives as one argument.
	out := run(t, spec.Argv, spec.Env, nil)
	if !strings.HasSuffix(out, "--\nx\nstdin:") {
		t.Errorf("fake claude saw:\n%s", out)
	}
}

func TestLaunchLargePrompt(t *testing.T) {
	t.Parallel()
	bin := fakeBin(t)
	a := newAdapter(t.TempDir())
	dir := t.TempDir()
	prompt := "-" + strings.Repeat("big prompt ", 20000) + "\nlast line"
	spec, err := a.Launch(adapters.LaunchRequest{Prompt: prompt, Env: []string{"PATH=" + bin + ":/usr/bin:/bin"}, SessionDir: dir, BinaryPath: filepath.Join(bin, "claude")})
	if err != nil {
		t.Fatal(err)
	}
	for _, arg := range spec.Argv {
		if len(arg) > 1000 {
			t.Fatalf("the prompt went into argv (%d bytes)", len(arg))
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, adapters.PromptFile)); err != nil || string(b) != prompt {
		t.Fatalf("prompt file: %v", err)
	}
	// Run it: claude gets the prompt on stdin, not in its args.
	out := run(t, spec.Argv, spec.Env, nil)
	args, stdin, ok := strings.Cut(out, "stdin:")
	if !ok || stdin != prompt || strings.Contains(args, "big prompt") || !strings.Contains(args, spec.NativeID) {
		t.Errorf("fake claude saw args %q and %d bytes of stdin", args, len(stdin))
	}
	if _, err := a.Launch(adapters.LaunchRequest{Prompt: prompt, Env: []string{"PATH=" + bin + ":/usr/bin:/bin"}}); err == nil {
		t.Error("large prompt without a session folder accepted")
	}
}

func TestResumeArgv(t *testing.T) {
	t.Parallel()
	bin := fakeBin(t)
	a := newAdapter(t.TempDir())
	id := "0b6c1b1e-0000-4000-8000-00000000000c"
	spec, err := a.Resume(adapters.LaunchRequest{Prompt: "again", NativeID: id, Env: []string{"PATH=" + bin + ":/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{"claude", "-p", "--resume", id, "--output-format", "stream-json", "--verbose"}, permArgs()...)
	want = append(want, "--", "again")
	if !slices.Equal(spec.Argv, want) || spec.NativeID != id {
		t.Errorf("argv %q native %q", spec.Argv, spec.NativeID)
	}
	for _, bad := range []string{"", "../x", "not a session"} {
		if _, err := a.Resume(adapters.LaunchRequest{Prompt: "x", NativeID: bad, Env: []string{"PATH=" + bin + ":/usr/bin:/bin"}}); err == nil {
			t.Errorf("resume of %q accepted", bad)
		}
	}
}

func TestLaunchErrors(t *testing.T) {
	t.Parallel()
	a := newAdapter(t.TempDir())
	if _, err := a.Launch(adapters.LaunchRequest{Env: []string{"PATH=" + fakeBin(t)}}); err == nil {
		t.Error("empty prompt accepted")
	}
	if a.StopSignal() != syscall.SIGTERM || a.Binary() != "claude" || !strings.Contains(a.InstallHint(), "@anthropic-ai/claude-code") {
		t.Error("launcher constants")
	}
}

func run(t *testing.T, argv, env []string, stdin []byte) string {
	t.Helper()
	path := argv[0]
	if !filepath.IsAbs(path) {
		for _, kv := range env {
			if dirs, ok := strings.CutPrefix(kv, "PATH="); ok {
				for _, d := range filepath.SplitList(dirs) {
					if _, err := os.Stat(filepath.Join(d, argv[0])); err == nil {
						path = filepath.Join(d, argv[0])
						break
					}
				}
			}
		}
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Env = env
	if stdin != nil {
		cmd.Stdin = strings.NewReader(string(stdin))
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run %q: %v", argv[:min(len(argv), 3)], err)
	}
	return string(out)
}

// Interactive without a prompt: Claude's TUI with its pre-assigned session
// id and nothing after it; headless without one is refused.
func TestInteractiveWithoutPrompt(t *testing.T) {
	t.Parallel()
	a := newAdapter(t.TempDir())
	spec, err := a.Launch(adapters.LaunchRequest{Interactive: true, Model: "opus", Env: []string{"PATH=/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"claude", "--session-id", spec.NativeID, "--model", "opus"}; !slices.Equal(spec.Argv, want) || spec.NativeID == "" {
		t.Errorf("argv = %q, want %q", spec.Argv, want)
	}
	if _, err := a.Launch(adapters.LaunchRequest{Env: []string{"PATH=/bin"}}); err == nil {
		t.Error("headless without a prompt: no error")
	}
}
