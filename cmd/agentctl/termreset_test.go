package main

import (
	"bytes"
	"testing"
)

func TestTermModesFollowTheAlternateScreen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		chunks []string
		alt    bool
	}{
		{"nothing", []string{"hello"}, false},
		{"entered", []string{"\x1b[?1049h\x1b[2J"}, true},
		{"entered and left", []string{"\x1b[?1049h", "x\x1b[?1049l"}, false},
		{"split across writes", []string{"ab\x1b", "[?10", "49h"}, true},
		{"several modes", []string{"\x1b[?25;1049h"}, true},
		{"old xterm", []string{"\x1b[?47h"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m termModes
			for _, c := range tc.chunks {
				m.see([]byte(c))
			}
			if m.alt.On() != tc.alt {
				t.Fatalf("alternate screen = %v, want %v", m.alt.On(), tc.alt)
			}
			r := m.reset()
			if got := bytes.Contains(r, []byte("\x1b[?1049l")); got != tc.alt {
				t.Fatalf("reset %q leaves the alternate screen: %v, want %v", r, got, tc.alt)
			}
			if !bytes.Contains(r, []byte("\x1b[?25h")) {
				t.Fatalf("reset %q does not show the cursor", r)
			}
		})
	}
}
