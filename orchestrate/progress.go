package orchestrate

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// stageText is how a stage reads in progress output.
func stageText(st Stage, detail string) string {
	switch st {
	case Queued:
		return "waiting"
	case Fetching:
		return "fetching base branch " + detail
	case Creating:
		return "creating worktree " + detail
	case Starting:
		return "starting"
	case Started:
		return "started " + detail
	case Failed:
		return "failed: " + detail
	}
	return detail
}

// LineProgress writes one line per stage change: for logs, pipes and hooks.
type LineProgress struct {
	mu     sync.Mutex
	w      io.Writer
	labels []string
}

// NewLineProgress reports members on w, a line at a time. Members are
// named by labels until their names in the group are known.
func NewLineProgress(w io.Writer, labels []string) *LineProgress {
	return &LineProgress{w: w, labels: slices.Clone(labels)}
}

// Update implements Progress.
func (l *LineProgress) Update(i int, st Stage, detail string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st == Queued && detail != "" {
		l.labels[i] = detail
	}
	if st == Queued || st == Starting {
		return
	}
	fmt.Fprintf(l.w, "%s: %s\n", l.labels[i], oneLine(stageText(st, detail)))
}

// TerminalProgress keeps one line per member on a terminal and redraws them
// in place as they change.
type TerminalProgress struct {
	mu     sync.Mutex
	w      io.Writer
	width  int
	labels []string
	lines  []string
	drawn  bool
}

// NewTerminalProgress shows members (named by labels) on a terminal w that
// is width columns wide.
func NewTerminalProgress(w io.Writer, labels []string, width int) *TerminalProgress {
	t := &TerminalProgress{w: w, width: width, labels: slices.Clone(labels), lines: make([]string, len(labels))}
	for i := range t.lines {
		t.lines[i] = "· " + stageText(Queued, "")
	}
	return t
}

// Update implements Progress.
func (t *TerminalProgress) Update(i int, st Stage, detail string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	mark := map[Stage]string{Started: "✓", Failed: "✗"}[st]
	if mark == "" {
		mark = "·"
	}
	if st == Queued && detail != "" {
		t.labels[i] = detail
		detail = ""
	}
	t.lines[i] = mark + " " + oneLine(stageText(st, detail))
	t.draw()
}

// Close erases the lines, so what follows replaces them.
func (t *TerminalProgress) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.drawn {
		fmt.Fprintf(t.w, "\x1b[%dA\x1b[J", len(t.lines))
		t.drawn = false
	}
}

func (t *TerminalProgress) draw() {
	var b strings.Builder
	if t.drawn {
		fmt.Fprintf(&b, "\x1b[%dA", len(t.lines))
	}
	pad := 0
	for _, l := range t.labels {
		pad = max(pad, utf8.RuneCountInString(l))
	}
	for i, line := range t.lines {
		row := fmt.Sprintf("  %-*s  %s", pad, t.labels[i], line)
		// A line that wraps would break the cursor arithmetic.
		if t.width > 1 && utf8.RuneCountInString(row) >= t.width {
			r := []rune(row)
			row = string(r[:t.width-2]) + "…"
		}
		b.WriteString("\r\x1b[2K" + row + "\n")
	}
	io.WriteString(t.w, b.String())
	t.drawn = true
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
