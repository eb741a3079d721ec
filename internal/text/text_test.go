package text

import (
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"abc", 0, ""},
		{"abc", -1, ""},
		{"héllo", 2, "h"},  // é is two bytes: never half of it
		{"héllo", 3, "hé"}, // the whole é fits
		{"日本語", 4, "日"},
		{"日本語", 6, "日本"},
	} {
		got := Truncate(tc.in, tc.n)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestEllipsis(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"a longer text", 8, "a longer…"},
		{"日本語のテキスト", 3, "日本語…"},
	} {
		if got := Ellipsis(tc.in, tc.n); got != tc.want {
			t.Errorf("Ellipsis(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
