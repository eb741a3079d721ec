package e2e

import (
	"context"
	"html"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

// webSelfAnswer is the shell a session runs to answer its own pending
// request through the dashboard, as a page would: the token from its
// file traded for the cookie, the session's page fetched for its CSRF
// token and request, then approve and send posted, to the dashboard's
// port and to its socket. Each answer's status goes to NAME.code, its
// page to NAME.out.
const webSelfAnswer = `base=$(cat web.base)
curl -s -c jar -o /dev/null "$base/?token=$(cat "$AGENTCTL_HOME/web.token")"
curl -s -b jar -o page.html "$base/s/$AGENTCTL_SESSION_ID"
csrf=$(sed -n 's/.*name="csrf" value="\([0-9a-f]*\)".*/\1/p' page.html | head -n 1)
req=$(sed -n 's/.*name="request" value="\([^"]*\)".*/\1/p' page.html | head -n 1)
post() { a=$1; shift; curl -s -b jar -H "Origin: $base" -o "$a.out" -w '%{http_code}' --data-urlencode "csrf=$csrf" "$@" "$base/s/$AGENTCTL_SESSION_ID/${a%-sock}" >"$a.tmp"; mv "$a.tmp" "$a.code"; }
post approve --data-urlencode "request=$req"
post send --data-urlencode "text=1"
post approve-sock --unix-socket "$AGENTCTL_HOME/web.sock" --data-urlencode "request=$req"
post send-sock --unix-socket "$AGENTCTL_HOME/web.sock" --data-urlencode "text=1"
cat >typed.out`

// A session that reads the dashboard's token cannot answer its own
// permission request through the dashboard (issue 27), over its port or
// its socket: the dashboard relays the process that connected, and the
// service refuses it as it refuses `agentctl approve` and `send` from
// inside the session. The request stays pending; the owner's answer
// through the dashboard then goes through, recorded with the process it
// was relayed for, and the owner's keys reach the session over the socket.
func TestWebRelayRefusesASessionAnsweringItself(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Skip("curl is not installed")
	}
	e := attentionEnv(t)
	e.MustRun("daemon", "start")
	w := e.startWeb(t, "--socket", filepath.Join(e.Home, "web.sock"))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "web.base"), []byte(w.Base), 0o600); err != nil {
		t.Fatal(err)
	}
	script := hookLine("rm -rf ~", "hook.out") + untilPending("rm -rf ~") + webSelfAnswer
	s := e.Start("--cwd", dir, "--", "sh", "-c", script)
	WaitFor(t, time.Minute, "the session's tries", func() bool {
		_, err := os.Stat(filepath.Join(dir, "send-sock.code"))
		return err == nil
	})
	if m := regexp.MustCompile(`name="request" value="([^"]+)"`).FindStringSubmatch(readFile(dir, "page.html")); m == nil {
		t.Fatalf("the session's page as the session fetched it has no request to approve (the test proves nothing):\n%s", readFile(dir, "page.html"))
	}
	for name, want := range map[string]string{
		"approve":      "a session cannot answer its own prompt",
		"send":         "keys typed now would answer it",
		"approve-sock": "a session cannot answer its own prompt",
		"send-sock":    "keys typed now would answer it",
	} {
		code, page := readFile(dir, name+".code"), html.UnescapeString(readFile(dir, name+".out"))
		if code != "403" || !strings.Contains(page, want) || !strings.Contains(page, "relayed for pid") {
			t.Errorf("%s from inside the session through the dashboard: %s, want 403 saying %q:\n%s", name, code, want, page)
		}
	}
	if out := readFile(dir, "hook.out"); strings.Contains(out, "allow") {
		t.Fatalf("the hook was answered allow from inside the session: %s", out)
	}
	got := e.Session(s.ID)
	if got.Waiting == nil || got.Waiting.Input != "rm -rf ~" {
		t.Fatalf("after the tries the session shows %+v, want the request still pending", got.Waiting)
	}
	if _, err := os.Stat(filepath.Join(e.SessionDir(s.ID), "decisions.jsonl")); err == nil {
		t.Fatalf("a decision was recorded: %s", readFile(e.SessionDir(s.ID), "decisions.jsonl"))
	}

	// The owner, from outside (this test, as a browser), approves it.
	hw := newWebHTTP(w.Base, w.Token)
	code, page := hw.do(t, "GET", "/s/"+s.ID, nil)
	m := csrfField.FindStringSubmatch(page)
	if code != http.StatusOK || m == nil {
		t.Fatalf("GET /s/%s: %d, no form:\n%s", s.ID, code, page)
	}
	if code, page := hw.do(t, "POST", "/s/"+s.ID+"/approve", url.Values{"csrf": {m[1]}, "request": {got.Waiting.Request}}); code != http.StatusSeeOther {
		t.Fatalf("approve from outside: %d:\n%s", code, page)
	}
	WaitFor(t, 10*time.Second, "the hook to print allow", func() bool {
		return strings.Contains(readFile(dir, "hook.out"), `"behavior":"allow"`)
	})
	rec := lastDecision(t, e.SessionDir(s.ID))
	if rec.Action != api.DecisionApprove || rec.PID != w.PID || rec.Relayed == nil || rec.Relayed.PID != os.Getpid() || rec.Relayed.Start == 0 || !strings.HasPrefix(rec.Relayed.Via, "web from 127.0.0.1:") {
		t.Fatalf("recorded %+v (relayed %+v), want the approval by agentctl web (pid %d) relayed for this test (pid %d)", rec, rec.Relayed, w.PID, os.Getpid())
	}

	// The owner's keys over the socket, where the kernel names the
	// process that connects.
	sock := &http.Client{Timeout: time.Minute, CheckRedirect: hw.hc.CheckRedirect, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", filepath.Join(e.Home, "web.sock"))
		},
	}}
	hw.hc = sock
	if code, page := hw.do(t, "POST", "/s/"+s.ID+"/send", url.Values{"csrf": {m[1]}, "text": {"from the owner"}}); code != http.StatusSeeOther {
		t.Fatalf("send over the socket from outside: %d:\n%s", code, page)
	}
	WaitFor(t, 10*time.Second, "the owner's keys to reach the terminal", func() bool {
		return strings.Contains(readFile(dir, "typed.out"), "from the owner")
	})
	if typed := readFile(dir, "typed.out"); strings.Contains(typed, "1") {
		t.Fatalf("keys sent from inside the session reached its terminal: %q", typed)
	}
}
