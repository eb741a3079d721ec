package logs

import (
	"bytes"
	"unicode/utf8"
)

// MaxLine is the most bytes a line of the text view holds: a longer line
// (100 MB of output without a line end) is cut into lines of at most
// MaxLine bytes, at a character boundary (a colour sequence is not split
// either), so that reading any output holds a bounded amount of it.
const MaxLine = 64 << 10

// Stripper turns raw terminal output into plain text lines: escape
// sequences (CSI, OSC, DCS and two-byte ESC sequences) removed, carriage
// returns resolved the way a terminal shows them, backspaces applied, other
// control bytes dropped, invalid UTF-8 replaced. It keeps state across
// writes, so a sequence split between two chunks is still removed.
type Stripper struct {
	// KeepColor keeps colour and text attributes (SGR sequences, ESC [ ...
	// m) in the lines: what a terminal can show without moving its cursor.
	KeepColor bool

	state stripState
	line  []byte // the line being built
	col   int    // cursor position in line, after a carriage return
	seq   []byte // the CSI sequence being read, when KeepColor
	// sinceLine counts the raw bytes read since the last line end: the
	// unfinished line, escapes included.
	sinceLine int64
}

// SinceLine is how many raw bytes were read since the last line end.
func (s *Stripper) SinceLine() int64 { return s.sinceLine }

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
	s.write(p, func(line []byte, _ int) { out = append(out, validText(line)) })
	return out
}

// Lines consumes raw bytes and hands each line they complete to fn, with
// the index in p of the byte that ended it; the line is valid during the
// call only.
func (s *Stripper) Lines(p []byte, fn func(line []byte, end int)) {
	s.write(p, func(line []byte, end int) {
		if !utf8.Valid(line) {
			line = bytes.ToValidUTF8(line, []byte("\uFFFD"))
		}
		fn(line, end)
	})
}

// AppendText consumes raw bytes and appends the lines they completed to
// dst, each with a newline: the text view without a string per line.
func (s *Stripper) AppendText(dst, p []byte) []byte {
	s.write(p, func(line []byte, _ int) {
		if utf8.Valid(line) {
			dst = append(dst, line...)
		} else {
			dst = append(dst, bytes.ToValidUTF8(line, []byte("\uFFFD"))...)
		}
		dst = append(dst, '\n')
	})
	return dst
}

func validText(line []byte) string {
	if utf8.Valid(line) {
		return string(line)
	}
	return string(bytes.ToValidUTF8(line, []byte("\uFFFD")))
}

// write consumes raw bytes and hands each completed line to done; the line
// is valid until the next call.
func (s *Stripper) write(p []byte, done func([]byte, int)) {
	for i := 0; i < len(p); i++ {
		b := p[i]
		// Fast path: a run of printable text at the end of the line.
		if s.state == stText && s.col == len(s.line) && b >= 0x20 && b != 0x7f {
			s.room(1, 0, done, i)
			j, limit := i, i+MaxLine-len(s.line)
			for j < len(p) && j < limit && p[j] >= 0x20 && p[j] != 0x7f {
				j++
			}
			s.line = append(s.line, p[i:j]...)
			s.col = len(s.line)
			s.sinceLine += int64(j - i)
			i = j - 1
			continue
		}
		s.step(b, i, done)
	}
}

// room makes room for n more bytes at the cursor: a line that would grow
// past MaxLine ends where it is (a line rewritten after a carriage return
// does not grow). i is the index of the byte being read; read is how many
// raw bytes of what is being added were counted in sinceLine already.
func (s *Stripper) room(n int, read int64, done func([]byte, int), i int) {
	if s.col == len(s.line) && len(s.line)+n > MaxLine {
		s.cutLine(done, i)
		s.sinceLine += read
	}
}

// cutLine ends the line being built here, as if a line end came; the
// raw bytes since are those of what it keeps (a character cut short).
func (s *Stripper) cutLine(done func([]byte, int), end int) {
	n := len(s.line)
	if n == 0 {
		return
	}
	// An unfinished character at the end goes to the next line whole.
	cut, start := n, n-1
	for start > 0 && n-start < utf8.UTFMax && !utf8.RuneStart(s.line[start]) {
		start--
	}
	if !utf8.FullRune(s.line[start:]) {
		cut = start
	}
	var rest [utf8.UTFMax]byte
	k := copy(rest[:], s.line[cut:])
	done(s.line[:cut], end)
	s.line = append(s.line[:0], rest[:k]...)
	s.col, s.sinceLine = k, int64(k)
}

// step consumes one byte outside the fast path.
func (s *Stripper) step(b byte, i int, done func([]byte, int)) {
	s.sinceLine++
	switch s.state {
	case stEsc:
		switch {
		case b == '[':
			s.state = stCSI
			if s.KeepColor {
				s.seq = append(s.seq[:0], 0x1b, '[')
			}
		case b == ']' || b == 'P' || b == '_' || b == '^' || b == 'X':
			s.state = stString
		case b >= 0x20 && b <= 0x2f:
			s.state = stEscIntermediate
		default:
			s.state = stText
		}
		return
	case stEscIntermediate:
		if b < 0x20 || b > 0x2f {
			s.state = stText
		}
		return
	case stCSI:
		if s.KeepColor && len(s.seq) < 64 {
			s.seq = append(s.seq, b)
		}
		if b >= 0x40 && b <= 0x7e {
			s.state = stText
			if b == 'm' && s.KeepColor && len(s.seq) < 64 {
				s.room(len(s.seq), int64(len(s.seq)), done, i) // the sequence is never cut
				for _, c := range s.seq {
					s.put(c)
				}
			}
		}
		return
	case stString:
		switch b {
		case 0x07:
			s.state = stText
		case 0x1b:
			s.state = stStringEsc
		}
		return
	case stStringEsc:
		if b == '\\' {
			s.state = stText
		} else {
			s.state = stString
		}
		return
	}
	switch b {
	case 0x1b:
		s.state = stEsc
	case '\n':
		done(s.line, i)
		s.line, s.col, s.sinceLine = s.line[:0], 0, 0
	case '\r':
		s.col = 0
	case '\b':
		if s.col > 0 {
			// Step back over one whole rune.
			_, size := utf8.DecodeLastRune(s.line[:s.col])
			s.col -= size
		}
	case '\t':
		s.room(1, 1, done, i)
		s.put('\t')
	default:
		if b < 0x20 || b == 0x7f {
			return
		}
		s.room(1, 1, done, i)
		s.put(b)
	}
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

// Pending is the unfinished last line as it stands, left in place.
func (s *Stripper) Pending() string {
	return string(bytes.ToValidUTF8(s.line, []byte("\uFFFD")))
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
