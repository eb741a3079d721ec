package codex

import (
	"context"
	"database/sql"
	codexsynth "github.com/agentctl/agentctl/internal/synth/codex"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

func TestLaunchArgv(t *testing.T) {
	t.Parallel()
	_, a := testHome(t)
	base := []string{"codex", "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"}
	tests := []struct {
		name string
		req  adapters.LaunchRequest
		want []string
		err  string
	}{
		{"plain", adapters.LaunchRequest{Prompt: "say hi"}, append(base, "--", "say hi"), ""},
		{"dash prompt and model", adapters.LaunchRequest{Prompt: "-v --help", Model: "gpt-5.5-codex"},
			append(base, "--model", "gpt-5.5-codex", "--", "-v --help"), ""},
		{"empty", adapters.LaunchRequest{Prompt: "  \n"}, nil, "empty prompt"},
		{"large without a session folder", adapters.LaunchRequest{Prompt: strings.Repeat("x", maxArgPrompt+1)}, nil, "session folder"},
		{"interactive without a prompt", adapters.LaunchRequest{Interactive: true}, []string{"codex", "--no-daemon"}, ""},
		{"interactive with a prompt and model", adapters.LaunchRequest{Interactive: true, Prompt: "-fix it", Model: "m"},
			[]string{"codex", "--no-daemon", "--model", "m", "--", "-fix it"}, ""},
		{"interactive too large", adapters.LaunchRequest{Interactive: true, Prompt: strings.Repeat("x", maxArgPrompt+1)}, nil, "interactive prompt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := a.Launch(tt.req)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(spec.Argv, "\x00") != strings.Join(tt.want, "\x00") {
				t.Errorf("argv = %q\nwant %q", spec.Argv, tt.want)
			}
			if spec.NativeID != "" || spec.Stdin != nil {
				t.Errorf("native id %q, stdin %q", spec.NativeID, spec.Stdin)
			}
		})
	}
}

// The caller resolves the agent once per launch (a missing codex fails the
// launch there, naming it); without that path no wrapper is built.
func TestLargePromptWithoutBinaryPathFailsAtOnce(t *testing.T) {
	t.Parallel()
	_, a := testHome(t)
	_, err := a.Launch(adapters.LaunchRequest{Prompt: strings.Repeat("x", maxArgPrompt+1), SessionDir: t.TempDir(), Env: []string{"PATH=/bin"}})
	if err == nil || !strings.Contains(err.Error(), "resolved path") {
		t.Errorf("err = %v", err)
	}
}

func TestLaunchKeepsCallerEnv(t *testing.T) {
	t.Parallel()
	_, a := testHome(t)
	env := []string{"PATH=/bin", "OPENAI_API_KEY=k", "CODEX_HOME=/h"}
	spec, err := a.Launch(adapters.LaunchRequest{Prompt: "x", Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(spec.Env, ",") != strings.Join(env, ",") {
		t.Errorf("env = %q", spec.Env)
	}
	spec.Env[0] = "changed"
	if env[0] != "PATH=/bin" {
		t.Error("the caller's env was modified")
	}
}

// TestLargePromptThroughStdin runs the argv the adapter builds, with a
// stand-in for codex that prints its argv and stdin, to check the prompt
// arrives whole.
func TestLargePromptThroughStdin(t *testing.T) {
	_, a := testHome(t)
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nprintf '%s|' \"$@\"\necho\ncat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	prompt := strings.Repeat("large prompt line\n", 10000) + "-end\x00"
	for _, resume := range []bool{false, true} {
		req := adapters.LaunchRequest{Prompt: prompt, SessionDir: dir, Env: []string{"PATH=" + filepath.Dir(bin) + ":/usr/bin:/bin"}, BinaryPath: bin}
		var spec adapters.LaunchSpec
		var err error
		if resume {
			req.NativeID = idResumed
			spec, err = a.Resume(req)
		} else {
			spec, err = a.Launch(req)
		}
		if err != nil {
			t.Fatal(err)
		}
		if spec.Argv[0] != "/bin/sh" {
			t.Fatalf("argv = %q", spec.Argv)
		}
		for _, arg := range spec.Argv {
			if len(arg) > maxArgPrompt {
				t.Fatalf("an argument of %d bytes", len(arg))
			}
		}
		cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
		cmd.Env = spec.Env
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		args, stdin, _ := strings.Cut(string(out), "\n")
		wantArgs := "exec|--skip-git-repo-check|--dangerously-bypass-approvals-and-sandbox|--|-|"
		if resume {
			wantArgs = "exec|--skip-git-repo-check|--dangerously-bypass-approvals-and-sandbox|resume|" + idResumed + "|--|-|"
		}
		if args != wantArgs {
			t.Errorf("args = %q, want %q", args, wantArgs)
		}
		if stdin != prompt {
			t.Errorf("stdin has %d bytes, want the %d-byte prompt", len(stdin), len(prompt))
		}
		if fi, err := os.Stat(filepath.Join(dir, adapters.PromptFile)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("prompt file: %v %v", fi, err)
		}
	}
}

func TestResumeArgv(t *testing.T) {
	t.Parallel()
	_, a := testHome(t)
	spec, err := a.Resume(adapters.LaunchRequest{NativeID: idResumed, Prompt: "--again", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"codex", "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--model", "m", "resume", idResumed, "--", "--again"}
	if strings.Join(spec.Argv, "\x00") != strings.Join(want, "\x00") || spec.NativeID != idResumed {
		t.Errorf("argv = %q native %q", spec.Argv, spec.NativeID)
	}
	for _, bad := range []string{"", "--last", "not-a-uuid"} {
		if _, err := a.Resume(adapters.LaunchRequest{NativeID: bad, Prompt: "x"}); err == nil {
			t.Errorf("resume %q: no error", bad)
		}
	}
	if _, err := a.Resume(adapters.LaunchRequest{NativeID: idResumed}); err == nil {
		t.Error("resume without a prompt: no error")
	}
}

func TestLauncherFacts(t *testing.T) {
	t.Parallel()
	_, a := testHome(t)
	if a.Binary() != "codex" || a.StopSignal() != syscall.SIGINT || !strings.Contains(a.InstallHint(), "@openai/codex") {
		t.Errorf("binary %q signal %v hint %q", a.Binary(), a.StopSignal(), a.InstallHint())
	}
}

func TestThreadIndexSuppliesHeadOfLargeRollouts(t *testing.T) {
	t.Parallel()
	home, a := testHome(t)
	if err := codexsynth.GenerateStore(home, 1, 7); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: filepath.Join(home, stateDBName)}).String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id, path string
	if err := db.QueryRow("SELECT id, rollout_path FROM threads").Scan(&id, &path); err != nil {
		t.Fatal(err)
	}
	// A large rollout whose head is not a session_meta: only the index
	// can say its cwd and first prompt.
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(strings.Repeat(`{"type":"response_item","payload":{"type":"function_call_output","output":"`+strings.Repeat("z", 1000)+`"}}`+"\n", fullScanMax/1000+1))
	f.WriteString(`{"timestamp":"2026-11-22T02:30:00.000Z","type":"event_msg","payload":{"type":"task_complete","last_agent_message":"ok"}}` + "\n")
	f.Close()
	if _, err := db.Exec("UPDATE threads SET cwd = '/from/index', first_user_message = 'indexed prompt' WHERE id = ?", id); err != nil {
		t.Fatal(err)
	}
	s := discoverByID(t, a)[id]
	if s.Cwd != "/from/index" || s.FirstPrompt != "indexed prompt" || s.State != adapters.NativeDone {
		t.Errorf("cwd=%q prompt=%q state=%q", s.Cwd, s.FirstPrompt, s.State)
	}
}

func TestLockedThreadIndexIsNotAFailure(t *testing.T) {
	home, a := testHome(t)
	installFixtures(t, home)
	// A rollback-journal database under an exclusive lock blocks readers.
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: filepath.Join(home, stateDBName), RawQuery: "_pragma=journal_mode(delete)"}).String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(codexsynth.ThreadsDDL); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ss, err := a.Discover(ctx)
	if err != nil || len(ss) != 4 {
		t.Fatalf("discover with a locked index: %d sessions, %v", len(ss), err)
	}
	if ctx.Err() != nil {
		t.Error("discover waited for the lock")
	}
}

func TestGenerateStoreIsReadable(t *testing.T) {
	t.Parallel()
	home, a := testHome(t)
	if err := codexsynth.GenerateStore(home, 60, 3); err != nil {
		t.Fatal(err)
	}
	ss, err := a.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 60 {
		t.Fatalf("discovered %d of 60 generated sessions", len(ss))
	}
	states := map[adapters.NativeState]int{}
	for _, s := range ss {
		states[s.State]++
		if s.FirstPrompt == "" || s.Cwd == "" || s.Model == "" || s.CreatedAt.IsZero() || len(s.Warnings) > 0 && s.State != adapters.NativeFailed {
			t.Errorf("incomplete session: %+v", s)
		}
	}
	if states[adapters.NativeDone] == 0 || states[adapters.NativeDone] == len(ss) {
		t.Errorf("states = %v: want a mix", states)
	}

	// The last n messages, read from the end of the largest rollout (larger
	// than the first read window), are the end of the whole transcript.
	var big adapters.NativeSession
	var bigSize int64
	for _, s := range ss {
		if fi, err := os.Stat(s.Path); err == nil && fi.Size() > bigSize {
			big, bigSize = s, fi.Size()
		}
	}
	if bigSize <= tailWindow {
		t.Fatalf("largest rollout is %d bytes; want one over the %d-byte window", bigSize, tailWindow)
	}
	all, err := a.Transcript(context.Background(), big.NativeID, 0)
	if err != nil || len(all) < 4 {
		t.Fatalf("whole transcript: %d messages, %v", len(all), err)
	}
	for _, n := range []int{1, 3, len(all) - 1, len(all) + 5} {
		last, err := a.Transcript(context.Background(), big.NativeID, n)
		want := all[max(len(all)-n, 0):]
		if err != nil || !slices.Equal(last, want) {
			t.Errorf("last %d: %d messages (%v), want the %d at the end of the whole", n, len(last), err, len(want))
		}
	}
}
