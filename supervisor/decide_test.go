package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/claude"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

// permissionHook reports a Claude PermissionRequest for session id as its
// hook would, and hands back the service's answer once it comes.
func permissionHook(h home.Home, id, command string) <-chan api.HookReply {
	payload, _ := json.Marshal(map[string]any{"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": map[string]string{"command": command}})
	out := make(chan api.HookReply, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		r, err := client.ReportHook(ctx, client.HookReport{Socket: h.Socket(), SessionID: id, Agent: "claude", Payload: payload})
		if err != nil {
			r = api.HookReply{Message: "hook report failed: " + err.Error()}
		}
		out <- r
	}()
	return out
}

// startHookService starts a service whose adapters read Claude Code's
// hooks (from a store of its own).
func startHookService(t *testing.T) *service {
	t.Helper()
	return startServiceWith(t, newHome(t), []adapters.Adapter{claude.New(adapters.Env{Home: t.TempDir()})})
}

// waitRequest waits until session id asks permission for command, and
// returns the request's id.
func (s *service) waitRequest(id, command string) string {
	s.t.Helper()
	var req string
	eventually(s.t, 10*time.Second, "the session to ask for "+command, func() bool {
		got, err := s.client.Get(context.Background(), id)
		if err == nil && got.Waiting != nil && got.Waiting.Input == command && got.Waiting.Request != "" {
			req = got.Waiting.Request
			return true
		}
		return false
	})
	return req
}

// An answer names the request it answers: once another request replaced
// the one shown, an approval of the old one is refused, naming the new,
// and the new one is not allowed by it. An approval that names none is
// refused; a denial that names none denies what is pending.
func TestDecideNamesTheRequest(t *testing.T) {
	t.Parallel()
	svc := startHookService(t)
	sess, err := svc.run(api.RunRequest{Command: []string{"sleep", "600"}, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first := permissionHook(svc.home, sess.ID, "ls")
	shown := svc.waitRequest(sess.ID, "ls")
	second := permissionHook(svc.home, sess.ID, "rm -rf ~")
	if r := <-first; r.Behavior != "" {
		t.Fatalf("the replaced request's hook got %+v, want no decision", r)
	}
	now := svc.waitRequest(sess.ID, "rm -rf ~")
	if now == shown {
		t.Fatalf("the new request has the old one's id %s", now)
	}

	_, err = svc.client.Decide(ctx, sess.ID, api.Decision{Action: api.DecisionApprove, Request: shown})
	if api.CodeOf(err) != api.CodeChanged || !strings.Contains(err.Error(), now) || !strings.Contains(err.Error(), "rm -rf ~") {
		t.Fatalf("approve of the replaced request: %v, want %s naming %s", err, api.CodeChanged, now)
	}
	_, err = svc.client.Decide(ctx, sess.ID, api.Decision{Action: api.DecisionApprove})
	if api.CodeOf(err) != api.CodeInvalid || !strings.Contains(err.Error(), "--request") {
		t.Fatalf("approve without a request: %v, want %s", err, api.CodeInvalid)
	}
	// Still pending, not allowed: a denial that names none takes it.
	if _, err := svc.client.Decide(ctx, sess.ID, api.Decision{Action: api.DecisionDeny, Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	if r := <-second; r.Behavior != "deny" {
		t.Fatalf("the new request's hook got %+v, want deny", r)
	}
	b, err := os.ReadFile(filepath.Join(svc.home.SessionDir(sess.ID), home.DecisionsFile))
	if err != nil {
		t.Fatal(err)
	}
	var rec api.DecisionRecord
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &rec) != nil || rec.Request != now || rec.Action != api.DecisionDeny {
		t.Fatalf("decisions.jsonl %q: want one denial of %s", b, now)
	}

	third := permissionHook(svc.home, sess.ID, "make test")
	req := svc.waitRequest(sess.ID, "make test")
	if _, err := svc.client.Decide(ctx, sess.ID, api.Decision{Action: api.DecisionApprove, Request: req}); err != nil {
		t.Fatal(err)
	}
	if r := <-third; r.Behavior != "allow" {
		t.Fatalf("the approved request's hook got %+v, want allow", r)
	}
}

// TestHelperConnect is not a test: run by deadConnection, it connects the
// socket it inherits as fd 3 to $DECIDE_TEST_SOCKET and exits.
func TestHelperConnect(t *testing.T) {
	path := os.Getenv("DECIDE_TEST_SOCKET")
	if path == "" {
		t.Skip("run by deadConnection")
	}
	if err := unix.Connect(3, &unix.SockaddrUnix{Name: path}); err != nil {
		os.Exit(2)
	}
	os.Exit(0)
}

// deadConnection is a connection to socket whose connecting process has
// exited: a child connected the socket this process made, as a forked
// child does, and exited.
func deadConnection(t *testing.T, socket string) net.Conn {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fd) // the child gets it as fd 3 only
	}
	if err != nil {
		t.Fatal(err)
	}
	sock := os.NewFile(uintptr(fd), "socket")
	defer sock.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperConnect$")
	cmd.Env = append(os.Environ(), "DECIDE_TEST_SOCKET="+socket)
	cmd.ExtraFiles = []*os.File{sock}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("connector: %v %s", err, out)
	}
	conn, err := net.FileConn(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// post sends one request on conn and decodes the error it answers.
func post(t *testing.T, conn net.Conn, path string, v any) (int, api.Error) {
	t.Helper()
	body, _ := json.Marshal(v)
	hr, _ := http.NewRequest(http.MethodPost, "http://agentctl"+path, bytes.NewReader(body))
	hr.Header.Set("Content-Type", "application/json")
	if err := hr.Write(conn); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e api.Error
	json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e
}

// A decision sent on a connection whose connecting process has exited is
// refused: who asks cannot be proven. The request stays pending. A launch
// on such a connection is refused too (whose sessions it would be of
// cannot be told).
func TestDecideFromADeadConnectorIsRefused(t *testing.T) {
	t.Parallel()
	svc := startHookService(t)
	sess, err := svc.run(api.RunRequest{Command: []string{"sleep", "600"}, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	hook := permissionHook(svc.home, sess.ID, "rm -rf ~")
	req := svc.waitRequest(sess.ID, "rm -rf ~")

	code, e := post(t, deadConnection(t, svc.home.Socket()), "/v1/sessions/"+sess.ID+"/decide", api.Decision{Action: api.DecisionApprove, Request: req})
	if code != http.StatusForbidden || !strings.Contains(e.Message, "cannot prove who is asking") || !strings.Contains(e.Message, "has exited") {
		t.Fatalf("decide from a dead connector: %d %+v, want 403 cannot prove who is asking", code, e)
	}
	code, e = post(t, deadConnection(t, svc.home.Socket()), "/v1/sessions", api.RunRequest{Command: []string{"true"}, Cwd: t.TempDir()})
	if code != http.StatusForbidden || !strings.Contains(e.Message, "cannot prove who is asking") {
		t.Fatalf("launch from a dead connector: %d %+v, want 403 cannot prove who is asking", code, e)
	}
	if ids, _ := os.ReadDir(svc.home.Sessions()); len(ids) != 1 {
		t.Fatalf("%d session folders, want only the first session's", len(ids))
	}
	got, err := svc.client.Get(context.Background(), sess.ID)
	if err != nil || got.Waiting == nil || got.Waiting.Request != req {
		t.Fatalf("after the refusal the session shows %+v (%v), want request %s still pending", got.Waiting, err, req)
	}
	if _, err := svc.client.Decide(context.Background(), sess.ID, api.Decision{Action: api.DecisionDeny, Request: req}); err != nil {
		t.Fatal(err)
	}
	if r := <-hook; r.Behavior != "deny" {
		t.Fatalf("hook got %+v, want deny", r)
	}
}

// pidfds counts this process's open pidfds.
func pidfds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd here")
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.Contains(l, "pidfd") {
			n++
		}
	}
	return n
}

// The peer pinned at accept is let go with its connection: 200
// connections leave no pidfd open. (Not parallel: it counts the process's
// pidfds.)
func TestConnectionsLetTheirPeerGo(t *testing.T) {
	svc := startHookService(t)
	before := pidfds(t)
	for range 200 {
		conn, err := net.Dial("unix", svc.home.Socket())
		if err != nil {
			t.Fatal(err)
		}
		hr, _ := http.NewRequest(http.MethodGet, "http://agentctl/v1/daemon", nil)
		hr.Close = true
		if err := hr.Write(conn); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), hr)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		conn.Close()
	}
	eventually(t, 10*time.Second, "the connections' pidfds closed", func() bool {
		return pidfds(t) <= before+2
	})
}

// A relay's Via (the web dashboard, for the address it served) is recorded
// beside the caller the socket proved, not instead of it; one that cannot
// be a relay's name is refused.
func TestDecideRecordsVia(t *testing.T) {
	t.Parallel()
	svc := startHookService(t)
	sess, err := svc.run(api.RunRequest{Command: []string{"sleep", "600"}, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := svc.client.Decide(ctx, sess.ID, api.Decision{Action: api.DecisionDeny, Via: "web\nfrom x"}); api.CodeOf(err) != api.CodeInvalid {
		t.Fatalf("a via with a line break: %v, want %s", err, api.CodeInvalid)
	}
	hook := permissionHook(svc.home, sess.ID, "ls")
	req := svc.waitRequest(sess.ID, "ls")
	const via = "web from 127.0.0.1:50123"
	if _, err := svc.client.Decide(ctx, sess.ID, api.Decision{Action: api.DecisionApprove, Request: req, Via: via}); err != nil {
		t.Fatal(err)
	}
	if r := <-hook; r.Behavior != "allow" {
		t.Fatalf("the hook got %+v, want allow", r)
	}
	b, err := os.ReadFile(filepath.Join(svc.home.SessionDir(sess.ID), home.DecisionsFile))
	if err != nil {
		t.Fatal(err)
	}
	var rec api.DecisionRecord
	if err := json.Unmarshal(bytes.TrimSpace(b), &rec); err != nil {
		t.Fatalf("decisions.jsonl %q: %v", b, err)
	}
	if rec.Via != via || rec.PID != os.Getpid() || rec.UID != os.Getuid() {
		t.Fatalf("recorded %+v, want via %q beside this process's pid %d and uid %d", rec, via, os.Getpid(), os.Getuid())
	}
}

// A decision relayed for a process (Agentctl-Relayed, as the web dashboard
// sends it) is decided for that process as well as for the caller: one
// relayed for the session's own command, or for a process that is no
// longer the one named, is refused and the request stays pending; one
// relayed for a process outside is taken, and recorded with it.
func TestDecideRelayed(t *testing.T) {
	t.Parallel()
	svc := startHookService(t)
	sess, err := svc.run(api.RunRequest{Command: []string{"sleep", "600"}, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	outside := exec.Command("sleep", "600")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { outside.Process.Kill(); outside.Wait() })
	stamp := func(pid int) uint64 {
		p, err := proc.Lookup(pid)
		if err != nil {
			t.Fatal(err)
		}
		return p.Start
	}
	hook := permissionHook(svc.home, sess.ID, "ls")
	req := svc.waitRequest(sess.ID, "ls")
	approve := func(rel api.Relayed) error {
		ctx := client.WithRelay(context.Background(), rel)
		_, err := svc.client.Decide(ctx, sess.ID, api.Decision{Action: api.DecisionApprove, Request: req, Via: rel.Via})
		return err
	}
	for _, tc := range []struct {
		name string
		rel  api.Relayed
		code string
		want string
	}{
		{"the session's own command", api.Relayed{PID: sess.PID, Start: stamp(sess.PID), Via: "web from 127.0.0.1:1"}, api.CodeForbidden, "web from 127.0.0.1:1, relayed for pid"},
		{"a pid that is no longer the process named", api.Relayed{PID: outside.Process.Pid, Start: stamp(outside.Process.Pid) + 1}, api.CodeForbidden, "has exited"},
		{"no pid", api.Relayed{PID: 0}, api.CodeInvalid, api.RelayedHeader},
		{"a via with a line break", api.Relayed{PID: outside.Process.Pid, Start: stamp(outside.Process.Pid), Via: "web\nfrom x"}, api.CodeInvalid, "not a relay's name"},
	} {
		if err := approve(tc.rel); api.CodeOf(err) != tc.code || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("relayed for %s: %v, want %s saying %q", tc.name, err, tc.code, tc.want)
		}
	}
	if got, _ := svc.client.Get(context.Background(), sess.ID); got.Waiting == nil || got.Waiting.Request != req {
		t.Fatalf("after the refusals the session shows %+v, want request %s pending", got.Waiting, req)
	}
	rel := api.Relayed{PID: outside.Process.Pid, Start: stamp(outside.Process.Pid), Via: "web from 127.0.0.1:2"}
	if err := approve(rel); err != nil {
		t.Fatal(err)
	}
	if r := <-hook; r.Behavior != "allow" {
		t.Fatalf("the hook got %+v, want allow", r)
	}
	b, err := os.ReadFile(filepath.Join(svc.home.SessionDir(sess.ID), home.DecisionsFile))
	if err != nil {
		t.Fatal(err)
	}
	var rec api.DecisionRecord
	if err := json.Unmarshal(bytes.TrimSpace(b), &rec); err != nil {
		t.Fatalf("decisions.jsonl %q: %v", b, err)
	}
	rel.UID = os.Getuid()
	if rec.PID != os.Getpid() || rec.Relayed == nil || *rec.Relayed != rel {
		t.Fatalf("recorded %+v relayed %+v, want this process relaying for %+v", rec, rec.Relayed, rel)
	}
}
