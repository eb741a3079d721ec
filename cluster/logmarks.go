package cluster

import (
	"bytes"
	"fmt"
	"time"
)

// markedLog turns the API's log stream with time marks (PodLogOptions
// Timestamps: each line of the container's output begins "TIME " in RFC
// 3339 with nine digits of the second, the time of its first write) back into the
// container's output, and keeps where it is: the mark of the line it is in,
// how many lines before it had the same mark, and how much of it was passed
// on. The kubelet ends a followed stream early when the container runtime
// is slow to answer it, the container still running; with that position a
// stream reopened from the mark's second (SinceTime) goes on where the last
// one broke off, nothing repeated and nothing lost. (One case it cannot
// place: a tail that began inside a line longer than the runtime's log
// entry, broken off before that line's end; the reopened stream shows the
// line without a mark, and the rest of it is skipped.)
type markedLog struct {
	// The current line: its mark as the stream wrote it (nil when it had
	// none: a tail that began inside a long line), how many lines so far
	// had this mark (it included), and the bytes of it passed on (its end
	// included once seen).
	mark []byte
	same int
	done int
	// atStart: the next byte begins a line, so a mark; pending holds a mark
	// read in part.
	atStart bool
	pending []byte
	// passed is whether anything was passed on yet.
	passed bool

	// Skipping a reopened stream up to the position: the mark's time, the
	// lines seen with it, and what the line being skipped still hides (-1:
	// the whole line).
	skipping bool
	skipTime time.Time
	skipSeen int
	hide     int
}

// maxMark bounds a mark: RFC 3339 with nanoseconds and a zone is at most
// 35 bytes; a line start without a space within this is content.
const maxMark = 40

func newMarkedLog() *markedLog { return &markedLog{atStart: true} }

// Resume says from when to reopen the stream, and prepares to skip what
// was passed on already. false when nothing was passed on (reopen as
// first), an error when the position has no mark to go by.
func (m *markedLog) Resume() (time.Time, bool, error) {
	if !m.passed {
		m.atStart, m.pending = true, m.pending[:0]
		m.mark, m.same, m.done = nil, 0, 0
		return time.Time{}, false, nil
	}
	if m.mark == nil {
		return time.Time{}, false, fmt.Errorf("the line it broke off in has no time mark to go on from")
	}
	t, err := time.Parse(time.RFC3339Nano, string(m.mark))
	if err != nil {
		return time.Time{}, false, fmt.Errorf("time mark %q: %w", m.mark, err)
	}
	m.skipping, m.skipTime, m.skipSeen, m.hide = true, t, 0, 0
	m.atStart, m.pending = true, m.pending[:0]
	return t, true, nil
}

// Append appends to dst the output p holds, marks taken out.
func (m *markedLog) Append(dst, p []byte) []byte {
	for len(p) > 0 {
		if m.atStart {
			i := bytes.IndexByte(p, ' ')
			if i < 0 && len(m.pending)+len(p) < maxMark {
				m.pending = append(m.pending, p...)
				return dst
			}
			if i < 0 || len(m.pending)+i >= maxMark {
				// No mark: the line's bytes so far are content.
				rest := append([]byte(nil), m.pending...)
				m.pending = m.pending[:0]
				m.atStart = false
				m.startLine(nil)
				dst = m.content(dst, rest)
				continue
			}
			m.pending = append(m.pending, p[:i]...)
			p = p[i+1:]
			m.atStart = false
			m.startLine(m.pending)
			m.pending = m.pending[:0]
			continue
		}
		end := bytes.IndexByte(p, '\n')
		seg := p
		if end >= 0 {
			seg = p[:end+1]
		}
		p = p[len(seg):]
		dst = m.content(dst, seg)
		if end >= 0 {
			m.atStart = true
		}
	}
	return dst
}

// startLine takes a line's mark (nil: none).
func (m *markedLog) startLine(mark []byte) {
	if m.skipping {
		m.hide = -1
		if mark == nil {
			return // the rest of a line begun before the position
		}
		t, err := time.Parse(time.RFC3339Nano, string(mark))
		if err != nil {
			return
		}
		switch {
		case t.Before(m.skipTime):
			return
		case t.Equal(m.skipTime):
			m.skipSeen++
			if m.skipSeen < m.same {
				return
			}
			// The line it broke off in: hide what was passed on of it.
			m.skipping, m.hide = false, m.done
			return
		}
		// Past the position: a new line.
		m.skipping, m.hide = false, 0
	}
	m.hide = 0
	if mark != nil && bytes.Equal(mark, m.mark) {
		m.same++
	} else {
		m.mark = append(m.mark[:0], mark...)
		if mark == nil {
			m.mark = nil
		}
		m.same = 1
	}
	m.done = 0
}

// content passes on a piece of the current line, less what is hidden.
func (m *markedLog) content(dst, seg []byte) []byte {
	if m.hide < 0 {
		return dst
	}
	if m.hide > 0 {
		n := min(m.hide, len(seg))
		m.hide -= n
		seg = seg[n:]
	}
	if len(seg) == 0 {
		return dst
	}
	m.done += len(seg)
	m.passed = true
	return append(dst, seg...)
}
