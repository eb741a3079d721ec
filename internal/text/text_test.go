package text

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

func TestFigures(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	i := func(v int64) *int64 { return &v }
	c := 1.234
	u := func(v uint64) *uint64 { return &v }
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct{ got, want string }{
		{Size(nil), ""},
		{Size(u(512)), "512B"},
		{Size(u(812 << 10)), "812KiB"},
		{Size(u(104857600 + 524288)), "100MiB"},
		{Size(u(15 << 20)), "15.0MiB"},
		{Size(u(1300 << 20)), "1.27GiB"},
		{Percent(nil), ""},
		{Percent(f(99.96)), "100.0%"},
		{Percent(f(0)), "0.0%"},
		{Seconds(nil), ""},
		{Seconds(f(12.34)), "12.3s"},
		{Seconds(f(245)), "4m05s"},
		{Seconds(f(7380)), "2h03m"},
		{Ago(now, time.Time{}), ""},
		{Ago(now, now.Add(time.Second)), "0s"},
		{Ago(now, now.Add(-45*time.Second)), "45s"},
		{Ago(now, now.Add(-12*time.Minute)), "12m"},
		{Ago(now, now.Add(-47*time.Hour)), "47h"},
		{Ago(now, now.Add(-72*time.Hour)), "3d"},
		{Tokens(nil, nil), ""},
		{Tokens(i(999), nil), "999/?"},
		{Tokens(i(1500), i(2_500_000)), "1.5k/2.5M"},
		{Cost(nil), ""},
		{Cost(&c), "$1.23"},
		{Count(0), "0"},
		{Count(999), "999"},
		{Count(7000), "7,000"},
		{Count(-1234567), "-1,234,567"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestClean(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, one, lines string }{
		{"plain", "plain", "plain"},
		{"tab\tand\nnewline", "tab and newline", "tab\tand\nnewline"},
		{"cr\roverwrites", "cr overwrites", "cr overwrites"},
		{"\x1b]0;title\x07red\x1b[31m", "?]0;title?red?[31m", "?]0;title?red?[31m"},
		{"clear\x1b[2J", "clear?[2J", "clear?[2J"},
		{"c1 \u009b31m", "c1 ?31m", "c1 ?31m"},
		{"bad \xff utf8", "bad ? utf8", "bad ? utf8"},
		{"ünïcödé ✓ 日本", "ünïcödé ✓ 日本", "ünïcödé ✓ 日本"},
		// Bidi overrides and isolates, zero-width characters, marks, BOM.
		{"abc\u202etxt.exe", "abc?txt.exe", "abc?txt.exe"},
		{"a\u200bb\u200cc\u200ed\u200fe", "a?b?c?d?e", "a?b?c?d?e"},
		{"\u2066x\u2067y\u2068z\u2069", "?x?y?z?", "?x?y?z?"},
		{"\ufeffbom\u2060wj\u061calm", "?bom?wj?alm", "?bom?wj?alm"},
		{"line\u2028sep", "line sep", "line sep"},
		{"del\x7f nul\x00", "del? nul?", "del? nul?"},
		{"ascii first, then \u202e", "ascii first, then ?", "ascii first, then ?"},
		// A joiner between two letters hides; one inside an emoji joins.
		{"ad\u200dmin", "ad?min", "ad?min"},
		{"👩\u200d💻 ❤\ufe0f\u200d🔥", "👩\u200d💻 ❤\ufe0f\u200d🔥", "👩\u200d💻 ❤\ufe0f\u200d🔥"},
	} {
		if got := Clean(tc.in); got != tc.one {
			t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.one)
		}
		if got := CleanLines(tc.in); got != tc.lines {
			t.Errorf("CleanLines(%q) = %q, want %q", tc.in, got, tc.lines)
		}
	}
}

// TestNeedsCleaningASCII: the byte-by-byte pass over ASCII says what the
// pass over runes says, for every byte, alone and after and before text.
func TestNeedsCleaningASCII(t *testing.T) {
	t.Parallel()
	for c := range 256 {
		for _, s := range []string{string(rune(c)), string([]byte{byte(c)}), "ab" + string([]byte{byte(c)}) + "cd", "x\u202e" + string([]byte{byte(c)})} {
			for _, lines := range []bool{false, true} {
				if got, want := needsCleaning(s, lines), needsCleaningRunes(s, lines); got != want {
					t.Errorf("needsCleaning(%q, %v) = %v, the runes' pass says %v", s, lines, got, want)
				}
			}
		}
	}
}

// TestFiguresAsFmt: counts, costs and ages are what fmt's verbs made of
// them (they are written with strconv, for speed), over many values.
func TestFiguresAsFmt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		n := r.Int64N(1 << r.IntN(40))
		want := fmt.Sprint(n)
		switch {
		case n >= 1_000_000:
			want = fmt.Sprintf("%.1fM", float64(n)/1e6)
		case n >= 1000:
			want = fmt.Sprintf("%.1fk", float64(n)/1e3)
		}
		if got := Tokens(&n, nil); got != want+"/?" {
			t.Fatalf("Tokens(%d) = %q, want %q", n, got, want+"/?")
		}
		c := r.NormFloat64() * float64(r.IntN(1000))
		if got, want := Cost(&c), fmt.Sprintf("$%.2f", c); got != want {
			t.Fatalf("Cost(%v) = %q, want %q", c, got, want)
		}
		d := time.Duration(r.Int64N(int64(1000 * time.Hour)))
		want = fmt.Sprintf("%dd", int(d.Hours()/24))
		switch {
		case d < time.Minute:
			want = fmt.Sprintf("%ds", int(d.Seconds()))
		case d < time.Hour:
			want = fmt.Sprintf("%dm", int(d.Minutes()))
		case d < 48*time.Hour:
			want = fmt.Sprintf("%dh", int(d.Hours()))
		}
		if got := Ago(now, now.Add(-d)); got != want {
			t.Fatalf("Ago(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"1024", 1024, false},
		{"50M", 50 << 20, false},
		{"50m", 50 << 20, false},
		{"50MiB", 50 << 20, false},
		{"50MB", 50 << 20, false},
		{"1.5G", 3 << 29, false},
		{"512k", 512 << 10, false},
		{" 2 G ", 2 << 30, false},
		{"", 0, true},
		{"M", 0, true},
		{"-5M", 0, true},
		{"5X", 0, true},
		{"99999999T", 0, true},
	} {
		got, err := ParseBytes(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d (error: %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}
