package main

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/agentctl/agentctl/internal/altscreen"
)

// termModes follows the private modes a program's output sets on the
// terminal it is shown on (alternate screen, hidden cursor, mouse
// reporting, bracketed paste, application keys), so they can be undone when
// agentctl stops showing it, whatever the program left.
type termModes struct {
	alt altscreen.Tracker
}

// see scans output for mode changes.
func (m *termModes) see(p []byte) { m.alt.See(p) }

// reset is what puts a terminal back the way a shell expects it: the
// normal screen (only if the program left the alternate one: leaving it
// otherwise moves the cursor), the cursor shown, mouse reporting, bracketed
// paste and application keys off, colours reset.
func (m *termModes) reset() []byte {
	var b bytes.Buffer
	if m.alt.On() {
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
	mw.modes.alt.Reset()
}
