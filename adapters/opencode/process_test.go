package opencode

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/proc"
)

// The test binary doubles as a stand-in OpenCode process: run through a
// symlink named "opencode" with helperEnv set, it just waits to be killed.
const helperEnv = "OPENCODE_ADAPTER_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		time.Sleep(2 * time.Minute)
		return
	}
	os.Exit(m.Run())
}

// fakeOpencode starts the test binary as an "opencode" process of the store
// under the XDG data folder data, in cwd, with
// args (through /bin/sh with stdin from stdinFile when it is not empty),
// and kills it at cleanup.
func fakeOpencode(t *testing.T, data, cwd, stdinFile string, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "opencode")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	if stdinFile != "" {
		cmd = exec.Command("/bin/sh", append([]string{"-c", `exec "$@" <"$0"`, stdinFile, bin}, args...)...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+data, helperEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// Wait until the process is the helper (past the shell's exec).
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if argv, err := proc.Cmdline(cmd.Process.Pid); err == nil && isOpencode(argv) {
			return cmd
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("helper did not start")
	return nil
}

// addSession writes a session of dir with a first prompt, created at.
func addSession(t *testing.T, db *sql.DB, id, dir, prompt string, at time.Time) {
	t.Helper()
	ms := at.UnixMilli()
	insertRow(t, db, "session", map[string]any{"id": id, "project_id": "global", "slug": "s", "directory": dir, "title": "t",
		"version": "1.18.33", "time_created": ms, "time_updated": ms})
	if prompt == "" {
		return
	}
	mid := "msg_" + strings.TrimPrefix(id, "ses_")
	insertRow(t, db, "message", map[string]any{"id": mid, "session_id": id, "time_created": ms, "time_updated": ms,
		"data": `{"role":"user","time":{"created":` + itoa(ms) + `}}`})
	insertRow(t, db, "part", map[string]any{"id": "prt_" + strings.TrimPrefix(id, "ses_"), "message_id": mid, "session_id": id,
		"time_created": ms, "time_updated": ms, "data": fmt.Sprintf(`{"type":"text","text":%q}`, prompt)})
}

func TestMatchBySessionArgv(t *testing.T) {
	data, a := testData(t)
	loadFixture(t, data)
	cmd := fakeOpencode(t, data, t.TempDir(), "", "run", "--model", "fake/fake-model", "--session", idResumed, "--", "more")
	got := discoverByID(t, a)
	p := got[idResumed].Process
	info, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if p == nil || p.PID != cmd.Process.Pid || p.Start != info.Start || p.Evidence != evidenceArgv {
		t.Fatalf("process = %+v", p)
	}
	if got[idResumed].State != adapters.NativeIdle {
		t.Errorf("state %q", got[idResumed].State)
	}
	for id, s := range got {
		if id != idResumed && s.Process != nil {
			t.Errorf("%s matched too", id)
		}
	}
}

func TestMatchByCwdStartAndPrompt(t *testing.T) {
	data, a := testData(t)
	db := loadFixture(t, data)
	dir := t.TempDir()
	cmd := fakeOpencode(t, data, dir, "", "run", "--", "fix", "the", "", "bug")
	after := time.Now().Add(time.Second)
	addSession(t, db, "ses_aaaa00000001ffMatchMeXxxxxx", dir, "fix the  bug", after)
	addSession(t, db, "ses_aaaa00000002ffOtherPromptXx", dir, "something else", after)
	addSession(t, db, "ses_aaaa00000003ffBeforeStartXx", dir, "fix the  bug", after.Add(-time.Hour))
	got := discoverByID(t, a)
	if p := got["ses_aaaa00000001ffMatchMeXxxxxx"].Process; p == nil || p.PID != cmd.Process.Pid || p.Evidence != evidencePrompt {
		t.Errorf("matching session: %+v", p)
	}
	for _, id := range []string{"ses_aaaa00000002ffOtherPromptXx", "ses_aaaa00000003ffBeforeStartXx"} {
		if p := got[id].Process; p != nil {
			t.Errorf("%s matched: %+v", id, p)
		}
	}
}

// An OpenCode of another store (another XDG data folder or HOME: another
// user's, or a test's) naming one of this store's sessions is not ours.
func TestOpencodeOfAnotherStoreIsNotOurs(t *testing.T) {
	data, a := testData(t)
	loadFixture(t, data)
	fakeOpencode(t, t.TempDir(), t.TempDir(), "", "run", "--session", idResumed, "--", "more")
	if p := discoverByID(t, a)[idResumed].Process; p != nil {
		t.Errorf("an OpenCode of another store is matched: %+v", p)
	}
}

// Two TUIs in one folder started together, and one new session there:
// one of them runs it, which one is not known (issue 24: it read unknown).
// A TUI with two new sessions holds the latest written.
func TestMatchTwoTUIsInOneFolderRunsNamingBoth(t *testing.T) {
	data, a := testData(t)
	db := loadFixture(t, data)
	dir := t.TempDir()
	tui1 := fakeOpencode(t, data, dir, "")
	tui2 := fakeOpencode(t, data, dir, "")
	both := "ses_bbbb00000001ffTwoOwnersXxxx"
	addSession(t, db, both, dir, "hello", time.Now().Add(time.Second))
	dir2 := t.TempDir()
	tui3 := fakeOpencode(t, data, dir2, "")
	older, latest := "ses_bbbb00000002ffOneOfTwoXxxxx", "ses_bbbb00000003ffOneOfTwoXxxxx"
	addSession(t, db, older, dir2, "a", time.Now().Add(time.Second))
	addSession(t, db, latest, dir2, "b", time.Now().Add(2*time.Second))
	got := discoverByID(t, a)
	s := got[both]
	if s.Process != nil || s.State == adapters.NativeUnknown || s.State == adapters.NativeDone || len(s.Warnings) == 0 {
		t.Fatalf("%s: process %+v state %q warnings %q, want running with which pid open", both, s.Process, s.State, s.Warnings)
	}
	for _, c := range []*exec.Cmd{tui1, tui2} {
		if !strings.Contains(s.Warnings[len(s.Warnings)-1], strconv.Itoa(c.Process.Pid)) {
			t.Errorf("%q does not name pid %d", s.Warnings, c.Process.Pid)
		}
		if !hasEvidence(s.Evidence, adapters.EvidenceCandidate, c.Process.Pid) {
			t.Errorf("evidence %+v has no candidate pid %d", s.Evidence, c.Process.Pid)
		}
	}
	if p := got[latest].Process; p == nil || p.PID != tui3.Process.Pid {
		t.Errorf("the latest session of tui3's folder: %+v", p)
	}
	if s := got[older]; s.Process != nil || s.State == adapters.NativeUnknown {
		t.Errorf("the earlier session of tui3's folder: process %+v state %q, want ended", s.Process, s.State)
	}
	// Once its processes are gone, the session is over.
	for _, c := range []*exec.Cmd{tui1, tui2} {
		c.Process.Kill()
		c.Wait()
	}
	if s := discoverByID(t, a)[both]; s.State == adapters.NativeUnknown || s.State == adapters.NativeBusy || s.State == adapters.NativeIdle {
		t.Errorf("with its TUIs gone: state %q, want it over", s.State)
	}
}

// Issue 24: a one-shot beside a TUI in one folder made both unknown,
// although the one-shot's argv prompt names one session; the finished
// one-shot stayed unknown until the TUI quit.
func TestOneShotBesideATUIIsTiedByItsPrompt(t *testing.T) {
	data, a := testData(t)
	db := loadFixture(t, data)
	dir := t.TempDir()
	tui := fakeOpencode(t, data, dir, "")
	mine := "ses_cccc00000001ffTheTUIsXxxxxx"
	addSession(t, db, mine, dir, "hello", time.Now())
	shot := fakeOpencode(t, data, dir, "", "run", "--", "one", "shot")
	theirs := "ses_cccc00000002ffTheOneShotXxx"
	// Written last, before it ends: alone, the TUI's latest.
	addSession(t, db, theirs, dir, "one shot", time.Now().Add(10*time.Millisecond))
	got := discoverByID(t, a)
	if p := got[mine].Process; p == nil || p.PID != tui.Process.Pid {
		t.Errorf("the TUI's session: %+v, want pid %d", p, tui.Process.Pid)
	}
	if p := got[theirs].Process; p == nil || p.PID != shot.Process.Pid || p.Evidence != evidencePrompt {
		t.Errorf("the one-shot's session: %+v, want pid %d by its prompt", p, shot.Process.Pid)
	}
	// The one-shot ends: its session ends, the TUI keeps its own.
	time.Sleep(20 * time.Millisecond)
	shot.Process.Kill()
	shot.Wait()
	got = discoverByID(t, a)
	if p := got[mine].Process; p == nil || p.PID != tui.Process.Pid {
		t.Errorf("after the one-shot ended, the TUI's session: %+v, want pid %d", p, tui.Process.Pid)
	}
	if s := got[theirs]; s.Process != nil || s.State == adapters.NativeUnknown {
		t.Errorf("the finished one-shot: process %+v state %q, want ended", s.Process, s.State)
	}
}

// A one-shot's session row is written before its message: until then the
// session may be the one-shot's, and a TUI beside it is not given it.
func TestOneShotSessionBeforeItsPromptIsNotTheTUIs(t *testing.T) {
	data, a := testData(t)
	db := loadFixture(t, data)
	dir := t.TempDir()
	tui := fakeOpencode(t, data, dir, "")
	mine := "ses_ffff00000001ffTheTUIsXxxxxx"
	addSession(t, db, mine, dir, "hello", time.Now())
	shot := fakeOpencode(t, data, dir, "", "run", "--", "one", "shot")
	theirs := "ses_ffff00000002ffNoPromptYetXx"
	addSession(t, db, theirs, dir, "", time.Now().Add(10*time.Millisecond))
	got := discoverByID(t, a)
	if p := got[mine].Process; p == nil || p.PID != tui.Process.Pid {
		t.Errorf("the TUI's session: %+v, want pid %d", p, tui.Process.Pid)
	}
	if p := got[theirs].Process; p == nil || p.PID != shot.Process.Pid {
		t.Errorf("the one-shot's session before its prompt: %+v, want pid %d", p, shot.Process.Pid)
	}
}

// Issue 24: `opencode --continue` by hand read ended while its turn ran.
func TestContinueByHandRunsItsSession(t *testing.T) {
	data, a := testData(t)
	db := loadFixture(t, data)
	dir := t.TempDir()
	old := "ses_dddd00000001ffContinuedXxxx"
	addSession(t, db, old, dir, "hello", time.Now().Add(-time.Hour))
	cont := fakeOpencode(t, data, dir, "", "--continue")
	// Its turn writes the session.
	if _, err := db.Exec(`update session set time_updated = ? where id = ?`, time.Now().Add(time.Second).UnixMilli(), old); err != nil {
		t.Fatal(err)
	}
	if p := discoverByID(t, a)[old].Process; p == nil || p.PID != cont.Process.Pid {
		t.Errorf("the continued session: %+v, want pid %d", p, cont.Process.Pid)
	}
}

// Issue 24: an agentctl-launched TUI made the hand-started ones in its
// folder unknown although its own session is known (from its server): the
// launch record pins it.
func TestLaunchedTUIPinnedByItsRecord(t *testing.T) {
	data, a := testData(t)
	db := loadFixture(t, data)
	dir := t.TempDir()
	// Started together, and two sessions: alone, which is whose is open.
	launched := fakeOpencode(t, data, dir, "", "--port", "4096", "--hostname", "127.0.0.1")
	hand := fakeOpencode(t, data, dir, "")
	own, other := "ses_eeee00000001ffLaunchedXxxxx", "ses_eeee00000002ffByHandXxxxxxx"
	addSession(t, db, own, dir, "hello", time.Now().Add(time.Second))
	addSession(t, db, other, dir, "hi", time.Now().Add(time.Second))
	ctx := adapters.WithLaunched(context.Background(), map[string]map[int]string{Name: {launched.Process.Pid: own}})
	ss, err := a.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		switch s.NativeID {
		case own:
			if s.Process == nil || s.Process.PID != launched.Process.Pid || s.Process.Evidence != evidenceLaunch {
				t.Errorf("the launched session: %+v", s.Process)
			}
		case other:
			if s.Process == nil || s.Process.PID != hand.Process.Pid {
				t.Errorf("the hand-started session: %+v, want pid %d", s.Process, hand.Process.Pid)
			}
		}
	}
}

func TestParseArgv(t *testing.T) {
	tests := []struct {
		argv []string
		ok   bool
		want invocation
	}{
		{[]string{"opencode", "run", "say", "hi"}, true, invocation{words: []string{"say", "hi"}}},
		{[]string{"/x/opencode.exe", "run", "-m", "a/b", "--session", "ses_1", "--", "-v", "x"}, true, invocation{session: "ses_1", words: []string{"-v", "x"}}},
		{[]string{"opencode", "--session=ses_2", "--dir", "sub"}, true, invocation{session: "ses_2", dir: "sub"}},
		{[]string{"opencode", "run", "-c", "--format", "json", "again"}, true, invocation{continues: true, words: []string{"again"}}},
		{[]string{"node", "/usr/lib/node_modules/opencode-ai/bin/opencode", "run", "hi"}, true, invocation{words: []string{"hi"}}},
		{[]string{"opencode", "/some/project"}, true, invocation{}},
		{[]string{"opencode", "serve", "--port", "4096"}, false, invocation{}},
		{[]string{"node", "server.js"}, false, invocation{}},
		{[]string{"vim", "opencode.json"}, false, invocation{}},
	}
	for _, tt := range tests {
		got, ok := parseArgv(tt.argv)
		if ok != tt.ok || fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("parseArgv(%q) = %+v, %v; want %+v, %v", tt.argv, got, ok, tt.want, tt.ok)
		}
	}
}

func TestFindNativeIDByPrompt(t *testing.T) {
	data, a := testData(t)
	db := loadFixture(t, data)
	dir := t.TempDir()
	since := time.Now()
	cmd := fakeOpencode(t, data, dir, "", "run", "--", "please", "do", "it")
	// Another agent's session in the same folder: not it.
	addSession(t, db, "ses_cccc00000001ffOtherAgentXxx", dir, "other work", time.Now())
	go func() {
		time.Sleep(300 * time.Millisecond)
		addSession(t, db, "ses_cccc00000002ffMineXxxxxxxxx", dir, "please do it", time.Now())
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := a.FindNativeID(ctx, adapters.Started{PID: cmd.Process.Pid, Cwd: dir, Since: since})
	if err != nil || got != "ses_cccc00000002ffMineXxxxxxxxx" {
		t.Errorf("FindNativeID = %q, %v", got, err)
	}
}

func TestFindNativeIDByStdinPrompt(t *testing.T) {
	data, a := testData(t)
	db := loadFixture(t, data)
	dir := t.TempDir()
	prompt := "fix bug 42\n  and the -v flag\n"
	file := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(file, []byte(prompt), 0o600); err != nil {
		t.Fatal(err)
	}
	since := time.Now()
	cmd := fakeOpencode(t, data, dir, file, "run")
	addSession(t, db, "ses_dddd00000001ffOtherXxxxxxxx", dir, "fix bug 42", time.Now())
	addSession(t, db, "ses_dddd00000002ffMineXxxxxxxxx", dir, prompt, time.Now())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := a.FindNativeID(ctx, adapters.Started{PID: cmd.Process.Pid, Cwd: dir, Since: since})
	if err != nil || got != "ses_dddd00000002ffMineXxxxxxxxx" {
		t.Errorf("FindNativeID = %q, %v", got, err)
	}
}

func TestFindNativeIDFromSessionArgv(t *testing.T) {
	data, a := testData(t)
	loadFixture(t, data)
	cmd := fakeOpencode(t, data, t.TempDir(), "", "run", "--session", idKilled, "--", "go", "on")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := a.FindNativeID(ctx, adapters.Started{PID: cmd.Process.Pid, Cwd: "/x", Since: time.Now().Add(-time.Second)})
	if err != nil || got != idKilled {
		t.Errorf("FindNativeID = %q, %v", got, err)
	}
}

func TestFindNativeIDAfterExit(t *testing.T) {
	data, a := testData(t)
	db := loadFixture(t, data)
	dir := t.TempDir()
	since := time.Now()
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	addSession(t, db, "ses_eeee00000001ffOnlyOneXxxxxx", dir, "x", time.Now())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := a.FindNativeID(ctx, adapters.Started{PID: done.Process.Pid, Cwd: dir, Since: since})
	if err != nil || got != "ses_eeee00000001ffOnlyOneXxxxxx" {
		t.Errorf("FindNativeID = %q, %v", got, err)
	}
	addSession(t, db, "ses_eeee00000002ffSecondXxxxxxx", dir, "y", time.Now())
	if got, err := a.FindNativeID(ctx, adapters.Started{PID: done.Process.Pid, Cwd: dir, Since: since}); err == nil {
		t.Errorf("two candidates: %q, no error", got)
	}
	// The launch's prompt tells its session from the one begun beside it.
	if got, err := a.FindNativeID(ctx, adapters.Started{PID: done.Process.Pid, Cwd: dir, Since: since, Prompt: "y"}); err != nil || got != "ses_eeee00000002ffSecondXxxxxxx" {
		t.Errorf("two candidates, the launch's prompt y: FindNativeID = %q, %v", got, err)
	}
}

func TestLaunchArgv(t *testing.T) {
	_, a := testData(t)
	binDir := t.TempDir()
	bin := filepath.Join(binDir, "opencode")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		req    adapters.LaunchRequest
		resume bool
		want   []string
		file   bool
		err    string
	}{
		{"words", adapters.LaunchRequest{Prompt: "say  hi -v"}, false, []string{"opencode", "run", "--", "say", "", "hi", "-v"}, false, ""},
		{"model", adapters.LaunchRequest{Prompt: "x", Model: "fake/fake-model"}, false, []string{"opencode", "run", "--model", "fake/fake-model", "--", "x"}, false, ""},
		{"resume", adapters.LaunchRequest{Prompt: "go on", NativeID: idResumed}, true, []string{"opencode", "run", "--session", idResumed, "--", "go", "on"}, false, ""},
		{"number word", adapters.LaunchRequest{Prompt: "fix bug 42"}, false, []string{"/bin/sh", "-c", `exec "$@" <"$0"`, "", "opencode", "run"}, true, ""},
		{"negative number", adapters.LaunchRequest{Prompt: "try -5"}, false, []string{"/bin/sh", "-c", `exec "$@" <"$0"`, "", "opencode", "run"}, true, ""},
		{"large", adapters.LaunchRequest{Prompt: strings.Repeat("word ", 30000)}, false, []string{"/bin/sh", "-c", `exec "$@" <"$0"`, "", "opencode", "run"}, true, ""},
		{"empty", adapters.LaunchRequest{Prompt: " "}, false, nil, false, "empty prompt"},
		{"bad resume id", adapters.LaunchRequest{Prompt: "x", NativeID: "--continue"}, true, nil, false, "not an opencode session id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			req.SessionDir = t.TempDir()
			req.Env = []string{"PATH=" + binDir}
			req.BinaryPath = bin
			var spec adapters.LaunchSpec
			var err error
			if tt.resume {
				spec, err = a.Resume(req)
			} else {
				spec, err = a.Launch(req)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := append([]string(nil), tt.want...)
			if tt.file {
				want[3] = filepath.Join(req.SessionDir, adapters.PromptFile)
				want[4] = bin
				b, err := os.ReadFile(want[3])
				if err != nil || string(b) != tt.req.Prompt {
					t.Errorf("prompt file: %v", err)
				}
			}
			if strings.Join(spec.Argv, "\x00") != strings.Join(want, "\x00") {
				t.Errorf("argv = %q\nwant %q", spec.Argv, want)
			}
		})
	}
	// The caller resolves the agent once per launch; without that path the
	// wrapper cannot be built.
	_, err := a.Launch(adapters.LaunchRequest{Prompt: "fix bug 42", SessionDir: t.TempDir(), Env: []string{"PATH=" + binDir}})
	if err == nil || !strings.Contains(err.Error(), "resolved path") {
		t.Errorf("no resolved path: %v", err)
	}
	if a.StopSignal() != syscall.SIGTERM || a.Binary() != "opencode" || !strings.Contains(a.InstallHint(), "opencode-ai") {
		t.Error("launcher facts")
	}
}

// TestPromptArrivesExactly runs the argv the adapter builds with a stand-in
// for opencode that prints its message the way OpenCode assembles it:
// the words after "--" joined by spaces, or stdin when it is not a
// terminal.
func TestPromptArrivesExactly(t *testing.T) {
	_, a := testData(t)
	bin := filepath.Join(t.TempDir(), "opencode")
	script := "#!/bin/sh\nwhile [ \"$1\" != \"--\" ] && [ $# -gt 0 ]; do shift; done\n[ $# -gt 0 ] && shift\nif [ $# -gt 0 ]; then printf '%s' \"$*\"; else cat; fi\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, prompt := range []string{
		"say hi", "  leading and  double  spaces ", "-v --help -- x", "line one\nline two\ttab", "fix bug 42", "0x1f and 1e3",
		`quotes "here" and 'there'`, "ünïcødé ✓", strings.Repeat("big ", 40000),
	} {
		spec, err := a.Launch(adapters.LaunchRequest{Prompt: prompt, SessionDir: t.TempDir(), Env: []string{"PATH=" + filepath.Dir(bin)}, BinaryPath: bin})
		if err != nil {
			t.Fatal(err)
		}
		argv := spec.Argv
		if argv[0] == "opencode" {
			argv = append([]string{bin}, argv[1:]...)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=" + filepath.Dir(bin) + ":/usr/bin:/bin"}
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != prompt {
			t.Errorf("prompt %.40q arrived as %.40q", prompt, out)
		}
	}
}

// Interactive: the TUI with its server on 127.0.0.1, and the prompt only
// when there is one.
func TestInteractiveArgv(t *testing.T) {
	_, a := testData(t)
	for _, prompt := range []string{"", "fix it"} {
		spec, err := a.Launch(adapters.LaunchRequest{Prompt: prompt, Interactive: true, Model: "fake/m"})
		if err != nil {
			t.Fatal(err)
		}
		if len(spec.Argv) < 5 || spec.Argv[0] != "opencode" || spec.Argv[1] != "--port" || !strings.HasPrefix(spec.Server, "http://127.0.0.1:"+spec.Argv[2]) {
			t.Fatalf("argv %q, server %q", spec.Argv, spec.Server)
		}
		hasPrompt := slices.Contains(spec.Argv, "--prompt")
		if hasPrompt != (prompt != "") || (hasPrompt && spec.Argv[len(spec.Argv)-1] != prompt) {
			t.Errorf("prompt %q: argv %q", prompt, spec.Argv)
		}
	}
}

func hasEvidence(es []adapters.Evidence, kind adapters.EvidenceKind, pid int) bool {
	for _, e := range es {
		if e.Kind == kind && e.PID == pid {
			return true
		}
	}
	return false
}

// tieBook is an integration book that names its ties as given.
type tieBook []adapters.HookTie

func (b tieBook) HookTies(agent string) []adapters.HookTie {
	if agent != Name {
		return nil
	}
	return b
}

// Issue 25: two TUIs in one folder, each with a session begun after both
// started, read unknown; an integration's report of one (its process
// proven by the service) ties it to its session first-hand, which leaves
// the other session to the other TUI, and the report's state and waiting
// are the session's.
func TestIntegrationTiesTwoTUIsInOneFolder(t *testing.T) {
	data, a := testData(t)
	db := loadFixture(t, data)
	dir := t.TempDir()
	tui1 := fakeOpencode(t, data, dir, "")
	tui2 := fakeOpencode(t, data, dir, "")
	s1, s2 := "ses_cccc00000001ffTiedByHookXxx", "ses_cccc00000002ffTheOtherOneXx"
	addSession(t, db, s1, dir, "one", time.Now().Add(time.Second))
	addSession(t, db, s2, dir, "two", time.Now().Add(time.Second))
	info, err := proc.Lookup(tui1.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	a.env.Hooks = tieBook{{PID: info.PID, Start: info.Start, NativeID: s1, Cwd: dir, Event: "permission.asked", At: at,
		State: adapters.NativeBusy, WaitingFor: adapters.WaitingPermission, WaitingSince: at, Tool: "bash", Request: "per_1"}}
	got := discoverByID(t, a)
	if p := got[s1].Process; p == nil || p.PID != tui1.Process.Pid || !strings.HasPrefix(p.Evidence, "integration (hook permission.asked") {
		t.Fatalf("%s: process %+v, want pid %d by the integration", s1, p, tui1.Process.Pid)
	}
	if h := got[s1].Hook; h == nil || got[s1].WaitingFor != adapters.WaitingPermission || got[s1].State != adapters.NativeBusy {
		t.Errorf("%s: hook %+v waiting %q state %q, want the report's", s1, h, got[s1].WaitingFor, got[s1].State)
	}
	if p := got[s2].Process; p == nil || p.PID != tui2.Process.Pid {
		t.Errorf("%s: process %+v, want pid %d (the other TUI)", s2, p, tui2.Process.Pid)
	}
	if got[s2].Hook != nil {
		t.Errorf("%s has the other process's integration evidence", s2)
	}
}

// Issue 25: OpenCode writes a session at its first prompt, and its plugin
// reports it then too; a report naming a session the store has not
// written yet shows that session, running in the process that reported
// it (the other TUI keeps the store's session), while a report of an
// OpenCode of another store shows nothing here.
func TestIntegrationShowsASessionNotWrittenYet(t *testing.T) {
	data, a := testData(t)
	db := loadFixture(t, data)
	dir := t.TempDir()
	tui1 := fakeOpencode(t, data, dir, "")
	tui2 := fakeOpencode(t, data, dir, "")
	other := fakeOpencode(t, t.TempDir(), dir, "")
	written, unwritten, elsewhere := "ses_cccc00000002ffTheOtherOneXx", "ses_cccc00000001ffNotWrittenYet", "ses_cccc00000003ffAnotherStoreX"
	addSession(t, db, written, dir, "two", time.Now().Add(time.Second))
	var book tieBook
	for _, c := range []struct {
		cmd *exec.Cmd
		id  string
	}{{tui1, unwritten}, {other, elsewhere}} {
		info, err := proc.Lookup(c.cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		book = append(book, adapters.HookTie{PID: info.PID, Start: info.Start, NativeID: c.id, Cwd: dir, Event: "session.status", At: time.Now(), State: adapters.NativeBusy})
	}
	a.env.Hooks = book
	got := discoverByID(t, a)
	s, ok := got[unwritten]
	if !ok {
		t.Fatalf("the reported session not written yet is not discovered: %v", got)
	}
	if p := s.Process; p == nil || p.PID != tui1.Process.Pid || !strings.HasPrefix(p.Evidence, "integration (hook session.status") ||
		s.State != adapters.NativeBusy || s.Hook == nil || s.Cwd != dir || s.Adapter != Name {
		t.Errorf("%s: %+v process %+v, want busy in %s, pid %d by the integration", unwritten, s, s.Process, dir, tui1.Process.Pid)
	}
	if p := got[written].Process; p == nil || p.PID != tui2.Process.Pid {
		t.Errorf("%s: process %+v, want pid %d (the other TUI)", written, p, tui2.Process.Pid)
	}
	if _, ok := got[elsewhere]; ok {
		t.Errorf("a session of another store's OpenCode is discovered")
	}
	// DiscoverOne finds it too (status ID).
	if one, err := a.DiscoverOne(context.Background(), unwritten); err != nil || one.Process == nil || one.Process.PID != tui1.Process.Pid {
		t.Errorf("DiscoverOne(%s) = %+v, %v", unwritten, one, err)
	}
}
