package session

import (
	"syscall"
	"testing"
)

func TestParseSignal(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]syscall.Signal{"HUP": syscall.SIGHUP, "sigterm": syscall.SIGTERM, "SIGINT": syscall.SIGINT, "9": syscall.SIGKILL, "usr1": syscall.SIGUSR1} {
		if got, err := ParseSignal(in); err != nil || got != want {
			t.Errorf("ParseSignal(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "NOSUCH", "0", "-1", "999", "SIG"} {
		if _, err := ParseSignal(bad); err == nil {
			t.Errorf("ParseSignal(%q) accepted", bad)
		}
	}
}
