// Package text holds the string shaping every layer shares.
package text

import "unicode/utf8"

// Truncate cuts s to at most maxBytes bytes, at a UTF-8 rune boundary, so
// a cut never leaves half a character.
func Truncate(s string, maxBytes int) string {
	if len(s) <= maxBytes {
		return s
	}
	cut := max(maxBytes, 0)
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}

// TruncateRunes keeps the first n characters of s.
func TruncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:max(n, 0)])
}

// Ellipsis keeps the first n characters of s and marks a cut with "…".
func Ellipsis(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}
