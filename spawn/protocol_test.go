package spawn

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
)

// The versions spoken are a range: the current one and the one before. A
// version outside it, older or newer (absent is 1), is refused with what
// to do.
func TestCheckProtocol(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		v      int
		lo, hi int
		// want are the words of the refusal; none: accepted.
		want []string
	}{
		{"absent is version 1", 0, 1, 2, nil},
		{"the previous version", 1, 1, 2, nil},
		{"the current version", 2, 1, 2, nil},
		{"newer", 3, 1, 2, []string{"session s1 runs monitor protocol 3", "speaks 1–2", "a newer release", "agentctl kill s1"}},
		{"older, no longer spoken", 1, 2, 3, []string{"session s1 runs monitor protocol 1", "speaks 2–3", "an older release", "agentctl kill s1"}},
		{"absent, no longer spoken", 0, 2, 3, []string{"monitor protocol 1;"}},
		{"one version spoken", 2, 1, 1, []string{"this agentctl speaks 1:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := checkProtocol("s1", tc.v, tc.lo, tc.hi)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("err = %v, want an ErrProtocol", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

// fakeMonitor listens on dir's session socket and answers one request with
// answer. Once stopped, it returns the request line it read, "" when no
// caller connected.
func fakeMonitor(t *testing.T, dir, answer string) (stop func() string) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(dir, home.SocketFile))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		defer close(got)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		line, _ := bufio.NewReader(conn).ReadString('\n')
		got <- line
		conn.Write([]byte(answer + "\n"))
	}()
	return func() string {
		ln.Close()
		return <-got
	}
}

// A caller speaks to a monitor in the monitor's own version, read from its
// record before it connects, and checks the monitor's hello: a monitor of a
// version this agentctl does not speak is not asked anything, and its
// refusal names the session and what to do.
func TestCallerSpeaksTheMonitorsVersion(t *testing.T) {
	t.Parallel()
	attach := func(ctx context.Context, dir string) error {
		a, err := Attach(ctx, dir, 24, 80)
		if err == nil {
			a.Close()
		}
		return err
	}
	input := func(ctx context.Context, dir string) error { return SendInput(ctx, dir, []byte("x")) }
	askRecord := func(ctx context.Context, dir string) error { _, err := AskRecord(ctx, dir); return err }
	for _, tc := range []struct {
		name string
		// record is launch.json's protocol field: -1 writes no launch.json.
		record int
		answer string
		do     func(context.Context, string) error
		// asked is the version the request names, 0 when the monitor must
		// not be asked at all.
		asked   int
		refused bool
	}{
		{"version 1 monitor, input", 0, `{"ok":true}`, input, 1, false},
		{"version 1 monitor, attach", 0, `{"ok":true}`, attach, 1, false},
		{"current monitor, input", MonitorProtocol, `{"ok":true,"protocol":2}`, input, MonitorProtocol, false},
		{"newer monitor, input", 9, `{"ok":true,"protocol":9}`, input, 0, true},
		{"newer monitor, attach", 9, `{"ok":true,"protocol":9}`, attach, 0, true},
		{"a hello of another version", MonitorProtocol, `{"ok":true,"protocol":9}`, input, MonitorProtocol, true},
		{"a damaged record is not repaired from a newer monitor", -1, `{"ok":true,"protocol":9,"record":{"id":"s1","argv":["sh"],"protocol":9}}`, askRecord, MonitorProtocol, true},
		{"a damaged record repaired from a version 1 monitor", -1, `{"ok":true,"record":{"id":"s1","argv":["sh"]}}`, askRecord, MonitorProtocol, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Short: the socket's path has a limit.
			dir, err := os.MkdirTemp("", "s1")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if tc.record >= 0 {
				rec := Record{ID: "s1", Argv: []string{"sh"}, Protocol: tc.record}
				if err := atomicfile.WriteJSON(filepath.Join(dir, home.LaunchFile), rec, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			stop := fakeMonitor(t, dir, tc.answer)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = tc.do(ctx, dir)
			line := stop()
			switch {
			case tc.refused && !errors.Is(err, ErrProtocol):
				t.Fatalf("err = %v, want a refusal of the monitor's protocol", err)
			case tc.refused && !strings.Contains(err.Error(), "agentctl kill s1"):
				t.Errorf("the refusal %q does not say what to do", err)
			case !tc.refused && err != nil:
				t.Fatalf("refused: %v", err)
			}
			if tc.asked == 0 {
				if line != "" {
					t.Fatalf("the monitor was asked %q", line)
				}
				return
			}
			var req controlRequest
			if err := json.Unmarshal([]byte(line), &req); err != nil {
				t.Fatalf("request %q: %v", line, err)
			}
			if req.Protocol != tc.asked {
				t.Errorf("the request speaks version %d, want %d", req.Protocol, tc.asked)
			}
		})
	}
}

// A monitor writes its version into its records and says it in every
// answer, takes requests of the versions it speaks (a version 1 caller
// names none), and refuses others.
func TestMonitorSaysItsVersion(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := NewStarter(ctx, os.Args[0], false, slog.New(slog.DiscardHandler))
	rec, dir := startSession(t, s, "sleep", "300")
	if rec.Protocol != MonitorProtocol {
		t.Errorf("the ready report's record speaks version %d, want %d", rec.Protocol, MonitorProtocol)
	}
	if disk, err := ReadRecord(dir); err != nil || disk.Protocol != MonitorProtocol {
		t.Errorf("launch.json: version %d, %v; want %d", disk.Protocol, err, MonitorProtocol)
	}
	ask := func(line string) controlResponse {
		t.Helper()
		conn, err := dial(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
		var resp controlResponse
		if err := json.NewDecoder(conn).Decode(&resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, tc := range []struct {
		request string
		ok      bool
	}{
		{`{"op":"resize","rows":30,"cols":100}`, true},
		{`{"op":"resize","rows":30,"cols":100,"protocol":1}`, true},
		{`{"op":"resize","rows":30,"cols":100,"protocol":2}`, true},
		{`{"op":"resize","rows":30,"cols":100,"protocol":9}`, false},
	} {
		resp := ask(tc.request)
		if resp.OK != tc.ok || resp.Protocol != MonitorProtocol {
			t.Errorf("%s: answered %+v, want ok %v and version %d", tc.request, resp, tc.ok, MonitorProtocol)
		}
		if !tc.ok && !strings.Contains(resp.Error, "monitor protocol 1–2, not 9") {
			t.Errorf("%s: the refusal says %q", tc.request, resp.Error)
		}
	}
	if _, err := Stop(ctx, dir, StopOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	exit, err := ReadExit(dir)
	if err != nil || exit == nil || exit.Protocol != MonitorProtocol {
		t.Fatalf("exit record %+v, %v; want version %d", exit, err, MonitorProtocol)
	}
}
