package e2e

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/agentctl/agentctl/api"
)

// A 16 MB log comes out whole, raw or stripped; the stripped view's rate
// is logged.
func TestLogsOfALargeSession(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	const lines = 2000000
	s := e.Start("--", "sh", "-c", fmt.Sprintf(`seq 1 %d; printf '\033[31mred\033[0m tail'`, lines))
	e.WaitStatus(s.ID, api.StatusExited, 60*time.Second)
	logFile, err := os.ReadFile(e.SessionDir(s.ID) + "/output.log")
	if err != nil {
		t.Fatal(err)
	}
	raw := e.Command("logs", "--raw", "-n", "0", s.ID)
	got, err := raw.Output()
	if err != nil {
		t.Fatalf("logs --raw -n 0: %v", err)
	}
	if !bytes.Equal(got, logFile) {
		t.Fatalf("logs --raw -n 0 gave %d bytes, the log has %d", len(got), len(logFile))
	}
	var want bytes.Buffer
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	want.WriteString("red tail\n")
	began := time.Now()
	text, err := e.Command("logs", "-n", "0", s.ID).Output()
	took := time.Since(began)
	if err != nil {
		t.Fatalf("logs -n 0: %v", err)
	}
	if !bytes.Equal(text, want.Bytes()) {
		t.Fatalf("logs -n 0 gave %d bytes, want %d (first difference near %q)", len(text), want.Len(), firstDiff(text, want.Bytes()))
	}
	t.Logf("raw log %d bytes; stripped view %d bytes in %s: %.0f MB/s", len(logFile), len(text), took.Round(time.Millisecond), float64(len(text))/took.Seconds()/1e6)
	if tail := e.MustRun("logs", "-n", "2", s.ID); tail != fmt.Sprintf("%d\nred tail", lines) {
		t.Fatalf("logs -n 2 = %q", tail)
	}
}

func firstDiff(a, b []byte) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return string(a[max(0, i-20):min(len(a), i+20)])
		}
	}
	return "the end"
}

// On a terminal logs keeps colour and shows a line as it grows; piped, it
// strips colour; NO_COLOR and --no-color strip it on a terminal too.
func TestLogsColourAndPartialLines(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	s := e.Start("--", "sh", "-c", `printf '\033[31mred\033[0m line\n'; printf 'still typing'; sleep 300`)
	WaitFor(t, 10*time.Second, "output", func() bool { return strings.Contains(e.MustRun("logs", s.ID), "still typing") })
	if piped := e.MustRun("logs", s.ID); strings.Contains(piped, "\x1b") || !strings.Contains(piped, "red line") {
		t.Fatalf("piped logs = %q: want the text without escapes", piped)
	}
	// onTerminal runs a command on a terminal; ended waits for it to exit
	// and for everything it wrote to be copied out of the terminal (which
	// may lag the exit), and returns it.
	onTerminal := func(extraEnv []string, args ...string) (out *ptyOutput, cmd *exec.Cmd, ended func() (string, error)) {
		cmd = e.Command(args...)
		cmd.Env = append(cmd.Env, extraEnv...)
		tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
		if err != nil {
			t.Fatal(err)
		}
		out = &ptyOutput{}
		copied := make(chan struct{})
		go func() { io.Copy(out, tty); close(copied) }()
		t.Cleanup(func() { tty.Close(); cmd.Process.Kill(); cmd.Wait() })
		ended = func() (string, error) {
			err := cmd.Wait()
			// The copy ends when the terminal's last writer is gone.
			select {
			case <-copied:
			case <-time.After(30 * time.Second):
				t.Fatalf("%v: the terminal's output was not read to its end", args)
			}
			return out.String(), err
		}
		return out, cmd, ended
	}
	out, cmd, ended := onTerminal(nil, "logs", "-f", s.ID)
	WaitFor(t, 10*time.Second, "logs -f on a terminal to show colour and the unfinished line", func() bool {
		o := out.String()
		return strings.Contains(o, "\x1b[31mred\x1b[0m line") && strings.Contains(o, "still typing")
	})
	// Ctrl-C ends the follower quietly, with 130; the session goes on.
	cmd.Process.Signal(syscall.SIGINT)
	o, err := ended()
	var exit *exec.ExitError
	if !asExitError(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("logs -f after Ctrl-C: %v, want exit 130", err)
	}
	if strings.Contains(o, "agentctl:") {
		t.Fatalf("logs -f printed an error on Ctrl-C: %q", o)
	}
	if st := e.Session(s.ID).Status; st != api.StatusRunning {
		t.Fatalf("the session is %s after Ctrl-C on logs -f", st)
	}
	for _, tc := range []struct {
		env  []string
		args []string
	}{
		{[]string{"NO_COLOR=1"}, []string{"logs", s.ID}},
		{nil, []string{"logs", "--no-color", s.ID}},
	} {
		_, _, ended := onTerminal(tc.env, tc.args...)
		if o, _ := ended(); !strings.Contains(o, "red line") || strings.Contains(o, "\x1b[31m") {
			t.Fatalf("%v %v on a terminal = %q: want no colour", tc.env, tc.args, o)
		}
	}
	e.MustRun("stop", s.ID)
}

// logs -f and run --wait ride out a restart of the service: every byte
// once, in order.
func TestLogsFollowAcrossServiceRestart(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	const n = 80
	script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do i=$((i+1)); echo "line $i"; sleep 0.05; done`, n)
	s := e.Start("--", "sh", "-c", script)
	var want bytes.Buffer
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	type follower struct {
		name string
		cmd  *exec.Cmd
		out  bytes.Buffer
		errb bytes.Buffer
	}
	var fs []*follower
	for _, args := range [][]string{
		{"logs", "-f", "-n", "0", s.ID},
		{"logs", "-f", "--raw", "-n", "0", s.ID},
		{"run", "--wait", "--", "sh", "-c", script},
	} {
		f := &follower{name: strings.Join(args[:3], " "), cmd: e.Command(args...)}
		f.cmd.Stdout, f.cmd.Stderr = &f.out, &f.errb
		if err := f.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	time.Sleep(time.Second)
	e.MustRun("daemon", "restart")
	time.Sleep(time.Second)
	e.MustRun("daemon", "restart")
	for _, f := range fs {
		err := f.cmd.Wait()
		if err != nil {
			t.Fatalf("%s: %v\n%s", f.name, err, f.errb.String())
		}
		got := strings.ReplaceAll(f.out.String(), "\r\n", "\n")
		if got != want.String() {
			t.Fatalf("%s across two service restarts gave:\n%q\nwant:\n%q", f.name, got, want.String())
		}
	}
}

// Ctrl-C ends run --wait with 130 and events quietly; the session goes on.
func TestCtrlCEndsFollowersQuietly(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	e.MustRun("daemon", "start")
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"run", "--wait", "--name", "waited", "--", "sh", "-c", "echo started; sleep 300"}, 130},
		{[]string{"events"}, 0},
	} {
		cmd := e.Command(tc.args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGINT)
		err := cmd.Wait()
		code := 0
		var exit *exec.ExitError
		if asExitError(err, &exit) {
			code = exit.ExitCode()
		}
		complained := false
		for _, line := range strings.Split(errb.String(), "\n") {
			complained = complained || strings.HasPrefix(line, "agentctl: ") && !strings.Contains(line, "started (pid")
		}
		if code != tc.code || complained {
			t.Fatalf("%v after Ctrl-C: exit %d (want %d)\nstderr: %s", tc.args, code, tc.code, errb.String())
		}
	}
	if st := e.Session("waited").Status; st != api.StatusRunning {
		t.Fatalf("after Ctrl-C on run --wait the session is %s", st)
	}
	e.MustRun("stop", "waited")
}

// --since and -t read the log's own time marks.
func TestLogsSinceAndTimestamps(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	began := time.Now()
	s := e.Start("--", "sh", "-c", "echo early; sleep 3; echo late; sleep 300")
	WaitFor(t, 15*time.Second, "the late line", func() bool { return strings.Contains(e.MustRun("logs", s.ID), "late") })
	// A time between the two lines (marks are to the second), and a
	// duration: how long ago is up to the machine, so the duration is
	// measured from the late line's own mark.
	between := began.Add(2 * time.Second).Format(time.RFC3339)
	if got := e.MustRun("logs", "--since", between, s.ID); got != "late" {
		t.Fatalf("logs --since %s = %q, want only the late line", between, got)
	}
	if got := e.MustRun("logs", "--since", time.Since(began.Add(2*time.Second)).Round(time.Second).String(), s.ID); got != "late" {
		t.Fatalf("logs --since (a duration back to between the lines) = %q, want only the late line", got)
	}
	if got := e.MustRun("logs", "--since", "1h", s.ID); got != "early\nlate" {
		t.Fatalf("logs --since 1h = %q", got)
	}
	lines := strings.Split(e.MustRun("logs", "-t", s.ID), "\n")
	if len(lines) != 2 {
		t.Fatalf("logs -t = %q", lines)
	}
	var stamps []time.Time
	for _, l := range lines {
		ts, _, _ := strings.Cut(l, " ")
		at, err := time.Parse(time.RFC3339, ts)
		if err != nil || at.Before(s.CreatedAt.Add(-2*time.Second)) || at.After(time.Now().Add(time.Second)) {
			t.Fatalf("logs -t line %q: time %v, %v (session created %v)", l, at, err, s.CreatedAt)
		}
		stamps = append(stamps, at)
	}
	if d := stamps[1].Sub(stamps[0]); d < 2*time.Second {
		t.Fatalf("the lines written 3 s apart are stamped %s apart: %q", d, lines)
	}
	if _, _, code := e.Run("logs", "--since", "yesterday", s.ID); code != 2 {
		t.Fatalf("--since yesterday: exit %d, want 2", code)
	}
	e.MustRun("stop", s.ID)
}

// logs -f in a pipe shows a line still being written once the output
// pauses, then continues it where it stopped: each byte once.
func TestLogsFollowInAPipeShowsAPartialLine(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	gate := filepath.Join(t.TempDir(), "go")
	s := e.Start("--", "sh", "-c", `printf 'first\n'; printf 'still typing'; while [ ! -e "$0" ]; do sleep 0.05; done; printf ' done\n'; printf 'last\n'`, gate)
	cmd := e.Command("logs", "-f", s.ID)
	out := &ptyOutput{}
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	WaitFor(t, 20*time.Second, "the unfinished line in the pipe", func() bool { return strings.Contains(out.String(), "still typing") })
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("logs -f: %v", err)
	}
	if got, want := out.String(), "first\nstill typing done\nlast\n"; got != want {
		t.Fatalf("logs -f in a pipe printed %q, want %q", got, want)
	}
}

// In a pipe logs gives everything, as docker and kubectl do (a screenful
// only on a terminal); --tail is -n.
func TestLogsInAPipeGiveEverything(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	s := e.Start("--", "sh", "-c", "seq 1 300")
	e.WaitStatus(s.ID, api.StatusExited, 20*time.Second)
	if out := e.MustRun("logs", s.ID); len(strings.Split(out, "\n")) != 300 || !strings.HasPrefix(out, "1\n") {
		t.Fatalf("logs in a pipe gave %d lines, want 300", len(strings.Split(out, "\n")))
	}
	if out := e.MustRun("logs", "--tail", "5", s.ID); out != "296\n297\n298\n299\n300" {
		t.Fatalf("logs --tail 5 = %q", out)
	}
}

// run --wait into a pipe writes what logs -f writes there (the text view:
// line ends as \n, a line redrawn in place as it ended, no escapes), and
// exits with the command's code.
func TestRunWaitInAPipeWritesTheLogsView(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	out, errOut, code := e.Run("run", "--wait", "--", "sh", "-c", `printf 'one\n'; printf 'spin\rdone\n'; printf '\033[31mred\033[0m\n'; printf 'abc\033[2Dxy\n'; exit 3`)
	if code != 3 {
		t.Fatalf("run --wait exited %d, want 3\n%s", code, errOut)
	}
	want := "one\ndone\nred\naxy\n"
	if out != want {
		t.Fatalf("run --wait in a pipe wrote %q, want %q", out, want)
	}
	id := strings.Fields(strings.TrimPrefix(errOut, "agentctl: session "))[0]
	if logs, _, _ := e.Run("logs", "-n", "0", id); logs != out {
		t.Fatalf("logs wrote %q, run --wait %q", logs, out)
	}
}

// logs of several sessions (named, or chosen by --label, --group, --all)
// prefixes each line with the session, as pm2 logs and stern do: one after
// the other, or with -f all at once until every one has ended. One
// session keeps its output bare.
func TestLogsOfSeveralSessions(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	for _, s := range []api.Session{
		e.Start("--name", "alpha", "--label", "team=x", "--", "sh", "-c", "echo a1; echo a2"),
		e.Start("--name", "b", "--label", "team=x", "--", "sh", "-c", "echo b1"),
		e.Start("--name", "other", "--", "sh", "-c", "echo o1"),
	} {
		e.WaitStatus(s.ID, api.StatusExited, 20*time.Second)
	}
	if got, want := e.MustRun("logs", "alpha", "b"), "alpha | a1\nalpha | a2\nb     | b1"; got != want {
		t.Fatalf("logs alpha b = %q, want %q", got, want)
	}
	got := strings.Split(e.MustRun("logs", "--label", "team=x"), "\n")
	slices.Sort(got)
	if want := []string{"alpha | a1", "alpha | a2", "b     | b1"}; !slices.Equal(got, want) {
		t.Fatalf("logs --label team=x = %q, want %q", got, want)
	}
	if got := e.MustRun("logs", "alpha"); got != "a1\na2" {
		t.Fatalf("logs of one session = %q, want no prefix", got)
	}
	if _, _, code := e.Run("logs", "--raw", "alpha", "b"); code != 2 {
		t.Fatalf("logs --raw of two sessions: exit %d, want 2", code)
	}

	// -f follows both until both end, lines in the order they come.
	dir := t.TempDir()
	gate := func(n string) string { return filepath.Join(dir, n) }
	wait := `while [ ! -e "$0" ]; do sleep 0.05; done`
	e.Start("--name", "f1", "--", "sh", "-c", "echo one-start; "+wait+"; echo one-end", gate("1"))
	e.Start("--name", "f2", "--", "sh", "-c", "echo two-start; "+wait+"; echo two-end", gate("2"))
	cmd := e.Command("logs", "-f", "f1", "f2")
	out := &ptyOutput{}
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	WaitFor(t, 20*time.Second, "both starts", func() bool {
		return strings.Contains(out.String(), "f1 | one-start\n") && strings.Contains(out.String(), "f2 | two-start\n")
	})
	os.WriteFile(gate("2"), nil, 0o600)
	WaitFor(t, 20*time.Second, "f2's end", func() bool { return strings.Contains(out.String(), "f2 | two-end\n") })
	if strings.Contains(out.String(), "one-end") {
		t.Fatalf("one-end before its gate: %q", out.String())
	}
	os.WriteFile(gate("1"), nil, 0o600)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("logs -f f1 f2: %v", err)
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 4 || lines[3] != "f1 | one-end" {
		t.Fatalf("logs -f f1 f2 printed %q", out.String())
	}
}

// --until is --since's counterpart: what was written before a time.
func TestLogsUntil(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	s := e.Start("--", "sh", "-c", "echo early; sleep 2.5; echo late")
	e.WaitStatus(s.ID, api.StatusExited, 20*time.Second)
	lines := strings.Split(e.MustRun("logs", "-t", s.ID), "\n")
	if len(lines) != 2 {
		t.Fatalf("logs -t = %q", lines)
	}
	lateAt, _, _ := strings.Cut(lines[1], " ")
	if got := e.MustRun("logs", "--until", lateAt, s.ID); got != "early" {
		t.Fatalf("logs --until %s = %q, want only the early line", lateAt, got)
	}
	if got := e.MustRun("logs", "--until", "0s", s.ID); got != "early\nlate" {
		t.Fatalf("logs --until 0s = %q, want both lines", got)
	}
	if got := e.MustRun("logs", "--since", "1h", "--until", "1h", s.ID); got != "" {
		t.Fatalf("logs --since 1h --until 1h = %q, want nothing", got)
	}
	for _, bad := range [][]string{{"--until", "yesterday"}, {"-f", "--until", "1m"}, {"--raw", "--until", "1m"}} {
		if _, _, code := e.Run(append(append([]string{"logs"}, bad...), s.ID)...); code != 2 {
			t.Fatalf("logs %v: exit %d, want 2", bad, code)
		}
	}
}
