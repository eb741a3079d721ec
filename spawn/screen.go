package spawn

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/x/vt"

	"github.com/agentctl/agentctl/internal/altscreen"
)

// screenKeep is how much of the latest output the monitor keeps to paint
// the screen for a viewer that attaches: more than a full screen of a
// full-screen program, or of lines.
const screenKeep = 64 << 10

// screen keeps what it takes to show a viewer that attaches the screen as it
// is now, instead of a blank one (an idle full-screen program draws nothing
// until something changes): the latest output and whether the program is
// in the alternate screen where that output begins. A terminal emulator
// replays it only when someone attaches: emulating every byte as it comes
// costs tens of microseconds a scrolled line, which would slow agents that
// write a lot. Its methods are called with the shim's lock held.
type screen struct {
	rows, cols int
	chunks     []screenChunk
	size       int
	alt        altscreen.Tracker // after the last output
}

type screenChunk struct {
	data []byte
	alt  bool // in the alternate screen where data begins
}

func newScreen(rows, cols uint16) *screen {
	return &screen{rows: int(rows), cols: int(cols)}
}

func (s *screen) write(p []byte) {
	if cut := len(p) - screenKeep; cut > 0 {
		// A batch larger than what is kept replaces it all: only its tail
		// is copied, with the alternate-screen state where that tail
		// begins (a fast writer's batches are up to the read loop's).
		s.alt.See(p[:cut])
		clear(s.chunks)
		s.chunks = append(s.chunks[:0], screenChunk{data: append([]byte(nil), p[cut:]...), alt: s.alt.On()})
		s.size = screenKeep
		s.alt.See(p[cut:])
		return
	}
	if n := len(s.chunks); n > 0 && len(s.chunks[n-1].data) < 4<<10 {
		s.chunks[n-1].data = append(s.chunks[n-1].data, p...)
	} else {
		s.chunks = append(s.chunks, screenChunk{data: append([]byte(nil), p...), alt: s.alt.On()})
	}
	s.size += len(p)
	s.alt.See(p)
	for len(s.chunks) > 1 && s.size-len(s.chunks[0].data) >= screenKeep {
		s.size -= len(s.chunks[0].data)
		s.chunks[0] = screenChunk{}
		s.chunks = s.chunks[1:]
	}
}

func (s *screen) resize(rows, cols uint16) {
	if rows > 0 && cols > 0 {
		s.rows, s.cols = int(rows), int(cols)
	}
}

// redraw is the output that paints the current screen on a terminal: the
// alternate screen if the program is in it, every line with its colours,
// then the cursor where the program left it, shown or hidden.
func (s *screen) redraw() []byte {
	emu := vt.NewEmulator(s.cols, s.rows)
	// Only the screen is painted: no scrollback (at its default of 10,000
	// lines, every line scrolled off costs a copy of all of them).
	emu.SetScrollbackSize(1)
	// The emulator answers a program's queries (device attributes, cursor
	// position) on its input pipe and blocks until they are read: they are
	// dropped (the viewers' own terminals answer). Closing the pipe's
	// writing end ends the reader (Emulator.Close would race with it).
	drained := make(chan struct{})
	go func() { io.Copy(io.Discard, emu); close(drained) }()
	defer func() {
		if c, ok := emu.InputPipe().(io.Closer); ok {
			c.Close()
			<-drained
		}
	}()
	if len(s.chunks) > 0 && s.chunks[0].alt {
		emu.Write([]byte("\x1b[?1049h"))
	}
	for _, c := range s.chunks {
		emu.Write(c.data)
	}
	var b bytes.Buffer
	if emu.IsAltScreen() {
		b.WriteString("\x1b[?1049h")
	}
	b.WriteString("\x1b[H\x1b[2J")
	for i, line := range strings.Split(emu.Render(), "\n") {
		if i >= emu.Height() {
			break
		}
		fmt.Fprintf(&b, "\x1b[%dH%s\x1b[0m", i+1, strings.TrimRight(line, "\r"))
	}
	pos := emu.CursorPosition()
	fmt.Fprintf(&b, "\x1b[%d;%dH", pos.Y+1, pos.X+1)
	if emu.CursorHidden() {
		b.WriteString("\x1b[?25l")
	} else {
		b.WriteString("\x1b[?25h")
	}
	return b.Bytes()
}
