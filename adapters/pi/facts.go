package pi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

// Reading limits. A session file is read at its head (metadata) and its tail
// (latest state); only token and cost sums need the whole file, and those
// are kept up to date incrementally as the file grows.
const (
	headLines  = 32
	headWindow = 64 << 10
	// headLineMax bounds how far the head read follows one long line (a
	// large first prompt) to find the first user message.
	headLineMax  = 4 << 20
	tailWindow   = 256 << 10
	tailMax      = 16 << 20
	maxSumBytes  = 256 << 20 // files larger than this are not summed cold
	maxLineBytes = 32 << 20  // longer lines are skipped by the summing scan
	promptRunes  = 200
	messageRunes = 1000
)

// facts is what one session file says, cached per file version and
// revalidated by a stat on every Discover.
type facts struct {
	id          string
	cwd         string
	created     time.Time
	mtime       time.Time
	headerModel string // pi-rust writes provider/modelId into the header
	firstPrompt string
	headModel   string
	// bad says why the file is not a readable session (no header); the
	// value is cached all the same so a broken file is not reread.
	bad error

	// Usage sums over every assistant message in the file (all branches:
	// spend is spend), up to summedTo, a line boundary.
	summedTo    int64
	fingerprint []byte
	tokensIn    int64
	tokensOut   int64
	cost        float64
	hasUsage    bool
	hasCost     bool
	sumsKnown   bool

	lastMessage string
	lastModel   string
	lastRole    string
	lastStop    string
	lastTime    time.Time

	warnings []string
}

var errNoHeader = errors.New("no session header on the first line")

// readFacts reads the file f at version key. prev, the value cached for an
// earlier version, lets the usage sums continue where they stopped when the
// file only grew.
func readFacts(f *os.File, key adapters.FileKey, prev *adapters.Entry[*facts]) (*facts, error) {
	out := &facts{mtime: key.ModTime}
	var p *facts
	if prev != nil && prev.Value != nil && prev.Value.bad == nil && prev.Value.sumsKnown {
		p = prev.Value
		if adapters.ResumeOffset(f, key, prev.Key, p.summedTo, p.fingerprint) != p.summedTo || p.summedTo == 0 {
			p = nil
		}
	}
	if p != nil {
		out.id, out.cwd, out.created = p.id, p.cwd, p.created
		out.headerModel, out.firstPrompt, out.headModel = p.headerModel, p.firstPrompt, p.headModel
		out.summedTo, out.fingerprint = p.summedTo, p.fingerprint
		out.tokensIn, out.tokensOut, out.cost = p.tokensIn, p.tokensOut, p.cost
		out.hasUsage, out.hasCost, out.sumsKnown = p.hasUsage, p.hasCost, p.sumsKnown
		out.warnings = headWarnings(p.warnings)
	} else {
		if err := out.readHead(f, key.Size); err != nil {
			return nil, err
		}
		if out.bad != nil {
			return out, nil
		}
		out.sumsKnown = key.Size <= maxSumBytes
		if !out.sumsKnown {
			out.warnings = append(out.warnings, fmt.Sprintf("tokens and cost not summed: the transcript is %d MB (over %d MB)", key.Size>>20, maxSumBytes>>20))
		}
	}
	if out.sumsKnown && out.summedTo < key.Size {
		if err := out.sum(f, key.Size); err != nil {
			return nil, err
		}
	}
	if err := out.readTail(f, key.Size); err != nil {
		return nil, err
	}
	if out.lastTime.IsZero() {
		out.lastTime = key.ModTime
	}
	return out, nil
}

// headWarnings keeps the warnings that came from the head of the file, which
// an incremental read does not revisit.
func headWarnings(ws []string) []string {
	var out []string
	for _, w := range ws {
		if strings.HasPrefix(w, "head: ") || strings.HasPrefix(w, "tokens and cost not summed") {
			out = append(out, w)
		}
	}
	return out
}

// readHead reads the header and the first user prompt.
func (x *facts) readHead(f *os.File, size int64) error {
	lines, err := adapters.HeadLines(f, size, headLines, headWindow)
	if err != nil {
		return fmt.Errorf("read pi session head: %w", err)
	}
	x.headLines(lines)
	if x.bad == nil && x.firstPrompt == "" && len(lines) < headLines && size > headWindow {
		// A long line (a large first prompt) was cut by the window: follow
		// it further.
		if lines, err = adapters.HeadLines(f, size, len(lines)+1, headLineMax); err == nil {
			x.headLines(lines)
		}
	}
	return nil
}

func (x *facts) headLines(lines [][]byte) {
	x.bad = errNoHeader
	for i, line := range lines {
		line = bytes.TrimSpace(line)
		r, ok, warn := parseRecord(line)
		if i == 0 {
			if !ok || r.Type != typeSession || r.ID == "" {
				return
			}
			x.bad = nil
			x.id, x.cwd, x.created = r.ID, r.Cwd, parseTime(r.Timestamp)
			x.headerModel = modelName(r.Provider, r.ModelID)
			if warn != nil {
				x.addHeadWarning(warn)
			}
			continue
		}
		if !ok {
			continue
		}
		if warn != nil {
			x.addHeadWarning(warn)
		}
		switch r.Type {
		case typeModelChange:
			if x.headModel == "" {
				x.headModel = modelName(r.Provider, r.ModelID)
			}
		case typeMessage:
			if r.Message == nil {
				break
			}
			switch r.Message.Role {
			case roleUser:
				if x.firstPrompt == "" {
					x.firstPrompt = clip(textOf(r.Message.Content), promptRunes)
				}
			case roleAssistant:
				if x.headModel == "" {
					x.headModel = modelName(r.Message.Provider, r.Message.Model)
				}
			}
		}
	}
}

func (x *facts) addHeadWarning(err error) {
	w := "head: " + err.Error()
	for _, have := range x.warnings {
		if have == w {
			return
		}
	}
	x.warnings = append(x.warnings, w)
}

// sum adds the usage of assistant messages from x.summedTo to the last
// complete line before size.
func (x *facts) sum(f *os.File, size int64) error {
	res, err := adapters.ScanLines(io.NewSectionReader(f, x.summedTo, size-x.summedTo), maxLineBytes, func(line []byte) error {
		x.addUsage(line)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read pi session: %w", err)
	}
	x.summedTo += res.Consumed
	if x.fingerprint, err = adapters.Fingerprint(f, x.summedTo); err != nil {
		x.fingerprint = nil
	}
	return nil
}

var (
	markAssistant = []byte(`"role":"assistant"`)
	markUsage     = []byte(`"usage":`)
)

// addUsage adds one line's usage. Pi writes compact JSON, so a line is
// checked for the role and usage keys before it is decoded, which keeps
// the scan of large transcripts fast.
func (x *facts) addUsage(line []byte) {
	if !bytes.Contains(line, markAssistant) || !bytes.Contains(line, markUsage) {
		return
	}
	r, ok, _ := parseRecord(bytes.TrimSpace(line))
	if !ok || r.Type != typeMessage || r.Message == nil || r.Message.Role != roleAssistant || r.Message.Usage == nil {
		return
	}
	u := r.Message.Usage
	x.hasUsage = true
	x.tokensIn += int64(u.Input + u.CacheRead + u.CacheWrite)
	x.tokensOut += int64(u.Output)
	if c, ok := u.costUSD(); ok {
		x.hasCost = true
		x.cost += c
	}
}

// tailEntry is what the tail read keeps of one record.
type tailEntry struct {
	parent string
	rec    record
}

// readTail reads the last records: the latest model, the last assistant
// message on the active branch, and how the last turn ended. The window
// grows until it holds a message record.
func (x *facts) readTail(f *os.File, size int64) error {
	for window := int64(tailWindow); ; window *= 4 {
		lines, start, err := adapters.TailLines(f, size, 1<<30, window)
		if err != nil {
			return fmt.Errorf("read pi session tail: %w", err)
		}
		if x.tailRecords(lines) || window >= size || window >= tailMax || (start == 0 && len(lines) > 0) {
			return nil
		}
	}
}

// tailRecords fills the tail facts from complete lines; it reports whether
// it found a message record.
func (x *facts) tailRecords(lines [][]byte) bool {
	byID := map[string]tailEntry{}
	x.lastModel, x.lastMessage, x.lastRole, x.lastStop = "", "", "", ""
	var lastID string
	for _, line := range lines {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		r, ok, _ := parseRecord(line)
		if !ok || r.Type == typeSession {
			// A half-written or garbled line is skipped, as Pi skips it.
			continue
		}
		if t := parseTime(r.Timestamp); !t.IsZero() {
			x.lastTime = t
		}
		switch r.Type {
		case typeModelChange:
			if m := modelName(r.Provider, r.ModelID); m != "" {
				x.lastModel = m
			}
		case typeMessage:
			if r.Message == nil {
				break
			}
			x.lastRole, x.lastStop = r.Message.Role, r.Message.StopReason
			if r.Message.Role == roleAssistant {
				if m := modelName(r.Message.Provider, r.Message.Model); m != "" {
					x.lastModel = m
				}
			}
		}
		if r.ID != "" {
			parent := ""
			if r.ParentID != nil {
				parent = *r.ParentID
			}
			byID[r.ID] = tailEntry{parent: parent, rec: r}
			lastID = r.ID
		}
	}
	// Walk the active branch (from the last record towards the root) for
	// the last assistant message with text.
	for id, steps := lastID, 0; id != "" && steps <= len(byID); steps++ {
		e, ok := byID[id]
		if !ok {
			break
		}
		if m := e.rec.Message; e.rec.Type == typeMessage && m != nil && m.Role == roleAssistant {
			if t := textOf(m.Content); t != "" {
				x.lastMessage = clip(t, messageRunes)
				break
			}
			if m.StopReason == stopError && m.ErrorMessage != "" {
				x.lastMessage = clip("error: "+m.ErrorMessage, messageRunes)
				break
			}
		}
		id = e.parent
	}
	return x.lastRole != ""
}

// state is the agent's own view of the session as far as the file tells:
// how the last turn ended. alive says whether a live Pi process was matched
// to the session.
func (x *facts) state(alive bool) adapters.NativeState {
	switch x.lastRole {
	case "":
		if alive {
			return adapters.NativeRunning
		}
		return adapters.NativeUnknown
	case roleAssistant:
		switch x.lastStop {
		case stopStop, stopLength:
			if alive {
				return adapters.NativeIdle
			}
			return adapters.NativeDone
		case stopError:
			if alive {
				return adapters.NativeIdle
			}
			return adapters.NativeFailed
		case stopAborted:
			if alive {
				return adapters.NativeIdle
			}
			return adapters.NativeAborted
		}
	}
	// A turn is in progress (a tool call, a tool result, a user prompt):
	// busy while a process works on it; without one the file cannot say
	// whether the agent was killed mid-turn.
	if alive {
		return adapters.NativeBusy
	}
	return adapters.NativeUnknown
}

// native builds the session the adapter reports.
func (x *facts) native(adapter, path string, ref *adapters.ProcessRef) adapters.NativeSession {
	s := adapters.NativeSession{
		Adapter:     adapter,
		NativeID:    x.id,
		Cwd:         x.cwd,
		FirstPrompt: x.firstPrompt,
		LastMessage: x.lastMessage,
		CreatedAt:   x.created,
		UpdatedAt:   x.lastTime,
		State:       x.state(ref != nil),
		Process:     ref,
		Path:        path,
	}
	s.Model = x.lastModel
	if s.Model == "" {
		s.Model = x.headModel
	}
	if s.Model == "" {
		s.Model = x.headerModel
	}
	if x.sumsKnown && x.hasUsage {
		in, out := x.tokensIn, x.tokensOut
		s.TokensIn, s.TokensOut = &in, &out
	}
	if x.sumsKnown && x.hasCost {
		c := x.cost
		s.CostUSD = &c
	}
	if len(x.warnings) > 0 {
		s.Warnings = append([]string(nil), x.warnings...)
	}
	return s
}
