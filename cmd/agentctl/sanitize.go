package main

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// sanitize makes user-controlled text (names, prompts, commands, paths) safe
// to print in a table: control characters (escape sequences, bells, C1
// controls) and bytes that are not UTF-8 become a visible '?', and tabs and
// line breaks a space.
func sanitize(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case unicode.IsControl(r) || r == utf8.RuneError:
			return '?'
		}
		return r
	}, s)
}
