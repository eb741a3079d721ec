package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean makes text that is not ours (names, prompts, paths, a remote's
// messages) safe to print on one line of a terminal: control characters
// (escape sequences, bells, C1 controls), bytes that are not UTF-8 and
// invisible format characters (bidi overrides and isolates, zero-width
// spaces and marks, the byte-order mark) become a visible '?', and tabs
// and line breaks a space. The format characters go because they reorder
// or hide what is shown: "abc\u202Etxt.exe" reads as "abcexe.txt".
func Clean(s string) string { return clean(s, false) }

// CleanLines is Clean for a message of several lines (an error, a
// remote's standard error): line breaks and tabs stay, a carriage return
// (which would let a line overwrite another) becomes a space.
func CleanLines(s string) string { return clean(s, true) }

func clean(s string, lines bool) string {
	if !needsCleaning(s, lines) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	prev := rune(0)
	for i, r := range s {
		size := utf8.RuneLen(r)
		if r == utf8.RuneError {
			_, size = utf8.DecodeRuneInString(s[i:])
		}
		switch {
		case lines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\t' || r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029':
			b.WriteByte(' ')
		case r == '\u200d' && emojiPart(prev) && emojiPart(next(s[i+size:])):
			b.WriteRune(r) // joins an emoji sequence: 👩‍💻 is one picture
		case unsafeRune(r):
			b.WriteByte('?')
		default:
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}

// needsCleaning reports whether clean would change s: the common case,
// plain text, costs one pass and no copy.
func needsCleaning(s string, lines bool) bool {
	// ASCII byte by byte: printable but for the controls (C0 and DEL).
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return needsCleaningRunes(s[i:], lines)
		}
		if (c < 0x20 || c == 0x7f) && !(lines && (c == '\n' || c == '\t')) {
			return true
		}
	}
	return false
}

// needsCleaningRunes is needsCleaning for any text.
func needsCleaningRunes(s string, lines bool) bool {
	for _, r := range s {
		if lines && (r == '\n' || r == '\t') {
			continue
		}
		if r == '\u2028' || r == '\u2029' || unsafeRune(r) {
			return true
		}
	}
	return false
}

// unsafeRune reports a character that is not to reach a terminal as is:
// a control, a stray byte, or an invisible format character (Unicode's
// Cf: U+200B–U+200F, U+202A–U+202E, U+2060–U+2064, U+2066–U+2069,
// U+FEFF, U+061C, the tag characters…).
func unsafeRune(r rune) bool {
	return r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// emojiPart reports a character an emoji sequence joins: a pictograph, a
// skin tone, or the variation selector that makes one a picture.
func emojiPart(r rune) bool {
	return r == '\ufe0f' || r >= 0x1f000 && (unicode.Is(unicode.So, r) || unicode.Is(unicode.Sk, r)) ||
		r >= 0x2600 && r < 0x2800 && unicode.Is(unicode.So, r)
}

func next(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}
