package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/api"
)

func TestSessionTableFitsTheWidth(t *testing.T) {
	t.Parallel()
	now := time.Now()
	pct, mem := 87.5, uint64(612<<20)
	sessions := []api.Session{
		{ID: "k3x9abcdefghjkmn01m88g26q1", Handle: "k3x9", Adapter: "exec", Status: api.StatusRunning, CreatedAt: now,
			Cwd: "/very/long/path/to/a/project/that/goes/on/and/on/src", Command: []string{"sh", "-c", strings.Repeat("a long command ", 20)},
			Resources: &api.Resources{CPUPercent: &pct, MemoryBytes: &mem}},
		{ID: "q7rmabcdefghjkmn01m88g26q1", Handle: "q7rm", Adapter: "claude", Status: api.StatusRunning, CreatedAt: now,
			Cwd: "/srv", Name: "review-bot", Model: "opus"},
	}
	for _, tc := range []struct {
		name    string
		width   int
		wide    bool
		want    []string
		notWant []string
	}{
		{"wide has it all", 0, true, []string{"k3x9abcdefghjkmn01m88g26q1", "PID", "/very/long/path/to/a/project/that/goes/on/and/on/src", "CPU%", "87.5%", "MEM", "612MiB"}, nil},
		{"no limit off a terminal", 0, false, []string{"/very/long/path/to/a/project/that/goes/on/and/on/src", "MODEL"}, []string{"PID", "TOKENS", "COST", "GROUP", "k3x9a", "CPU%", "612MiB"}},
		{"120 columns", 120, false, []string{"k3x9", "review-bot", "…"}, []string{"k3x9a"}},
		{"80 columns", 80, false, []string{"k3x9", "review-bot"}, nil},
		{"60 columns drops the cwd", 60, false, []string{"k3x9", "NAME/PROMPT"}, []string{"CWD"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			printSessionTable(&b, sessions, tc.width, tc.wide, true)
			out := b.String()
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if n := utf8.RuneCountInString(line); tc.width > 0 && n >= tc.width {
					t.Errorf("a line of %d characters at width %d: %q", n, tc.width, line)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("table lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("table has %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestPendingTotalsAreNotZero: a session whose totals the service is still
// counting shows them as pending in the table and in status, never as a
// zero or as nothing known.
func TestPendingTotalsAreNotZero(t *testing.T) {
	t.Parallel()
	zero, none := int64(0), 0.0
	sessions := []api.Session{
		{ID: "p1", Adapter: "pi", Status: api.StatusEnded, TotalsPending: true, TokensIn: &zero, TokensOut: &zero, CostUSD: &none},
		{ID: "p2", Adapter: "pi", Status: api.StatusEnded},
	}
	var b bytes.Buffer
	printSessionTable(&b, sessions, 0, false, true)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "TOKENS") || !strings.Contains(lines[0], "COST") {
		t.Fatalf("table:\n%s", b.String())
	}
	if f := strings.Fields(lines[1]); !slices.Contains(f, text.Pending) || slices.Contains(f, "0") || slices.Contains(f, "$0.00") {
		t.Errorf("pending totals shown as %q", lines[1])
	}
	if strings.Contains(lines[2], text.Pending) {
		t.Errorf("a session without pending totals shows them pending: %q", lines[2])
	}
	b.Reset()
	printSession(&b, sessions[0])
	if !strings.Contains(b.String(), "being counted") || strings.Contains(b.String(), "$") {
		t.Errorf("status of pending totals:\n%s", b.String())
	}
}

func TestCuts(t *testing.T) {
	t.Parallel()
	if got := cutLeft("/a/b/c/project", 8); got != "…project" {
		t.Errorf("cutLeft = %q", got)
	}
	if got := cutRight("fix the failing test", 8); got != "fix the…" {
		t.Errorf("cutRight = %q", got)
	}
	if got := tildePath("/home/u/src", "/home/u"); got != "~/src" {
		t.Errorf("tildePath = %q", got)
	}
	if got := tildePath("/home/user2/src", "/home/u"); got != "/home/user2/src" {
		t.Errorf("tildePath of another home = %q", got)
	}
}

// Text anyone can set (--by, --reason, --label, a script) is shown with its
// control characters as '?', as everywhere else.
func TestLocksAndFusesShowNoControlCharacters(t *testing.T) {
	t.Parallel()
	now := time.Now()
	evil := "x\x1b]0;owned\x07\x1b[2Jy"
	var b strings.Builder
	printLocks(&b, []api.Lock{{Directory: "/d" + evil, Type: "manual", LockedBy: "by" + evil, Reason: "r" + evil, LockedAt: now}}, now, tableOptions{})
	printFuses(&b, []api.Fuse{{Directory: "/d" + evil, Label: "l" + evil, ExpiresAt: now.Add(time.Hour), OnExpire: &api.FuseAction{Script: "s" + evil}}}, now, tableOptions{})
	if strings.ContainsAny(b.String(), "\x1b\x07") {
		t.Fatalf("raw control characters printed:\n%q", b.String())
	}
}
