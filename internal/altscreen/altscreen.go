// Package altscreen follows whether a program's terminal output has it in
// the alternate screen (private modes 1049, 1047 and 47), across writes
// that split an escape sequence anywhere.
package altscreen

import "bytes"

// Tracker is the state after the output it has seen. The zero value is a
// program in the normal screen.
type Tracker struct {
	on    bool
	carry []byte // an unfinished "ESC [ ?" sequence from the last write
}

// On reports whether the output seen so far leaves the alternate screen on.
func (t *Tracker) On() bool { return t.on }

// Reset forgets the output seen: the normal screen.
func (t *Tracker) Reset() { t.on, t.carry = false, nil }

// See follows the mode changes in p.
func (t *Tracker) See(p []byte) {
	data := p
	if len(t.carry) > 0 {
		data = append(t.carry, p...)
		t.carry = nil
	}
	for {
		i := bytes.Index(data, []byte("\x1b[?"))
		if i < 0 {
			// Keep a trailing ESC or ESC [ for the next write.
			if j := bytes.LastIndexByte(data, 0x1b); j >= 0 && len(data)-j < 3 {
				t.carry = append([]byte(nil), data[j:]...)
			}
			return
		}
		rest := data[i+3:]
		j := 0
		for j < len(rest) && (rest[j] >= '0' && rest[j] <= '9' || rest[j] == ';') {
			j++
		}
		if j == len(rest) {
			if j < 32 {
				t.carry = append([]byte(nil), data[i:]...)
			}
			return
		}
		if final := rest[j]; final == 'h' || final == 'l' {
			for _, m := range bytes.Split(rest[:j], []byte(";")) {
				switch string(m) {
				case "1049", "1047", "47":
					t.on = final == 'h'
				}
			}
		}
		data = rest[j:]
	}
}
