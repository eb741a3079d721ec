package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

// hostileSSH writes a stand-in for ssh whose far end is a hostile
// `agentctl dial-stdio`: it greets, reads the request's head, and answers
// as its first argument says. AGENTCTL_SSH_COMMAND set to what it returns
// (plus a mode) makes every ssh:// host that far end.
func hostileSSH(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script, pids := filepath.Join(dir, "ssh"), filepath.Join(dir, "pids")
	// Each far end notes its pid: one the CLI left running (it exits
	// without closing its connections) is ended with the test.
	t.Cleanup(func() {
		b, _ := os.ReadFile(pids)
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			// Still the far end's sleep, not a process that took its pid.
			if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && pid > 0 && strings.HasPrefix(string(cmd), "sleep\x00") {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	hostile := `\u001b]0;pwned\u0007\u001b[2J\u202egnp.exe\u200b\ufeff`
	list := `{"sessions":[],"warnings":["` + hostile + `"]}`
	apiErr := `{"code":"invalid","message":"` + hostile + `"}`
	body := fmt.Sprintf(`echo $$ >>'%s'
mode=$1
if [ "$mode" = stderr ]; then
	printf 'ssh: \033]0;pwned\007\033[2J\342\200\256gnp.exe\n' >&2
	exit 255
fi
printf 'agentctl-dial-stdio protocol=%d version=test\n'
cr=$(printf '\r')
while IFS= read -r line; do
	[ "$line" = "$cr" ] && break
	[ -z "$line" ] && break
done
answer() { printf 'HTTP/1.1 %%s\r\nContent-Type: application/json\r\nContent-Length: %%d\r\n\r\n%%s' "$1" "${#2}" "$2"; }
case "$mode" in
flood)
	printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{"sessions":[{"id":"'
	exec tr '\0' a </dev/zero ;;
stall)
	printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{"sessions":['
	exec sleep 600 ;;
warnings) answer '200 OK' '%s' ;;
error) answer '400 Bad Request' '%s' ;;
esac
exec sleep 600
`, pids, api.Protocol, list, apiErr)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return "/bin/sh " + script
}

// Nothing another host says reaches the terminal raw: its ssh's standard
// error, its API's error messages and its list's warnings keep no escape
// sequence and no bidi or zero-width character.
func TestHostileRemoteTextIsCleaned(t *testing.T) {
	ssh := hostileSSH(t)
	for _, tc := range []struct {
		mode string
		args []string
		says string
	}{
		{"stderr", []string{"list", "-H", "ssh://evil"}, "gnp.exe"},
		{"error", []string{"status", "-H", "ssh://evil", "abc"}, "gnp.exe"},
		{"warnings", []string{"list", "-H", "ssh://evil"}, "gnp.exe"},
		{"warnings", []string{"list", "--hosts", "ssh://evil,ssh://evil2"}, "evil2: "},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			e := NewEnv(t)
			e.Setenv("AGENTCTL_SSH_COMMAND", ssh+" "+tc.mode)
			_, stderr, _ := e.Run(tc.args...)
			if !strings.Contains(stderr, tc.says) {
				t.Fatalf("agentctl %v said %q, not %q", tc.args, stderr, tc.says)
			}
			for _, bad := range []string{"\x1b", "\a", "\u202e", "\u200b", "\ufeff"} {
				if strings.Contains(stderr, bad) {
					t.Errorf("agentctl %v printed %q raw: %q", tc.args, bad, stderr)
				}
			}
		})
	}
}

// A far end that floods an answer, or sends its head and then nothing,
// costs the CLI a bounded amount of memory and time, and the error names
// the host and what it exceeded. The figures are logged (peak RSS, time).
func TestHostileRemoteIsBounded(t *testing.T) {
	ssh := hostileSSH(t)
	for _, tc := range []struct {
		mode string
		args []string
		says []string
	}{
		{"flood", []string{"list", "-H", "ssh://evil"}, []string{"host evil", "a session over its bound of 8 MiB"}},
		{"flood", []string{"list", "--hosts", "ssh://evil,ssh://evil2"}, []string{"host evil", "host evil2", "over its bound"}},
		{"stall", []string{"list", "-H", "ssh://evil"}, []string{"host evil", "nothing came for 30s"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			e := NewEnv(t)
			e.Setenv("AGENTCTL_SSH_COMMAND", ssh+" "+tc.mode)
			cmd := e.Command(tc.args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			began := time.Now()
			// The far end never ends by itself: a CLI that waits for it
			// is ended here (and fails the test) rather than hanging.
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				select {
				case <-done:
				case <-time.After(3 * time.Minute):
					cmd.Process.Kill()
				}
			}()
			cmd.Wait()
			close(done)
			took := time.Since(began)
			rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss >> 10
			t.Logf("agentctl %v (%s): %s, peak RSS %d MiB: %s", tc.args, tc.mode, took.Round(100*time.Millisecond), rss, strings.TrimSpace(stderr.String()))
			if cmd.ProcessState.Success() {
				t.Fatalf("agentctl %v succeeded against a hostile host", tc.args)
			}
			for _, w := range tc.says {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("agentctl %v said %q, not %q", tc.args, stderr.String(), w)
				}
			}
			// One session of 8 MiB at most is held: a CLI that kept
			// reading would pass this within seconds (3.3 GB in 20 s
			// before the bounds).
			if rss > 768 {
				t.Errorf("agentctl %v peaked at %d MiB", tc.args, rss)
			}
		})
	}
}
