package e2e

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
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
)

// deadConnectorEnv makes this test binary, run inside a session, the
// adversary of TestSelfApprovalThroughADeadConnector: "approve" sends an
// approval on a connection a child made and left; "connect" is that
// child.
const deadConnectorEnv = "AGENTCTL_E2E_DEAD_CONNECTOR"

func init() {
	switch os.Getenv(deadConnectorEnv) {
	case "approve":
		os.Exit(approveThroughADeadConnector())
	case "connect":
		if err := unix.Connect(3, &unix.SockaddrUnix{Name: home.Home(os.Getenv("AGENTCTL_HOME")).Socket()}); err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
}

// approveThroughADeadConnector approves the request its own session
// waits on, on a connection a child process connected before it exited:
// the peer the kernel reports is that dead child. It prints the service's
// answer.
func approveThroughADeadConnector() int {
	h := home.Home(os.Getenv("AGENTCTL_HOME"))
	id := os.Getenv(home.SessionEnv)
	s, err := client.New(h, "", false).Get(context.Background(), id)
	if err != nil || s.Waiting == nil || s.Waiting.Request == "" {
		fmt.Println("no request to approve:", err)
		return 1
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fd) // the child gets it as fd 3 only
	}
	if err != nil {
		fmt.Println(err)
		return 1
	}
	sock := os.NewFile(uintptr(fd), "socket")
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), deadConnectorEnv+"=connect")
	child.ExtraFiles = []*os.File{sock}
	if err := child.Run(); err != nil {
		fmt.Println("connector:", err)
		return 1
	}
	conn, err := net.FileConn(sock)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	body, _ := json.Marshal(api.Decision{Action: api.DecisionApprove, Request: s.Waiting.Request})
	req, _ := http.NewRequest(http.MethodPost, "http://agentctl/v1/sessions/"+id+"/decide", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if err := req.Write(conn); err != nil {
		fmt.Println(err)
		return 1
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	fmt.Printf("status=%d %s\n", resp.StatusCode, b.String())
	return 0
}

// permissionRequest is what Claude Code gives its PermissionRequest hook
// on stdin when it asks to run command.
func permissionRequest(command string) string {
	b, _ := json.Marshal(map[string]any{"hook_event_name": "PermissionRequest", "session_id": "00000000-0000-4000-8000-000000000001", "tool_name": "Bash", "tool_input": map[string]string{"command": command}})
	return string(b)
}

// hookLine is the shell line that runs agentctl's own hook command in the
// background, as Claude Code runs it for a permission request, its answer
// in file out.
func hookLine(command, out string) string {
	return fmt.Sprintf("printf '%%s' '%s' | agentctl hook claude >%s 2>&1 &\n", permissionRequest(command), out)
}

// untilPending is the shell line that waits until the session itself
// shows a permission request of command.
func untilPending(command string) string {
	return fmt.Sprintf("until agentctl status --json \"$AGENTCTL_SESSION_ID\" | grep -qF '%q'; do sleep 0.1; done\n", command)
}

func readFile(dir, name string) string {
	b, _ := os.ReadFile(filepath.Join(dir, name))
	return string(b)
}

// attentionEnv is an installation whose sessions find agentctl on PATH.
func attentionEnv(t *testing.T) *Env {
	e := NewEnv(t)
	e.Setenv("PATH", filepath.Dir(e.Bin)+":"+os.Getenv("PATH"))
	return e
}

// A session cannot approve its own permission request by starting a
// sibling session that approves it (issue 32, finding 1): the sibling is
// of the session's principal, found by its marker variable and, without
// it, by its parents. The hook does not get allow; the owner's answer
// from outside then does.
func TestSelfApprovalThroughASiblingIsRefused(t *testing.T) {
	t.Parallel()
	e := attentionEnv(t)
	dir := t.TempDir()
	script := hookLine("rm -rf ~", "hook.out") + untilPending("rm -rf ~") +
		`agentctl run --wait -- agentctl approve "$AGENTCTL_SESSION_ID" >sibling.out 2>&1; echo "rc=$?" >>sibling.out
env -u AGENTCTL_SESSION_ID agentctl run --wait -- agentctl approve "$AGENTCTL_SESSION_ID" >unmarked.out 2>&1; echo "rc=$?" >>unmarked.out
wait; sleep 600`
	s := e.Start("--cwd", dir, "--", "sh", "-c", script)
	WaitFor(t, 30*time.Second, "both siblings to have tried", func() bool {
		return strings.Contains(readFile(dir, "unmarked.out"), "rc=")
	})
	for _, f := range []string{"sibling.out", "unmarked.out"} {
		out := readFile(dir, f)
		if strings.Contains(out, "rc=0") || !strings.Contains(out, "cannot answer its own prompt") {
			t.Errorf("%s: the sibling's approval was not refused:\n%s", f, out)
		}
	}
	if out := readFile(dir, "hook.out"); strings.Contains(out, "allow") {
		t.Fatalf("the hook was answered allow by a sibling: %s", out)
	}
	got := e.Session(s.ID)
	if got.Waiting == nil || got.Waiting.Input != "rm -rf ~" {
		t.Fatalf("after the siblings the session shows %+v, want the request still pending", got.Waiting)
	}
	siblings := 0
	for _, l := range e.Launched("--all") {
		if l.ID != s.ID {
			siblings++
			if !slices.Equal(l.LaunchedFrom, []string{s.ID}) {
				t.Errorf("sibling %s launched_from %v, want [%s]", l.ID, l.LaunchedFrom, s.ID)
			}
		}
	}
	if siblings != 2 {
		t.Errorf("%d siblings, want 2", siblings)
	}
	out := e.MustRun("approve", s.ID)
	if !strings.Contains(out, "approve") {
		t.Fatalf("approve from outside: %s", out)
	}
	WaitFor(t, 10*time.Second, "the hook to print allow", func() bool {
		return strings.Contains(readFile(dir, "hook.out"), `"behavior":"allow"`)
	})
}

// A session cannot approve its own request on a connection whose
// connecting process has exited (issue 32, finding 2): the service
// answers that it cannot prove who asks, and the hook is not allowed.
func TestSelfApprovalThroughADeadConnectorIsRefused(t *testing.T) {
	t.Parallel()
	e := attentionEnv(t)
	dir := t.TempDir()
	script := hookLine("rm -rf ~", "hook.out") + untilPending("rm -rf ~") +
		deadConnectorEnv + `=approve "$0" >dead.out 2>&1; echo "rc=$?" >>dead.out
wait; sleep 600`
	s := e.Start("--cwd", dir, "--", "sh", "-c", script, os.Args[0])
	WaitFor(t, 30*time.Second, "the approval through a dead connector", func() bool {
		return strings.Contains(readFile(dir, "dead.out"), "rc=")
	})
	out := readFile(dir, "dead.out")
	if !strings.Contains(out, "status=403") || !strings.Contains(out, "cannot prove who is asking") || !strings.Contains(out, "has exited") {
		t.Fatalf("the approval on a dead connector's connection was not refused:\n%s", out)
	}
	if out := readFile(dir, "hook.out"); strings.Contains(out, "allow") {
		t.Fatalf("the hook was answered allow: %s", out)
	}
	if got := e.Session(s.ID); got.Waiting == nil || got.Waiting.Input != "rm -rf ~" {
		t.Fatalf("after the refusal the session shows %+v, want the request still pending", got.Waiting)
	}
}

// An approval of what the person saw does not approve a request that
// replaced it (issue 32, finding 3): approve --request OLD is refused,
// naming the new request, which is not allowed; approve without --request
// shows the request it approves and approves that one.
func TestSwappedRequestIsNotApproved(t *testing.T) {
	t.Parallel()
	e := attentionEnv(t)
	dir := t.TempDir()
	script := hookLine("ls", "first.out") + "until [ -e swap ]; do sleep 0.1; done\n" + hookLine("rm -rf ~", "second.out") + "wait; sleep 600"
	s := e.Start("--cwd", dir, "--", "sh", "-c", script)
	var seen api.Session
	WaitFor(t, 20*time.Second, "the first request", func() bool {
		seen = e.Session(s.ID)
		return seen.Waiting != nil && seen.Waiting.Input == "ls" && seen.Waiting.Request != ""
	})
	shown := seen.Waiting.Request
	if out := e.MustRun("status", s.ID); !strings.Contains(out, shown) || !strings.Contains(out, "--request "+shown) {
		t.Fatalf("status does not show the request %s:\n%s", shown, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "swap"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var now api.Session
	WaitFor(t, 20*time.Second, "the request that replaces it", func() bool {
		now = e.Session(s.ID)
		return now.Waiting != nil && now.Waiting.Input == "rm -rf ~"
	})
	_, errOut, code := e.Run("approve", s.ID, "--request", shown)
	if code == 0 || !strings.Contains(errOut, "no longer pending") || !strings.Contains(errOut, now.Waiting.Request) {
		t.Fatalf("approve --request of the replaced request: exit %d, %s", code, errOut)
	}
	for _, f := range []string{"first.out", "second.out"} {
		if out := readFile(dir, f); strings.Contains(out, "allow") {
			t.Fatalf("%s: allowed by the answer to the replaced request: %s", f, out)
		}
	}
	if got := e.Session(s.ID); got.Waiting == nil || got.Waiting.Request != now.Waiting.Request {
		t.Fatalf("after the refusal the session shows %+v, want %s pending", got.Waiting, now.Waiting.Request)
	}
	out, errOut, code := e.Run("approve", s.ID)
	if code != 0 || !strings.Contains(errOut, "request "+now.Waiting.Request) || !strings.Contains(errOut, "rm -rf ~") {
		t.Fatalf("approve without --request: exit %d\n%s\n%s", code, out, errOut)
	}
	WaitFor(t, 10*time.Second, "the new request's hook to print allow", func() bool {
		return strings.Contains(readFile(dir, "second.out"), `"behavior":"allow"`)
	})
	var rec api.DecisionRecord
	b, _ := os.ReadFile(filepath.Join(e.SessionDir(s.ID), "decisions.jsonl"))
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &rec) != nil || rec.Request != now.Waiting.Request || rec.Input != "rm -rf ~" {
		t.Fatalf("decisions.jsonl %q: want the one approval of %s", b, now.Waiting.Request)
	}
}

// A session cannot answer its own permission prompt by typing at it
// either: send from inside it or from a session it started, and attach
// from inside it, are refused while the request is pending, and the
// request stays pending. The owner's keys from outside still reach it.
func TestSelfTypingAtAPromptIsRefused(t *testing.T) {
	t.Parallel()
	e := attentionEnv(t)
	dir := t.TempDir()
	script := hookLine("rm -rf ~", "hook.out") + untilPending("rm -rf ~") +
		`agentctl send "$AGENTCTL_SESSION_ID" 1 >self.out 2>&1; echo "rc=$?" >>self.out
agentctl run --wait -- agentctl send "$AGENTCTL_SESSION_ID" y >sibling.out 2>&1; echo "rc=$?" >>sibling.out
agentctl attach "$AGENTCTL_SESSION_ID" </dev/null >attach.out 2>&1; echo "rc=$?" >>attach.out
cat >typed.out`
	s := e.Start("--cwd", dir, "--", "sh", "-c", script)
	WaitFor(t, time.Minute, "the three tries", func() bool {
		return strings.Contains(readFile(dir, "attach.out"), "rc=")
	})
	for file, want := range map[string]string{
		"self.out":    "keys typed now would answer it",
		"sibling.out": "keys typed now would answer it",
		"attach.out":  "may not attach to session",
	} {
		if out := readFile(dir, file); strings.Contains(out, "rc=0") || !strings.Contains(out, want) {
			t.Errorf("%s: not refused (want %q):\n%s", file, want, out)
		}
	}
	if got := e.Session(s.ID); got.Waiting == nil || got.Waiting.Input != "rm -rf ~" {
		t.Fatalf("after the tries the session shows %+v, want the request still pending", got.Waiting)
	}
	e.MustRun("send", s.ID, "from the owner")
	WaitFor(t, 10*time.Second, "the owner's keys to reach the terminal", func() bool {
		return strings.Contains(readFile(dir, "typed.out"), "from the owner")
	})
	if typed := readFile(dir, "typed.out"); strings.Contains(typed, "1") || strings.Contains(typed, "y") {
		t.Fatalf("keys from inside the session reached its terminal: %q", typed)
	}
}
