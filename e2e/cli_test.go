package e2e

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"

	"github.com/agentctl/agentctl/api"
)

// A burst of 50 launches: the first four characters of their ids tell them
// apart (the leading part of an id is random), list shows short handles
// that every command takes in any case, and names are handles too.
func TestHandlesTellABurstApart(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	e.MustRun("daemon", "start")
	const n = 50
	ids := make([]string, n)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, errOut, code := e.Run("run", "--", "sleep", "300")
			if code != 0 {
				t.Errorf("run %d: exit %d: %s", i, code, errOut)
				return
			}
			ids[i] = strings.TrimSpace(out)
		}()
	}
	wg.Wait()
	took := time.Since(began)
	if t.Failed() {
		return
	}
	prefixes := map[string]bool{}
	for _, id := range ids {
		prefixes[id[:4]] = true
	}
	t.Logf("%d launches in %s: %d distinct 4-character prefixes", n, took.Round(time.Millisecond), len(prefixes))
	// Two of 50 share a 4-character prefix with a chance of about 1 in
	// 850; three sharing would mean the prefixes are not random.
	if len(prefixes) < n-1 {
		t.Fatalf("%d launches have only %d distinct 4-character prefixes: %v", n, len(prefixes), ids)
	}
	byID := map[string]api.Session{}
	for _, s := range e.Launched() {
		byID[s.ID] = s
	}
	for _, id := range ids {
		s := byID[id]
		if len(s.Handle) < 4 || len(s.Handle) > 5 || !strings.HasPrefix(id, s.Handle) {
			t.Fatalf("session %s has handle %q: want a 4- or 5-character prefix", id, s.Handle)
		}
	}
	table := e.MustRun("list", "--no-headers")
	if got := len(strings.Split(table, "\n")); got != n {
		t.Fatalf("list shows %d rows, want %d:\n%s", got, n, table)
	}
	for _, line := range strings.Split(table, "\n") {
		h := strings.Fields(line)[0]
		if len(h) > 5 {
			t.Fatalf("list shows handle %q, want at most 5 characters:\n%s", h, table)
		}
		// Upper case resolves as well.
		if got := e.Session(strings.ToUpper(h)); !strings.HasPrefix(got.ID, h) {
			t.Fatalf("status %s is %s", strings.ToUpper(h), got.ID)
		}
	}
	e.MustRun("stop", "--all", "--timeout", "0")
}

func TestNamesAreHandles(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	s := e.Start("--name", "web", "--", "sh", "-c", "echo serving; sleep 300")
	if got := e.Session("web"); got.ID != s.ID {
		t.Fatalf("status web = %s, want %s", got.ID, s.ID)
	}
	WaitFor(t, 10*time.Second, "output", func() bool {
		out, _, _ := e.Run("logs", "web")
		return strings.Contains(out, "serving")
	})
	// A name is unique among running sessions.
	_, errOut, code := e.Run("run", "--name", "web", "--", "true")
	if code == 0 || !strings.Contains(errOut, "taken by running session "+s.ID) {
		t.Fatalf("a second running 'web': exit %d, %s", code, errOut)
	}
	e.MustRun("stop", "web")
	// Once it ended the name is free again; the running one wins.
	s2 := e.Start("--name", "web", "--", "sleep", "300")
	if got := e.Session("web"); got.ID != s2.ID {
		t.Fatalf("status web = %s, want the running %s", got.ID, s2.ID)
	}
	e.MustRun("stop", "web")
	// A name may not be how another session's id begins (its handle in a
	// list): stop HANDLE would then reach the named one.
	for _, name := range []string{s2.ID[:4], strings.ToUpper(s2.ID[:6])} {
		_, errOut, code := e.Run("run", "--name", name, "--", "true")
		if code != 2 || !strings.Contains(errOut, "is how session "+s2.ID+"'s id begins") {
			t.Fatalf("run --name %s (a handle of %s): exit %d, %s", name, s2.ID, code, errOut)
		}
	}
}

// Bash's own completion, on the script agentctl generates, offers ids and
// names; file names are not offered.
func TestCompletionOffersSessions(t *testing.T) {
	t.Parallel()
	const bashCompletion = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(bashCompletion); err != nil {
		t.Skip("bash-completion is not installed (cobra's bash script needs it): ", err)
	}
	e := NewEnv(t)
	s := e.Start("--name", "zeta-worker", "--", "sleep", "300")
	ended := e.Start("--", "true")
	e.WaitStatus(ended.ID, api.StatusExited, 10*time.Second)
	complete := func(line string) []string {
		t.Helper()
		script := `source ` + bashCompletion + `
source <(agentctl completion bash)
read -ra COMP_WORDS <<< "$LINE"
[[ "$LINE" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE="$LINE"; COMP_POINT=${#COMP_LINE}
__start_agentctl agentctl 2>/dev/null
printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = append(e.Vars, "PATH="+filepath.Dir(e.Bin)+":"+os.Getenv("PATH"), "LINE="+line)
		cmd.Dir = t.TempDir()
		os.WriteFile(filepath.Join(cmd.Dir, "zeta-file"), nil, 0o600)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("complete %q: %v\n%s", line, err, out)
		}
		return strings.Fields(string(out))
	}
	for _, tc := range []struct {
		line string
		want []string
		not  []string
	}{
		{"agentctl status ze", []string{"zeta-worker"}, []string{"zeta-file"}},
		{"agentctl stop " + s.ID[:3], []string{s.ID}, nil},
		{"agentctl logs ", []string{s.ID, "zeta-worker", ended.ID}, []string{"zeta-file"}},
		// stop offers what it can act on: running sessions only; a session
		// given by its name is not offered again by its id.
		{"agentctl stop zeta-worker ", nil, []string{"zeta-worker", s.ID, ended.ID}},
		{"agentctl rm zeta-worker ", []string{ended.ID}, []string{"zeta-worker", s.ID}},
	} {
		got := complete(tc.line)
		for _, w := range tc.want {
			if !contains(got, w) {
				t.Errorf("complete %q = %v: want %s", tc.line, got, w)
			}
		}
		for _, w := range tc.not {
			if contains(got, w) {
				t.Errorf("complete %q = %v: did not want %s", tc.line, got, w)
			}
		}
	}
	// The description says what the session is.
	if out := e.MustRun("__complete", "status", "ze"); !strings.Contains(out, "zeta-worker\trunning "+s.ID) {
		t.Errorf("completion descriptions:\n%s", out)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// stop, rm and restart take several sessions, or --all/--group/--label;
// one failure does not stop the others and the exit status names it.
func TestSeveralTargets(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	a := e.Start("--label", "team=infra", "--", "sleep", "300")
	b := e.Start("--label", "team=infra", "--", "sleep", "300")
	c := e.Start("--label", "team=web", "--", "sleep", "300")
	out, errOut, code := e.Run("stop", "--timeout", "0", a.ID, "nosuchsession", b.ID[:6])
	if code != 1 || !strings.Contains(errOut, "stop nosuchsession:") || !strings.Contains(errOut, "failed for 1 of 3 sessions: nosuchsession") {
		t.Fatalf("stop with one bad id: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, s := range []api.Session{a, b} {
		if st := e.Session(s.ID).Status; !st.Ended() {
			t.Fatalf("%s is %s after stop", s.ID, st)
		}
	}
	if st := e.Session(c.ID).Status; st != api.StatusRunning {
		t.Fatalf("%s is %s: stop touched a session it was not given", c.ID, st)
	}
	// --label selects; giving ids and a selector is a usage mistake.
	if _, _, code := e.Run("stop", c.ID, "--all"); code != 2 {
		t.Fatalf("stop ID --all: exit %d, want 2", code)
	}
	if _, _, code := e.Run("stop"); code != 2 {
		t.Fatalf("stop with no target: exit %d, want 2", code)
	}
	d := e.Start("--label", "team=web", "--", "sleep", "300")
	e.MustRun("stop", "--label", "team=web", "--timeout", "0")
	for _, s := range []api.Session{c, d} {
		if st := e.Session(s.ID).Status; !st.Ended() {
			t.Fatalf("%s is %s after stop --label", s.ID, st)
		}
	}
	// rm --label removes the ended ones of that label only.
	e.MustRun("rm", "--label", "team=infra")
	for _, s := range []api.Session{a, b} {
		if _, err := os.Stat(e.SessionDir(s.ID)); !os.IsNotExist(err) {
			t.Fatalf("%s's folder after rm: %v", s.ID, err)
		}
	}
	if _, err := os.Stat(e.SessionDir(c.ID)); err != nil {
		t.Fatalf("rm --label team=infra removed %s: %v", c.ID, err)
	}
}

func TestRestartRmPrune(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	dir := t.TempDir()
	old := e.Start("--name", "svc", "--label", "k=v", "--cwd", dir, "--env", "GREETING=hello there", "--", "sh", "-c", "pwd; echo \"greeting=$GREETING\"; sleep 300")
	fresh, errOut, code := e.Run("restart", "svc")
	fresh = strings.TrimSpace(fresh)
	// restart keeps the --env values, and says so.
	if code != 0 || !strings.Contains(errOut, "runs with the --env of svc: GREETING") {
		t.Fatalf("restart: exit %d, stderr %s", code, errOut)
	}
	WaitFor(t, 10*time.Second, "the restarted session's output", func() bool {
		out, _, _ := e.Run("logs", fresh)
		return strings.Contains(out, "greeting=hello there")
	})
	if fi, err := os.Stat(filepath.Join(e.SessionDir(old.ID), "env.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the kept --env values: %v %v", fi, err)
	}
	if st := e.MustRun("status", fresh); !strings.Contains(st, "restart of") || !strings.Contains(st, old.ID) || !strings.Contains(st, "GREETING") {
		t.Fatalf("status of a restart:\n%s", st)
	}
	s := e.Session(fresh)
	if s.ID == old.ID || s.RestartOf != old.ID || s.Name != "svc" || s.Cwd != dir || s.Labels["k"] != "v" ||
		strings.Join(s.Command, " ") != strings.Join(old.Command, " ") || s.Status != api.StatusRunning {
		t.Fatalf("restart of %+v gave %+v", old, s)
	}
	if st := e.Session(old.ID).Status; !st.Ended() {
		t.Fatalf("the old session is %s after restart", st)
	}
	// rm refuses a running session, and --force stops it first.
	if _, errOut, code := e.Run("rm", "svc"); code != 1 || !strings.Contains(errOut, "is running") {
		t.Fatalf("rm of a running session: exit %d, %s", code, errOut)
	}
	if got := e.MustRun("rm", "--force", "svc"); got != s.ID {
		t.Fatalf("rm --force printed %q", got)
	}
	if _, err := os.Stat(e.SessionDir(s.ID)); !os.IsNotExist(err) {
		t.Fatalf("folder after rm --force: %v", err)
	}
	// prune --dry-run names what prune removes; off a terminal it does not
	// ask.
	if got := e.MustRun("prune", "--dry-run"); got != old.ID {
		t.Fatalf("prune --dry-run = %q, want %s", got, old.ID)
	}
	if _, err := os.Stat(e.SessionDir(old.ID)); err != nil {
		t.Fatalf("dry run removed %s: %v", old.ID, err)
	}
	if got := e.MustRun("prune"); got != "removed 1 ended sessions" {
		t.Fatalf("prune = %q", got)
	}
}

func TestListOutput(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	long := strings.Repeat("a long prompt-like argument ", 10)
	s := e.Start("--cwd", t.TempDir(), "--label", "team=infra", "--label", "a=b", "--", "sh", "-c", "sleep 300 # "+long)
	// Control characters in what a user typed never reach the terminal.
	evil := e.Start("--", "sh", "-c", "sleep 300 # \x1b]0;pwned\x07\x1b[31m")
	out := e.MustRun("list")
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Fatalf("list printed control characters: %q", out)
	}
	for _, col := range []string{"MODEL", "TOKENS", "COST", "PID"} {
		if strings.Contains(out, col) {
			t.Fatalf("list shows the %s column for plain commands:\n%s", col, out)
		}
	}
	for _, width := range []int{80, 120} {
		cmd := e.Command("list")
		cmd.Env = append(cmd.Env, "COLUMNS="+strconv.Itoa(width))
		b, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if n := utf8.RuneCountInString(line); n >= width {
				t.Fatalf("COLUMNS=%d: a line of %d characters:\n%s", width, n, b)
			}
		}
	}
	wide := e.MustRun("list", "-o", "wide")
	if !strings.Contains(wide, s.ID) || !strings.Contains(wide, "PID") || !strings.Contains(wide, strings.TrimSpace(long)) || !strings.Contains(wide, "a=b,team=infra") {
		t.Fatalf("list -o wide:\n%s", wide)
	}
	if q := e.MustRun("list", "-q"); q != s.ID+"\n"+evil.ID {
		t.Fatalf("list -q = %q", q)
	}
	if nh := e.MustRun("list", "--no-headers"); strings.Contains(nh, "ADAPTER") || len(strings.Split(nh, "\n")) != 2 {
		t.Fatalf("list --no-headers:\n%s", nh)
	}
	var l api.SessionList
	e.JSON(&l, "list", "-o", "json")
	if len(l.Sessions) != 2 {
		t.Fatalf("list -o json has %d sessions", len(l.Sessions))
	}
	for _, bad := range [][]string{{"list", "--status", "bogus"}, {"list", "-o", "yaml"}} {
		_, errOut, code := e.Run(bad...)
		if code != 2 || !strings.Contains(errOut, "want ") {
			t.Fatalf("%v: exit %d, %s", bad, code, errOut)
		}
	}
	if _, errOut, _ := e.Run("list", "--status", "bogus"); !strings.Contains(errOut, "running, queued, exited, killed, lost, ended, unknown") {
		t.Fatalf("--status bogus does not name the statuses: %s", errOut)
	}
	e.MustRun("stop", "--all", "--timeout", "0")
}

// fieldCount is how many of out's white-space separated fields are s.
func fieldCount(out, s string) int {
	n := 0
	for _, f := range strings.Fields(out) {
		if f == s {
			n++
		}
	}
	return n
}

// attach with a standard input that ends (not a terminal) detaches; the
// session goes on.
func TestAttachDetachesAtEndOfInput(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	s := e.Start("--", "sh", "-c", "cat; sleep 300")
	cmd := e.Command("attach", s.ID)
	cmd.Stdin = strings.NewReader("typed\n")
	done := make(chan error, 1)
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("attach: %v", err)
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		t.Fatal("attach did not detach at the end of its input")
	}
	if st := e.Session(s.ID).Status; st != api.StatusRunning {
		t.Fatalf("after attach the session is %s", st)
	}
	WaitFor(t, 10*time.Second, "the typed line in the log", func() bool {
		return strings.Contains(e.MustRun("logs", s.ID), "typed")
	})
	e.MustRun("stop", s.ID)
}

// run -it starts and attaches in one step; when the program ends in the
// alternate screen with the cursor hidden, the terminal is put back.
func TestRunAttachedResetsTheTerminal(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	cmd := e.Command("run", "-it", "--", "sh", "-c", `sleep 1; printf '\033[?1049h\033[?25l\033[?1000hfull screen'; sleep 1; exit 4`)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	out := &ptyOutput{}
	go io.Copy(out, tty)
	err = cmd.Wait()
	var exit *exec.ExitError
	if !asExitError(err, &exit) || exit.ExitCode() != 4 {
		t.Fatalf("run -it: %v, want exit 4 (the program's); it printed %q", err, out.String())
	}
	WaitFor(t, 5*time.Second, "the session's end notice", func() bool { return strings.Contains(out.String(), "ended") })
	o := out.String()
	i := strings.Index(o, "full screen")
	if i < 0 {
		t.Fatalf("run -it showed %q", o)
	}
	after := o[i:]
	for _, want := range []string{"\x1b[?1049l", "\x1b[?25h", "\x1b[?1000l"} {
		if !strings.Contains(after, want) {
			t.Errorf("after the program ended the terminal was not reset with %q: %q", want, after)
		}
	}
}

// Attaching to an idle full-screen program shows its screen at once: the
// monitor keeps the screen and sends it first. Seen through tmux, as a
// person's terminal would show it.
func TestAttachRedrawsTheScreen(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	e := NewEnv(t)
	s := e.Start("--", "sh", "-c", `printf '\033[?1049h\033[2J\033[5;10HIDLE MENU\033[7;10Hpress q'; sleep 300`)
	WaitFor(t, 10*time.Second, "the menu in the log", func() bool {
		return strings.Contains(e.MustRun("logs", s.ID), "press q")
	})
	dir := t.TempDir()
	var script strings.Builder
	script.WriteString("#!/bin/sh\n")
	for _, kv := range e.Vars {
		k, v, _ := strings.Cut(kv, "=")
		if strings.ContainsAny(k, "()") {
			continue
		}
		fmt.Fprintf(&script, "export %s='%s'\n", k, strings.ReplaceAll(v, "'", `'\''`))
	}
	fmt.Fprintf(&script, "exec %s attach %s\n", e.Bin, s.ID)
	wrapper := filepath.Join(dir, "attach.sh")
	if err := os.WriteFile(wrapper, []byte(script.String()), 0o700); err != nil {
		t.Fatal(err)
	}
	server := "agentctl-e2e-" + filepath.Base(dir)
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-L", server, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tmux("new-session", "-d", "-s", "view", "-x", "100", "-y", "30", wrapper)
	t.Cleanup(func() { exec.Command("tmux", "-L", server, "kill-server").Run() })
	var pane string
	WaitFor(t, 15*time.Second, "the idle menu on the attached terminal", func() bool {
		pane = tmux("capture-pane", "-p", "-t", "view")
		return strings.Contains(pane, "IDLE MENU") && strings.Contains(pane, "press q")
	})
	lines := strings.Split(pane, "\n")
	if len(lines) < 7 || !strings.Contains(lines[4], "IDLE MENU") {
		t.Fatalf("the menu is not where the program drew it (row 5):\n%s", pane)
	}
	e.MustRun("stop", s.ID)
}

// --help groups the commands, version names the commit and Go, unknown
// commands are usage errors with close suggestions only, and each man page
// is titled after its command.
func TestHelpVersionAndDocs(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	help := e.MustRun("--help")
	for _, want := range []string{"Sessions:", "Agents:", "Directories:", "Service:", "restart", "rm", "version"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q:\n%s", want, help)
		}
	}
	for _, cmd := range []string{"run", "list", "logs", "stop", "restart", "rm", "launch", "lock", "daemon"} {
		if out := e.MustRun(cmd, "--help"); !strings.Contains(out, "Examples:") {
			t.Errorf("%s --help has no example", cmd)
		}
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out := e.MustRun(args...)
		if !strings.HasPrefix(out, "agentctl ") || !strings.Contains(out, "commit:") || !strings.Contains(out, "go:       go1.") {
			t.Errorf("%v = %q", args, out)
		}
	}
	for _, tc := range []struct {
		cmd, suggest string
	}{{"rmm", "rm"}, {"stpo", "stop"}, {"lsit", "list"}, {"bogus", ""}} {
		_, errOut, code := e.Run(tc.cmd)
		if code != 2 || !strings.Contains(errOut, `unknown command "`+tc.cmd+`"`) {
			t.Errorf("%s: exit %d, %q", tc.cmd, code, errOut)
		}
		if tc.suggest == "" && strings.Contains(errOut, "Did you mean") || tc.suggest != "" && !strings.Contains(errOut, "\t"+tc.suggest+"\n") {
			t.Errorf("%s suggests: %q", tc.cmd, errOut)
		}
	}
	// gen-docs is in a packaging build only (-tags gendocs), not in the
	// binary people run.
	if _, errOut, code := e.Run("gen-docs"); code != 2 || !strings.Contains(errOut, `unknown command "gen-docs"`) {
		t.Errorf("gen-docs in the shipped build: exit %d, %q", code, errOut)
	}
	dir := t.TempDir()
	docsBin := filepath.Join(t.TempDir(), "agentctl-gendocs")
	if out, err := exec.Command("go", "build", "-tags", "gendocs", "-o", docsBin, "../cmd/agentctl").CombinedOutput(); err != nil {
		t.Fatalf("build with -tags gendocs: %v\n%s", err, out)
	}
	if out, err := exec.Command(docsBin, "gen-docs", "--out", dir).CombinedOutput(); err != nil {
		t.Fatalf("gen-docs: %v\n%s", err, out)
	}
	for page, title := range map[string]string{"agentctl.1": `"AGENTCTL"`, "agentctl-logs.1": `"AGENTCTL-LOGS"`, "agentctl-stop.1": `"AGENTCTL-STOP"`} {
		b, err := os.ReadFile(filepath.Join(dir, "man1", page))
		if err != nil {
			t.Fatal(err)
		}
		th, _, _ := strings.Cut(string(b[strings.Index(string(b), ".TH "):]), "\n")
		if !strings.HasPrefix(th, ".TH "+title+` "1" `) || !strings.Contains(th, `"agentctl dev`) {
			t.Errorf("%s header %q: want title %s and a clean source", page, th, title)
		}
	}
}

// fish's own completion on the generated script offers names and ids with
// their description.
func TestCompletionInFish(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("fish"); err != nil {
		t.Skip("fish is not installed")
	}
	e := NewEnv(t)
	s := e.Start("--name", "zeta-worker", "--", "sleep", "300")
	cmd := exec.Command("fish", "-c", `agentctl completion fish | source; complete -C "agentctl status ze"; complete -C "agentctl logs `+s.ID[:3]+`"`)
	cmd.Env = append(e.Vars, "PATH="+filepath.Dir(e.Bin)+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fish: %v\n%s", err, out)
	}
	for _, want := range []string{"zeta-worker\trunning " + s.ID, s.ID + "\trunning zeta-worker"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("fish completions %q lack %q", out, want)
		}
	}
	e.MustRun("stop", s.ID)
}

// The verbs of docker and kubectl habits: wait prints each session's exit
// code and exits with the first non-zero one; inspect is status --json;
// host ls has --json; tables drop their header with --no-headers.
func TestWaitInspectAndScriptOutputs(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	ok := e.Start("--", "sh", "-c", "sleep 1; exit 0")
	bad := e.Start("--", "sh", "-c", "sleep 1.5; exit 7")
	out, errOut, code := e.Run("wait", ok.ID, bad.ID)
	if code != 7 || out != "0\n7\n" {
		t.Fatalf("wait: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	// Already ended: answers at once, with the same code.
	if out, _, code := e.Run("wait", bad.ID); code != 7 || out != "7\n" {
		t.Fatalf("wait of an ended session: exit %d, %q", code, out)
	}
	long := e.Start("--", "sleep", "300")
	if _, errOut, code := e.Run("wait", "--timeout", "300ms", long.ID); code != 1 || !strings.Contains(errOut, "still runs after 300ms") {
		t.Fatalf("wait --timeout: exit %d, %s", code, errOut)
	}
	if st := e.Session(long.ID).Status; st != api.StatusRunning {
		t.Fatalf("wait --timeout left the session %s", st)
	}
	var s api.Session
	e.JSON(&s, "inspect", bad.ID)
	if s.ID != bad.ID || s.Status != api.StatusExited || s.ExitCode == nil || *s.ExitCode != 7 {
		t.Fatalf("inspect: %+v", s)
	}
	var hs struct {
		Hosts []struct{ Name, URL string } `json:"hosts"`
	}
	e.JSON(&hs, "host", "ls", "--json")
	if len(hs.Hosts) != 1 || hs.Hosts[0].Name != "local" {
		t.Fatalf("host ls --json: %+v", hs)
	}
	if out := e.MustRun("host", "ls", "--no-headers"); strings.Contains(out, "NAME") || !strings.HasPrefix(out, "local") {
		t.Fatalf("host ls --no-headers: %q", out)
	}
	e.MustRun("lock", t.TempDir(), "--by", "ci")
	if out := e.MustRun("locks", "--no-headers"); strings.Contains(out, "DIRECTORY") || !strings.Contains(out, "ci") {
		t.Fatalf("locks --no-headers: %q", out)
	}
}

// Commands that remove many sessions ask on a terminal, Ctrl-C answers a
// question at once, and a selection none of whose sessions can be acted on
// says so and fails.
func TestConfirmations(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	run := e.Start("--group", "g", "--", "sleep", "300")
	_, errOut, code := e.Run("rm", "--group", "g")
	if code != 1 || !strings.Contains(errOut, "none of the 1 sessions selected can be acted on (1 running)") || !strings.Contains(errOut, "--force") {
		t.Fatalf("rm --group of running sessions only: exit %d, %s", code, errOut)
	}
	e.MustRun("stop", "--timeout", "0", run.ID)

	// On a terminal: rm --all asks; "n" removes nothing.
	ask := func(args ...string) (*os.File, *ptyOutput, chan error) {
		cmd := e.Command(args...)
		tty, err := pty.Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		out := &ptyOutput{}
		go io.Copy(out, tty)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { tty.Close(); cmd.Process.Kill() })
		WaitFor(t, 10*time.Second, "the question", func() bool { return strings.Contains(out.String(), "[y/N]") })
		return tty, out, done
	}
	exitOf := func(err error) int {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	tty, out, done := ask("rm", "--all")
	if !strings.Contains(out.String(), "Remove the folders and logs of 1 sessions?") {
		t.Fatalf("rm --all asked %q", out.String())
	}
	tty.Write([]byte("n\r"))
	if code := exitOf(<-done); code != 1 {
		t.Fatalf("rm --all answered no: exit %d", code)
	}
	if _, err := os.Stat(e.SessionDir(run.ID)); err != nil {
		t.Fatalf("rm --all answered no removed %s: %v", run.ID, err)
	}
	// Ctrl-C at prune's question ends it at once, without Enter.
	tty, _, done = ask("prune")
	tty.Write([]byte{3})
	select {
	case err := <-done:
		if code := exitOf(err); code != 130 {
			t.Fatalf("Ctrl-C at prune's question: exit %d, want 130", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Ctrl-C at prune's question did nothing")
	}
	if _, err := os.Stat(e.SessionDir(run.ID)); err != nil {
		t.Fatalf("prune interrupted removed %s: %v", run.ID, err)
	}
	e.MustRun("rm", "--all", "--yes")
	if _, err := os.Stat(e.SessionDir(run.ID)); !os.IsNotExist(err) {
		t.Fatalf("rm --all --yes left %s: %v", run.ID, err)
	}
}

// kill -s sends one signal and nothing after; kill alone is stop --force.
func TestKillSignal(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	s := e.Start("--", "sh", "-c", `trap 'echo got-hup' HUP; echo ready; while :; do sleep 0.1; done`)
	WaitFor(t, 10*time.Second, "the trap to be set", func() bool {
		return strings.Contains(e.MustRun("logs", "-n", "0", s.ID), "ready")
	})
	e.MustRun("kill", "-s", "hup", s.ID)
	WaitFor(t, 10*time.Second, "the trap to run", func() bool {
		return strings.Contains(e.MustRun("logs", "-n", "0", s.ID), "got-hup")
	})
	if st := e.Session(s.ID).Status; st != api.StatusRunning {
		t.Fatalf("after kill -s HUP the session is %s: a trapped signal must not end it", st)
	}
	if _, errOut, code := e.Run("kill", "-s", "NOSUCH", s.ID); code != 2 || !strings.Contains(errOut, "no such signal") {
		t.Fatalf("kill -s NOSUCH: exit %d, %s", code, errOut)
	}
	e.MustRun("kill", s.ID)
	if got := e.Session(s.ID); got.Status != api.StatusKilled || got.Signal != "SIGKILL" {
		t.Fatalf("after kill: %s %s", got.Status, got.Signal)
	}
	if _, errOut, code := e.Run("kill", "-s", "HUP", s.ID); code != 1 || !strings.Contains(errOut, "nothing to signal") {
		t.Fatalf("kill -s of an ended session: exit %d, %s", code, errOut)
	}
}
