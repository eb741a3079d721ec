package logs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

func TestWriterRotatesAndKeepsNewest(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "output.log")
	w, err := OpenWriter(p, 100, 3)
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	for i := 0; i < 40; i++ {
		line := fmt.Sprintf("line %02d\n", i)
		all.WriteString(line)
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	for i := 0; i < 3; i++ {
		st, err := os.Stat(RotatedName(p, i))
		if err != nil {
			t.Fatalf("file %d: %v", i, err)
		}
		if st.Size() > 100 {
			t.Errorf("file %d is %d bytes, over the cap", i, st.Size())
		}
	}
	if _, err := os.Stat(RotatedName(p, 3)); err == nil {
		t.Error("a fourth file exists; want three at most")
	}
	got := tail(t, p, 0)
	if !strings.HasSuffix(all.String(), string(got)) || len(got) < 200 {
		t.Errorf("tail of everything is not the newest suffix of what was written: %q", got)
	}
}

func TestTailLines(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "output.log")
	w, _ := OpenWriter(p, 64, 4)
	for i := 0; i < 30; i++ {
		fmt.Fprintf(w, "l%d\n", i)
	}
	w.Write([]byte("partial"))
	w.Close()
	tests := []struct {
		n    int
		want string
	}{
		{1, "partial"},
		{2, "l29\npartial"},
		{5, "l26\nl27\nl28\nl29\npartial"},
	}
	for _, tc := range tests {
		if got := tail(t, p, tc.n); string(got) != tc.want {
			t.Errorf("tail of %d lines = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := tail(t, filepath.Join(t.TempDir(), "none.log"), 5); len(got) != 0 {
		t.Errorf("tail of a missing log = %q, want nothing", got)
	}
}

// tail is the last n lines of the log at path: what is read from where
// TailStart says they begin.
func tail(t *testing.T, path string, n int) []byte {
	t.Helper()
	start, err := TailStart(path, n)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	err = Follow(context.Background(), path, start, func() bool { return true }, func(p []byte) error { b.Write(p); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A line of any length costs the tail at most MaxLine bytes a line: the
// last n lines of a log whose last line is far longer are its last n
// MaxLine-byte pieces, and lines around it count as usual.
func TestTailOfALongLine(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "output.log")
	long := bytes.Repeat([]byte("x"), 10*MaxLine+7)
	tests := []struct {
		name    string
		content []byte
		n       int
		want    int // bytes of the tail
	}{
		{"unfinished", long, 3, 3 * MaxLine},
		{"finished", append(slices.Clone(long), '\n'), 2, 2*MaxLine + 1},
		{"then short lines", append(append(slices.Clone(long), '\n'), "a\nb\n"...), 3, MaxLine + 1 + 4},
		{"whole", long, 20, len(long)},
		{"exactly MaxLine", append(append([]byte("a\n"), bytes.Repeat([]byte("y"), MaxLine)...), '\n'), 2, MaxLine + 3},
		{"newline first", []byte("\nab"), 5, 3},
	}
	for _, tc := range tests {
		if err := os.WriteFile(p, tc.content, 0o600); err != nil {
			t.Fatal(err)
		}
		if got := tail(t, p, tc.n); len(got) != tc.want || !bytes.HasSuffix(tc.content, got) {
			t.Errorf("%s: the last %d lines are %d bytes, want the last %d", tc.name, tc.n, len(got), tc.want)
		}
	}
}

// A writer appends numbered lines, rotating often, while a reader takes a
// tail and then follows: together they must see every line exactly once.
func TestTailThenFollowLosesAndRepeatsNothing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "output.log")
	w, _ := OpenWriter(p, 4096, 50)
	const total = 20000
	var done atomic.Bool
	go func() {
		for i := 0; i < total; i++ {
			fmt.Fprintf(w, "%d\n", i)
			if i == total/3 {
				time.Sleep(20 * time.Millisecond)
			}
		}
		w.Close()
		done.Store(true)
	}()
	time.Sleep(5 * time.Millisecond)
	pos, err := TailStart(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = Follow(ctx, p, pos, done.Load, func(b []byte) error { got.Write(b); return nil })
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(got.String(), "\n"), "\n")
	if len(lines) != total {
		t.Fatalf("saw %d lines, want %d", len(lines), total)
	}
	for i, l := range lines {
		if l != fmt.Sprint(i) {
			t.Fatalf("line %d is %q", i, l)
		}
	}
}

func TestStripper(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"plain", "a\nb\n", []string{"a", "b"}},
		{"crlf", "hello\r\n", []string{"hello"}},
		{"csi colour", "\x1b[1;31mred\x1b[0m\n", []string{"red"}},
		{"osc title bel", "\x1b]0;title\x07text\n", []string{"text"}},
		{"osc st", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n", []string{"link"}},
		{"charset", "\x1b(Bok\n", []string{"ok"}},
		{"cr overwrite", "12345\rab\n", []string{"ab345"}},
		{"cr overwrite of wide runes", "⠙⠹⠸ x\rab\n", []string{"ab⠸ x"}},
		{"cr overwrite with a wide rune", "abc\r⠙\n", []string{"⠙bc"}},
		{"progress", "10%\r20%\r100%\n", []string{"100%"}},
		{"backspace", "abc\b\bX\n", []string{"aXc"}},
		{"controls dropped", "a\x00\x07b\n", []string{"ab"}},
		{"invalid utf8", "a\xffb\n", []string{"a\uFFFDb"}},
		{"unfinished", "tail", []string{"tail"}},
		{"private mode", "\x1b[?25lhidden cursor\x1b[?25h\n", []string{"hidden cursor"}},
		// Redrawn in place: what the terminal ends up showing.
		{"cursor back", "abc\x1b[2Dxy\n", []string{"axy"}},
		{"cursor back one", "abc\x1b[Dz\n", []string{"abz"}},
		{"cursor forward", "ab\x1b[2Cc\n", []string{"ab  c"}},
		{"column", "⠙ working\x1b[1G\x1b[0Kdone\n", []string{"done"}},
		{"column with a wide rune", "⠙⠹\x1b[2Gx\n", []string{"⠙x"}},
		{"spinner erased", "⠙ installing\r\x1b[2Knpm error x\n", []string{"npm error x"}},
		{"erase to the end", "abcdef\x1b[3D\x1b[K\n", []string{"abc"}},
		{"erase to the cursor", "abcdef\x1b[3D\x1b[1K\n", []string{"   def"}},
		{"erase the line, write on", "abc\x1b[2Kd\n", []string{"   d"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := StripLines([]byte(tc.in))
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
				t.Errorf("StripLines(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestStripperSequenceSplitAcrossWrites(t *testing.T) {
	t.Parallel()
	var s Stripper
	in := []byte("\x1b[38;5;200mcolour\x1b[0m done\n")
	var lines []string
	for _, b := range in {
		lines = append(lines, s.Write([]byte{b})...)
	}
	if len(lines) != 1 || lines[0] != "colour done" {
		t.Fatalf("got %q", lines)
	}
}

func FuzzStripper(f *testing.F) {
	f.Add([]byte("\x1b[1mhi\x1b[0m\r\nx\by"))
	f.Add([]byte("\x1b]0;t\x07\x1b(B"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, l := range StripLines(b) {
			if strings.ContainsAny(l, "\x1b\n\r") {
				t.Fatalf("control bytes left in %q", l)
			}
			if len(l) > MaxLine {
				t.Fatalf("a line of %d bytes, over MaxLine", len(l))
			}
		}
	})
}

// A log that is a symbolic link is not followed out of the session's
// folder: tail and follow refuse it, naming it.
func TestLogThatIsASymlinkIsRefused(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("not yours\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "output.log")
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	if _, err := TailStart(path, 5); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("TailStart of a symlinked log = %v; want a refusal", err)
	}
	err := Follow(context.Background(), path, Position{}, func() bool { return true }, func([]byte) error {
		t.Fatal("Follow read through a symlink")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("Follow of a symlinked log = %v; want a refusal", err)
	}
}

// A line of any length comes out as lines of at most MaxLine bytes, cut at
// character boundaries and never inside a colour sequence, which put
// together are the line; the line being built never holds more.
func TestStripperCutsLongLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		keepColor bool
		unit      string
	}{
		{"ascii", false, "x"},
		{"two-byte characters", false, "é"},
		{"four-byte characters", false, "😀"},
		{"colour", true, "\x1b[31mab\x1b[0m"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := strings.Repeat(tc.unit, 3*MaxLine/len(tc.unit)+5)
			s := Stripper{KeepColor: tc.keepColor}
			var lines []string
			raw := []byte(in + "\n")
			for len(raw) > 0 {
				n := min(len(raw), 999) // cuts characters and sequences too
				lines = append(lines, s.Write(raw[:n])...)
				raw = raw[n:]
				if p := len(s.Pending()); p > MaxLine {
					t.Fatalf("the line being built holds %d bytes, over MaxLine", p)
				}
			}
			if len(lines) < 4 {
				t.Fatalf("%d lines, want the line cut in at least 4", len(lines))
			}
			for i, l := range lines {
				if len(l) > MaxLine || !utf8.ValidString(l) || strings.ContainsRune(l, utf8.RuneError) {
					t.Fatalf("line %d: %d bytes, valid %v: want at most MaxLine of whole characters", i, len(l), utf8.ValidString(l))
				}
				if esc := strings.Count(l, "\x1b"); esc != strings.Count(l, "\x1b[31m")+strings.Count(l, "\x1b[0m") {
					t.Fatalf("line %d holds a cut colour sequence", i)
				}
			}
			if strings.Join(lines, "") != in {
				t.Fatal("the lines put together are not the line")
			}
		})
	}
}

// A line of exactly MaxLine bytes is one line, and stays the unfinished
// line until more comes.
func TestStripperLineOfMaxLine(t *testing.T) {
	t.Parallel()
	var s Stripper
	line := strings.Repeat("y", MaxLine)
	if got := s.Write([]byte(line)); len(got) != 0 || s.Pending() != line {
		t.Fatalf("%d lines and %d bytes pending; want none and the line", len(got), len(s.Pending()))
	}
	if got := s.Write([]byte("\nz\n")); len(got) != 2 || got[0] != line || got[1] != "z" {
		t.Fatalf("%d lines after the line end, want the line and z", len(got))
	}
}
