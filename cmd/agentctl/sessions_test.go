package main

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/testutil"
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
		{"abc def", 7, "abc def"},
		{"abc def", 6, "abc d…"},
		{"abc def ", 7, "abc def"},
		{"abc de\x01f", 20, "abc de\x01f"},
		{"abc  def", 20, "abc def"},
		{"abc\x7fdef", 4, "abc…"},
	} {
		if got := oneLine(tc.in, tc.n); got != tc.want {
			t.Errorf("oneLine(%.20q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// oneLine's ASCII way gives what the runes' way gives.
func TestOneLineASCIIAsRunes(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	alphabets := [][]string{
		{"a", "b", " ", "  ", "\t", "\n", "\v", "\f", "\r", "x", ".", "é", "\u00a0", "\u0085", "\u2028"},
		// Mostly one line of ASCII, as most prompts are.
		{"a", "b", " ", "x", ".", "ab", "word ", "\n"},
	}
	for i := range 10000 {
		s, n := testutil.RandomText(r, alphabets[i%2], 40), 1+r.IntN(30)
		if got, want := oneLine(s, n), oneLineRunes(s, n); got != want {
			t.Fatalf("oneLine(%q, %d) = %q, the runes' way %q", s, n, got, want)
		}
	}
}
