package logs

import (
	"bytes"
	"slices"
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
			s.seq = append(s.seq[:0], 0x1b, '[')
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
		if len(s.seq) < 64 {
			s.seq = append(s.seq, b)
		}
		if b >= 0x40 && b <= 0x7e {
			s.state = stText
			switch {
			case b == 'm' && s.KeepColor && len(s.seq) < 64:
				s.room(len(s.seq), int64(len(s.seq)), done, i) // the sequence is never cut
				for _, c := range s.seq {
					s.put(c)
				}
			case b == 'C' || b == 'D' || b == 'G' || b == 'K':
				s.moveInLine(b)
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
// left behind; a cursor moved past the end of the line fills the gap with
// spaces, as a terminal shows it.
func (s *Stripper) put(b byte) {
	for len(s.line) < s.col {
		s.line = append(s.line, ' ')
	}
	if s.col >= len(s.line) {
		s.line = append(s.line, b)
		s.col++
		return
	}
	if b&0xc0 != 0x80 {
		// A character begins: it replaces the whole one under the cursor,
		// whatever their sizes (its other bytes follow into its room).
		_, under := utf8.DecodeRune(s.line[s.col:])
		if n := runeLen(b); n != under {
			s.line = slices.Replace(s.line, s.col, s.col+under, make([]byte, n)...)
		}
	}
	s.line[s.col] = b
	s.col++
}

// runeLen is the length of the UTF-8 encoding that b begins (1 for a byte
// that begins none).
func runeLen(b byte) int {
	switch {
	case b >= 0xf8:
		return 1
	case b >= 0xf0:
		return 4
	case b >= 0xe0:
		return 3
	case b >= 0xc0:
		return 2
	}
	return 1
}

// moveInLine applies a cursor movement or erase within the line (CSI n C,
// D, G and K), so that a spinner or a progress bar redrawn in place reads
// as what the terminal ends up showing rather than as its debris. s.seq
// holds the sequence. Columns count characters, not colour sequences.
func (s *Stripper) moveInLine(final byte) {
	params := s.seq[2 : len(s.seq)-1]
	if len(params) > 0 && (params[0] < '0' || params[0] > '9') && params[0] != ';' {
		return // a private sequence (CSI ? ...), not a movement
	}
	n, given := 0, false
	for _, c := range params {
		if c < '0' || c > '9' {
			break
		}
		n, given = min(n*10+int(c-'0'), 1<<16), true
	}
	col := s.column()
	switch final {
	case 'C':
		s.col = s.offsetOf(col + max(n, 1))
	case 'D':
		s.col = s.offsetOf(max(col-max(n, 1), 0))
	case 'G':
		if !given || n < 1 {
			n = 1
		}
		s.col = s.offsetOf(n - 1)
	case 'K':
		switch n {
		case 0: // to the end of the line
			if s.col < len(s.line) {
				s.line = s.line[:s.col]
			}
		case 1: // from the start to the cursor
			for i := 0; i < min(s.col, len(s.line)); i++ {
				s.line[i] = ' '
			}
		case 2: // the whole line; the cursor stays
			s.line = s.line[:0]
		}
	}
}

// column is the cursor's column: the characters before it, colour
// sequences left out, plus where it went past the end of the line.
func (s *Stripper) column() int {
	end := min(s.col, len(s.line))
	return visibleWidth(s.line[:end]) + (s.col - end)
}

// offsetOf is the byte offset in the line of column col; past the end of
// the line, the length plus the columns beyond it.
func (s *Stripper) offsetOf(col int) int {
	i, c := 0, 0
	for i < len(s.line) && c < col {
		if s.line[i] == 0x1b {
			i += sgrLen(s.line[i:])
			continue
		}
		_, size := utf8.DecodeRune(s.line[i:])
		i += size
		c++
	}
	return i + (col - c)
}

// visibleWidth counts the characters of b, colour sequences left out.
func visibleWidth(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		if b[i] == 0x1b {
			i += sgrLen(b[i:])
			continue
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
		n++
	}
	return n
}

// sgrLen is the length of the colour sequence b starts with (ESC [ ... m,
// the only escapes a line keeps).
func sgrLen(b []byte) int {
	for i := 1; i < len(b); i++ {
		if b[i] >= 0x40 && b[i] <= 0x7e && i > 1 {
			return i + 1
		}
	}
	return len(b)
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
