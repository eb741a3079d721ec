package codex

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/adapters"
)

// Without a daemon, a turn runs in the session's own process (codex exec,
// --no-daemon): the interrupt has nothing to do and says so with no error,
// whether the store never had a daemon, its socket link points nowhere, or
// nothing listens on it any more. It never starts one. Stop, for a session
// agentctl did not start, says the session does not run there.
func TestNoDaemonNothingToInterrupt(t *testing.T) {
	t.Parallel()
	sockDir, err := os.MkdirTemp("", "cxd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	dead := filepath.Join(sockDir, "s")
	ln, err := net.Listen("unix", dead)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the file stays; nothing listens

	for _, target := range []string{"", filepath.Join(sockDir, "missing"), dead} {
		home, a := testHome(t)
		if target != "" {
			link := controlSocket(home)
			if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
		}
		id := "01a21197-69ab-7591-8a61-1426e59d636b"
		if err := a.InterruptTurn(context.Background(), id); err != nil {
			t.Errorf("socket %q: InterruptTurn = %v, want nil", target, err)
		}
		if err := a.Stop(context.Background(), id); !errors.Is(err, adapters.ErrNotRunning) {
			t.Errorf("socket %q: Stop = %v, want ErrNotRunning", target, err)
		}
		if _, err := os.Stat(filepath.Join(home, "app-server-daemon")); err == nil {
			t.Errorf("socket %q: a daemon was started", target)
		}
	}
}
