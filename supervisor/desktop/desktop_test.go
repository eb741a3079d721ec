package desktop

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// sessionBus starts a real dbus-daemon for the test and returns its address.
func sessionBus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Skip("SKIP: dbus-daemon is not installed (apt-get install dbus)")
	}
	sock := filepath.Join(t.TempDir(), "bus")
	cmd := exec.Command(bin, "--session", "--nofork", "--print-address", "--address=unix:path="+sock)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	go io.Copy(io.Discard, out)
	return strings.TrimSpace(line)
}

// listener is a notification server on the bus: it records what it is
// asked to show and to close.
type listener struct {
	notes  chan []string
	closes chan uint32
}

func (l *listener) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	l.notes <- []string{app, summary, body}
	return 7, nil
}

func (l *listener) CloseNotification(id uint32) *dbus.Error {
	l.closes <- id
	return nil
}

func listen(t *testing.T, addr string) *listener {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	l := &listener{notes: make(chan []string, 4), closes: make(chan uint32, 4)}
	if err := conn.Export(l, path, iface); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName(dest, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: %v (reply %d)", dest, err, reply)
	}
	return l
}

func TestDesktopNotificationOnARealSessionBus(t *testing.T) {
	addr := sessionBus(t)
	l := listen(t, addr)
	n, err := Open(addr, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	n.Waiting(Note{SessionID: "s1", Summary: "claude waits for permission", Body: "Bash: rm -rf build"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case got := <-l.notes:
		want := []string{"agentctl", "claude waits for permission", "Bash: rm -rf build"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("notification = %q, want %q", got, want)
		}
	case <-ctx.Done():
		t.Fatal("the listener received no notification")
	}
	// Shown, then withdrawn once the session no longer waits.
	for {
		n.mu.Lock()
		_, shown := n.shown["s1"]
		n.mu.Unlock()
		if shown {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("notification id never recorded")
		case <-time.After(10 * time.Millisecond):
		}
	}
	n.Resumed("s1")
	select {
	case id := <-l.closes:
		if id != 7 {
			t.Fatalf("closed notification %d, want 7", id)
		}
	case <-ctx.Done():
		t.Fatal("the notification was not withdrawn")
	}
}

func TestDesktopQuickAnswerDoesNotPing(t *testing.T) {
	addr := sessionBus(t)
	l := listen(t, addr)
	n, err := Open(addr, time.Hour, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	n.Waiting(Note{SessionID: "s1", Summary: "x"})
	n.Resumed("s1")
	n.Close()
	select {
	case got := <-l.notes:
		t.Fatalf("a resumed session was notified: %q", got)
	default:
	}
}

func TestDesktopNoBus(t *testing.T) {
	if _, err := Open("unix:path="+filepath.Join(t.TempDir(), "none"), 0, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("Open without a bus succeeded")
	}
}
