package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Mistakes in how a command is called exit 2 before anything reaches the
// service (a test cli has AGENTCTL_NO_AUTOSTART set: none is started).
func TestUsageMistakesExitTwo(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"stop", ""},
		{"rm", ""},
		{"logs", ""},
		{"status", " "},
		{"stop", "k3x9", ""},
		{"help", "nosuch"},
		{"help", "stop", "nosuch"},
		{"lsit"},
		{"stop"},
	} {
		if code := run(context.Background(), testCLI(t), args); code != 2 {
			t.Errorf("agentctl %q exited %d, want 2", args, code)
		}
	}
	if code := run(context.Background(), testCLI(t), []string{"help", "stop"}); code != 0 {
		t.Errorf("agentctl help stop exited %d, want 0", code)
	}
}

func TestHelpText(t *testing.T) {
	t.Parallel()
	root := newRootCmd(testCLI(t))
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	// pflag takes back-quoted usage text as the value's name.
	if !strings.Contains(help, "-H, --host string") {
		t.Errorf("--host's value is not named string:\n%s", help)
	}
	if strings.Contains(help, "Additional Commands") {
		t.Errorf("a command has no help group:\n%s", help)
	}
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() && c.Name() != "help" && c.Name() != "completion" && c.Example == "" && !c.HasAvailableSubCommands() {
			switch c.Name() {
			case "list", "explain", "stop", "restart", "rm", "prune", "host":
				// their own definitions or subcommands carry the examples
			default:
				t.Errorf("%s has no example", c.Name())
			}
		}
	}
}

func TestErrorsNameTheCommandOnce(t *testing.T) {
	t.Parallel()
	root := newRootCmd(testCLI(t))
	root.SetArgs([]string{"stop"})
	err := root.Execute()
	if err == nil || strings.HasPrefix(err.Error(), "agentctl ") {
		t.Fatalf("stop without ids: %v (main prints \"agentctl: \" before it)", err)
	}
}

func TestSuggestFor(t *testing.T) {
	t.Parallel()
	root := newRootCmd(testCLI(t))
	for typed, want := range map[string]string{"lsit": "list", "stpo": "stop", "rmm": "rm", "stat": "stats,status", "sttas": "stats", "bogus": "", "x": ""} {
		got := strings.Join(suggestFor(root, typed), ",")
		if got != want {
			t.Errorf("suggestFor(%q) = %q, want %q", typed, got, want)
		}
	}
}
