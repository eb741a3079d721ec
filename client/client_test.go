package client

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/home"
)

// A service that did not answer in time is called busy, and is told to
// resume only when its process is stopped: "kill -CONT" for a running
// service is a false diagnosis.
func TestNotAnsweringSaysBusyOrStopped(t *testing.T) {
	t.Parallel()
	h := home.Home(t.TempDir())
	if err := os.WriteFile(h.LockFile(), []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o600); err != nil {
		t.Fatal(err)
	}
	c := New(h, "", false)
	for _, tc := range []struct {
		name     string
		stopped  bool
		want     string
		wantNone string
	}{
		{"stopped", true, "kill -CONT", "busy"},
		{"slow", false, "busy", "kill -CONT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := c.notAnswering("why", tc.stopped).Error()
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, tc.wantNone) {
				t.Errorf("message = %q; want %q and no %q", msg, tc.want, tc.wantNone)
			}
		})
	}
}
