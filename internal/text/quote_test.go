package text

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short", "a\tb", `"a\tb"`},
		{"at the limit", strings.Repeat("x", 64), `"` + strings.Repeat("x", 64) + `"`},
		{"one byte over", strings.Repeat("x", 65), `"` + strings.Repeat("x", 64) + `"… (65 bytes)`},
		{"cut inside a character", strings.Repeat("é", 1<<20), `"` + strings.Repeat("é", 32) + `"… (2097152 bytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Quote(tc.in); got != tc.want {
				t.Errorf("Quote = %.100s, want %.100s", got, tc.want)
			}
		})
	}
}
