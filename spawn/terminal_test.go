package spawn

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestTerminalWatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions", "s1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	w := newTerminalWatch(dir, "s1", slog.New(slog.DiscardHandler))
	read := func() *Terminal {
		t.Helper()
		term, err := ReadTerminal(dir)
		if err != nil {
			t.Fatal(err)
		}
		return term
	}
	if read() != nil {
		t.Fatal("terminal.json before anything happened")
	}
	// Text in the same chunk as the notification is part of it.
	w.output([]byte("\x1b]9;build needs input\x07 waiting for you"))
	if n := read().Notification; !n.Pending() || n.Text != "build needs input" || n.Kind != NotifyOSC9 {
		t.Fatalf("notification %+v", n)
	}
	// Escape sequences alone (a cursor blink, a redraw of nothing) do not
	// answer it.
	w.output([]byte("\x1b[?25h\x1b[H\r\n"))
	if !read().Notification.Pending() {
		t.Fatal("cleared by output without text")
	}
	// Text printed well after it: the program moved on.
	w.mu.Lock()
	w.state.Notification.At = w.state.Notification.At.Add(-time.Second)
	w.mu.Unlock()
	w.output([]byte("compiling..."))
	if n := read().Notification; n.Pending() || n.ClearedBy != "output" {
		t.Fatalf("after later output: %+v", n)
	}
	// A bell, then input.
	w.output([]byte("\a"))
	if n := read().Notification; !n.Pending() || n.Kind != NotifyBell {
		t.Fatalf("bell: %+v", n)
	}
	w.input()
	if n := read().Notification; n.Pending() || n.ClearedBy != "input" {
		t.Fatalf("after input: %+v", n)
	}
	// A poke is waiting for the reporter.
	select {
	case <-w.poke:
	default:
		t.Fatal("the service was not to be told")
	}
	w.stop()
}
