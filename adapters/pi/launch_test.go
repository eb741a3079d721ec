package pi

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/proc"
)

func envValue(env []string, key string) (string, bool) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v, true
		}
	}
	return "", false
}

func TestLaunchPreassignsSession(t *testing.T) {
	t.Parallel()
	a, home := testStore(t, nil)
	cwd := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(cwd, link); err != nil {
		t.Fatal(err)
	}
	spec, err := a.Launch(adapters.LaunchRequest{Prompt: "say hi", Model: "fakeopenai/fake-model", Cwd: link, Env: []string{"PATH=/bin", "PI_OFFLINE=0"}, SessionDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(cwd)
	file := spec.Argv[slices.Index(spec.Argv, "--session")+1]
	wantDir := filepath.Join(home, ".pi", "agent", "sessions", CwdSlug(real))
	if filepath.Dir(file) != wantDir || !strings.HasSuffix(file, "_"+spec.NativeID+".jsonl") {
		t.Errorf("session file %s, want in %s named after %s", file, wantDir, spec.NativeID)
	}
	want := []string{"pi", "-p", "--provider", "fakeopenai", "--model", "fake-model", "--session", file, "say hi"}
	if !slices.Equal(spec.Argv, want) {
		t.Errorf("argv = %q, want %q", spec.Argv, want)
	}
	if v, _ := envValue(spec.Env, "PI_OFFLINE"); v != "0" {
		t.Errorf("PI_OFFLINE = %q: the caller's value must win", v)
	}
	if v, _ := envValue(spec.Env, envSessionMarker); v != file {
		t.Errorf("marker = %q, want %q", v, file)
	}
	// The header is on disk, so the session is discoverable (and its id
	// known) before Pi writes anything.
	got, err := a.Discover(context.Background())
	if err != nil || len(got) != 1 || got[0].NativeID != spec.NativeID || got[0].Cwd != real {
		t.Fatalf("Discover after launch = %+v, %v", got, err)
	}
	// Resume finds the file by id and appends to it.
	r, err := a.Resume(adapters.LaunchRequest{Prompt: "again", NativeID: spec.NativeID, Cwd: cwd, Env: []string{"PATH=/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"pi", "-p", "--session", file, "again"}; !slices.Equal(r.Argv, want) || r.NativeID != spec.NativeID {
		t.Errorf("resume argv = %q id %s, want %q", r.Argv, r.NativeID, want)
	}
	if v, _ := envValue(r.Env, "PI_OFFLINE"); v != "1" {
		t.Errorf("PI_OFFLINE = %q, want 1 by default", v)
	}
	if _, err := a.Resume(adapters.LaunchRequest{Prompt: "x", NativeID: "01ffffff-0000-7000-8000-000000000000", Cwd: cwd}); err == nil {
		t.Error("resume of an unknown session: no error")
	}
}

func TestLaunchPromptThroughStdin(t *testing.T) {
	a, _ := testStore(t, nil)
	cwd := t.TempDir()
	big := strings.Repeat("x", maxArgPrompt+1)
	// A pi on the agent's PATH (the wrapper resolves it).
	binDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(binDir, "pi"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, prompt string
		viaFile      bool
	}{
		{"plain", "say hi", false},
		{"leading dash", "-rf everything", true},
		{"leading double dash", "--help me", true},
		{"at sign (Pi's file argument)", "@notes.md summarise", true},
		{"over 100 kB", big, true},
		{"exactly 100 kB", big[:maxArgPrompt], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			spec, err := a.Launch(adapters.LaunchRequest{Prompt: tc.prompt, Cwd: cwd, SessionDir: dir, Env: []string{"PATH=" + binDir}, BinaryPath: filepath.Join(binDir, "pi")})
			if err != nil {
				t.Fatal(err)
			}
			if !tc.viaFile {
				if spec.Argv[0] != "pi" || spec.Argv[len(spec.Argv)-1] != tc.prompt {
					t.Errorf("argv = %.200q", spec.Argv)
				}
				return
			}
			if spec.Argv[0] != "/bin/sh" || spec.Argv[4] != filepath.Join(binDir, "pi") || slices.Contains(spec.Argv, tc.prompt) {
				t.Fatalf("argv = %.300q, want the prompt through a file", spec.Argv)
			}
			b, err := os.ReadFile(spec.Argv[3])
			if err != nil || string(b) != tc.prompt {
				t.Fatalf("prompt file: %v (%d bytes)", err, len(b))
			}
			// The wrapper really feeds the file to the agent's stdin and keeps
			// the agent's argv: run it with cat in place of pi.
			argv := append([]string(nil), spec.Argv...)
			argv[4] = "cat"
			out, err := exec.Command(argv[0], argv[1:5]...).Output()
			if err != nil || string(out) != tc.prompt {
				t.Errorf("wrapper stdin = %.50q, %v", out, err)
			}
		})
	}
	if _, err := a.Launch(adapters.LaunchRequest{Prompt: "-x", Cwd: cwd, Env: []string{"PATH=" + binDir}, BinaryPath: filepath.Join(binDir, "pi")}); err == nil {
		t.Error("a stdin prompt without a session folder: no error")
	}
	if _, err := a.Launch(adapters.LaunchRequest{Prompt: "-x", Cwd: cwd, SessionDir: t.TempDir(), Env: []string{"PATH=" + binDir}}); err == nil || !strings.Contains(err.Error(), "resolved path") {
		t.Errorf("a stdin prompt without the agent's resolved path: %v, want an error saying so", err)
	}
	if _, err := a.Launch(adapters.LaunchRequest{Prompt: "  ", Cwd: cwd}); err == nil {
		t.Error("empty prompt: no error")
	}
	if _, err := a.Launch(adapters.LaunchRequest{Prompt: "hi", Cwd: filepath.Join(cwd, "missing")}); err == nil {
		t.Error("missing cwd: no error")
	}
}

func TestLauncherFacts(t *testing.T) {
	t.Parallel()
	a, _ := testStore(t, nil)
	r := NewRust(adapters.Env{Home: t.TempDir()})
	if a.StopSignal() != syscall.SIGTERM || a.Binary() != "pi" || !strings.Contains(a.InstallHint(), "@mariozechner/pi-coding-agent") {
		t.Errorf("pi launcher facts: %v %q %q", a.StopSignal(), a.Binary(), a.InstallHint())
	}
	if r.Name() != "pi-rust" || r.Binary() != "pi-rust" || r.StopSignal() != syscall.SIGTERM || r.InstallHint() == "" {
		t.Errorf("pi-rust launcher facts: %q %q %v", r.Name(), r.Binary(), r.StopSignal())
	}
	for _, tc := range []struct {
		model string
		want  []string
	}{
		{"", nil},
		{"fake-model", []string{"--model", "fake-model"}},
		{"openrouter/anthropic/claude", []string{"--provider", "openrouter", "--model", "anthropic/claude"}},
		{"/x", []string{"--model", "/x"}},
	} {
		if got := modelArgs(tc.model); !slices.Equal(got, tc.want) {
			t.Errorf("modelArgs(%q) = %q, want %q", tc.model, got, tc.want)
		}
	}
}

func TestRustArgv(t *testing.T) {
	t.Parallel()
	r := NewRust(adapters.Env{Home: t.TempDir()})
	spec, err := r.Launch(adapters.LaunchRequest{Prompt: "-x do it", Model: "anthropic/claude", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"pi-rust", "--provider", "anthropic", "--model", "claude", "--print", "--", "-x do it"}; !slices.Equal(spec.Argv, want) || spec.NativeID != "" {
		t.Errorf("pi-rust argv = %q id %q, want %q and no pre-assigned id", spec.Argv, spec.NativeID, want)
	}
}

// The real pi-rust binary is not installable here; say so loudly.
func TestRustBinaryRuns(t *testing.T) {
	if _, err := exec.LookPath("pi-rust"); err != nil {
		t.Skip("SKIP pi-rust: no pi-rust binary on PATH; it is not published to npm and cannot be installed by scripts/install-agents.sh, so its launcher is checked by argv only")
	}
	out, err := exec.Command("pi-rust", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--print") {
		t.Errorf("pi-rust --help: %v\n%s", err, out)
	}
}

// startFakePi runs a real process whose argv[0] is "pi" (a copy of sleep)
// in cwd with env, as a Pi in a terminal would look, and returns it.
func startFakePi(t *testing.T, name, cwd string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	bin := filepath.Join(t.TempDir(), name)
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append(args, "30")...)
	cmd.Args[0] = name
	cmd.Dir, cmd.Env = cwd, env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func TestDiscoverMatchesLiveProcesses(t *testing.T) {
	if _, err := proc.Table(); err != nil {
		t.Skipf("no process table: %v", err)
	}
	a, home := testStore(t, nil)
	dirA, dirB := t.TempDir(), t.TempDir()
	dirA, _ = filepath.EvalSymlinks(dirA)
	dirB, _ = filepath.EvalSymlinks(dirB)

	// Launched by agentctl: matched through the env marker.
	launched, err := a.Launch(adapters.LaunchRequest{Prompt: "hi", Cwd: dirA, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	p1 := startFakePi(t, "pi", dirA, append(launched.Env, "HOME="+home))

	// A Pi in dirB, and one of another store (another HOME) in the same
	// folder, started first, which is none of these sessions' owner.
	time.Sleep(10 * time.Millisecond)
	p2 := startFakePi(t, "pi", dirB, []string{"PATH=/bin", "HOME=" + home})
	startFakePi(t, "pi", dirB, []string{"PATH=/bin", "HOME=" + t.TempDir()})
	time.Sleep(10 * time.Millisecond)
	launchIn := func(dir string) string {
		s, err := a.Launch(adapters.LaunchRequest{Prompt: "hi", Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		return s.NativeID
	}
	owner := func(id string) *adapters.NativeSession {
		t.Helper()
		got, err := a.Discover(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i].NativeID == id {
				return &got[i]
			}
		}
		t.Fatalf("session %s not discovered", id)
		return nil
	}
	// One session in dirB begun after that Pi started: its own, by folder
	// and start time.
	first := launchIn(dirB)
	if s := owner(first); s.Process == nil || s.Process.PID != p2.Process.Pid || s.Process.Evidence != "cwd+start" {
		t.Errorf("single candidate: process %+v, want pid %d by cwd+start", s.Process, p2.Process.Pid)
	}
	// A second one begun and written later: the Pi made a new one (/new),
	// and holds the latest it could; the first has ended.
	second := launchIn(dirB)
	a.mu.Lock()
	later := time.Now().Add(time.Second)
	os.Chtimes(a.paths[second], later, later)
	a.mu.Unlock()
	if s := owner(second); s.Process == nil || s.Process.PID != p2.Process.Pid {
		t.Errorf("the latest session: process %+v, want pid %d", s.Process, p2.Process.Pid)
	}
	if s := owner(first); s.Process != nil || s.State == adapters.NativeUnknown {
		t.Errorf("the earlier session: process %+v, state %q; want ended", s.Process, s.State)
	}

	if s := owner(launched.NativeID); s.Process == nil || s.Process.PID != p1.Process.Pid || s.Process.Evidence != evidenceEnviron || s.State != adapters.NativeRunning {
		t.Errorf("launched session: process %+v state %q; want pid %d by environ, running", s.Process, s.State, p1.Process.Pid)
	} else if info, _ := proc.Lookup(p1.Process.Pid); s.Process.Start != info.Start {
		t.Errorf("start stamp %d, want %d", s.Process.Start, info.Start)
	}

	// A dead process matches nothing.
	p1.Process.Kill()
	p1.Wait()
	got, _ := a.Discover(context.Background())
	for _, s := range got {
		if s.NativeID == launched.NativeID && s.Process != nil {
			t.Errorf("session of a dead process still matched: %+v", s.Process)
		}
	}
}

func TestMatchByArgvAndRustSplit(t *testing.T) {
	sessions := []candidate{
		{path: "/s/a.jsonl", id: "01aa0000-1", cwd: "/w"},
		{path: "/s/b.jsonl", id: "01bb0000-1", cwd: "/w"},
		{path: "/s/c.jsonl", id: "01bb0000-2", cwd: "/w"},
	}
	procs := []liveProc{
		{argv: []string{"pi", "-p", "--session", "/s/a.jsonl", "x"}, cwd: "/x"},
		{argv: []string{"pi-rust", "--session=01bb0000-2", "--print"}, cwd: "/x", rust: true},
		{argv: []string{"node", "/usr/lib/node_modules/@mariozechner/pi-coding-agent/dist/cli.js", "--session", "01bb"}, cwd: "/x"}, // ambiguous prefix
	}
	for i := range procs {
		procs[i].info.PID = 100 + i
	}
	m := matchProcesses(sessions, procs, nil, nil, time.Now())
	if r := m["/s/a.jsonl"].ref; r == nil || r.PID != 100 || r.Evidence != "argv" {
		t.Errorf("path argument: %+v", r)
	}
	if mm := m["/s/c.jsonl"]; mm.ref == nil || mm.ref.PID != 101 || !mm.rust {
		t.Errorf("pi-rust id argument: %+v", mm)
	}
	if r := m["/s/b.jsonl"].ref; r != nil {
		t.Errorf("ambiguous prefix matched: %+v", r)
	}
	// Two processes claiming one session: neither is trusted.
	procs = append(procs, liveProc{argv: []string{"pi", "--session", "/s/a.jsonl"}, info: proc.Info{Identity: proc.Identity{PID: 200}}})
	if r := matchProcesses(sessions, procs, nil, nil, time.Now())["/s/a.jsonl"].ref; r != nil {
		t.Errorf("doubly claimed session matched: %+v", r)
	}
	for _, tc := range []struct {
		argv       []string
		isPi, rust bool
	}{
		{[]string{"pi"}, true, false},
		{[]string{"/usr/local/bin/pi-rust", "--print"}, true, true},
		{[]string{"node", "--no-warnings", "/x/bin/pi", "-p"}, true, false},
		{[]string{"node", "server.js"}, false, false},
		{[]string{"pip", "install"}, false, false},
		{nil, false, false},
	} {
		if isPi, rust := piKind(tc.argv); isPi != tc.isPi || rust != tc.rust {
			t.Errorf("piKind(%q) = %v %v", tc.argv, isPi, rust)
		}
	}
}

func TestFindNativeID(t *testing.T) {
	a, _ := testStore(t, nil)
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	since := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	if _, err := a.FindNativeID(ctx, adapters.Started{PID: 1, Cwd: cwd, Since: since}); err == nil {
		t.Error("no session yet: no error")
	}
	// A session written while FindNativeID waits is found.
	go func() {
		time.Sleep(100 * time.Millisecond)
		a.createSession(cwd, time.Now())
	}()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	id, err := a.FindNativeID(ctx2, adapters.Started{PID: 1, Cwd: cwd, Since: since})
	if err != nil || id == "" {
		t.Fatalf("FindNativeID = %q, %v", id, err)
	}
	a.createSession(cwd, time.Now())
	if _, err := a.FindNativeID(ctx2, adapters.Started{PID: 1, Cwd: cwd, Since: since}); err == nil || !strings.Contains(err.Error(), "cannot tell") {
		t.Errorf("two candidates: %v, want an ambiguity error", err)
	}
}

func TestRustResumeArgv(t *testing.T) {
	t.Parallel()
	r := NewRust(adapters.Env{Home: t.TempDir()})
	cwd := t.TempDir()
	// A session pi-rust wrote (same store, same format).
	file, id, err := r.createSession(cwd, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	spec, err := r.Resume(adapters.LaunchRequest{Prompt: "again", NativeID: id, Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"pi-rust", "--session", file, "--print", "-p", "again"}; !slices.Equal(spec.Argv, want) || spec.NativeID != id {
		t.Errorf("pi-rust resume argv = %q, want %q", spec.Argv, want)
	}
}

// A session no Pi is tied to is unknown exactly while a Pi that may be
// working on it lives (two TUIs in one folder, one claim shared by two),
// Processes are attributed to sessions through the shared solver: two TUIs
// in one folder are told apart when one wrote alone since the other
// started, run with which pid open when nothing tells them apart, and a
// TUI holds the latest written session it could.
func TestPiTUIsInOneFolderAreAttributedNotLeftUnknown(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	tui := func(pid int, cwd string, started time.Time) liveProc {
		p := liveProc{argv: []string{"pi"}, cwd: cwd}
		p.info.PID, p.info.StartTime = pid, started
		return p
	}
	a := candidate{path: "/s/a.jsonl", id: "01aa", cwd: "/w", created: at(time.Minute), updated: at(2 * time.Minute)}
	b := candidate{path: "/s/b.jsonl", id: "01bb", cwd: "/w", created: at(time.Minute), updated: at(3 * time.Minute)}
	old := candidate{path: "/s/old.jsonl", id: "01cc", cwd: "/w", created: at(-time.Hour), updated: at(-time.Hour)}
	other := candidate{path: "/s/other.jsonl", id: "01dd", cwd: "/elsewhere", created: at(time.Minute), updated: at(time.Minute)}
	sessions := []candidate{a, b, old, other}
	type want struct {
		ref     int   // the tied pid
		holders []int // running, which of these is open
	}
	tests := []struct {
		name  string
		procs []liveProc
		want  map[string]want // absent: no process
	}{
		{"two TUIs in one folder, started together: running, pid 10 or 11", []liveProc{tui(10, "/w", t0), tui(11, "/w", t0)},
			map[string]want{a.path: {holders: []int{10, 11}}, b.path: {holders: []int{10, 11}}}},
		{"two TUIs in one folder, the second started after the first wrote: each tied", []liveProc{tui(10, "/w", t0), tui(11, "/w", at(150*time.Second))},
			map[string]want{a.path: {ref: 10}, b.path: {ref: 11}}},
		{"one TUI left with two sessions since it started: the latest", []liveProc{tui(11, "/w", t0)},
			map[string]want{b.path: {ref: 11}}},
		{"a TUI whose folder cannot be read", []liveProc{tui(12, "", t0)},
			map[string]want{b.path: {ref: 12}}},
		{"pi -c: a TUI started after its one session began, written since", []liveProc{tui(13, "/w", at(90*time.Second))},
			map[string]want{b.path: {ref: 13}}},
		{"no Pi at all", nil, map[string]want{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := matchProcesses(sessions, tt.procs, nil, nil, t0)
			for _, s := range sessions {
				got := want{holders: m[s.path].holders}
				if r := m[s.path].ref; r != nil {
					got.ref = r.PID
				}
				if len(m[s.path].contenders) > 0 {
					t.Errorf("%s: unknown, contenders %v", s.path, m[s.path].contenders)
				}
				slices.Sort(got.holders)
				if w := tt.want[s.path]; got.ref != w.ref || !slices.Equal(got.holders, w.holders) {
					t.Errorf("%s: %+v, want %+v", s.path, got, w)
				}
			}
		})
	}

	// The state follows: a finished turn reads idle while a process runs
	// it (tied or not), done without one, unknown while the facts cannot
	// decide; an unfinished one reads busy with a process, cut off
	// without one. What the solver said passes to the warnings and
	// evidence.
	finished := &facts{id: "01aa", lastRole: roleAssistant, lastStop: stopStop}
	midTool := &facts{id: "01bb", lastRole: roleToolResult}
	said := []adapters.Evidence{{Kind: adapters.EvidenceCandidate, PID: 10, Says: "x"}}
	for _, tc := range []struct {
		f    *facts
		m    match
		want adapters.NativeState
	}{
		{finished, match{}, adapters.NativeDone},
		{finished, match{contenders: []int{10}, evidence: said, warning: "pid 10"}, adapters.NativeUnknown},
		{finished, match{holders: []int{10, 11}, evidence: said, warning: "pid 10"}, adapters.NativeIdle},
		{midTool, match{}, adapters.NativeAborted},
		{midTool, match{contenders: []int{10, 11}, evidence: said, warning: "pid 10"}, adapters.NativeUnknown},
		{midTool, match{holders: []int{10, 11}, evidence: said, warning: "pid 10"}, adapters.NativeBusy},
		{midTool, match{ref: &adapters.ProcessRef{PID: 10}}, adapters.NativeBusy},
	} {
		ns := tc.f.native(NamePi, "/s/x.jsonl", tc.m)
		if ns.State != tc.want {
			t.Errorf("%s with %+v: %s, want %s", tc.f.id, tc.m, ns.State, tc.want)
		}
		if tc.m.warning != "" && (len(ns.Warnings) == 0 || ns.Warnings[len(ns.Warnings)-1] != tc.m.warning) {
			t.Errorf("%s: warnings %q", tc.f.id, ns.Warnings)
		}
		if !slices.Equal(ns.Evidence, tc.m.evidence) {
			t.Errorf("%s: evidence %+v, want %+v", tc.f.id, ns.Evidence, tc.m.evidence)
		}
	}
}

// Interactive, Pi's TUI runs on the session file agentctl created, without
// -p; the prompt, if any, is its first message, and one it would misread
// as an option or a file is refused (a TUI takes no prompt on stdin).
func TestInteractiveLaunch(t *testing.T) {
	t.Parallel()
	a, _ := testStore(t, nil)
	cwd := t.TempDir()
	for _, tt := range []struct {
		prompt string
		tail   []string
		err    bool
	}{
		{"", nil, false},
		{"say hi", []string{"say hi"}, false},
		{"-v", nil, true},
		{"@file", nil, true},
	} {
		spec, err := a.Launch(adapters.LaunchRequest{Prompt: tt.prompt, Interactive: true, Cwd: cwd, Env: []string{"PATH=/bin"}})
		if tt.err {
			if err == nil {
				t.Errorf("prompt %q: no error", tt.prompt)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		i := slices.Index(spec.Argv, "--session")
		if i < 0 || spec.NativeID == "" {
			t.Fatalf("argv %q, native id %q", spec.Argv, spec.NativeID)
		}
		want := append([]string{"pi", "--session", spec.Argv[i+1]}, tt.tail...)
		if !slices.Equal(spec.Argv, want) {
			t.Errorf("argv = %q, want %q", spec.Argv, want)
		}
		if v, _ := envValue(spec.Env, envSessionMarker); v != spec.Argv[i+1] {
			t.Errorf("marker = %q", v)
		}
	}
	rust := NewRust(adapters.Env{Home: t.TempDir()})
	if _, err := rust.Launch(adapters.LaunchRequest{Interactive: true, Cwd: cwd}); err == nil {
		t.Error("pi-rust interactive: no error")
	}
}

// Issue 25: two Pis in one folder, each with a session begun after both
// started: an integration's report of one (its tie names the session's
// id, which the store keys by its file) ties it, and the other Pi the
// other session.
func TestIntegrationTiesTwoPisInOneFolder(t *testing.T) {
	now := time.Now()
	sessions := []candidate{
		{path: "/s/a.jsonl", id: "01aa0000-1", cwd: "/w", created: now.Add(-time.Minute), updated: now},
		{path: "/s/b.jsonl", id: "01bb0000-1", cwd: "/w", created: now.Add(-time.Minute), updated: now},
	}
	var procs []liveProc
	for i := range 2 {
		p := liveProc{argv: []string{"pi"}, cwd: "/w"}
		p.info.PID, p.info.Start, p.info.StartTime = 100+i, uint64(1000+i), now.Add(-time.Hour)
		procs = append(procs, p)
	}
	if m := matchProcesses(sessions, procs, nil, nil, now); m["/s/a.jsonl"].ref != nil || m["/s/b.jsonl"].ref != nil {
		t.Fatalf("tied without a report: %+v", m)
	}
	ties := []adapters.HookTie{{PID: 101, Start: 1001, NativeID: "01aa0000-1", Event: "agent_start", At: now}}
	m := matchProcesses(sessions, procs, ties, nil, now)
	if r := m["/s/a.jsonl"].ref; r == nil || r.PID != 101 || !strings.HasPrefix(r.Evidence, "integration (hook agent_start") {
		t.Errorf("the reported session: %+v, want pid 101 by the integration", r)
	}
	if r := m["/s/b.jsonl"].ref; r == nil || r.PID != 100 {
		t.Errorf("the other session: %+v, want pid 100", r)
	}
}

// piTies is an integration book that names its ties as given, for Pi.
type piTies []adapters.HookTie

func (b piTies) HookTies(agent string) []adapters.HookTie {
	if agent != NamePi {
		return nil
	}
	return b
}

// Issue 25: Pi writes nothing until its first answer, while its extension
// reports the session at Pi's start: a report naming a session the store
// has not written shows that session, running in the process that
// reported it; a report of a Pi of another store shows nothing here.
func TestIntegrationShowsASessionNotWrittenYet(t *testing.T) {
	if _, err := proc.Table(); err != nil {
		t.Skipf("no process table: %v", err)
	}
	a, home := testStore(t, nil)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	ours := startFakePi(t, "pi", dir, []string{"PATH=/bin", "HOME=" + home})
	other := startFakePi(t, "pi", dir, []string{"PATH=/bin", "HOME=" + t.TempDir()})
	unwritten, elsewhere := "019a0000-0000-7000-8000-000000000001", "019a0000-0000-7000-8000-000000000002"
	var book piTies
	for _, c := range []struct {
		cmd *exec.Cmd
		id  string
	}{{ours, unwritten}, {other, elsewhere}} {
		info, err := proc.Lookup(c.cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		book = append(book, adapters.HookTie{PID: info.PID, Start: info.Start, NativeID: c.id, Cwd: dir, Event: "session_start", At: time.Now()})
	}
	a.env.Hooks = book
	got, err := a.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var found *adapters.NativeSession
	for i := range got {
		switch got[i].NativeID {
		case unwritten:
			found = &got[i]
		case elsewhere:
			t.Errorf("a session of another store's Pi is discovered")
		}
	}
	if found == nil {
		t.Fatalf("the reported session not written yet is not discovered: %+v", got)
	}
	if p := found.Process; p == nil || p.PID != ours.Process.Pid || !strings.HasPrefix(p.Evidence, "integration (hook session_start") ||
		found.State != adapters.NativeRunning || found.Hook == nil || found.Cwd != dir || found.Adapter != NamePi {
		t.Errorf("%+v process %+v, want running in %s, pid %d by the integration", found, found.Process, dir, ours.Process.Pid)
	}
	if one, err := a.DiscoverOne(context.Background(), unwritten); err != nil || one.Process == nil || one.Process.PID != ours.Process.Pid {
		t.Errorf("DiscoverOne(%s) = %+v, %v", unwritten, one, err)
	}
}
