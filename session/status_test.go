package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/spawn"
)

func TestLaunchedStatus(t *testing.T) {
	code := 3
	for _, tc := range []struct {
		name    string
		st      spawn.State
		want    api.Status
		warning bool
	}{
		{"exit record with a code", spawn.State{Exit: &spawn.ExitRecord{ExitCode: &code}}, api.StatusExited, false},
		{"exit record with a signal", spawn.State{Exit: &spawn.ExitRecord{Signal: "SIGKILL"}}, api.StatusKilled, false},
		// The exit record wins over liveness: the parent saw the exit.
		{"exit record beats a live pid", spawn.State{Exit: &spawn.ExitRecord{ExitCode: &code}, Running: true}, api.StatusExited, false},
		{"live process", spawn.State{Running: true, ShimAlive: true}, api.StatusRunning, false},
		{"live process without its monitor", spawn.State{Running: true}, api.StatusRunning, false},
		{"gone, monitor finishing", spawn.State{ShimAlive: true}, api.StatusUnknown, true},
		{"gone, monitor gone, no record", spawn.State{}, api.StatusLost, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, warning := launchedStatus(tc.st)
			if got != tc.want || (warning != "") != tc.warning {
				t.Errorf("launchedStatus = %s, %q; want %s (warning: %v)", got, warning, tc.want, tc.warning)
			}
		})
	}
}

func TestNativeStatus(t *testing.T) {
	for _, tc := range []struct {
		name         string
		state        adapters.NativeState
		alive        bool
		vouched      bool
		want         api.Status
		wantActivity string
	}{
		{"live process, busy", adapters.NativeBusy, true, true, api.StatusRunning, "busy"},
		{"live process, the store says done", adapters.NativeDone, true, true, api.StatusRunning, ""},
		{"no process, the store says idle", adapters.NativeIdle, false, true, api.StatusRunning, "idle"},
		{"no process, the store says running", adapters.NativeRunning, false, true, api.StatusRunning, ""},
		{"done", adapters.NativeDone, false, true, api.StatusEnded, ""},
		{"failed", adapters.NativeFailed, false, true, api.StatusEnded, ""},
		{"aborted", adapters.NativeAborted, false, true, api.StatusEnded, ""},
		{"the store does not say", adapters.NativeUnknown, false, true, api.StatusUnknown, ""},
		// An adapter that failed this time vouches for nothing.
		{"adapter failed, was busy", adapters.NativeBusy, true, false, api.StatusUnknown, ""},
		{"adapter failed, was done", adapters.NativeDone, false, false, api.StatusUnknown, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, activity := nativeStatus(tc.state, tc.alive, tc.vouched)
			if got != tc.want || activity != tc.wantActivity {
				t.Errorf("nativeStatus = %s, %q; want %s, %q", got, activity, tc.want, tc.wantActivity)
			}
		})
	}
}

// launchedHere writes the launch record of a running session whose process
// is this test, as the monitor would have.
func launchedHere(t *testing.T, h home.Home, adapter, nativeID string) string {
	t.Helper()
	self, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	id := home.NewID(time.Now())
	dir := h.SessionDir(id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	rec := spawn.Record{ID: id, Adapter: adapter, Argv: []string{adapter}, Cwd: "/", NativeID: nativeID, CreatedAt: time.Now(), Process: self.Identity, PGID: self.PGID, Shim: self.Identity}
	if err := atomicfile.WriteJSON(filepath.Join(dir, home.LaunchFile), rec, 0o600); err != nil {
		t.Fatal(err)
	}
	return id
}

// status ID says what list says when an adapter fails: the warning is
// carried everywhere, never dropped.
func TestStatusShowsAdapterWarnings(t *testing.T) {
	h := home.Home(t.TempDir())
	f := &failing{}
	f.calls.Store(1) // every call from now on fails
	c := New(context.Background(), Options{Home: h, Adapters: adapters.NewSet(f), DiscoveryTimeout: time.Second})
	c.disc.first = 0 // its first discovery hangs: waited for no longer than any
	id := launchedHere(t, h, "flaky", "x1")
	sess, err := c.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Status != api.StatusRunning || !hasWarning(sess.Warnings, "adapter flaky") {
		t.Errorf("status = %s, warnings %q; want running with the adapter's warning", sess.Status, sess.Warnings)
	}
	list, err := c.List(context.Background(), api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasWarning(list.Warnings, "adapter flaky") {
		t.Errorf("list warnings %q lack the adapter's", list.Warnings)
	}
	tr, err := c.Transcript(context.Background(), id, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !hasWarning(tr.Warnings, "adapter flaky") {
		t.Errorf("peek warnings %q lack the adapter's", tr.Warnings)
	}
}

func hasWarning(ws []string, part string) bool {
	for _, w := range ws {
		if strings.Contains(w, part) {
			return true
		}
	}
	return false
}

// A discovered session whose store gives no creation time says nothing of
// it: unknown is omitted, not the zero time.
func TestDiscoveredSessionWithoutACreationTimeOmitsIt(t *testing.T) {
	s := fromNative(&adapters.NativeSession{Adapter: "claude", NativeID: "n1"}, true)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "created_at") || strings.Contains(string(b), "0001-01-01") {
		t.Errorf("session JSON = %s: want no created_at", b)
	}
}

// Thousands of junk folders make a few warnings and one summary, not one
// line each.
func TestJunkFoldersAreSummarised(t *testing.T) {
	h := home.Home(t.TempDir())
	for i := range 200 {
		dir := h.SessionDir(fmt.Sprintf("junk%03d", i))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, home.LaunchFile), []byte("{not json"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := New(context.Background(), Options{Home: h})
	list, err := c.List(context.Background(), api.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Warnings) != maxRecordWarnings+1 || !strings.Contains(list.Warnings[maxRecordWarnings], "195 more") {
		t.Errorf("warnings = %d lines, last %q; want %d named and a summary of 195 more", len(list.Warnings), list.Warnings[len(list.Warnings)-1], maxRecordWarnings)
	}
}

// A session folder others may write into is not trusted: its record is
// not read, but the session does not vanish: it is listed unknown, and the
// list, status and stop say how to make it readable again.
func TestFolderOthersMayWriteIsNotRead(t *testing.T) {
	h := home.Home(t.TempDir())
	id := launchedHere(t, h, "exec", "")
	dir := h.SessionDir(id)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	fix := "chmod 700 " + dir
	c := New(context.Background(), Options{Home: h})
	for _, all := range []bool{false, true} {
		list, err := c.List(context.Background(), api.ListOptions{All: all})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Sessions) != 1 || list.Sessions[0].ID != id || list.Sessions[0].Status != api.StatusUnknown ||
			!hasWarning(list.Sessions[0].Warnings, fix) || !hasWarning(list.Warnings, fix) {
			t.Errorf("list (all: %v) = %+v, warnings %q; want %s unknown, with a warning saying %q", all, list.Sessions, list.Warnings, id, fix)
		}
		if len(list.Sessions) == 1 && list.Sessions[0].PID != 0 {
			t.Errorf("the untrusted record was read: pid %d", list.Sessions[0].PID)
		}
	}
	for name, op := range map[string]func() error{
		"status": func() error { _, err := c.Get(context.Background(), id); return err },
		"stop":   func() error { _, err := c.Stop(context.Background(), id, api.StopRequest{Force: true}); return err },
	} {
		if err := op(); !errors.Is(err, ErrUnsafeFolder) || !strings.Contains(err.Error(), fix) {
			t.Errorf("%s = %v; want an unsafe-folder error saying %q", name, err, fix)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Get(context.Background(), id); err != nil || s.Status != api.StatusRunning {
		t.Errorf("after %s: status = %v, %v; want running", fix, s.Status, err)
	}
}

// A session whose agent ended and whose monitor, alive and not stopped,
// never writes the exit record (stuck) is waited for once: it reads
// unknown, naming the monitor, and later reads do not wait for it again,
// until the record is there.
func TestStuckMonitorIsWaitedForOnce(t *testing.T) {
	h := home.Home(t.TempDir())
	id := launchedHere(t, h, "exec", "")
	dir := h.SessionDir(id)
	rec, err := spawn.ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The agent: this pid with another start stamp, so it has ended; the
	// monitor: this test, alive.
	rec.Process.Start++
	if err := atomicfile.WriteJSON(filepath.Join(dir, home.LaunchFile), rec, 0o600); err != nil {
		t.Fatal(err)
	}
	r := newRecords(h, nil)
	for range 2 {
		s, err := r.get(id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != api.StatusUnknown || !hasWarning(s.Warnings, "has not written its exit record") {
			t.Fatalf("status %s, warnings %q; want unknown naming the monitor", s.Status, s.Warnings)
		}
		r.mu.Lock()
		waited := r.unsettled[id]
		r.mu.Unlock()
		if !waited {
			t.Fatal("a stuck monitor is not remembered: every read would wait for it again")
		}
	}
	if err := atomicfile.WriteJSON(filepath.Join(dir, home.ExitFile), spawn.ExitRecord{ExitCode: new(3), EndedAt: time.Now()}, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := r.get(id); err != nil || s.Status != api.StatusExited {
		t.Fatalf("after the record: %s, %v", s.Status, err)
	}
	if r.unsettled[id] {
		t.Error("a session whose record came is still marked unsettled")
	}
}
