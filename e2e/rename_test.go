package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
)

// rename gives a session a new name that every command then reaches, with
// a launch name's checks; the launch record stays as it was written, and a
// restart keeps the new name.
func TestRename(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	run := e.Start("--name", "one", "--", "sleep", "300")
	other := e.Start("--name", "two", "--", "sleep", "300")
	done := e.Start("--", "true")
	e.WaitStatus(done.ID, api.StatusExited, 20*time.Second)
	e.List("--all") // the ended session's view is now kept by the service
	launch := filepath.Join(e.SessionDir(run.ID), home.LaunchFile)
	before, err := os.ReadFile(launch)
	if err != nil {
		t.Fatal(err)
	}

	if got := e.MustRun("rename", "one", "web"); got != run.ID+" web" {
		t.Fatalf("rename one web printed %q", got)
	}
	if s := e.Session("web"); s.ID != run.ID || s.Name != "web" {
		t.Fatalf("status web = %s named %q, want %s named web", s.ID, s.Name, run.ID)
	}
	if after, err := os.ReadFile(launch); err != nil || !bytes.Equal(before, after) {
		t.Fatalf("rename rewrote the launch record (%v)", err)
	}
	if _, _, code := e.Run("status", "one"); code == 0 {
		t.Fatal("the old name still reaches a session")
	}

	// Named as at launch: not a running session's name, not how another
	// session's id begins, no control characters, not empty.
	for _, bad := range []struct{ name, says string }{
		{"two", "taken by running session " + other.ID},
		{strings.ToUpper(other.ID[:6]), "how session " + other.ID + "'s id begins"},
		{"a\x1bb", "no control characters"},
		{"", "empty"},
	} {
		_, errOut, code := e.Run("rename", run.ID, bad.name)
		if code != 2 || !strings.Contains(errOut, bad.says) {
			t.Fatalf("rename to %q: exit %d, %q; want 2 and %q", bad.name, code, errOut, bad.says)
		}
	}
	if s := e.Session(run.ID); s.Name != "web" {
		t.Fatalf("a refused rename changed the name to %q", s.Name)
	}

	// An ended session too, and what a list kept of it follows.
	e.MustRun("rename", done.ID, "finished")
	found := false
	for _, s := range e.List("--all").Sessions {
		if s.ID == done.ID {
			found = s.Name == "finished"
		}
	}
	if !found {
		t.Fatalf("list --all does not show %s as finished", done.ID)
	}
	var again api.Session
	e.JSON(&again, "restart", "--json", "finished")
	if again.Name != "finished" || again.RestartOf != done.ID {
		t.Fatalf("restart of the renamed session: name %q, restart_of %q", again.Name, again.RestartOf)
	}
	e.MustRun("stop", run.ID, other.ID)
}
