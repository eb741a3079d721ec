package main

import (
	"strings"
	"testing"
)

func TestOneLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 10, ""},
		{"  fix\tthe\n\n bug  ", 50, "fix the bug"},
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "abcde…"},
		{"abcde fg", 6, "abcde…"},
		{"ab  cd", 5, "ab cd"},
		{"héllo wörld", 8, "héllo w…"},
		{strings.Repeat("word ", 10000), 12, "word word w…"},
	} {
		if got := oneLine(tc.in, tc.n); got != tc.want {
			t.Errorf("oneLine(%.20q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
