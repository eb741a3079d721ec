package spawn

import (
	"bytes"
	"testing"
)

func TestScreenRedrawsWhatIsShown(t *testing.T) {
	for _, tc := range []struct {
		name   string
		output string
		want   []string
		not    []string
	}{
		{"plain lines", "one\r\ntwo\r\n", []string{"one", "two", "\x1b[?25h"}, []string{"\x1b[?1049h"}},
		{"full screen", "\x1b[?1049h\x1b[?25l\x1b[2J\x1b[5;10HMENU", []string{"\x1b[?1049h", "MENU", "\x1b[?25l"}, nil},
		{"overwritten", "first\rsecond", []string{"second"}, []string{"first"}},
		{"cleared", "gone\x1b[2J\x1b[Hhere", []string{"here"}, []string{"gone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScreen(24, 80)
			s.write([]byte(tc.output))
			got := s.redraw()
			for _, w := range tc.want {
				if !bytes.Contains(got, []byte(w)) {
					t.Errorf("redraw %q lacks %q", got, w)
				}
			}
			for _, w := range tc.not {
				if bytes.Contains(got, []byte(w)) {
					t.Errorf("redraw %q has %q", got, w)
				}
			}
		})
	}
}

// Long output keeps only its end, and the alternate screen entered long
// before that end is still known.
func TestScreenKeepsTheEndOfLongOutput(t *testing.T) {
	s := newScreen(24, 80)
	s.write([]byte("\x1b[?1049h"))
	for i := 0; i < 20000; i++ {
		s.write([]byte("\x1b[Hframe \x1b[1mbold\x1b[0m "))
	}
	s.write([]byte("\x1b[2J\x1b[3;3Hlast frame"))
	if s.size > screenKeep+4<<10 {
		t.Fatalf("keeps %d bytes, want at most about %d", s.size, screenKeep)
	}
	got := s.redraw()
	for _, w := range []string{"\x1b[?1049h", "last frame"} {
		if !bytes.Contains(got, []byte(w)) {
			t.Errorf("redraw %q lacks %q", got, w)
		}
	}
}

// A batch longer than what is kept (a fast writer's read) keeps its tail,
// with the alternate screen as it was where the tail begins.
func TestScreenKeepsTheEndOfOneLongBatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch []byte
		alt   bool
	}{
		{"alternate screen entered before the tail", append([]byte("\x1b[?1049h"), bytes.Repeat([]byte("x"), 2*screenKeep)...), true},
		{"alternate screen left before the tail", append([]byte("\x1b[?1049hab\x1b[?1049l"), bytes.Repeat([]byte("x"), 2*screenKeep)...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScreen(24, 80)
			s.write([]byte("before"))
			s.write(append(tc.batch, "\x1b[3;3Hthe end"...))
			if s.size != screenKeep || len(s.chunks) != 1 {
				t.Fatalf("keeps %d bytes in %d chunks, want %d in one", s.size, len(s.chunks), screenKeep)
			}
			got := s.redraw()
			if !bytes.Contains(got, []byte("the end")) {
				t.Errorf("redraw lacks the batch's end: %q", got)
			}
			if on := bytes.Contains(got, []byte("\x1b[?1049h")); on != tc.alt {
				t.Errorf("redraw in the alternate screen: %v, want %v", on, tc.alt)
			}
		})
	}
}
