package codex

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/proc"
)

// The test binary doubles as a stand-in Codex process: run through a
// symlink named "codex", with helperEnv set, it opens the files named by
// helperFileEnv (a path list; after helperDelayEnv), says "ready", and
// waits for stdin to close.
const (
	helperEnv      = "CODEX_ADAPTER_TEST_HELPER"
	helperFileEnv  = "CODEX_ADAPTER_TEST_FILE"
	helperDelayEnv = "CODEX_ADAPTER_TEST_DELAY"
	// helperReadEnv names files (a path list) the helper opens read-only.
	helperReadEnv = "CODEX_ADAPTER_TEST_READ"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		runHelper()
		return
	}
	os.Exit(m.Run())
}

func runHelper() {
	if d, err := time.ParseDuration(os.Getenv(helperDelayEnv)); err == nil {
		time.Sleep(d)
	}
	for _, p := range filepath.SplitList(os.Getenv(helperFileEnv)) {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer f.Close()
	}
	for _, p := range filepath.SplitList(os.Getenv(helperReadEnv)) {
		f, err := os.Open(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer f.Close()
	}
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
}

// fakeCodex starts the test binary as a "codex" process of the store at
// codexHome with args, holding file open (when not empty; several are
// joined by filepath.ListSeparator) after delay. It returns the process once it
// said ready (or at once when ready is false), and ends it at cleanup.
func fakeCodex(t *testing.T, codexHome, cwd, file string, delay time.Duration, ready bool, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "codex")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), "CODEX_HOME="+codexHome, helperEnv+"=1", helperFileEnv+"="+file, helperDelayEnv+"="+delay.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	if ready {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil || strings.TrimSpace(line) != "ready" {
			t.Fatalf("helper did not start: %q %v", line, err)
		}
	}
	return cmd
}

func TestMatchByOpenRollout(t *testing.T) {
	home, a := testHome(t)
	day := installFixtures(t, home)
	rollout := filepath.Join(day, "rollout-2026-11-22T06-26-15-"+idResumed+".jsonl")
	cmd := fakeCodex(t, home, t.TempDir(), rollout, 0, true, "exec", "--json", "please sleep 20")
	got := discoverByID(t, a)
	s := got[idResumed]
	if s.Process == nil {
		t.Fatal("the process holding the rollout was not matched")
	}
	info, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if s.Process.PID != cmd.Process.Pid || s.Process.Start != info.Start || s.Process.Evidence != evidenceOpenFile {
		t.Errorf("process = %+v, want pid %d start %d open-file", s.Process, cmd.Process.Pid, info.Start)
	}
	if s.State != adapters.NativeIdle {
		t.Errorf("alive after task_complete: state %q, want idle", s.State)
	}
	for id, o := range got {
		if id != idResumed && o.Process != nil {
			t.Errorf("session %s matched too: %+v", id, o.Process)
		}
	}
}

// A Codex of another store (another CODEX_HOME or HOME: another user's, or a
// test's) holding a file of the same name is not this store's.
func TestCodexOfAnotherStoreIsNotOurs(t *testing.T) {
	home, a := testHome(t)
	day := installFixtures(t, home)
	rollout := filepath.Join(day, "rollout-2026-11-22T06-26-15-"+idResumed+".jsonl")
	fakeCodex(t, t.TempDir(), t.TempDir(), rollout, 0, true, "exec", "resume", idResumed, "--", "more")
	if s := discoverByID(t, a)[idResumed]; s.Process != nil {
		t.Errorf("a Codex of another store is matched: %+v", s.Process)
	}
}

func TestMatchByWriterLockAndResumeArgv(t *testing.T) {
	home, a := testHome(t)
	installFixtures(t, home)
	locks := filepath.Join(home, "thread-writer-locks")
	if err := os.MkdirAll(locks, 0o755); err != nil {
		t.Fatal(err)
	}
	byLock := fakeCodex(t, home, t.TempDir(), filepath.Join(locks, idAborted+".lock"), 0, true, "exec", "x")
	byArgv := fakeCodex(t, home, t.TempDir(), "", 0, true, "exec", "--skip-git-repo-check", "resume", idFailed, "--", "again")
	got := discoverByID(t, a)
	if p := got[idAborted].Process; p == nil || p.PID != byLock.Process.Pid || p.Evidence != evidenceOpenFile {
		t.Errorf("by lock: %+v", p)
	}
	if p := got[idFailed].Process; p == nil || p.PID != byArgv.Process.Pid || p.Evidence != evidenceArgv {
		t.Errorf("by argv: %+v", p)
	}
}

func TestMatchTwoHoldersIsAmbiguous(t *testing.T) {
	home, a := testHome(t)
	day := installFixtures(t, home)
	rollout := filepath.Join(day, "rollout-2026-11-22T06-26-06-"+idComplete+".jsonl")
	one := fakeCodex(t, home, t.TempDir(), rollout, 0, true, "exec", "one")
	two := fakeCodex(t, home, t.TempDir(), rollout, 0, true, "exec", "resume", idComplete, "two")
	s := discoverByID(t, a)[idComplete]
	if s.Process != nil {
		t.Errorf("two processes hold the rollout, matched %+v", s.Process)
	}
	// Both are named as contenders, for explain.
	pids := map[int]bool{}
	for _, e := range s.Evidence {
		if e.Kind == adapters.EvidenceContender {
			pids[e.PID] = true
		}
	}
	if len(pids) != 2 || !pids[one.Process.Pid] || !pids[two.Process.Pid] {
		t.Errorf("evidence %+v, want contenders %d and %d", s.Evidence, one.Process.Pid, two.Process.Pid)
	}
}

func TestOutermostCodex(t *testing.T) {
	procs := map[int]liveProc{
		10: {info: proc.Info{Identity: proc.Identity{PID: 10}, PPID: 1}},
		11: {info: proc.Info{Identity: proc.Identity{PID: 11}, PPID: 10}},
		12: {info: proc.Info{Identity: proc.Identity{PID: 12}, PPID: 11}},
		20: {info: proc.Info{Identity: proc.Identity{PID: 20}, PPID: 99}},
	}
	for pid, want := range map[int]int{12: 10, 11: 10, 10: 10, 20: 20} {
		if got := outermost(procs, pid); got != want {
			t.Errorf("outermost(%d) = %d, want %d", pid, got, want)
		}
	}
}

func TestIsCodexAndResumeArg(t *testing.T) {
	tests := []struct {
		argv   []string
		codex  bool
		resume string
	}{
		{[]string{"/x/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex", "exec", "hi"}, true, ""},
		{[]string{"node", "/x/node_modules/.bin/codex", "exec", "resume", "01A201EE-F061-7C00-B411-41D396AE5594", "hi"}, true, "01a201ee-f061-7c00-b411-41d396ae5594"},
		{[]string{"node", "--max-old-space-size=4096", "/y/@openai/codex/bin/codex.js"}, true, ""},
		{[]string{"codex", "resume", "--last"}, true, ""},
		{[]string{"codex", "exec", "resume", "my-thread-name", "01a201ee-f061-7c00-b411-41d396ae5594"}, true, ""},
		{[]string{"codex", "resume", "-c", "x=1", "01a201ee-f061-7c00-b411-41d396ae5594"}, true, "01a201ee-f061-7c00-b411-41d396ae5594"},
		{[]string{"node", "server.js", "codex"}, false, ""},
		{[]string{"vim", "codex"}, false, ""},
		{nil, false, ""},
	}
	for _, tt := range tests {
		if got := isCodex(tt.argv); got != tt.codex {
			t.Errorf("isCodex(%q) = %v", tt.argv, got)
		}
		if got := resumeArg(tt.argv); got != tt.resume {
			t.Errorf("resumeArg(%q) = %q, want %q", tt.argv, got, tt.resume)
		}
	}
}

// v7ID is a Codex thread id (UUIDv7) begun at t; n tells ids of one
// millisecond apart.
func v7ID(t time.Time, n int) string {
	ms := t.UnixMilli()
	return fmt.Sprintf("%08x-%04x-7%03x-8000-%012x", ms>>16, ms&0xffff, n&0xfff, n)
}

// writeMeta writes the head of a rollout of thread id begun at `at` in dir,
// in day, and returns its path.
func writeMeta(t *testing.T, day, id, dir string, at time.Time) string {
	t.Helper()
	line := fmt.Sprintf(`{"timestamp":%q,"type":"session_meta","payload":{"id":%q,"timestamp":%q,"cwd":%q}}`+"\n",
		at.UTC().Format(time.RFC3339Nano), id, at.UTC().Format(time.RFC3339Nano), dir)
	p := filepath.Join(day, "rollout-"+at.Format("2006-01-02T15-04-05")+"-"+id+".jsonl")
	if err := os.MkdirAll(day, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFindNativeIDFromOpenRollout(t *testing.T) {
	home, a := testHome(t)
	day := installFixtures(t, home)
	since := time.Now()
	id := v7ID(since.Add(200*time.Millisecond), 1)
	rollout := filepath.Join(day, "rollout-2026-11-22T08-00-00-"+id+".jsonl")
	// The rollout is opened a moment after the process starts.
	cmd := fakeCodex(t, home, t.TempDir(), rollout, 300*time.Millisecond, false, "exec", "hi")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := a.FindNativeID(ctx, adapters.Started{PID: cmd.Process.Pid, Cwd: "/anywhere", Since: since})
	if err != nil || got != id {
		t.Errorf("FindNativeID = %q, %v; want %s", got, err, id)
	}
}

func TestFindNativeIDFromResumeArgv(t *testing.T) {
	home, a := testHome(t)
	since := time.Now()
	cmd := fakeCodex(t, home, t.TempDir(), "", 0, true, "exec", "resume", idResumed, "--", "more")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := a.FindNativeID(ctx, adapters.Started{PID: cmd.Process.Pid, Cwd: "/anywhere", Since: since})
	if err != nil || got != idResumed {
		t.Errorf("FindNativeID = %q, %v", got, err)
	}
}

func TestFindNativeIDAfterExit(t *testing.T) {
	home, a := testHome(t)
	day := filepath.Join(home, "sessions", "2026", "11", "22")
	if err := os.MkdirAll(day, 0o755); err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	since := time.Now()
	meta := func(id, dir string, at time.Time, prompt ...string) {
		line := fmt.Sprintf(`{"timestamp":%q,"type":"session_meta","payload":{"id":%q,"timestamp":%q,"cwd":%q}}`+"\n",
			at.UTC().Format(time.RFC3339Nano), id, at.UTC().Format(time.RFC3339Nano), dir)
		for _, p := range prompt {
			line += fmt.Sprintf(`{"timestamp":%q,"type":"event_msg","payload":{"type":"user_message","message":%q}}`+"\n", at.UTC().Format(time.RFC3339Nano), p)
		}
		p := filepath.Join(day, "rollout-2026-11-22T09-00-00-"+id+".jsonl")
		if err := os.WriteFile(p, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	meta("01a20400-0000-7000-8000-000000000001", cwd, since.Add(-time.Hour))          // before: not it
	meta("01a20400-0000-7000-8000-000000000002", t.TempDir(), since.Add(time.Second)) // elsewhere: not it
	meta("01a20400-0000-7000-8000-000000000003", cwd, since.Add(time.Second))
	// A process that is already gone.
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := a.FindNativeID(ctx, adapters.Started{PID: done.Process.Pid, Cwd: cwd, Since: since})
	if err != nil || got != "01a20400-0000-7000-8000-000000000003" {
		t.Errorf("FindNativeID = %q, %v", got, err)
	}
	// A second candidate makes it ambiguous: an error, not a guess.
	meta("01a20400-0000-7000-8000-000000000004", cwd, since.Add(2*time.Second))
	if got, err := a.FindNativeID(ctx, adapters.Started{PID: done.Process.Pid, Cwd: cwd, Since: since}); err == nil || !strings.Contains(err.Error(), "cannot tell") {
		t.Errorf("ambiguous: %q, %v", got, err)
	}

	// Runs begun beside it in the folder (by hand, launched) that ended
	// too: the launch's prompt tells its rollout, when only one has it.
	long := strings.Repeat("word ", 100) // longer than a rollout's prompt is kept
	other := t.TempDir()
	meta("01a20400-0000-7000-8000-000000000005", other, since.Add(time.Second), "hello [[text: by hand]]")
	meta("01a20400-0000-7000-8000-000000000006", other, since.Add(time.Second), "hello [[text: launched]]")
	meta("01a20400-0000-7000-8000-000000000007", other, since.Add(2*time.Second), long+"and more")
	meta("01a20400-0000-7000-8000-000000000008", other, since.Add(2*time.Second), "twice")
	meta("01a20400-0000-7000-8000-000000000009", other, since.Add(2*time.Second), "twice")
	for _, c := range []struct{ prompt, want string }{
		{"hello [[text: launched]]", "01a20400-0000-7000-8000-000000000006"},
		{"  hello [[text: by hand]]\n", "01a20400-0000-7000-8000-000000000005"},
		{long + "and more", "01a20400-0000-7000-8000-000000000007"},
		{"", ""},            // no prompt: several fit
		{"twice", ""},       // two with its prompt
		{"no such one", ""}, // none with its prompt: not one of the others
	} {
		got, err := a.FindNativeID(ctx, adapters.Started{PID: done.Process.Pid, Cwd: other, Since: since, Prompt: c.prompt})
		if c.want == "" && (err == nil || !strings.Contains(err.Error(), "cannot tell")) || c.want != "" && (err != nil || got != c.want) {
			t.Errorf("prompt %q: FindNativeID = %q, %v; want %q", c.prompt, got, err, c.want)
		}
	}
}

func TestFindNativeIDGivesUpWithContext(t *testing.T) {
	home, a := testHome(t)
	cmd := fakeCodex(t, home, t.TempDir(), "", 0, true, "exec", "hi")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if got, err := a.FindNativeID(ctx, adapters.Started{PID: cmd.Process.Pid, Cwd: "/x", Since: time.Now().Add(-time.Second)}); err == nil {
		t.Errorf("found %q for a process that opens no rollout", got)
	}
}

func TestIDFromRolloutPath(t *testing.T) {
	const id = "019a2b3c-4d5e-7f80-9a1b-2c3d4e5f6a7b"
	for _, tc := range []struct{ path, want string }{
		{"/s/2026/11/22/rollout-2026-11-22T06-26-06-" + id + ".jsonl", id},
		{"rollout-2026-11-22T06-26-06-" + strings.ToUpper(id) + ".jsonl", id},
		{"rollout-2026-11-22T06-26-06-" + id + ".json", ""},
		{"rollout-2026-11-22T06-26-06-" + id[:35] + ".jsonl", ""},
		{"rollout-2026-11-22X06-26-06-" + id + ".jsonl", ""},
		{"rollout-2026-11-2aT06-26-06-" + id + ".jsonl", ""},
		{"rollout-2026-11-22T06-26-06_" + id + ".jsonl", ""},
		{"rollout-2026-11-22T06-26-06-" + strings.Replace(id, "-", "x", 1) + ".jsonl", ""},
		{"rollout-2026-11-22T06-26-06-" + strings.Replace(id, "a", "g", 1) + ".jsonl", ""},
		{"rollout-" + id + ".jsonl", ""},
		{"session-2026-11-22T06-26-06-" + id + ".jsonl", ""},
		{"", ""},
	} {
		if got := idFromRolloutPath(tc.path); got != tc.want {
			t.Errorf("idFromRolloutPath(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestSubcommand(t *testing.T) {
	tests := []struct {
		argv   []string
		sub    string
		daemon bool
		tui    bool
	}{
		{[]string{"node", "/x/.bin/codex"}, "", false, true},
		{[]string{"node", "/x/.bin/codex", "--no-daemon", "-m", "exec", "fix it"}, "", false, true},
		{[]string{"/x/codex", "exec", "--json", "hi"}, "exec", false, false},
		{[]string{"/h/.codex/packages/app-server-daemon/releases/0.169.0/bin/codex", "app-server", "--listen", "unix://", "--managed-daemon"}, "app-server", true, false},
		{[]string{"/h/codex", "app-server", "daemon", "pid-update-loop"}, "app-server", true, false},
		{[]string{"codex", "-c", "exec=1", "resume", "--last"}, "resume", false, true},
		{[]string{"codex", "--", "exec"}, "", false, true},
	}
	for _, tt := range tests {
		if got := subcommand(tt.argv); got != tt.sub {
			t.Errorf("subcommand(%q) = %q, want %q", tt.argv, got, tt.sub)
		}
		if isDaemon(tt.argv) != tt.daemon || isTUI(tt.argv) != tt.tui {
			t.Errorf("%q: daemon %v tui %v, want %v %v", tt.argv, isDaemon(tt.argv), isTUI(tt.argv), tt.daemon, tt.tui)
		}
	}
}

// The daemon is never a thread's process, even when the TUI that started
// it is its parent; a thread it holds goes to the one TUI of its folder
// begun before it, and is running in one of them, which is not known,
// when two TUIs fit and nothing else can be theirs; a --no-daemon TUI
// holds none of them.
func TestDaemonThreadsGoToTheirTUIOnlyWhenOneFits(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	start := func(dir string) proc.Info {
		cmd := exec.Command("sleep", "60")
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		info, err := proc.Lookup(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	a1, a2, b, own, r := start(dirA), start(dirA), start(dirB), start(dirA), start(dirB)
	contended := "01a218f8-0000-7000-8000-000000000003"
	daemon := start(dirB)
	daemon.PPID = b.PID // started by the TUI in dirB
	procs := map[int]liveProc{
		a1.PID: {info: a1, argv: []string{"node", "/x/.bin/codex"}},
		a2.PID: {info: a2, argv: []string{"node", "/x/.bin/codex", "fix the test"}},
		b.PID:  {info: b, argv: []string{"node", "/x/.bin/codex", "-C", dirB}},
		// Its turns run in itself: none of the daemon's threads is its.
		own.PID:    {info: own, argv: []string{"/h/codex", "--no-daemon"}},
		r.PID:      {info: r, argv: []string{"/h/codex", "resume", contended}},
		daemon.PID: {info: daemon, argv: []string{"/h/codex", "app-server", "--managed-daemon"}},
	}
	if got := outermost(procs, daemon.PID); got != daemon.PID {
		t.Errorf("outermost(daemon) = %d, want the daemon itself (%d)", got, daemon.PID)
	}
	later := time.Now().Add(time.Second)
	threads := []daemonThread{
		{id: "ta", cwd: dirA, created: later, updated: later},
		{id: "tb", cwd: dirB, created: later, updated: later},
		{id: "old", cwd: dirB, created: b.StartTime.Add(-time.Hour), updated: b.StartTime.Add(-time.Hour)},
		{id: contended, cwd: dirB, created: later, updated: later},
	}
	// Two trees hold its rollout open: unknown first-hand, whatever an
	// argv says.
	twoTrees := map[string][]int{contended: {a1.PID, b.PID}}
	got := attributeDaemonThreads(procs, map[string]*adapters.ProcessRef{}, twoTrees, threads, nil, time.Now())
	if _, ok := got[contended]; ok {
		t.Errorf("a thread two trees hold open: %+v, want it left to its contenders", got[contended])
	}
	if r := got["tb"].Ref; r == nil || r.PID != b.PID || r.Evidence != evidenceCwdStart {
		t.Errorf("tb: %+v, want pid %d by cwd+start", got["tb"], b.PID)
	}
	if ta := got["ta"]; ta.Ref != nil || !ta.Running || len(ta.Holders) != 2 {
		t.Errorf("ta: %+v, want running in one of both TUIs of dirA, not tied", ta)
	}
	if _, ok := got["old"]; ok {
		t.Errorf("a thread begun before every TUI: %+v, want no process", got["old"])
	}
}

// Two Codex TUIs started by hand in one folder in the default daemon mode
// (their turns run in the shared app-server; a TUI holds no file of its
// thread) read unknown while both lived, with a warning naming both. Each
// thread begun after both started is running in one of them ("pid A or
// B"); once one quits and the other writes its thread, that thread is the
// other's (what the earlier answer proved) and the quitter's has ended.
func TestTwoDaemonModeCodexTUIsInOneFolderReadRunning(t *testing.T) {
	home, a := testHome(t)
	day := filepath.Join(home, "sessions", "2026", "11", "26")
	cwd := t.TempDir()
	tuiA := fakeCodex(t, home, cwd, "", 0, true)
	tuiB := fakeCodex(t, home, cwd, "", 0, true, "fix the test")
	began := time.Now() // after both started
	ids := []string{v7ID(began, 1), v7ID(began, 2)}
	var paths []string
	for _, id := range ids {
		p := writeMeta(t, day, id, cwd, began)
		appendText(t, p, `{"timestamp":"`+began.UTC().Format(time.RFC3339Nano)+`","type":"event_msg","payload":{"type":"task_complete","turn_id":"t","last_agent_message":"done"}}`+"\n")
		paths = append(paths, p)
	}
	fakeCodex(t, home, cwd, strings.Join(paths, string(filepath.ListSeparator)), 0, true, "app-server", "--listen", "unix://", "--managed-daemon")
	pids := map[int]bool{tuiA.Process.Pid: true, tuiB.Process.Pid: true}

	got := discoverByID(t, a)
	for _, id := range ids {
		s := got[id]
		candidates := map[int]bool{}
		for _, e := range s.Evidence {
			if e.Kind == adapters.EvidenceCandidate {
				candidates[e.PID] = true
			}
		}
		if s.Process != nil || s.State != adapters.NativeIdle || len(candidates) != 2 || !candidates[tuiA.Process.Pid] || !candidates[tuiB.Process.Pid] {
			t.Errorf("thread %s with two TUIs: process %+v state %q candidates %v, want running (idle) in pid %v, not tied", id, s.Process, s.State, candidates, pids)
		}
	}

	// B quits; A writes its thread (the first) after that.
	tuiB.Process.Kill()
	tuiB.Wait()
	discoverByID(t, a)
	appendText(t, paths[0], `{"timestamp":"`+time.Now().UTC().Format(time.RFC3339Nano)+`","type":"event_msg","payload":{"type":"task_complete","turn_id":"t2","last_agent_message":"again"}}`+"\n")
	got = discoverByID(t, a)
	if s := got[ids[0]]; s.Process == nil || s.Process.PID != tuiA.Process.Pid || s.State != adapters.NativeIdle {
		t.Errorf("the thread A wrote after B quit: process %+v state %q, want pid %d, idle", s.Process, s.State, tuiA.Process.Pid)
	}
	if s := got[ids[1]]; s.Process != nil || s.State != adapters.NativeDone {
		t.Errorf("the other thread, B's: process %+v state %q, want none, done", s.Process, s.State)
	}
}

// `launch codex -i` bound another session's native id: a starting Codex
// opens other threads' rollouts and writer locks for a moment, and the
// smallest id open was taken. Its own thread is the one begun after the
// launch, in its folder, that no other Codex holds: not an older session's
// rollout it reads, not the lock of a Codex launched beside it, not a
// thread of another folder begun meanwhile.
func TestFindNativeIDNeverBindsAnotherSessionsThread(t *testing.T) {
	home, a := testHome(t)
	day := installFixtures(t, home)
	locks := filepath.Join(home, "thread-writer-locks")
	if err := os.MkdirAll(locks, 0o755); err != nil {
		t.Fatal(err)
	}
	lock := func(id string) string { return filepath.Join(locks, id+".lock") }
	cwd, elsewhere := t.TempDir(), t.TempDir()
	since := time.Now()
	old := filepath.Join(day, "rollout-2026-11-22T06-26-15-"+idResumed+".jsonl")
	beside := v7ID(since.Add(10*time.Millisecond), 1)
	fakeCodex(t, home, cwd, lock(beside), 0, true, "--no-daemon")
	other := v7ID(since.Add(20*time.Millisecond), 2)
	otherRollout := writeMeta(t, day, other, elsewhere, since.Add(20*time.Millisecond))
	own := v7ID(since.Add(30*time.Millisecond), 3)
	held := strings.Join([]string{old, lock(beside), otherRollout, lock(own)}, string(filepath.ListSeparator))
	cmd := fakeCodex(t, home, cwd, held, 0, true, "--no-daemon")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := a.FindNativeID(ctx, adapters.Started{PID: cmd.Process.Pid, Cwd: cwd, Since: since})
	if err != nil || got != own {
		t.Errorf("FindNativeID = %q, %v; want its own thread %s (not %s, %s or %s)", got, err, own, idResumed, beside, other)
	}
}

// A hand Codex TUI whose terminal was killed mid-tool read ended at once,
// while its turn went on in the shared app-server daemon (the tool ran on,
// the model was asked again, the tokens rose). A thread the daemon holds
// whose turn runs is running (busy), with the daemon's process, whatever
// became of the TUI; once its rollout records the turn's end, it has
// ended. A thread the daemon holds at rest, with no TUI, has ended.
func TestHandCodexTUIKilledMidToolReadsEndedWhileTheDaemonRunsItsTurn(t *testing.T) {
	home, a := testHome(t)
	day := filepath.Join(home, "sessions", "2026", "11", "26")
	cwd := t.TempDir()
	began := time.Now().Add(-time.Minute)
	working, atRest := v7ID(began, 1), v7ID(began, 2)
	busy := writeMeta(t, day, working, cwd, began)
	appendText(t, busy, `{"timestamp":"2026-11-26T10:00:01.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}`+"\n"+
		`{"timestamp":"2026-11-26T10:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"sleep 40\"}","call_id":"call_1"}}`+"\n")
	idle := writeMeta(t, day, atRest, cwd, began)
	appendText(t, idle, `{"timestamp":"2026-11-26T10:00:01.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t2"}}`+"\n"+
		`{"timestamp":"2026-11-26T10:00:03.000Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t2","last_agent_message":"done"}}`+"\n")
	daemon := fakeCodex(t, home, cwd, busy+string(filepath.ListSeparator)+idle, 0, true, "app-server", "--listen", "unix://", "--managed-daemon")

	got := discoverByID(t, a)
	s := got[working]
	if s.Process == nil || s.Process.PID != daemon.Process.Pid || s.Process.Evidence != evidenceDaemonTurn || s.State != adapters.NativeBusy {
		t.Errorf("the daemon's running turn: process %+v state %q, want the daemon (pid %d) and busy", s.Process, s.State, daemon.Process.Pid)
	}
	if r := got[atRest]; r.Process != nil || r.State != adapters.NativeDone {
		t.Errorf("a thread at rest in the daemon, with no TUI: process %+v state %q, want none and done", r.Process, r.State)
	}

	// The daemon's turn ends.
	appendText(t, busy, `{"timestamp":"2026-11-26T10:00:45.000Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"slept"}}`+"\n")
	if s := discoverByID(t, a)[working]; s.Process != nil || s.State != adapters.NativeDone {
		t.Errorf("after the daemon's turn ended: process %+v state %q, want none and done", s.Process, s.State)
	}
}

// codexTies is a book of integration reports for tests.
type codexTies struct{ ties []adapters.HookTie }

func (b *codexTies) HookTies(agent string) []adapters.HookTie {
	if agent != Name {
		return nil
	}
	return b.ties
}

// Codex runs its Stop hook before the rollout records the turn's end: a
// thread the daemon holds whose integration reported the turn ended after
// the rollout's last write no longer runs there, and is not given the
// daemon's process (a hand TUI's thread read "pid of the daemon, waiting
// for input" for that moment). A report older than the rollout's last
// write says nothing of the turn the rollout shows running.
func TestAReportedTurnEndTakesTheThreadFromTheDaemon(t *testing.T) {
	home, _ := testHome(t)
	book := &codexTies{}
	a := New(adapters.Env{Home: t.TempDir(), Hooks: book, Getenv: func(k string) string {
		if k == "CODEX_HOME" {
			return home
		}
		return ""
	}})
	day := filepath.Join(home, "sessions", "2026", "11", "26")
	cwd := t.TempDir()
	began := time.Now().Add(-time.Minute)
	id := v7ID(began, 1)
	rollout := writeMeta(t, day, id, cwd, began)
	appendText(t, rollout, `{"timestamp":"2026-11-26T10:00:01.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}`+"\n")
	daemon := fakeCodex(t, home, cwd, rollout, 0, true, "app-server", "--listen", "unix://", "--managed-daemon")
	written := func() time.Time {
		fi, err := os.Stat(rollout)
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	stop := adapters.HookTie{PID: daemon.Process.Pid, NativeID: id, Cwd: cwd, Event: HookStop, State: adapters.NativeIdle, WaitingFor: adapters.WaitingInput}
	cases := []struct {
		name   string
		report func() []adapters.HookTie
		daemon bool
	}{
		{"no report", func() []adapters.HookTie { return nil }, true},
		{"the turn began, reported", func() []adapters.HookTie {
			return []adapters.HookTie{{PID: daemon.Process.Pid, NativeID: id, Event: HookUserPromptSubmit, State: adapters.NativeBusy, At: written().Add(time.Second)}}
		}, true},
		{"its end reported after the last write", func() []adapters.HookTie {
			s := stop
			s.At = written().Add(time.Second)
			return []adapters.HookTie{s}
		}, false},
		{"its end reported, then the turn began again", func() []adapters.HookTie {
			s := stop
			s.At = written().Add(time.Second)
			again := adapters.HookTie{PID: daemon.Process.Pid, NativeID: id, Event: HookUserPromptSubmit, State: adapters.NativeBusy, At: s.At.Add(time.Second)}
			return []adapters.HookTie{again, s}
		}, true},
		{"an end reported before the last write", func() []adapters.HookTie {
			s := stop
			s.At = written().Add(-time.Second)
			return []adapters.HookTie{s}
		}, true},
	}
	for _, c := range cases {
		book.ties = c.report()
		s := discoverByID(t, a)[id]
		tied := s.Process != nil && s.Process.PID == daemon.Process.Pid && s.Process.Evidence == evidenceDaemonTurn
		if tied != c.daemon {
			t.Errorf("%s: process %+v state %q, want the daemon's: %v", c.name, s.Process, s.State, c.daemon)
		}
	}
}

// A starting Codex reads the rollouts of its folder's threads (to list
// them): a reader is not the thread's process. A live session's rollout it
// reads stays tied to its writer, not contended (unknown); an ended one it
// reads has not become running.
func TestACodexReadingOtherSessionsRolloutsHoldsNone(t *testing.T) {
	home, a := testHome(t)
	day := installFixtures(t, home)
	live := filepath.Join(day, "rollout-2026-11-22T06-26-15-"+idResumed+".jsonl")
	ended := filepath.Join(day, "rollout-2026-11-22T06-36-46-"+idAborted+".jsonl")
	writer := fakeCodex(t, home, t.TempDir(), live, 0, true, "exec", "--json", "please sleep 20")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "codex")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	r := exec.Command(bin, "--no-daemon")
	r.Env = append(os.Environ(), "CODEX_HOME="+home, helperEnv+"=1", helperReadEnv+"="+live+string(filepath.ListSeparator)+ended)
	stdin, _ := r.StdinPipe()
	stdout, _ := r.StdoutPipe()
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); r.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("reader did not start: %q %v", line, err)
	}
	got := discoverByID(t, a)
	if s := got[idResumed]; s.Process == nil || s.Process.PID != writer.Process.Pid || s.State != adapters.NativeIdle {
		t.Errorf("the live session read by another Codex: process %+v state %q, want its writer (pid %d), idle", s.Process, s.State, writer.Process.Pid)
	}
	if s := got[idAborted]; s.Process != nil || s.State != adapters.NativeAborted {
		t.Errorf("the ended session read by another Codex: process %+v state %q, want none, aborted", s.Process, s.State)
	}
}
