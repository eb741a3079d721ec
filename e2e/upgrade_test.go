package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/proc"
)

// previousRelease names the commit whose agentctl the upgrade test starts
// sessions with: the release before the current monitor protocol.
const previousRelease = "testdata/previous-release"

// previousBinary builds the agentctl of the previous release from the
// repository's history, once per commit: the binary is kept in the
// system's temporary folder by commit, and the build reuses Go's build
// cache. A clone without that commit (shallow) fails the test, saying so.
func previousBinary(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(previousRelease)
	if err != nil {
		t.Fatal(err)
	}
	sha := strings.TrimSpace(string(b))
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", ".."}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := git("rev-parse", "--is-shallow-repository"); err != nil {
		t.Fatalf("the upgrade test builds the previous release from git history, and this is no git clone: %v: %s", err, out)
	} else if out == "true" {
		t.Fatalf("the repository is a shallow clone: the upgrade test builds the previous release (%s, named in e2e/%s) from git history; fetch it whole (git fetch --unshallow)", sha, previousRelease)
	}
	if out, err := git("cat-file", "-e", sha+"^{commit}"); err != nil {
		t.Fatalf("commit %s (the previous release, named in e2e/%s) is not in this clone: %v %s; fetch it (git fetch origin %s) or clone the repository whole", sha, previousRelease, err, out, sha)
	}
	bin := filepath.Join(os.TempDir(), "agentctl-e2e-previous", sha, "agentctl")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	src := t.TempDir()
	export := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", "..", sha, src)
	if out, err := export.CombinedOutput(); err != nil {
		t.Fatalf("export %s: %v: %s", sha, err, out)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	// Built beside its place and renamed there: a run that stops half way
	// leaves no half binary for the next.
	tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
	build := exec.Command("go", "build", "-o", tmp, "./cmd/agentctl")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the previous release %s: %v: %s", sha, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// launchFields is a session's launch.json as it is on disk.
func launchFields(t *testing.T, e *Env, id string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.SessionDir(id), "launch.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Sessions started by the previous release outlive its service, and the
// new service takes them over: it lists them running, streams their
// output, attaches (input reaches the program), sends input, stops them,
// and reads the exit records their monitors write.
func TestUpgradeKeepsSessionsOfThePreviousRelease(t *testing.T) {
	t.Parallel()
	prev := previousBinary(t)
	e := NewEnv(t)
	old := &Env{T: t, Home: e.Home, Bin: prev, Vars: e.Vars}

	printer := old.Start("--name", "printer", "--", "sh", "-c", `i=0; while :; do i=$((i+1)); echo "line $i"; sleep 0.1; done`)
	typist := old.Start("--name", "typist", "--", "sh", "-c", `stty -echo; echo ready; cat; exit 7`)
	reader := old.Start("--name", "reader", "--", "sh", "-c", `read x; echo "got:$x"; exit 3`)
	WaitFor(t, 10*time.Second, "the sessions to print", func() bool {
		return strings.Contains(old.MustRun("logs", printer.ID), "line 2") && strings.Contains(old.MustRun("logs", typist.ID), "ready")
	})
	for _, s := range []api.Session{printer, typist, reader} {
		if v, ok := launchFields(t, e, s.ID)["protocol"]; ok {
			t.Fatalf("the previous release wrote protocol %v into launch.json: it is not the release before the versioned monitor", v)
		}
	}

	service := old.DaemonPID()
	old.MustRun("daemon", "stop")
	waitGone(t, service, 10*time.Second)
	for _, s := range []api.Session{printer, typist, reader} {
		if !alive(s.PID) {
			t.Fatalf("session %s (pid %d) ended with the previous release's service", s.Name, s.PID)
		}
	}

	// The new service, started by the new CLI on the same home.
	byID := map[string]api.Session{}
	for _, s := range e.Launched() {
		byID[s.ID] = s
	}
	for _, s := range []api.Session{printer, typist, reader} {
		got := byID[s.ID]
		if got.Status != api.StatusRunning || got.PID != s.PID || len(got.Warnings) > 0 {
			t.Fatalf("under the new service session %s is %+v, want running, pid %d, no warning", s.Name, got, s.PID)
		}
	}
	if e.DaemonPID() == service {
		t.Fatal("the previous release's service still answers")
	}
	if got := e.MustRun("explain", reader.ID); !strings.Contains(got, "monitor protocol 1)") {
		t.Errorf("explain does not name the monitor's protocol:\n%s", got)
	}

	// logs -f streams what the printer prints from now on, and ends with
	// its stop.
	follow := e.Command("logs", "-f", "-n", "0", printer.ID)
	followed := &ptyOutput{}
	follow.Stdout = followed
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	followDone := make(chan error, 1)
	go func() { followDone <- follow.Wait() }()
	t.Cleanup(func() { follow.Process.Kill() })
	WaitFor(t, 10*time.Second, "logs -f to stream two lines", func() bool { return strings.Count(followed.String(), "line ") >= 2 })
	var stopped api.Session
	e.JSON(&stopped, "stop", "--json", printer.ID)
	if stopped.Status != api.StatusKilled || stopped.Signal != "SIGTERM" {
		t.Errorf("the stopped printer is %s (signal %q), want killed by SIGTERM", stopped.Status, stopped.Signal)
	}
	select {
	case err := <-followDone:
		if err != nil {
			t.Errorf("logs -f: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("logs -f did not end with the session")
	}

	// attach: what is typed reaches cat (the terminal does not echo), and
	// its end (exit 7 at the end of its input) ends the attach.
	tty, out, done := attachViewer(t, e, typist.ID)
	WaitFor(t, 10*time.Second, "the viewer to attach", func() bool { return strings.Contains(out.String(), "attached") })
	tty.Write([]byte("hello upgrade\r"))
	WaitFor(t, 10*time.Second, "cat to print the typed line", func() bool { return strings.Contains(out.String(), "hello upgrade") })
	tty.Write([]byte{0x04})
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
			t.Errorf("attach ended with %v, want exit status 7 (the session's)", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("attach did not end with the session")
	}
	if s := e.WaitStatus(typist.ID, api.StatusExited, 10*time.Second); s.ExitCode == nil || *s.ExitCode != 7 {
		t.Errorf("the typist ended %+v, want exit code 7", s)
	}

	// send: the input op of the previous release's monitor.
	e.MustRun("send", reader.ID, "over")
	if s := e.WaitStatus(reader.ID, api.StatusExited, 10*time.Second); s.ExitCode == nil || *s.ExitCode != 3 {
		t.Errorf("the reader ended %+v, want exit code 3", s)
	}
	if got := e.MustRun("logs", reader.ID); !strings.Contains(got, "got:over") {
		t.Errorf("the reader's output %q lacks what was sent", got)
	}
}

// A session whose monitor claims a version of the monitor protocol this
// agentctl does not speak reads running (its pid and start time prove it)
// with a warning saying what to do; stop and send are refused with that
// message, and kill ends it without its monitor.
func TestUpgradeRefusesAMonitorOfAnotherProtocol(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	s := e.Start("--", "sh", "-c", "echo ready; sleep 300")
	if v := launchFields(t, e, s.ID)["protocol"]; v != float64(2) {
		t.Fatalf("launch.json names protocol %v, want 2", v)
	}
	// The record of a monitor from a newer release.
	m := launchFields(t, e, s.ID)
	m["protocol"] = 99
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.SessionDir(s.ID), "launch.json")
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}

	what := fmt.Sprintf("session %s runs monitor protocol 99; this agentctl speaks 1–2", s.ID)
	got := e.Session(s.ID)
	t.Logf("status warns: %q", got.Warnings)
	if got.Status != api.StatusRunning || !strings.Contains(strings.Join(got.Warnings, "\n"), what) {
		t.Fatalf("status = %s, warnings %q; want running, with %q", got.Status, got.Warnings, what)
	}
	for _, args := range [][]string{{"stop", s.ID}, {"send", s.ID, "hi"}} {
		_, stderr, code := e.Run(args...)
		t.Logf("agentctl %s: %s", args[0], strings.TrimSpace(stderr))
		if code == 0 || !strings.Contains(stderr, what) || !strings.Contains(stderr, "agentctl kill "+s.ID) {
			t.Errorf("agentctl %s: exit %d, %q; want a refusal saying %q and what to do", strings.Join(args, " "), code, stderr, what)
		}
	}
	if !alive(s.PID) {
		t.Fatal("a refused stop ended the session")
	}
	e.MustRun("kill", s.ID)
	waitGone(t, s.PID, 10*time.Second)
	if got := e.Session(s.ID); !got.Status.Ended() {
		t.Fatalf("after kill the session is %s", got.Status)
	}
}

// A package upgrade replaces the agentctl binary on disk while the service
// runs: the service's new sessions still get monitors of its own image
// (a newer binary's monitor might speak a protocol it does not), and they
// are named agentctl in ps.
func TestBinaryReplacedUnderARunningService(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	installed := filepath.Join(t.TempDir(), "agentctl")
	b, err := os.ReadFile(agentctlBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(installed, b, 0o755); err != nil {
		t.Fatal(err)
	}
	e.Bin = installed
	e.MustRun("daemon", "start")
	// As a package manager does: a new file renamed over the old one.
	next := installed + ".new"
	if err := os.WriteFile(next, []byte("#!/bin/sh\necho not the service\nexit 97\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, installed); err != nil {
		t.Fatal(err)
	}
	e.Bin = agentctlBin
	s := e.Start("--", "sleep", "600")
	agent, err := proc.Lookup(s.PID)
	if err != nil {
		t.Fatal(err)
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", agent.PPID))
	if err != nil || strings.TrimSpace(string(comm)) != "agentctl" {
		t.Errorf("the monitor's name is %q (%v), want agentctl", comm, err)
	}
	out := e.MustRun("run", "--wait", "--", "echo", "still launching")
	if !strings.Contains(out, "still launching") {
		t.Fatalf("a session launched after the binary was replaced: %q", out)
	}
}
