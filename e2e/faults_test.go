package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

// A session whose monitor is frozen (SIGSTOP) or killed is still stopped,
// within a bound, with nothing of it left running: the service kills the
// tree itself from the identities recorded at the start, including a
// setsid child the group signal would miss. send to a frozen monitor fails
// fast, naming it.
func TestStopWithAFrozenOrDeadMonitor(t *testing.T) {
	e := NewEnv(t)
	for _, tc := range []struct {
		name  string
		fault syscall.Signal
		flags []string
	}{
		{"frozen monitor, force", syscall.SIGSTOP, []string{"--force"}},
		{"frozen monitor, graceful", syscall.SIGSTOP, []string{"--timeout", "1s"}},
		{"killed monitor", syscall.SIGKILL, []string{"--timeout", "1s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := e.Start("--", "sh", "-c", `setsid sh -c 'trap "" TERM HUP; sleep 300' & echo ready; sleep 300`)
			WaitFor(t, 10*time.Second, "the script to be ready", func() bool {
				b, _ := os.ReadFile(filepath.Join(e.SessionDir(s.ID), "output.log"))
				return bytes.Contains(b, []byte("ready"))
			})
			shim := shimPID(t, e, s.ID)
			tree := descendantsOf(t, shim)
			if len(tree) < 2 {
				t.Fatalf("want the agent and its setsid child under the monitor, got %v", tree)
			}
			killPID(t, shim, tc.fault)
			defer syscall.Kill(shim, syscall.SIGKILL)
			if tc.fault == syscall.SIGSTOP {
				began := time.Now()
				_, stderr, code := e.Run("send", s.ID, "hello")
				if code == 0 || !strings.Contains(stderr, "not answering") || time.Since(began) > 5*time.Second {
					t.Errorf("send to a frozen monitor: exit %d after %s, %q; want a fast failure naming it", code, time.Since(began), stderr)
				}
			}
			began := time.Now()
			var final api.Session
			e.JSON(&final, append(append([]string{"stop", "--json"}, tc.flags...), s.ID)...)
			took := time.Since(began)
			if !final.Status.Ended() {
				t.Errorf("after stop the session is %s", final.Status)
			}
			if took > 20*time.Second {
				t.Errorf("stop took %s", took)
			}
			for _, pid := range append(tree, shim) {
				if alive(pid) {
					t.Errorf("pid %d of the session survived the stop", pid)
				}
			}
		})
	}
}
