package orchestrate

import (
	"bytes"
	"strings"
	"testing"
)

func TestLineProgress(t *testing.T) {
	var b bytes.Buffer
	p := NewLineProgress(&b, []string{"claude (opus)", "codex"})
	p.Update(0, Queued, "cc")
	p.Update(1, Queued, "codex")
	p.Update(0, Creating, "/r-try-g-1-cc")
	p.Update(0, Starting, "")
	p.Update(0, Started, "01abc")
	p.Update(1, Failed, "unknown adapter\n  \"codex\"")
	want := "cc: creating worktree /r-try-g-1-cc\ncc: started 01abc\ncodex: failed: unknown adapter \"codex\"\n"
	if b.String() != want {
		t.Errorf("output:\n%q\nwant:\n%q", b.String(), want)
	}
}

func TestTerminalProgress(t *testing.T) {
	var b bytes.Buffer
	p := NewTerminalProgress(&b, []string{"a", "b"}, 40)
	p.Update(0, Queued, "cc-opus")
	first := b.String()
	if strings.Contains(first, "\x1b[2A") || !strings.Contains(first, "  cc-opus  · waiting\n") || !strings.Contains(first, "  b        · waiting\n") {
		t.Errorf("first draw = %q", first)
	}
	b.Reset()
	p.Update(1, Failed, strings.Repeat("x", 100))
	redraw := b.String()
	lines := strings.Split(strings.TrimSuffix(redraw, "\n"), "\n")
	if !strings.HasPrefix(redraw, "\x1b[2A") || len(lines) != 2 {
		t.Fatalf("redraw = %q", redraw)
	}
	for _, l := range lines {
		visible := strings.TrimPrefix(strings.TrimPrefix(l, "\x1b[2A"), "\r\x1b[2K")
		if n := len([]rune(visible)); n >= 40 {
			t.Errorf("line of %d columns on a 40-column terminal: %q", n, visible)
		}
	}
	if !strings.Contains(lines[1], "✗ failed: xxx") || !strings.HasSuffix(lines[1], "…") {
		t.Errorf("failed line = %q", lines[1])
	}
	b.Reset()
	p.Close()
	if b.String() != "\x1b[2A\x1b[J" {
		t.Errorf("close = %q", b.String())
	}
	b.Reset()
	p.Close()
	if b.Len() != 0 {
		t.Errorf("second close wrote %q", b.String())
	}
}
