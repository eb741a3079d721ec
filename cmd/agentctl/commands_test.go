package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
)

// Commands run in-process (a fakeCLI) against a service of the test's own,
// in a home of its own: what they print, where, and how they exit.
func TestCommandsInProcess(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "ac") // short: a socket's path is bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := home.Home(dir)
	runService(t, h)
	c := client.New(h, "", false)
	ctx := context.Background()
	env := []string{"PATH=" + os.Getenv("PATH")}
	ended, err := c.Launch(ctx, api.RunRequest{Command: []string{"true"}, Name: "done-one", Cwd: dir, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	running, err := c.Launch(ctx, api.RunRequest{Command: []string{"sleep", "300"}, Name: "busy-one", Cwd: dir, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background(), running.ID, api.StopRequest{Force: true}) })
	group := []string{ended.ID}
	for _, name := range []string{"g-one", "g-two"} {
		s, err := c.Launch(ctx, api.RunRequest{Command: []string{"true"}, Name: name, Group: "g", Cwd: dir, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		group = append(group, s.ID)
	}
	for _, id := range group {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if s, err := c.Get(ctx, id); err == nil && s.Status.Ended() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("session %s did not end", id)
			}
		}
	}
	status, err := c.DaemonStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	userHome := map[string]string{"HOME": t.TempDir()}
	piDir := map[string]string{"HOME": t.TempDir(), "PI_CODING_AGENT_DIR": filepath.Join(t.TempDir(), "pi")}

	// In order: rm removes what the cases before it list.
	for _, tc := range []struct {
		name        string
		args        []string
		answer      string // typed at a prompt: a person is there
		code        int
		out, errOut []string // what each must hold
		notOut      []string
		check       func(t *testing.T, out string)
		env         map[string]string
	}{
		{name: "version", args: []string{"version"},
			out: []string{"agentctl " + buildVersion(), "service:  " + status.Version + " (pid "}},
		{name: "list shows the running session", args: []string{"list"},
			out: []string{"busy-one", running.ID[:4]}, notOut: []string{"done-one"}},
		{name: "list -a --json", args: []string{"list", "-a", "--json"},
			check: func(t *testing.T, out string) {
				var l api.SessionList
				if err := json.Unmarshal([]byte(out), &l); err != nil {
					t.Fatalf("not a session list: %v\n%s", err, out)
				}
				names := map[string]api.Status{}
				for _, s := range l.Sessions {
					names[s.Name] = s.Status
				}
				if names["busy-one"] != api.StatusRunning || !names["done-one"].Ended() {
					t.Errorf("list -a --json: %v", names)
				}
			}},
		{name: "status by name", args: []string{"status", "busy-one"}, out: []string{running.ID, "running"}},
		{name: "status of no session", args: []string{"status", "nosuch"}, code: 1, errOut: []string{"agentctl: ", "nosuch"}},
		{name: "limits with none seen", args: []string{"limits"}, out: []string{"No usage limit seen"}},
		{name: "limits --json", args: []string{"limits", "--json"}, out: []string{`"limits": []`}},
		{name: "web --url with no dashboard served", args: []string{"web", "--url"}, code: 1, errOut: []string{`the service does not serve the dashboard: add "web"`}},
		{name: "rm of a running session refuses", args: []string{"rm", running.ID}, code: 1, errOut: []string{"agentctl: rm " + running.ID}},
		{name: "rm of an ended session", args: []string{"rm", ended.ID}, out: []string{ended.ID}},
		{name: "rm of a group asks, and no keeps it", args: []string{"rm", "--group", "g"}, answer: "n\n", code: 1,
			errOut: []string{"Remove the folders and logs of 2 sessions? [y/N]", "not confirmed"}},
		{name: "list -a after rm", args: []string{"list", "-a"}, out: []string{"busy-one", "g-one", "g-two"}, notOut: []string{"done-one"}},
		{name: "rm of a group asks, and yes removes it", args: []string{"rm", "--group", "g"}, answer: "y\n",
			out: []string{group[1], group[2]}, errOut: []string{"Remove the folders and logs of 2 sessions? [y/N]"}},
		{name: "list -a after the group's rm", args: []string{"list", "-a"}, out: []string{"busy-one"}, notOut: []string{"g-one", "g-two"}},
		{name: "integrate claude", args: []string{"integrate", "claude"}, env: userHome,
			out: []string{"claude: installed in " + filepath.Join(userHome["HOME"], ".claude", "settings.json")}},
		{name: "integrate claude again", args: []string{"integrate", "claude"}, env: userHome, out: []string{"claude: already installed"}},
		{name: "integrate --status", args: []string{"integrate", "--status"}, env: userHome,
			out: []string{"claude: installed (", "last report: none (no report since the service started)"}},
		{name: "integrate --remove", args: []string{"integrate", "--remove", "all"}, env: userHome,
			out: []string{"claude: removed from ", "removed (agentctl had created it)"}},
		{name: "integrate pi where PI_CODING_AGENT_DIR says", args: []string{"integrate", "pi"}, env: piDir,
			out: []string{"pi: installed in " + filepath.Join(piDir["PI_CODING_AGENT_DIR"], "extensions", "agentctl.js")}},
		{name: "integrate --remove pi where PI_CODING_AGENT_DIR says", args: []string{"integrate", "--remove", "pi"}, env: piDir,
			out: []string{"pi: removed from " + filepath.Join(piDir["PI_CODING_AGENT_DIR"], "extensions", "agentctl.js")}},
		{name: "integrate of an agent without one", args: []string{"integrate", "nope"}, env: userHome, code: 1,
			errOut: []string{`no integration for "nope" (there are: claude`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCLI(t, h, tc.env)
			if tc.answer != "" {
				f.answering(tc.answer)
			}
			if code := run(ctx, f.cli, tc.args); code != tc.code {
				t.Fatalf("agentctl %q exited %d, want %d\nstdout:\n%s\nstderr:\n%s", tc.args, code, tc.code, f.stdout.String(), f.stderr.String())
			}
			out, errOut := f.stdout.String(), f.stderr.String()
			for _, w := range tc.out {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.notOut {
				if strings.Contains(out, w) {
					t.Errorf("stdout holds %q:\n%s", w, out)
				}
			}
			for _, w := range tc.errOut {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if tc.check != nil {
				tc.check(t, out)
			}
		})
	}
}
