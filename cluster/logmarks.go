package cluster

import (
	"bytes"
	"fmt"
	"time"
)

// markedLog turns the API's log stream with time marks (PodLogOptions
// Timestamps: each line of the container's output begins "TIME " in RFC
// 3339 with nine digits of the second, the time of its first write) back
// into the container's output, and keeps where it is: the mark of the line
// it is in, how many lines before it had the same mark, and how much of it
// was passed on. The kubelet ends a followed stream early when the
// container runtime is slow to answer it, the container still running;
// with that position a stream reopened from the mark's second (SinceTime)
// goes on where the last one broke off, nothing repeated and nothing lost.
//
// A position a reopened stream goes past without showing it is said
// (Unplaced), not guessed: a tail (-n) begins at a log entry, and a line
// longer than the runtime's entry (16 KiB) is several, so a tail's first
// line may be the end of one, marked with that entry's time; reopened, the
// line shows whole under its first entry's time.
type markedLog struct {
	// The current line: its mark as the stream wrote it (nil when it had
	// none), how many lines so far had this mark (it included), and the
	// bytes of it passed on.
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
	// lines seen with it, whether the position's line had ended, and what
	// the line being skipped still hides (-1: the whole line).
	skipping  bool
	skipTime  time.Time
	skipSeen  int
	skipEnded bool
	hide      int
	// unplaced: the stream went past the position without showing the
	// unfinished line it was in; nothing more is passed on.
	unplaced bool
}

// maxMark bounds a mark: RFC 3339 with nanoseconds and a zone is at most
// 35 bytes; a line start without a space within this is content.
const maxMark = 40

func newMarkedLog() *markedLog { return &markedLog{atStart: true} }

// Resume says from when to reopen the stream, and prepares to skip what
// was passed on already. false when nothing was passed on (reopen as
// first), an error when the position has no mark to go by.
func (m *markedLog) Resume() (time.Time, bool, error) {
	if !m.skipping {
		// Whether the position's line had ended; a stream broken off again
		// while skipping leaves it as it was.
		m.skipEnded = m.atStart
	}
	m.atStart, m.pending = true, m.pending[:0]
	if !m.passed {
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
	return t, true, nil
}

// Unplaced says whether a reopened stream went past the position without
// showing the unfinished line it was in. (A last read that ends before the
// position shows that nothing followed it.)
func (m *markedLog) Unplaced() bool { return m.unplaced }

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
		// Past the position: a new line, and the position's line, if
		// unfinished, was not shown.
		if !m.skipEnded {
			m.unplaced = true
			return
		}
		m.skipping, m.hide = false, 0
	}
	m.hide = 0
	switch {
	case mark != nil && bytes.Equal(mark, m.mark):
		m.same++
	case mark == nil:
		m.mark, m.same = nil, 1
	default:
		m.mark, m.same = append(m.mark[:0], mark...), 1
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
