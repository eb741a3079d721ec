package logs

import (
	"bytes"
	"unicode/utf8"
)

// Stripper turns raw terminal output into plain text lines: escape
// sequences (CSI, OSC, DCS and two-byte ESC sequences) removed, carriage
// returns resolved the way a terminal shows them, backspaces applied, other
// control bytes dropped, invalid UTF-8 replaced. It keeps state across
// writes, so a sequence split between two chunks is still removed.
type Stripper struct {
	state stripState
	line  []byte // the line being built
	col   int    // cursor position in line, after a carriage return
}

type stripState int

const (
	stText            stripState = iota
	stEsc                        // after ESC
	stCSI                        // inside ESC [ ... final
	stString                     // inside OSC / DCS / APC / PM ... ST or BEL
	stStringEsc                  // ESC inside a string: maybe ST
	stEscIntermediate            // ESC followed by intermediates (e.g. ESC ( B)
)

// Write consumes raw bytes and returns the lines they completed, without
// their line ends.
func (s *Stripper) Write(p []byte) []string {
	var out []string
	for _, b := range p {
		switch s.state {
		case stEsc:
			switch {
			case b == '[':
				s.state = stCSI
			case b == ']' || b == 'P' || b == '_' || b == '^' || b == 'X':
				s.state = stString
			case b >= 0x20 && b <= 0x2f:
				s.state = stEscIntermediate
			default:
				s.state = stText
			}
			continue
		case stEscIntermediate:
			if b < 0x20 || b > 0x2f {
				s.state = stText
			}
			continue
		case stCSI:
			if b >= 0x40 && b <= 0x7e {
				s.state = stText
			}
			continue
		case stString:
			switch b {
			case 0x07:
				s.state = stText
			case 0x1b:
				s.state = stStringEsc
			}
			continue
		case stStringEsc:
			if b == '\\' {
				s.state = stText
			} else {
				s.state = stString
			}
			continue
		}
		switch b {
		case 0x1b:
			s.state = stEsc
		case '\n':
			out = append(out, s.takeLine())
		case '\r':
			s.col = 0
		case '\b':
			if s.col > 0 {
				// Step back over one whole rune.
				_, size := utf8.DecodeLastRune(s.line[:s.col])
				s.col -= size
			}
		case '\t':
			s.put('\t')
		default:
			if b < 0x20 || b == 0x7f {
				continue
			}
			s.put(b)
		}
	}
	return out
}

// put writes one byte at the cursor, overwriting what a carriage return
// left behind.
func (s *Stripper) put(b byte) {
	if s.col < len(s.line) {
		s.line[s.col] = b
	} else {
		s.line = append(s.line, b)
	}
	s.col++
}

func (s *Stripper) takeLine() string {
	line := bytes.ToValidUTF8(s.line, []byte("\uFFFD"))
	s.line, s.col = s.line[:0], 0
	return string(line)
}

// Flush returns the unfinished last line, if any.
func (s *Stripper) Flush() (string, bool) {
	if len(s.line) == 0 {
		return "", false
	}
	return s.takeLine(), true
}

// StripLines is the text view of a complete chunk of raw output.
func StripLines(raw []byte) []string {
	var s Stripper
	lines := s.Write(raw)
	if last, ok := s.Flush(); ok {
		lines = append(lines, last)
	}
	return lines
}
