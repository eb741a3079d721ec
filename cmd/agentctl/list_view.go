package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
)

// outputFlags are how a command that prints sessions prints them.
type outputFlags struct {
	format    string // "", "wide", "json"
	asJSON    bool   // --json, the same as -o json
	quiet     bool
	noHeaders bool
}

func (o *outputFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&o.format, "output", "o", "", "output format: `wide` (every column, nothing shortened) or json")
	fl.BoolVar(&o.asJSON, "json", false, "print JSON (the same as -o json)")
	fl.BoolVarP(&o.quiet, "quiet", "q", false, "print session ids only, one a line")
	fl.BoolVar(&o.noHeaders, "no-headers", false, "print no header line")
	cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"wide", "json"}, cobra.ShellCompDirectiveNoFileComp))
}

// check refuses a format that does not exist.
func (o *outputFlags) check() error {
	switch o.format {
	case "", "wide":
	case "json":
		o.asJSON = true
	default:
		return usageError{fmt.Errorf("--output %q: want wide or json", o.format)}
	}
	return nil
}

// statuses are the values --status accepts.
var statuses = []api.Status{api.StatusRunning, api.StatusQueued, api.StatusExited, api.StatusKilled, api.StatusLost, api.StatusEnded, api.StatusUnknown}

// checkStatus refuses a --status that no session can have.
func checkStatus(s string) error {
	if s == "" {
		return nil
	}
	names := make([]string, len(statuses))
	for i, st := range statuses {
		if string(st) == s {
			return nil
		}
		names[i] = string(st)
	}
	return usageError{fmt.Errorf("--status %q: want one of %s", s, strings.Join(names, ", "))}
}

// tableWidth is how wide a table may be: the terminal's width, else
// $COLUMNS, else no limit (0) when the output goes to a file or a pipe.
func tableWidth(cli *cli, w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	if n, err := strconv.Atoi(cli.getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
}

// column is one column of the session table.
type column struct {
	head string
	cell func(*api.Session) string
	// flex columns are shortened to fit; the others are shown whole.
	flex bool
	// cut shortens a flex cell to n characters.
	cut func(string, int) string
	// wideOnly columns show with -o wide only.
	wideOnly bool
}

func sessionColumns(now time.Time, wide bool) []column {
	homeDir, _ := os.UserHomeDir()
	// A prompt is cut to fit the terminal later; in a pipe, where the width
	// is not known, to a line's worth (-o wide keeps all of it).
	promptRunes := api.TablePromptRunes
	if wide {
		promptRunes = 1 << 16
	}
	id := func(s *api.Session) string {
		if wide || s.Handle == "" {
			return s.ID
		}
		return s.Handle
	}
	return []column{
		{head: "HOST", cell: func(s *api.Session) string { return s.Host }},
		{head: "ID", cell: id},
		{head: "ADAPTER", cell: func(s *api.Session) string { return s.Adapter }},
		{head: "STATUS", cell: statusText},
		{head: "ACTIVITY", cell: activityText},
		{head: "PID", cell: func(s *api.Session) string { return pidText(s.PID) }, wideOnly: true},
		{head: "CPU%", cell: func(s *api.Session) string {
			return resourceCell(s, func(r *api.Resources) string { return text.Percent(r.CPUPercent) })
		}, wideOnly: true},
		{head: "MEM", cell: func(s *api.Session) string {
			return resourceCell(s, func(r *api.Resources) string { return text.Size(r.MemoryBytes) })
		}, wideOnly: true},
		{head: "AGE", cell: func(s *api.Session) string { return ago(now, s.CreatedAt) }},
		{head: "LAST", cell: func(s *api.Session) string { return ago(now, s.ActiveAt()) }},
		{head: "MODEL", cell: func(s *api.Session) string { return text.Clean(s.Model) }},
		{head: "TOKENS", cell: tokensText},
		{head: "COST", cell: sessionCostText},
		{head: "GROUP", cell: func(s *api.Session) string { return s.Group }},
		{head: "LABELS", cell: labelsText, wideOnly: true},
		{head: "CWD", cell: func(s *api.Session) string { return text.Clean(tildePath(s.Cwd, homeDir)) }, flex: true, cut: cutLeft},
		{head: "NAME/PROMPT", cell: func(s *api.Session) string { return text.Clean(oneLine(label(s), promptRunes)) }, flex: true, cut: cutRight},
	}
}

// resourceCell is one figure of what a running session costs.
func resourceCell(s *api.Session, figure func(*api.Resources) string) string {
	if s.Resources == nil || s.Status != api.StatusRunning {
		return ""
	}
	return figure(s.Resources)
}

// labelsText is a session's labels, K=V, sorted, comma-separated.
func labelsText(s *api.Session) string {
	if len(s.Labels) == 0 {
		return ""
	}
	parts := make([]string, 0, len(s.Labels))
	for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
		parts = append(parts, k+"="+s.Labels[k])
	}
	return text.Clean(strings.Join(parts, ","))
}

// printSessionTable writes sessions as a table that fits width (0: any
// width). Columns empty in every row are left out, and so are the wide-only
// ones unless wide; without wide the cwd and the name/prompt are shortened
// to fit, the prompt keeping at least a few characters.
func printSessionTable(w io.Writer, sessions []api.Session, width int, wide, headers bool) {
	writeSessionTable(w, sessions, time.Now(), width, wide, headers)
}

// writeSessionTable is printSessionTable at the time now. It lays the
// columns out itself, as a tabwriter with a padding of 2 would (each
// column as wide as its widest cell and two spaces, the last one
// unpadded): a tabwriter copies and measures every cell again, which
// for thousands of rows was a good part of the table's time.
func writeSessionTable(w io.Writer, sessions []api.Session, now time.Time, width int, wide, headers bool) {
	cols := sessionColumns(now, wide)
	nc := len(cols)
	// One slice for every row's cells; the wide-only columns are not
	// computed unless shown.
	cells := make([]string, len(sessions)*nc)
	used := make([]bool, nc)
	for j, c := range cols {
		if c.wideOnly && !wide {
			continue
		}
		for i := range sessions {
			v := c.cell(&sessions[i])
			cells[i*nc+j] = v
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
	// runes[i*nc+j] is the length of cell i,j as shown (dashed).
	runes := make([]int, len(cells))
	widths := make([]int, nc)
	for _, j := range keep {
		n := 0
		if headers {
			n = utf8.RuneCountInString(cols[j].head)
		}
		for i := range sessions {
			k := i*nc + j
			cells[k] = dash(cells[k])
			runes[k] = utf8.RuneCountInString(cells[k])
			n = max(n, runes[k])
		}
		widths[j] = n
	}
	if !wide && width > 0 {
		keep = fit(cols, keep, widths, width)
	}
	// Cut the flex cells to their width; a column is then as wide as
	// what it shows.
	shown := make([]int, nc)
	for _, j := range keep {
		n := 0
		if headers {
			n = utf8.RuneCountInString(cols[j].head)
		}
		for i := range sessions {
			k := i*nc + j
			if cols[j].flex && runes[k] > widths[j] {
				cells[k] = cols[j].cut(cells[k], widths[j])
				runes[k] = utf8.RuneCountInString(cells[k])
			}
			n = max(n, runes[k])
		}
		shown[j] = n
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	const pad = "                                                                "
	line := func(cell func(j int) (string, int)) {
		for k, j := range keep {
			v, n := cell(j)
			bw.WriteString(v)
			if k == len(keep)-1 {
				break
			}
			for gap := shown[j] - n + 2; gap > 0; gap -= len(pad) {
				bw.WriteString(pad[:min(gap, len(pad))])
			}
		}
		bw.WriteByte('\n')
	}
	if headers {
		line(func(j int) (string, int) { return cols[j].head, utf8.RuneCountInString(cols[j].head) })
	}
	for i := range sessions {
		line(func(j int) (string, int) { return cells[i*nc+j], runes[i*nc+j] })
	}
	bw.Flush()
}

// fit shrinks the flex columns so the table is at most width wide: the
// cwd first (down to 12), then the prompt (down to 16), then the cwd goes.
func fit(cols []column, keep []int, widths []int, width int) []int {
	total := func() int {
		n := 0
		for k, j := range keep {
			if k > 0 {
				n += 2
			}
			n += widths[j]
		}
		return n
	}
	var cwd, prompt = -1, -1
	for _, j := range keep {
		switch cols[j].head {
		case "CWD":
			cwd = j
		case "NAME/PROMPT":
			prompt = j
		}
	}
	// The last column has no padding after it: one column to spare keeps
	// a terminal from wrapping at its edge.
	width--
	shrink := func(j, floor int) {
		if j < 0 {
			return
		}
		if over := total() - width; over > 0 {
			widths[j] = max(floor, widths[j]-over)
		}
	}
	shrink(cwd, 12)
	shrink(prompt, 16)
	if total() > width && cwd >= 0 {
		keep = slices.DeleteFunc(keep, func(j int) bool { return j == cwd })
		// The prompt gets the room the cwd had.
		if prompt >= 0 {
			widths[prompt] = max(16, widths[prompt]+widths[cwd]+2)
			if over := total() - width; over > 0 {
				widths[prompt] = max(16, widths[prompt]-over)
			}
		}
	}
	return keep
}

// tildePath writes the home directory as ~.
func tildePath(p, home string) string {
	if home != "" && home != "/" && (p == home || strings.HasPrefix(p, home+"/")) {
		return "~" + p[len(home):]
	}
	return p
}

// cutRight keeps the first n characters, the last one an ellipsis.
func cutRight(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	return string(r[:n-1]) + "…"
}

// cutLeft keeps the last n characters, the first one an ellipsis: the end
// of a path says most.
func cutLeft(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	return "…" + string(r[len(r)-n+1:])
}
