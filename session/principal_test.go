package session

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/spawn"
)

// startProc starts sh -c script with extra environment, ended with the
// test; its first line of output is returned too.
func startProc(t *testing.T, script string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	return cmd, strings.TrimSpace(line)
}

// A caller belongs to the sessions whose monitor is among its parents and
// to the session its marker names, with the sessions those were started
// from; a process outside belongs to none, and a caller that exited
// cannot be told at all.
func TestPrincipal(t *testing.T) {
	t.Parallel()
	h := home.Home(t.TempDir())
	if err := h.Ensure(); err != nil {
		t.Fatal(err)
	}
	c := New(context.Background(), Options{Home: h})
	// s2 was started from inside s0.
	dir := h.SessionDir("s2")
	os.MkdirAll(dir, 0o700)
	if err := atomicfile.WriteJSON(filepath.Join(dir, home.LaunchFile), spawn.Record{ID: "s2", Argv: []string{"x"}, LaunchedFrom: []string{"s0"}}, 0o600); err != nil {
		t.Fatal(err)
	}
	// A shell stands for s1's monitor; its child is a process of s1.
	monitor, childPID := startProc(t, "sleep 30 & echo $!; wait")
	m, err := proc.Lookup(monitor.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	c.mons.add(m.Identity, "s1")
	child, _ := strconv.Atoi(childPID)
	marked, _ := startProc(t, "echo; exec sleep 30", home.SessionEnv+"=s2")
	junk, _ := startProc(t, "echo; exec sleep 30", home.SessionEnv+"=../x")
	outside, _ := startProc(t, "echo; exec sleep 30")
	// s3 is being launched from inside s0: its monitor was handed it and
	// its command runs, but its record is not on disk yet.
	launching, launchingChild := startProc(t, "sleep 30 & echo $!; wait")
	c.mons.begin("s3", []string{"s0"})
	c.mons.told("s3", launching.Process.Pid)
	unmarkedChild, _ := strconv.Atoi(launchingChild)
	for _, tc := range []struct {
		name string
		pid  int
		want []string
	}{
		{"the monitor itself", monitor.Process.Pid, []string{"s1"}},
		{"a process below the monitor", child, []string{"s1"}},
		{"a process with a session's marker, and what that one was started from", marked.Process.Pid, []string{"s0", "s2"}},
		{"a marker that is no session id", junk.Process.Pid, nil},
		{"a process outside", outside.Process.Pid, nil},
		{"a process of a session being launched, before its record", unmarkedChild, []string{"s0", "s3"}},
	} {
		caller := proc.PinProcess(tc.pid, os.Getuid())
		got, err := c.principal(caller)
		caller.Close()
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
		}
	}

	// Pinned while it ran, then gone: the same pid is not taken for it.
	gone, _ := startProc(t, "echo; exec sleep 30")
	caller := proc.PinProcess(gone.Process.Pid, os.Getuid())
	defer caller.Close()
	gone.Process.Kill()
	gone.Wait()
	dead := proc.PinProcess(gone.Process.Pid, os.Getuid())
	defer dead.Close()
	for name, caller := range map[string]*proc.Caller{"exited after it connected": caller, "exited before": dead, "pid not known here": proc.UnknownCaller()} {
		if got, err := c.principal(caller); !errors.Is(err, proc.ErrUnproven) {
			t.Errorf("%s: %v %v, want %v", name, got, err, proc.ErrUnproven)
		}
	}
}

// Two sessions of one principal never answer each other: the target, a
// session started from it, one it was started from, a sibling.
func TestSharedPrincipal(t *testing.T) {
	t.Parallel()
	target := api.Session{ID: "t", LaunchedFrom: []string{"a", "root"}}
	for _, tc := range []struct {
		name string
		mine []string
		want string
	}{
		{"outside every session", nil, ""},
		{"an unrelated session", []string{"x"}, ""},
		{"the target itself", []string{"t"}, "t"},
		{"a session started from the target", []string{"child", "t", "a", "root"}, "t"},
		{"the session that started it", []string{"a", "root"}, "a"},
		{"a sibling", []string{"sib", "root"}, "root"},
	} {
		if got := sharedPrincipal(tc.mine, target); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The monitor index keeps only monitors that still run once it grows: a
// long-lived service that started many sessions does not keep them all.
func TestMonitorIndexForgetsExitedMonitors(t *testing.T) {
	t.Parallel()
	self, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var m monitorIndex
	m.add(self.Identity, "live")
	for i := range 100 {
		m.add(proc.Identity{PID: 1<<22 + i, Start: 1}, "gone")
	}
	if n := len(m.byPID); n > 64 {
		t.Fatalf("%d monitors indexed, %d of them exited", n, n-1)
	}
	if got := m.session(self); got != "live" {
		t.Fatalf("the running monitor reads %q", got)
	}
}

// A request relayed for a process (the web dashboard's) is held to the
// rule for that process as well as for its caller: the relay adds a
// refusal, never lifts one, and a relayed process that cannot be told is
// refused. A launch through a relay is of the relayed process's principal.
func TestRelayedIsHeldToTheRule(t *testing.T) {
	t.Parallel()
	h := home.Home(t.TempDir())
	if err := h.Ensure(); err != nil {
		t.Fatal(err)
	}
	c := New(context.Background(), Options{Home: h})
	// A shell stands for s1's monitor; its child is a process of s1.
	monitor, childPID := startProc(t, "sleep 30 & echo $!; wait")
	m, err := proc.Lookup(monitor.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	c.mons.add(m.Identity, "s1")
	inside, _ := strconv.Atoi(childPID)
	outsider, _ := startProc(t, "echo; exec sleep 30")
	gone, _ := startProc(t, "echo; exec sleep 30")
	goneCaller := proc.PinProcess(gone.Process.Pid, os.Getuid())
	defer goneCaller.Close()
	gone.Process.Kill()
	gone.Wait()
	pin := func(pid int) *proc.Caller {
		c := proc.PinProcess(pid, os.Getuid())
		t.Cleanup(func() { c.Close() })
		return c
	}
	in, out := pin(inside), pin(outsider.Process.Pid)

	asking := api.Session{ID: "s1", WaitingFor: api.WaitingPermission}
	idle := api.Session{ID: "s1", WaitingFor: api.WaitingInput}
	for _, tc := range []struct {
		name            string
		caller, relayed *proc.Caller
		target          api.Session
		attach          bool
		want            string // in the refusal; "" when allowed
	}{
		{"outside, relayed for outside", out, out, asking, false, ""},
		{"outside, relayed for the session itself", out, in, asking, false, "relayed for pid " + childPID + ": pid " + childPID + " is of session s1's principal"},
		{"the service itself, relayed for the session", nil, in, asking, false, "keys typed now would answer it"},
		{"relayed for the session, nothing asked", out, in, idle, false, ""},
		{"relayed for the session, attach", out, in, idle, true, "may not attach to session s1"},
		{"relayed for a process that exited", out, goneCaller, asking, false, "cannot prove who is asking"},
		{"inside, relayed for outside: the relay lifts nothing", in, out, asking, false, "keys typed now would answer it"},
		{"outside, no relay", out, nil, asking, false, ""},
	} {
		ctx := context.Background()
		if tc.caller != nil {
			ctx = WithCaller(ctx, tc.caller)
		}
		if tc.relayed != nil {
			ctx = WithRelayed(ctx, tc.relayed, "web from 127.0.0.1:5")
		}
		err := c.mayType(ctx, tc.target, tc.attach)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || api.CodeOf(err) != api.CodeForbidden):
			t.Errorf("%s: %v, want a refusal saying %q", tc.name, err, tc.want)
		}
		// Answering follows the same rule, whatever is asked.
		if tc.caller == nil || tc.attach || tc.target.WaitingFor != api.WaitingPermission {
			continue
		}
		if err := c.mayDecide(ctx, tc.caller, tc.target); (tc.want == "") != (err == nil) || (err != nil && api.CodeOf(err) != api.CodeForbidden) {
			t.Errorf("%s: answering: %v", tc.name, err)
		}
	}

	ctx := WithRelayed(WithCaller(context.Background(), out), in, "web from 127.0.0.1:5")
	if got, err := c.lineage(ctx, api.RunRequest{}); err != nil || !slices.Equal(got, []string{"s1"}) {
		t.Errorf("a launch relayed for a process of s1: launched_from %v (%v), want [s1]", got, err)
	}
	ctx = WithRelayed(WithCaller(context.Background(), out), goneCaller, "web from 127.0.0.1:5")
	if got, err := c.lineage(ctx, api.RunRequest{}); err == nil {
		t.Errorf("a launch relayed for a process that exited: launched_from %v, want a refusal", got)
	}
}
