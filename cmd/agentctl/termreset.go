package main

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// termModes follows the private modes a program's output sets on the
// terminal it is shown on (alternate screen, hidden cursor, mouse
// reporting, bracketed paste, application keys), so they can be undone when
// agentctl stops showing it, whatever the program left.
type termModes struct {
	altScreen bool
	carry     []byte // an unfinished "ESC [ ?" sequence from the last write
}

// see scans output for mode changes.
func (m *termModes) see(p []byte) {
	data := p
	if len(m.carry) > 0 {
		data = append(m.carry, p...)
		m.carry = nil
	}
	for {
		i := bytes.Index(data, []byte("\x1b[?"))
		if i < 0 {
			// Keep a trailing ESC or ESC [ for the next write.
			if j := bytes.LastIndexByte(data, 0x1b); j >= 0 && len(data)-j < 3 {
				m.carry = append([]byte(nil), data[j:]...)
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
				m.carry = append([]byte(nil), data[i:]...)
			}
			return
		}
		if final := rest[j]; final == 'h' || final == 'l' {
			for _, p := range bytes.Split(rest[:j], []byte(";")) {
				switch string(p) {
				case "1049", "1047", "47":
					m.altScreen = final == 'h'
				}
			}
		}
		data = rest[j:]
	}
}

// reset is what puts a terminal back the way a shell expects it: the
// normal screen (only if the program left the alternate one: leaving it
// otherwise moves the cursor), the cursor shown, mouse reporting, bracketed
// paste and application keys off, colours reset.
func (m *termModes) reset() []byte {
	var b bytes.Buffer
	if m.altScreen {
		b.WriteString("\x1b[?1049l")
	}
	b.WriteString("\x1b[?25h\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l\x1b[?1l\x1b>\x1b[0m")
	return b.Bytes()
}

// modeWriter passes output on and follows its modes.
type modeWriter struct {
	w     io.Writer
	modes termModes
}

func (mw *modeWriter) Write(p []byte) (int, error) {
	mw.modes.see(p)
	return mw.w.Write(p)
}

// restore resets the terminal if w is one.
func (mw *modeWriter) restore() {
	if f, ok := mw.w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		f.Write(mw.modes.reset())
	}
	mw.modes.altScreen = false
}
