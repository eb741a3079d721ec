package client

import (
	"errors"
	"fmt"
)

// maxIndentDepth bounds the nesting indentJSON follows, as encoding/json
// bounds its own: an answer nested deeper is refused, not recursed into.
const maxIndentDepth = 10000

// errIndentDepth marks a value nested past maxIndentDepth.
var errIndentDepth = errors.New("nested too deep")

// indentJSON appends src, one JSON value, to dst as json.Indent(dst, src,
// "", "  ") writes it, and fails where src is not valid JSON as it does.
// It is json.Indent at memory speed: a list of 7,000 sessions (3.5 MB) is
// re-indented in a few milliseconds where json.Indent's byte-by-byte state
// machine takes tens, which is most of what `list --json` adds to the
// service's answer.
func indentJSON(dst, src []byte) ([]byte, error) {
	p := indenter{src: src, out: dst}
	p.space()
	if err := p.value(0); err != nil {
		return dst, err
	}
	// json.Indent keeps what follows the value when it is white space.
	rest := p.i
	p.space()
	if p.i < len(src) {
		return dst, p.fail("after the value")
	}
	return append(p.out, src[rest:]...), nil
}

// indentedSize is room for n bytes of a list's answer once indented
// (about 1.26 times as many): made once at its size, the answer is not
// copied as it grows, and what is not written is never touched.
func indentedSize(n int) int { return n + n/2 }

type indenter struct {
	src []byte
	i   int
	out []byte
}

func (p *indenter) fail(what string) error {
	if p.i >= len(p.src) {
		return fmt.Errorf("invalid JSON: unexpected end %s", what)
	}
	return fmt.Errorf("invalid JSON: unexpected %q at byte %d %s", p.src[p.i], p.i, what)
}

func (p *indenter) space() {
	for p.i < len(p.src) {
		switch p.src[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *indenter) newline(depth int) {
	p.out = append(p.out, '\n')
	for range depth {
		p.out = append(p.out, ' ', ' ')
	}
}

func (p *indenter) value(depth int) error {
	if p.i >= len(p.src) {
		return p.fail("where a value was expected")
	}
	switch c := p.src[p.i]; {
	case c == '{' || c == '[':
		return p.container(depth, c)
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	}
	return p.fail("where a value was expected")
}

// container copies an object or an array, each member on a line of its
// own one level deeper; an empty one stays "{}" or "[]".
func (p *indenter) container(depth int, open byte) error {
	if depth >= maxIndentDepth {
		return fmt.Errorf("invalid JSON: %w at byte %d", errIndentDepth, p.i)
	}
	end := byte(']')
	if open == '{' {
		end = '}'
	}
	p.i++
	p.space()
	if p.i < len(p.src) && p.src[p.i] == end {
		p.i++
		p.out = append(p.out, open, end)
		return nil
	}
	p.out = append(p.out, open)
	for {
		p.newline(depth + 1)
		if open == '{' {
			if p.i >= len(p.src) || p.src[p.i] != '"' {
				return p.fail("where a key was expected")
			}
			if err := p.str(); err != nil {
				return err
			}
			p.space()
			if p.i >= len(p.src) || p.src[p.i] != ':' {
				return p.fail("after a key")
			}
			p.i++
			p.out = append(p.out, ':', ' ')
			p.space()
		}
		if err := p.value(depth + 1); err != nil {
			return err
		}
		p.space()
		if p.i >= len(p.src) {
			return p.fail("in an object or array")
		}
		switch p.src[p.i] {
		case ',':
			p.i++
			p.out = append(p.out, ',')
			p.space()
			continue
		case end:
			p.i++
			p.newline(depth)
			p.out = append(p.out, end)
			return nil
		}
		return p.fail("after a member")
	}
}

// str copies a string, checking its escapes and that it holds no control
// character.
func (p *indenter) str() error {
	start := p.i
	i := p.i + 1
	for {
		if i >= len(p.src) {
			p.i = i
			return p.fail("in a string")
		}
		c := p.src[i]
		switch {
		case c == '"':
			i++
			p.out = append(p.out, p.src[start:i]...)
			p.i = i
			return nil
		case c == '\\':
			if i+1 >= len(p.src) {
				p.i = i + 1
				return p.fail("in an escape")
			}
			switch p.src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(p.src) || !isHex(p.src[i+2]) || !isHex(p.src[i+3]) || !isHex(p.src[i+4]) || !isHex(p.src[i+5]) {
					p.i = i + 1
					return p.fail("in a \\u escape")
				}
				i += 6
			default:
				p.i = i + 1
				return p.fail("in an escape")
			}
		case c < 0x20:
			p.i = i
			return p.fail("in a string")
		default:
			i++
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number copies a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *indenter) number() error {
	start := p.i
	i := p.i
	digits := func() bool {
		j := i
		for i < len(p.src) && p.src[i] >= '0' && p.src[i] <= '9' {
			i++
		}
		return i > j
	}
	if p.src[i] == '-' {
		i++
	}
	switch {
	case i < len(p.src) && p.src[i] == '0':
		i++
	case !digits():
		p.i = i
		return p.fail("in a number")
	}
	if i < len(p.src) && p.src[i] == '.' {
		i++
		if !digits() {
			p.i = i
			return p.fail("in a number")
		}
	}
	if i < len(p.src) && (p.src[i] == 'e' || p.src[i] == 'E') {
		i++
		if i < len(p.src) && (p.src[i] == '+' || p.src[i] == '-') {
			i++
		}
		if !digits() {
			p.i = i
			return p.fail("in a number")
		}
	}
	p.out = append(p.out, p.src[start:i]...)
	p.i = i
	return nil
}

func (p *indenter) literal(word string) error {
	if len(p.src)-p.i < len(word) || string(p.src[p.i:p.i+len(word)]) != word {
		return p.fail("in a literal")
	}
	p.out = append(p.out, word...)
	p.i += len(word)
	return nil
}
