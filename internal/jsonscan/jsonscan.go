// Package jsonscan walks JSON without decoding it: the end of a value and
// the members of an object, checked as encoding/json checks them, so that a
// reader can pick a few small values out of a large record (a transcript
// line of hundreds of kB) and decode only those.
package jsonscan

import (
	"errors"
	"fmt"
)

// maxDepth bounds nesting, as encoding/json bounds its own.
const maxDepth = 10000

// ErrSyntax marks input that is not valid JSON.
var ErrSyntax = errors.New("invalid JSON")

func syntaxAt(b []byte, i int, what string) error {
	if i >= len(b) {
		return fmt.Errorf("%w: unexpected end %s", ErrSyntax, what)
	}
	return fmt.Errorf("%w: unexpected %q at byte %d %s", ErrSyntax, b[i], i, what)
}

// Space returns the index of the first byte at or after i that is not
// JSON white space.
func Space(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Valid reports whether b is one JSON value (with white space around it),
// as json.Valid does.
func Valid(b []byte) bool {
	end, err := Skip(b, Space(b, 0))
	return err == nil && Space(b, end) == len(b)
}

// Skip returns the index just past the JSON value that starts at b[i],
// failing (ErrSyntax) where encoding/json would.
func Skip(b []byte, i int) (int, error) { return skip(b, i, 0) }

func skip(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, syntaxAt(b, i, "where a value was expected")
	}
	switch c := b[i]; {
	case c == '"':
		return String(b, i)
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return i, fmt.Errorf("%w: nested too deep at byte %d", ErrSyntax, i)
		}
		end := byte(']')
		if c == '{' {
			end = '}'
		}
		i = Space(b, i+1)
		if i < len(b) && b[i] == end {
			return i + 1, nil
		}
		for {
			var err error
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return i, syntaxAt(b, i, "where a key was expected")
				}
				if i, err = String(b, i); err != nil {
					return i, err
				}
				i = Space(b, i)
				if i >= len(b) || b[i] != ':' {
					return i, syntaxAt(b, i, "after a key")
				}
				i = Space(b, i+1)
			}
			if i, err = skip(b, i, depth+1); err != nil {
				return i, err
			}
			i = Space(b, i)
			if i >= len(b) {
				return i, syntaxAt(b, i, "in an object or array")
			}
			switch b[i] {
			case ',':
				i = Space(b, i+1)
				continue
			case end:
				return i + 1, nil
			}
			return i, syntaxAt(b, i, "after a member")
		}
	case c == '-' || c >= '0' && c <= '9':
		return number(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return i, syntaxAt(b, i, "where a value was expected")
}

// String returns the index just past the string that starts at b[i] (a
// quote), checking its escapes and that it holds no control character.
func String(b []byte, i int) (int, error) {
	i++
	for {
		if i >= len(b) {
			return i, syntaxAt(b, i, "in a string")
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(b) {
				return i + 1, syntaxAt(b, i+1, "in an escape")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i + 1, syntaxAt(b, i+1, "in a \\u escape")
				}
				i += 6
			default:
				return i + 1, syntaxAt(b, i+1, "in an escape")
			}
		case c < 0x20:
			return i, syntaxAt(b, i, "in a string")
		default:
			i++
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func number(b []byte, i int) (int, error) {
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return i, syntaxAt(b, i, "in a number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return i, syntaxAt(b, i, "in a number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return i, syntaxAt(b, i, "in a number")
		}
	}
	return i, nil
}

func literal(b []byte, i int, word string) (int, error) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, syntaxAt(b, i, "in a literal")
	}
	return i + len(word), nil
}

// Members calls fn with each member of the object that starts at b[i]:
// its key as written (between the quotes, escapes not undone) and its
// value as written. It returns the index just past the object, failing
// where encoding/json would (every value is checked, fn's or not). A b[i]
// that is not '{' is an error too.
func Members(b []byte, i int, fn func(key, value []byte)) (int, error) {
	if i >= len(b) || b[i] != '{' {
		return i, syntaxAt(b, i, "where an object was expected")
	}
	i = Space(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, syntaxAt(b, i, "where a key was expected")
		}
		kEnd, err := String(b, i)
		if err != nil {
			return kEnd, err
		}
		key := b[i+1 : kEnd-1]
		i = Space(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return i, syntaxAt(b, i, "after a key")
		}
		i = Space(b, i+1)
		vEnd, err := skip(b, i, 1)
		if err != nil {
			return vEnd, err
		}
		fn(key, b[i:vEnd])
		i = Space(b, vEnd)
		if i >= len(b) {
			return i, syntaxAt(b, i, "in an object")
		}
		switch b[i] {
		case ',':
			i = Space(b, i+1)
			continue
		case '}':
			return i + 1, nil
		}
		return i, syntaxAt(b, i, "after a member")
	}
}
