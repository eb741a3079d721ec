package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
)

// hostileSSH is a host whose `ssh … agentctl dial-stdio` is a script: it
// greets as agentctl does, reads the request's head, then answers as mode
// says (a real process on real pipes, as ssh would be).
func hostileSSH(t *testing.T, mode string) *SSH {
	t.Helper()
	dir := t.TempDir()
	script, pids := filepath.Join(dir, "ssh"), filepath.Join(dir, "pids")
	// Each far end notes its pid: one the client left running (a
	// connection it did not close) is ended with the test.
	t.Cleanup(func() { killNoted(pids) })
	body := fmt.Sprintf(`echo $$ >>%s
printf 'agentctl-dial-stdio protocol=%d version=test\n'
cr=$(printf '\r')
while IFS= read -r line; do
	[ "$line" = "$cr" ] && break
	[ -z "$line" ] && break
done
ok='HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n'
case "$1" in
flood)
	# An answer that does not end: 8 MiB of one string, then silence.
	printf "$ok"'{"sessions":[{"id":"'
	head -c 8388608 /dev/zero | tr '\0' a
	exec sleep 60 ;;
many)
	# Sessions without end.
	printf "$ok"'{"sessions":['
	yes '{"id":"x","adapter":"exec","status":"running"},' | head -c 8388608
	exec sleep 60 ;;
tiny)
	# Empty sessions without end: three bytes each, 512 decoded.
	printf "$ok"'{"sessions":['
	yes '{},' | head -c 8388608
	exec sleep 60 ;;
stall)
	# Its head, the start of a value, then nothing.
	printf "$ok"'{"sessions":['
	exec sleep 60 ;;
error-stall)
	printf 'HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n\r\n{"code":"internal","mess'
	exec sleep 60 ;;
long-line)
	printf "$ok"'{"data":"'
	head -c 8388608 /dev/zero | tr '\0' a
	exec sleep 60 ;;
esac
`, text.ShellQuote(pids), api.Protocol)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return &SSH{Name: "evil", Host: "evil", Command: []string{"/bin/sh", script, mode}}
}

// A broken or hostile far end cannot take this process's memory or hang
// a command: an answer over its bound, one that stops coming, and a
// stream's line over its bound each end the request with an error that
// names the host and what was exceeded.
func TestHostileRemoteIsBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode string
		call func(context.Context, *Client) error
		want error
		says string
	}{
		{"flood", func(ctx context.Context, c *Client) error { _, err := c.List(ctx, api.ListOptions{}); return err }, ErrTooLarge, "a session over its bound of 256 KiB"},
		{"many", func(ctx context.Context, c *Client) error { _, err := c.List(ctx, api.ListOptions{}); return err }, ErrTooLarge, "over its bound of 1 MiB"},
		{"tiny", func(ctx context.Context, c *Client) error { _, err := c.List(ctx, api.ListOptions{}); return err }, ErrTooLarge, "over its bound: more than 50000 sessions"},
		{"flood", func(ctx context.Context, c *Client) error { _, err := c.Get(ctx, "x"); return err }, ErrTooLarge, "512 KiB"},
		{"stall", func(ctx context.Context, c *Client) error { _, err := c.List(ctx, api.ListOptions{}); return err }, ErrStalled, "nothing came for 300ms"},
		{"error-stall", func(ctx context.Context, c *Client) error { _, err := c.Get(ctx, "x"); return err }, ErrStalled, "nothing came"},
		{"long-line", func(ctx context.Context, c *Client) error {
			return c.Logs(ctx, "x", api.LogOptions{}, func(api.LogChunk) error { return nil })
		}, ErrTooLarge, "a line over its bound of 1 MiB"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			c := NewRemote(hostileSSH(t, tc.mode), false)
			c.limits = limits{list: 1 << 20, sessions: 50_000, session: 256 << 10, reply: 512 << 10, errorReply: 64 << 10, line: 1 << 20, idle: 300 * time.Millisecond, total: 20 * time.Second}
			// The test's own bound: code that waits for the far end
			// fails here rather than hanging.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := tc.call(ctx, c)
			if !errors.Is(err, tc.want) {
				t.Fatalf("%s: %v, want %v", tc.mode, err, tc.want)
			}
			for _, w := range []string{"host evil", tc.says} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: %q does not say %q", tc.mode, err, w)
				}
			}
		})
	}
}

// A list read session by session is the list the service sent: its
// sessions in order, its warnings, and nothing lost of what a session
// holds.
func TestDecodeList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`{"sessions":[]}`, `{"sessions":[]}`},
		{`{"sessions":null,"warnings":["w"]}`, `{"sessions":null,"warnings":["w"]}`},
		{`{"warnings":["a","b"],"sessions":[{"id":"1","adapter":"claude","origin":"native","status":"running","labels":{"k":"v"}},{"id":"2","adapter":"exec","origin":"launched","status":"exited","exit_code":3}],"later":1}`,
			`{"sessions":[{"id":"1","adapter":"claude","origin":"native","status":"running","labels":{"k":"v"}},{"id":"2","adapter":"exec","origin":"launched","status":"exited","exit_code":3}],"warnings":["a","b"]}`},
	} {
		var got api.SessionList
		if err := decodeList(strings.NewReader(tc.in), &got, 10, 1<<20, "test"); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		b, _ := json.Marshal(got)
		if string(b) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, b, tc.want)
		}
	}
	for _, bad := range []string{``, `[]`, `{"sessions":{}}`, `{"sessions":[1]}`, `{"sessions":[` + strings.Repeat("{},", 10) + `{}]}`, `{"sessions":[` + strings.Repeat(" ", 100) + `{"id":"` + strings.Repeat("a", 4096) + `"}]}`} {
		var got api.SessionList
		if err := decodeList(strings.NewReader(bad), &got, 10, 1024, "test"); err == nil {
			t.Errorf("%.60s: decoded", bad)
		}
	}
}

// killNoted ends the processes whose pids a hostile far end noted in
// file (each a process this test started) that still wait.
func killNoted(file string) {
	b, _ := os.ReadFile(file)
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		// Still the far end's sleep, not a process that took its pid.
		if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && pid > 0 && strings.HasPrefix(string(cmd), "sleep\x00") {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// A list cut apart as it arrives, whatever the reads hand over (a byte at
// a time, or all at once), and decoded in batches across the cores, is
// the list json.Unmarshal makes of the whole answer: every session in
// order, strings with escapes, brackets and quotes inside them, and the
// fields after the sessions.
func TestDecodeListCutsAnywhere(t *testing.T) {
	t.Parallel()
	tricky := []string{`plain`, `a "quoted" ] } word`, `back\slash\`, "tab\tnew\nline", `{"not":"json"}`, "ünï€ode 😀", `\u0000`, ``}
	var want api.SessionList
	for i := range 1000 {
		code := i
		want.Sessions = append(want.Sessions, api.Session{ID: fmt.Sprintf("s%04d", i), Adapter: "exec", Status: api.StatusExited,
			Prompt: tricky[i%len(tricky)], Labels: map[string]string{"k": tricky[(i+3)%len(tricky)]}, ExitCode: &code,
			Command: []string{"sh", "-c", tricky[(i+5)%len(tricky)]}})
	}
	want.Warnings = []string{"one", `two "2"`}
	b, err := json.MarshalIndent(want, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	var whole api.SessionList
	if err := json.Unmarshal(b, &whole); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]func() io.Reader{
		"whole":      func() io.Reader { return bytes.NewReader(b) },
		"byte-wise":  func() io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
		"half-reads": func() io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
	} {
		// Sized by the service's count, or by a wrong one: decoded in
		// place as far as the room goes.
		for _, room := range []int{0, 300, 1000, 5000} {
			var got api.SessionList
			if room > 0 {
				got.Sessions = make([]api.Session, 0, room)
			}
			if err := decodeList(r(), &got, 5000, 1<<20, "test"); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !reflect.DeepEqual(got, whole) {
				t.Errorf("%s, room for %d: the list decoded differs from the whole answer's", name, room)
			}
		}
	}
	for _, bad := range []string{`{"sessions":[{"id":"a"} {"id":"b"}]}`, `{"sessions":[{"id":"a"},]}`, `{"sessions":[{"id":"a"}}`, `{"sessions":[{"id":"a"`, `{"sessions":[{"id":"a\"}]}`, `{"sessions":[]]}`, `{"sessions":[] "x":1}`} {
		var got api.SessionList
		if err := decodeList(strings.NewReader(bad), &got, 10, 1024, "test"); err == nil {
			t.Errorf("%s: decoded", bad)
		}
	}
}

// BenchmarkDecodeList is a list of 7,000 sessions, as the service writes
// its table view, cut apart and decoded here and by json.Unmarshal.
func BenchmarkDecodeList(b *testing.B) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var list api.SessionList
	for i := range 7000 {
		in, out, cost := int64(i*311), int64(i*7), float64(i)/1000
		at := now.Add(-time.Duration(i) * time.Minute)
		list.Sessions = append(list.Sessions, api.Session{ID: fmt.Sprintf("01a0e6c7-c3eb-79d1-885b-%012x", i), Handle: fmt.Sprintf("01a0%04x", i), Adapter: "claude",
			Origin: "discovered", Status: api.StatusEnded, CreatedAt: at, LastActivity: &at, Cwd: fmt.Sprintf("/home/dev/src/project-%03d", i%100),
			Model: "claude-sonnet-4-5", TokensIn: &in, TokensOut: &out, CostUSD: &cost,
			Prompt: strings.Repeat(`fix the "failing" tests\n `, 1+i%4)})
	}
	data, err := json.Marshal(list)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decodeList", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var got api.SessionList
			if err := decodeList(bytes.NewReader(data), &got, 50_000, 1<<20, "bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var got api.SessionList
			if err := json.Unmarshal(data, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
}
