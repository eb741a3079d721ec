package main

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

func TestSessionCompletions(t *testing.T) {
	t.Parallel()
	code := 0
	sessions := []api.Session{
		{ID: "k3x9aaaa", Status: api.StatusExited, ExitCode: &code, Command: []string{"make"}},
		{ID: "k3y0bbbb", Status: api.StatusRunning, Name: "web"},
		{ID: "q7rmcccc", Status: api.StatusRunning, Prompt: "fix\x1b[31m the test"},
	}
	for _, tc := range []struct {
		typed string
		given []string
		want  []string
	}{
		{"", nil, []string{"q7rmcccc\trunning fix?[31m the test", "k3y0bbbb\trunning web", "web\trunning k3y0bbbb", "k3x9aaaa\texited(0) make"}},
		{"K3", nil, []string{"k3y0bbbb\trunning web", "k3x9aaaa\texited(0) make"}},
		{"we", nil, []string{"web\trunning k3y0bbbb"}},
		{"k3", []string{"k3y0bbbb"}, []string{"k3x9aaaa\texited(0) make"}},
	} {
		if got := sessionCompletions(sessions, tc.given, tc.typed); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("complete %q after %v = %q, want %q", tc.typed, tc.given, got, tc.want)
		}
	}
}

// A name reused over time is offered once, for the session it reaches.
func TestCompletionOffersAReusedNameOnce(t *testing.T) {
	t.Parallel()
	code := 0
	now := time.Now()
	sessions := []api.Session{
		{ID: "aaaa1111", Status: api.StatusExited, ExitCode: &code, Name: "web", CreatedAt: now.Add(-2 * time.Hour)},
		{ID: "bbbb2222", Status: api.StatusRunning, Name: "web", CreatedAt: now.Add(-time.Hour)},
		{ID: "cccc3333", Status: api.StatusExited, ExitCode: &code, Name: "web", CreatedAt: now},
	}
	got := sessionCompletions(sessions, nil, "we")
	if want := []string{"web\trunning bbbb2222"}; !reflect.DeepEqual(got, want) {
		t.Errorf("complete we = %q, want %q", got, want)
	}
}

// Every --adapter and launch's ADAPTER complete the agents' names.
func TestAdapterCompletion(t *testing.T) {
	t.Parallel()
	root := newRootCmd(testCLI(t))
	for _, args := range [][]string{{"__complete", "launch", ""}, {"__complete", "run", "--adapter", ""}, {"__complete", "list", "--adapter", ""}} {
		var out strings.Builder
		root.SetOut(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"claude", "codex", "opencode", "pi"} {
			if !strings.Contains(out.String(), name+"\n") {
				t.Errorf("%q offers %q, lacks %s", args, out.String(), name)
			}
		}
	}
}

func TestCheckStatus(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "running", "exited", "killed", "lost", "ended", "unknown"} {
		if err := checkStatus(s); err != nil {
			t.Errorf("checkStatus(%q) = %v", s, err)
		}
	}
	for _, s := range []string{"bogus", "Running", "stopped"} {
		if _, ok := checkStatus(s).(usageError); !ok {
			t.Errorf("checkStatus(%q) is not a usage error", s)
		}
	}
}
