package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/api"
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

// The auto-start tries the installed unit's starter it was given before it
// starts a service of its own, and stops there when the starter handled it.
func TestAutostartGoesThroughTheInstalledStarter(t *testing.T) {
	t.Parallel()
	errUnit := errors.New("the unit would not start")
	for _, tc := range []struct {
		name    string
		starter func(calls *[]string) InstalledStarter
		want    string
		called  bool
	}{
		{"no starter: a service of its own", nil, "no-such-agentctl daemon run", false},
		{"no unit serves the home: a service of its own", func(calls *[]string) InstalledStarter {
			return func(_ context.Context, home string) (bool, error) { *calls = append(*calls, home); return false, nil }
		}, "no-such-agentctl daemon run", true},
		{"the unit's start failed", func(calls *[]string) InstalledStarter {
			return func(_ context.Context, home string) (bool, error) {
				*calls = append(*calls, home)
				return true, errUnit
			}
		}, errUnit.Error(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := home.Home(t.TempDir())
			c := New(h, filepath.Join(t.TempDir(), "no-such-agentctl"), true)
			var calls []string
			if tc.starter != nil {
				c.StartInstalledWith(tc.starter(&calls))
			}
			_, err := c.List(context.Background(), api.ListOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("List with no service: %v; want an error with %q", err, tc.want)
			}
			if got := len(calls) == 1 && calls[0] == string(h); got != tc.called {
				t.Errorf("starter calls %q; want one with %s: %v", calls, h, tc.called)
			}
		})
	}
}
