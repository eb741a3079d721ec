package top

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
)

// Styles are the colours that mean something. The zero value is plain
// text: every state is spelt out in words, so nothing depends on colour.
type Styles struct {
	Header, Warn, Waiting, Busy, Lost, Unknown, Failed, Ended, Selected, Heading, Key, Dim lipgloss.Style
}

// ColourStyles uses the 16 basic colours, which every colour terminal has.
func ColourStyles() Styles {
	s := lipgloss.NewStyle()
	return Styles{
		Header:   s.Bold(true),
		Warn:     s.Foreground(lipgloss.Yellow).Bold(true),
		Waiting:  s.Foreground(lipgloss.Magenta).Bold(true),
		Busy:     s.Foreground(lipgloss.Green),
		Lost:     s.Foreground(lipgloss.Red).Bold(true),
		Unknown:  s.Foreground(lipgloss.Yellow),
		Failed:   s.Foreground(lipgloss.Red),
		Ended:    s.Faint(true),
		Selected: s.Reverse(true),
		Heading:  s.Bold(true).Underline(true),
		Key:      s.Bold(true),
		Dim:      s.Faint(true),
	}
}

// PlainStyles renders no escape sequences at all (NO_COLOR, goldens).
func PlainStyles() Styles { return Styles{} }

// DetailMode is what the detail pane shows.
type DetailMode int

const (
	DetailOutput DetailMode = iota // the last lines of output, escape-stripped
	DetailPeek                     // the agent's last messages
)

func (m DetailMode) String() string {
	if m == DetailPeek {
		return "peek"
	}
	return "output"
}

// Detail is what the detail pane last read for a session.
type Detail struct {
	ID    string
	Mode  DetailMode
	Lines []string
	Err   string
}

// Frame is everything one screen is drawn from.
type Frame struct {
	Width, Height int
	Now           time.Time
	State         *State
	Rows          []Row
	Cursor        int
	Opts          ViewOptions
	// ShowDetail opens the detail pane; Detail is what it holds.
	ShowDetail bool
	Detail     Detail
	// Line is the line above the footer: a prompt being typed, a question,
	// or the result of the last action.
	Line   string
	Help   bool
	Styles Styles
	// Home is the user's home directory, shown as ~ in paths.
	Home string
}

// Keys are the footer's, in order.
var footerKeys = [][2]string{
	{"↑↓", "move"}, {"enter", "attach"}, {"s", "stop"}, {"y/n", "approve/deny"}, {"r", "resume"}, {"i", "send"},
	{"l", "logs"}, {"/", "filter"}, {"g", "group"}, {"a", "ended"}, {"d", "detail"},
	{"tab", "output/peek"}, {"?", "help"}, {"q", "quit"},
}

var helpText = []string{
	"agentctl top: every session, live from the service's event stream",
	"",
	"  ↑/k ↓/j      move (PgUp/PgDn, Home/End)",
	"  enter        attach to the session's terminal (detach with Ctrl-] to come back)",
	"  s            stop the session (asks y/n first)",
	"  y / n        approve / deny the permission a waiting session asks for",
	"  r            resume: continue the agent's session with a message you type",
	"  i            send a line of input to the session's terminal",
	"  l            the whole output log in a pager ($PAGER, else less)",
	"  /            filter by any text: name, id, adapter, status, group, model, cwd, prompt",
	"  esc          clear the filter",
	"  g            group rows: none → by group → by adapter",
	"  a            show or hide ended sessions",
	"  d            show or hide the detail pane",
	"  tab          detail pane: live output ↔ last assistant messages (o, p choose)",
	"  ?            this help (any key closes it)",
	"  Ctrl-Z       suspend to the shell (fg comes back)",
	"  q, Ctrl-C    quit",
	"",
	"Rows: sessions waiting for a person first, then running, unknown, then ended.",
	"Status is what the service derives; unknown means nobody can vouch for it now.",
}

// Render draws the screen: exactly Height lines, none wider than Width.
func Render(f Frame) string {
	if f.Width <= 0 || f.Height <= 0 {
		return ""
	}
	st := f.Styles
	var top []string
	top = append(top, st.Header.Render(fit(headerText(f), f.Width)))
	if m := machineText(f); m != "" {
		top = append(top, fit(m, f.Width))
	}
	for _, l := range []string{f.State.Link, f.State.ListErr} {
		if l != "" {
			top = append(top, st.Warn.Render(fit("! service: "+oneLine(l), f.Width)))
		}
	}
	// The service's warnings are never hidden: when there are more than
	// the screen can spare, the last line says how many more.
	room := max(1, f.Height/4)
	for i, w := range f.State.Warnings {
		if i == room-1 && len(f.State.Warnings) > room {
			top = append(top, st.Warn.Render(fit(fmt.Sprintf("! … and %d more warnings (agentctl list -a shows them)", len(f.State.Warnings)-i), f.Width)))
			break
		}
		top = append(top, st.Warn.Render(fit("! "+oneLine(w), f.Width)))
	}
	bottom := footer(f)
	if f.Line != "" {
		bottom = append([]string{fit(oneLine(f.Line), f.Width)}, bottom...)
	}
	body := f.Height - len(top) - len(bottom)
	var mid []string
	if f.Help {
		for _, l := range helpText {
			mid = append(mid, fit(l, f.Width))
		}
	} else {
		tableH := body
		var detail []string
		if f.ShowDetail && len(f.Rows) > 0 && body >= 10 {
			detailH := body * 2 / 5
			tableH = body - detailH
			detail = renderDetail(f, detailH)
		}
		mid = renderTable(f, tableH)
		if detail != nil {
			// The pane keeps its place at the bottom however many rows.
			for len(mid) < tableH {
				mid = append(mid, "")
			}
			mid = append(mid, detail...)
		}
	}
	above := max(0, f.Height-len(bottom))
	lines := append(top, mid...)
	for len(lines) < above {
		lines = append(lines, "")
	}
	lines = append(lines[:above], bottom...)
	return strings.Join(lines[:f.Height], "\n")
}

func headerText(f Frame) string {
	c := f.State.Count(f.Now)
	parts := []string{"agentctl top", fmt.Sprintf("%d running", c.Running), fmt.Sprintf("%d waiting", c.Waiting)}
	if c.Queued > 0 {
		parts = append(parts, fmt.Sprintf("%d queued", c.Queued))
	}
	if c.Unknown > 0 {
		parts = append(parts, fmt.Sprintf("%d unknown", c.Unknown))
	}
	parts = append(parts, fmt.Sprintf("%d ended today", c.EndedToday))
	if c.Costed {
		parts = append(parts, fmt.Sprintf("$%.2f today", c.CostToday))
	}
	if l := limitsText(f.State, f.Now); l != "" {
		parts = append(parts, l)
	}
	var view []string
	if !f.Opts.ShowEnded {
		view = append(view, "ended hidden")
	}
	if f.Opts.Group != GroupNone {
		view = append(view, "by "+f.Opts.Group.String())
	}
	if f.Opts.Filter != "" {
		view = append(view, fmt.Sprintf("filter %q: %d shown", f.Opts.Filter, len(f.Rows)))
	}
	s := strings.Join(parts, " · ")
	if len(view) > 0 {
		s += "  [" + strings.Join(view, ", ") + "]"
	}
	return s
}

// limitsText sums up the sessions usage limits hold: "limit: anthropic 3
// until 15:04"; "" when none.
func limitsText(st *State, now time.Time) string {
	held, resets := st.Limited()
	if len(held) == 0 {
		return ""
	}
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(held)) {
		s := fmt.Sprintf("%s %d", p, held[p])
		if r, ok := resets[p]; ok && r.After(now) {
			s += " until " + r.Local().Format("15:04")
		}
		parts = append(parts, s)
	}
	return "limit: " + strings.Join(parts, ", ")
}

// machineText is the machine's load and memory and what the running
// sessions take of them; "" when the service did not say.
func machineText(f Frame) string {
	m := f.State.Machine
	if m == nil {
		return ""
	}
	parts := []string{fmt.Sprintf("load %.2f %.2f %.2f (%d CPUs)", m.Load1, m.Load5, m.Load15, m.CPUs)}
	if m.MemTotalBytes > 0 {
		parts = append(parts, fmt.Sprintf("memory %s available of %s", text.Size(&m.MemAvailableBytes), text.Size(&m.MemTotalBytes)))
	}
	if c := f.State.Count(f.Now); c.Sampled {
		parts = append(parts, fmt.Sprintf("sessions %.1f%% CPU, %s", c.CPUPercent, text.Size(&c.Memory)))
	}
	return strings.Join(parts, " · ")
}

func footer(f Frame) []string {
	var lines []string
	cur := ""
	for _, k := range footerKeys {
		item := f.Styles.Key.Render(k[0]) + " " + k[1]
		w := ansi.StringWidth(k[0] + " " + k[1])
		if cur != "" && ansi.StringWidth(cur)+2+w > f.Width {
			lines = append(lines, cur)
			cur = ""
		}
		if cur != "" {
			cur += "  "
		}
		cur += item
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	for i := range lines {
		lines[i] = ansi.Truncate(lines[i], f.Width, "…")
	}
	return lines
}

// column is one table column: its heading and how to fill a cell.
type column struct {
	name string
	cell func(f Frame, r Row) string
	// max caps the column's width; 0: as wide as its widest cell.
	max int
	// shrink is how narrow a column may get before columns are dropped.
	shrink int
}

// columns in display order; dropOrder says which go first when the
// terminal is too narrow.
var columns = []column{
	{name: "HOST", cell: func(_ Frame, r Row) string { return r.Host }, max: 16, shrink: 6},
	{name: "SESSION", cell: func(_ Frame, r Row) string { return r.Handle }, max: 24, shrink: 8},
	{name: "ADAPTER", cell: func(_ Frame, r Row) string { return r.Adapter }},
	{name: "STATUS", cell: func(_ Frame, r Row) string { return StatusText(r.Session) }, max: 24, shrink: 9},
	{name: "CPU%", cell: func(_ Frame, r Row) string {
		return resourceCell(r, func(x *api.Resources) string { return text.Percent(x.CPUPercent) })
	}},
	{name: "MEM", cell: func(_ Frame, r Row) string {
		return resourceCell(r, func(x *api.Resources) string { return text.Size(x.MemoryBytes) })
	}},
	{name: "AGE", cell: func(f Frame, r Row) string { return dash(ago(f.Now, r.CreatedAt)) }},
	{name: "LAST", cell: func(f Frame, r Row) string { return dash(ago(f.Now, r.Session.ActiveAt())) }},
	{name: "MODEL", cell: func(_ Frame, r Row) string { return dash(r.Model) }, max: 20, shrink: 10},
	{name: "TOKENS", cell: func(_ Frame, r Row) string { return dash(tokensText(r.Session)) }},
	{name: "COST", cell: func(_ Frame, r Row) string { return dash(sessionCostText(r.Session)) }},
	{name: "GROUP", cell: func(_ Frame, r Row) string { return dash(r.Group) }, max: 16, shrink: 8},
	{name: "CWD", cell: func(f Frame, r Row) string { return dash(shortPath(r.Cwd, f.Home)) }, max: 48, shrink: 12},
	{name: "PROMPT", cell: func(_ Frame, r Row) string { return dash(oneLine(r.Prompt)) }, max: 60, shrink: 12},
}

var dropOrder = []string{"PROMPT", "GROUP", "MODEL", "TOKENS", "AGE", "MEM", "COST", "CPU%", "CWD", "LAST", "ADAPTER"}

// resourceCell is one figure of what a running session costs; "" for
// any other, and when the service sent none (the column then goes).
func resourceCell(r Row, figure func(*api.Resources) string) string {
	if r.Resources == nil || r.Status != api.StatusRunning {
		return ""
	}
	return dash(figure(r.Resources))
}

// growOrder says which capped columns take the room a wide terminal has
// left, up to their whole text.
var growOrder = []string{"STATUS", "CWD", "PROMPT", "SESSION", "MODEL", "GROUP"}

// layout picks the columns and their widths for the width available.
func layout(f Frame, cells [][]string) (keep []int, widths []int) {
	widths = make([]int, len(columns))
	natural := make([]int, len(columns))
	for i, c := range columns {
		natural[i] = ansi.StringWidth(c.name)
		for _, row := range cells {
			natural[i] = max(natural[i], ansi.StringWidth(row[i]))
		}
		widths[i] = natural[i]
		if c.max > 0 {
			widths[i] = min(widths[i], c.max)
		}
	}
	dropped := map[int]bool{}
	// The group column says nothing when rows are grouped by it.
	for i, c := range columns {
		if c.name == "GROUP" && f.Opts.Group == GroupByGroup {
			dropped[i] = true
		}
		// The host column shows in a view over several hosts only, the
		// figures of what sessions cost when the service sends them.
		if (c.name == "HOST" || c.name == "CPU%" || c.name == "MEM") && !slices.ContainsFunc(cells, func(row []string) bool { return row[i] != "" }) {
			dropped[i] = true
		}
	}
	total := func() int {
		n := 2 // the cursor mark
		for i, w := range widths {
			if !dropped[i] {
				n += w + 2
			}
		}
		return n - 2
	}
	for i, c := range columns {
		if total() <= f.Width {
			break
		}
		if c.shrink > 0 && widths[i] > c.shrink && c.name != "SESSION" && c.name != "STATUS" {
			widths[i] = max(c.shrink, widths[i]-(total()-f.Width))
		}
	}
	for _, name := range dropOrder {
		if total() <= f.Width {
			break
		}
		dropped[indexOf(name)] = true
	}
	for i, c := range columns {
		if total() <= f.Width {
			break
		}
		if c.shrink > 0 && widths[i] > c.shrink {
			widths[i] = max(c.shrink, widths[i]-(total()-f.Width))
		}
	}
	for _, name := range growOrder {
		i := indexOf(name)
		if spare := f.Width - total(); !dropped[i] && spare > 0 && widths[i] < natural[i] {
			widths[i] = min(natural[i], widths[i]+spare)
		}
	}
	for i := range columns {
		if !dropped[i] {
			keep = append(keep, i)
		}
	}
	return keep, widths
}

func indexOf(name string) int {
	for i, c := range columns {
		if c.name == name {
			return i
		}
	}
	panic("top: no column " + name)
}

// visibleWindow is the first row shown so that the cursor is on screen.
func visibleWindow(cursor, n, height int) int {
	if cursor < height {
		return 0
	}
	return min(cursor-height+1, max(0, n-height))
}

func renderTable(f Frame, height int) []string {
	if height <= 0 {
		return nil
	}
	st := f.Styles
	if len(f.Rows) == 0 {
		msg := "no sessions"
		switch {
		case f.Opts.Filter != "":
			msg = fmt.Sprintf("no session matches %q (esc clears the filter)", f.Opts.Filter)
		case f.State.Len() > 0 && !f.Opts.ShowEnded:
			msg = "no running sessions (a shows ended ones)"
		}
		return []string{fit(msg, f.Width)}
	}
	// Only the rows on screen are measured and drawn: 500 sessions cost
	// what a screenful costs.
	type line struct {
		heading string
		row     int
	}
	var all []line
	cursorLine := 0
	for i, r := range f.Rows {
		if f.Opts.Group != GroupNone && (i == 0 || f.Rows[i-1].Heading != r.Heading) {
			n := 0
			for _, o := range f.Rows[i:] {
				if o.Heading != r.Heading {
					break
				}
				n++
			}
			all = append(all, line{heading: fmt.Sprintf("%s (%d)", oneLine(r.Heading), n), row: -1})
		}
		if i == f.Cursor {
			cursorLine = len(all)
		}
		all = append(all, line{row: i})
	}
	bodyH := height - 1
	start := visibleWindow(cursorLine, len(all), bodyH)
	shown := all[start:min(len(all), start+bodyH)]
	cells := make([][]string, 0, len(shown))
	for _, l := range shown {
		if l.row < 0 {
			continue
		}
		r := f.Rows[l.row]
		row := make([]string, len(columns))
		for i, c := range columns {
			row[i] = oneLine(c.cell(f, r))
		}
		cells = append(cells, row)
	}
	keep, widths := layout(f, cells)
	out := make([]string, 0, height)
	var head strings.Builder
	head.WriteString("  ")
	for n, i := range keep {
		if n > 0 {
			head.WriteString("  ")
		}
		head.WriteString(pad(columns[i].name, widths[i], n == len(keep)-1))
	}
	out = append(out, st.Header.Render(fit(head.String(), f.Width)))
	ci := 0
	for _, l := range shown {
		if l.row < 0 {
			out = append(out, st.Heading.Render(fit(l.heading, f.Width)))
			continue
		}
		r := f.Rows[l.row]
		row := cells[ci]
		ci++
		var b strings.Builder
		mark := "  "
		if l.row == f.Cursor {
			mark = "› "
		}
		b.WriteString(mark)
		for n, i := range keep {
			if n > 0 {
				b.WriteString("  ")
			}
			cell := pad(truncate(row[i], widths[i]), widths[i], n == len(keep)-1)
			if columns[i].name == "STATUS" {
				cell = statusStyle(st, r.Session).Render(cell)
			}
			b.WriteString(cell)
		}
		text := ansi.Truncate(b.String(), f.Width, "")
		switch {
		case l.row == f.Cursor:
			text = st.Selected.Render(ansi.Strip(text))
		case r.Rank == RankEnded:
			text = st.Ended.Render(ansi.Strip(text))
		}
		out = append(out, text)
	}
	return out
}

func renderDetail(f Frame, height int) []string {
	st := f.Styles
	r := f.Rows[f.Cursor]
	s := r.Session
	other := DetailPeek
	if f.Detail.Mode == DetailPeek {
		other = DetailOutput
	}
	title := oneLine(fmt.Sprintf("── %s · %s · %s ── %s (tab: %s)", r.Handle, s.Adapter, StatusText(s), f.Detail.Mode, other)) + " "
	out := []string{st.Header.Render(fit(title+strings.Repeat("─", max(0, f.Width-ansi.StringWidth(title))), f.Width))}
	out = append(out, st.Dim.Render(fit(oneLine(evidence(f.Now, s)), f.Width)))
	for _, w := range s.Warnings {
		out = append(out, st.Warn.Render(fit("! "+oneLine(w), f.Width)))
	}
	if s.Prompt != "" {
		out = append(out, fit("prompt: "+oneLine(s.Prompt), f.Width))
	}
	room := height - len(out)
	var body []string
	switch {
	case f.Detail.ID != s.ID:
		body = []string{"reading…"}
	case f.Detail.Err != "":
		body = []string{"! " + oneLine(f.Detail.Err)}
	case len(f.Detail.Lines) == 0 && f.Detail.Mode == DetailPeek:
		body = []string{"(no messages yet)"}
	case len(f.Detail.Lines) == 0:
		body = []string{"(no output yet)"}
	default:
		body = f.Detail.Lines
	}
	if len(body) > room {
		body = body[len(body)-max(0, room):]
	}
	for _, l := range body {
		out = append(out, fit(l, f.Width))
	}
	if len(out) > height {
		out = out[:height]
	}
	return out
}

// evidence says where the status comes from.
func evidence(now time.Time, s api.Session) string {
	var p []string
	p = append(p, "id "+s.ID, s.Origin)
	if s.PID != 0 {
		pid := fmt.Sprintf("pid %d", s.PID)
		if s.StartTime != nil {
			pid += " started " + s.StartTime.Local().Format("15:04:05")
		}
		p = append(p, pid)
	}
	switch {
	case s.ExitCode != nil:
		p = append(p, fmt.Sprintf("exit record: code %d", *s.ExitCode))
	case s.Signal != "":
		p = append(p, "exit record: "+s.Signal)
	case s.Status == api.StatusLost:
		p = append(p, "no exit record, process gone")
	case s.Status == api.StatusQueued && s.Queue != nil:
		p = append(p, "queued: "+s.Queue.Reason)
	case s.Status == api.StatusRunning && s.Origin == api.OriginLaunched:
		p = append(p, "process alive")
	}
	if s.Activity == api.ActivityWaiting && s.Waiting != nil && s.Waiting.Request != "" {
		p = append(p, "request "+s.Waiting.Request)
	}
	if s.EndedAt != nil {
		p = append(p, "ended "+ago(now, *s.EndedAt)+" ago")
	}
	if s.Cwd != "" {
		p = append(p, s.Cwd)
	}
	return strings.Join(p, " · ")
}

// StatusText is the status cell: a running session's activity when it
// has one (busy, idle, or waiting with its reason, as the service says),
// else its status with how it ended.
func StatusText(s api.Session) string {
	switch {
	case s.Status == api.StatusRunning && s.Activity == api.ActivityWaiting && s.WaitingFor != "":
		if s.Waiting != nil && s.Waiting.Tool != "" {
			return s.Activity + ": " + s.WaitingFor + " " + s.Waiting.Tool
		}
		return s.Activity + ": " + s.WaitingFor
	case s.Status == api.StatusRunning && s.Activity != "":
		return s.Activity
	case s.Status == api.StatusExited && s.ExitCode != nil:
		return fmt.Sprintf("exited(%d)", *s.ExitCode)
	case s.Status == api.StatusKilled && s.Signal != "":
		return "killed(" + s.Signal + ")"
	case s.Status == api.StatusQueued && s.Queue != nil && s.Queue.Position > 0:
		return fmt.Sprintf("queued(#%d)", s.Queue.Position)
	}
	return string(s.Status)
}

func statusStyle(st Styles, s api.Session) lipgloss.Style {
	switch {
	case Waiting(s):
		return st.Waiting
	case s.Status == api.StatusRunning && s.Activity == "busy":
		return st.Busy
	case s.Status == api.StatusLost:
		return st.Lost
	case s.Status == api.StatusUnknown:
		return st.Unknown
	case s.Status == api.StatusKilled, s.Status == api.StatusExited && s.ExitCode != nil && *s.ExitCode != 0:
		return st.Failed
	}
	return lipgloss.NewStyle()
}

// fit cuts s to width cells.
func fit(s string, width int) string {
	return ansi.Truncate(s, width, "…")
}

func truncate(s string, width int) string {
	if ansi.StringWidth(s) <= width {
		return s
	}
	return ansi.Truncate(s, width, "…")
}

// pad fills s with spaces to width; the last column is not padded.
func pad(s string, width int, last bool) string {
	if last {
		return s
	}
	if n := width - ansi.StringWidth(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}

func shortPath(p, home string) string {
	if home != "" && (p == home || strings.HasPrefix(p, home+"/")) {
		p = "~" + p[len(home):]
	}
	return p
}

func ago(now, t time.Time) string { return text.Ago(now, t) }

// tokensText is a session's tokens, text.Pending while the service is
// still counting them (never a zero, nor "-").
func tokensText(s api.Session) string {
	if s.TotalsPending {
		return text.Pending
	}
	return text.Tokens(s.TokensIn, s.TokensOut)
}

// sessionCostText is a session's cost, pending while its tokens are.
func sessionCostText(s api.Session) string {
	if s.TotalsPending {
		return text.Pending
	}
	return costText(s.CostUSD)
}

func costText(c *float64) string { return text.Cost(c) }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine makes s one line of printable text: runs of white space become
// one space, what text.Clean neutralises shows as ?, so nothing
// a session reports can move the cursor or break a row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(text.Clean(s)), " ")
}
