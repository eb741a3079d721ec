package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
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

// tabwriterTable is the session table as a tabwriter with a padding of 2
// lays it out: what writeSessionTable writes without one.
func tabwriterTable(sessions []api.Session, now time.Time, width int, wide, headers bool) string {
	cols := sessionColumns(now, wide)
	cells := make([][]string, len(sessions))
	used := make([]bool, len(cols))
	for i := range sessions {
		cells[i] = make([]string, len(cols))
		for j, c := range cols {
			v := c.cell(&sessions[i])
			cells[i][j] = v
			used[j] = used[j] || v != ""
		}
	}
	var keep []int
	for j, c := range cols {
		if (c.wideOnly && !wide) || (!used[j] && !wide && c.head != "NAME/PROMPT") {
			continue
		}
		keep = append(keep, j)
	}
	widths := make([]int, len(cols))
	for _, j := range keep {
		n := 0
		if headers {
			n = utf8.RuneCountInString(cols[j].head)
		}
		for i := range cells {
			n = max(n, utf8.RuneCountInString(dash(cells[i][j])))
		}
		widths[j] = n
	}
	if !wide && width > 0 {
		keep = fit(cols, keep, widths, width)
	}
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	var rows [][]string
	if headers {
		var h []string
		for _, j := range keep {
			h = append(h, cols[j].head)
		}
		rows = append(rows, h)
	}
	for i := range cells {
		var r []string
		for _, j := range keep {
			v := dash(cells[i][j])
			if cols[j].flex && utf8.RuneCountInString(v) > widths[j] {
				v = cols[j].cut(v, widths[j])
			}
			r = append(r, v)
		}
		rows = append(rows, r)
	}
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	return b.String()
}

// randomSessions are sessions for the table: every column, text with
// white space, wide characters and bytes that are not UTF-8, long prompts.
func randomSessions(r *rand.Rand, now time.Time) []api.Session {
	words := []string{"", "a", "fix the failing tests", "/home/dev/src/project-026", "/very/long/path/to/a/project/that/goes/on/and/on/src",
		"日本語のプロンプト", "émoji 👩‍💻 here", "tab\tand\nnewline", strings.Repeat("long ", 60), "claude-sonnet-4-5", "g-ci",
		strings.Repeat("spaced   \t\n  out\u00a0\u2003", 30), strings.Repeat("x", 99) + "    \n\n   y", strings.Repeat("z", 130), "bad \xff\xfe " + strings.Repeat("ü", 120)}
	word := func() string { return words[r.IntN(len(words))] }
	sessions := make([]api.Session, 1+r.IntN(30))
	for i := range sessions {
		in, out, cost := r.Int64N(3_000_000), r.Int64N(90_000), r.Float64()*5
		at := now.Add(-time.Duration(r.Int64N(int64(72 * time.Hour))))
		s := api.Session{ID: fmt.Sprintf("%026x", r.Uint64()), Handle: fmt.Sprintf("%x", r.Uint32()), Adapter: []string{"claude", "codex", "pi", "exec"}[r.IntN(4)],
			Status: statuses[r.IntN(len(statuses))], CreatedAt: at, Cwd: word(), Prompt: word(), Model: word(), Group: []string{"", "g-ci", "review"}[r.IntN(3)],
			NativeID: word(), Origin: api.OriginDiscovered, Activity: []string{"", api.ActivityWaiting, "busy"}[r.IntN(3)], WaitingFor: []string{"", api.WaitingPermission}[r.IntN(2)]}
		if r.IntN(3) == 0 {
			s.Name = word()
		}
		if r.IntN(3) == 0 {
			s.Command = []string{word(), word()}
		}
		if r.IntN(2) == 0 {
			s.TokensIn, s.TokensOut, s.CostUSD, s.LastActivity = &in, &out, &cost, &at
		}
		if r.IntN(5) == 0 {
			s.TotalsPending = true
		}
		if r.IntN(4) == 0 {
			code := r.IntN(3)
			s.ExitCode, s.Signal, s.EndedAt = &code, "SIGTERM", &at
			s.Queue = &api.QueuePlace{Position: r.IntN(3)}
		}
		if r.IntN(4) == 0 {
			s.Labels = map[string]string{"team": "infra"}
			s.PID = r.IntN(99999)
			s.Warnings = []string{word()}
		}
		sessions[i] = s
	}
	return sessions
}

// TestTableRowShowsTheSame: the table of what the service sends for it
// (api.Session.TableRow) is the table of the whole sessions.
func TestTableRowShowsTheSame(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for round := range 200 {
		sessions := randomSessions(r, now)
		rows := make([]api.Session, len(sessions))
		for i := range sessions {
			rows[i] = sessions[i].TableRow()
		}
		width := []int{0, 40, 80, 120, 200, 20 + r.IntN(300)}[round%6]
		var whole, table bytes.Buffer
		writeSessionTable(&whole, sessions, now, width, false, round%2 == 0)
		writeSessionTable(&table, rows, now, width, false, round%2 == 0)
		if whole.String() != table.String() {
			t.Fatalf("width %d, the table of the rows:\n%s\nof the whole sessions:\n%s", width, table.String(), whole.String())
		}
	}
}

// TestSessionTableLayout: the table is laid out as a tabwriter lays it out,
// over random sessions at every width, wide or not, with headers or not.
func TestSessionTableLayout(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for round := range 60 {
		sessions := randomSessions(r, now)
		width := []int{0, 40, 60, 80, 120, 200, 20 + r.IntN(200)}[round%7]
		wide, headers := round%3 == 0, round%4 != 0
		var b bytes.Buffer
		writeSessionTable(&b, sessions, now, width, wide, headers)
		if want := tabwriterTable(sessions, now, width, wide, headers); b.String() != want {
			t.Fatalf("width %d, wide %v, headers %v:\n%s\nwant (a tabwriter's):\n%s", width, wide, headers, b.String(), want)
		}
	}
}

// BenchmarkSessionTable is the table of 7,000 sessions laid out here and
// by a tabwriter (as it was).
func BenchmarkSessionTable(b *testing.B) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(9, 10))
	sessions := make([]api.Session, 7000)
	for i := range sessions {
		in, out, cost := r.Int64N(3_000_000), r.Int64N(90_000), r.Float64()*5
		at := now.Add(-time.Duration(r.Int64N(int64(72 * time.Hour))))
		sessions[i] = api.Session{ID: fmt.Sprintf("%026x", r.Uint64()), Handle: fmt.Sprintf("%x", r.Uint32()), Adapter: "claude", Status: api.StatusEnded,
			CreatedAt: at, LastActivity: &at, Cwd: fmt.Sprintf("/home/dev/src/project-%03d", r.IntN(100)), Model: "claude-sonnet-4-5",
			TokensIn: &in, TokensOut: &out, CostUSD: &cost, Prompt: strings.Repeat("fix the failing tests ", 1+r.IntN(8))}
	}
	b.Run("here", func(b *testing.B) {
		for b.Loop() {
			writeSessionTable(io.Discard, sessions, now, 0, false, true)
		}
	})
	b.Run("tabwriter", func(b *testing.B) {
		for b.Loop() {
			tabwriterTable(sessions, now, 0, false, true)
		}
	})
}
