package pi

import (
	"bufio"
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
	checkBytes   = 64
)

// facts is what one session file says, cached per path and revalidated by a
// stat on every Discover.
type facts struct {
	stamp adaptersStamp

	id          string
	cwd         string
	created     time.Time
	headerModel string // pi-rust writes provider/modelId into the header
	firstPrompt string
	headModel   string

	// Usage sums over every assistant message in the file (all branches:
	// spend is spend), up to summedTo, a line boundary.
	summedTo  int64
	check     []byte // the bytes just before summedTo, to detect a rewrite
	tokensIn  int64
	tokensOut int64
	cost      float64
	hasUsage  bool
	hasCost   bool
	sumsKnown bool

	lastMessage string
	lastModel   string
	lastRole    string
	lastStop    string
	lastTime    time.Time

	warnings []string
}

// adaptersStamp identifies one version of a file.
type adaptersStamp struct {
	size  int64
	mtime time.Time
	ino   uint64
}

func stampOf(fi os.FileInfo) adaptersStamp {
	return adaptersStamp{size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi)}
}

var errNoHeader = errors.New("no session header on the first line")

// readFacts reads the file at path. prev, when it describes an earlier
// version of the same file, lets the usage sums continue from where they
// stopped instead of rereading the file.
func readFacts(path string, prev *facts) (*facts, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open pi session: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat pi session: %w", err)
	}
	st := stampOf(fi)
	out := &facts{stamp: st}

	incremental := prev != nil && prev.stamp.ino == st.ino && prev.summedTo <= st.size && prefixIntact(f, prev)
	if incremental {
		out.id, out.cwd, out.created = prev.id, prev.cwd, prev.created
		out.headerModel, out.firstPrompt, out.headModel = prev.headerModel, prev.firstPrompt, prev.headModel
		out.summedTo, out.check = prev.summedTo, prev.check
		out.tokensIn, out.tokensOut, out.cost = prev.tokensIn, prev.tokensOut, prev.cost
		out.hasUsage, out.hasCost, out.sumsKnown = prev.hasUsage, prev.hasCost, prev.sumsKnown
		out.warnings = headWarnings(prev.warnings)
	} else {
		if err := out.readHead(f, st.size); err != nil {
			return out, err
		}
		out.sumsKnown = st.size <= maxSumBytes
		if !out.sumsKnown {
			out.warnings = append(out.warnings, fmt.Sprintf("tokens and cost not summed: the transcript is %d MB (over %d MB)", st.size>>20, maxSumBytes>>20))
		}
	}
	if out.sumsKnown && out.summedTo < st.size {
		if err := out.sum(f, st.size); err != nil {
			return out, err
		}
	}
	if err := out.readTail(f, st.size); err != nil {
		return out, err
	}
	if out.lastTime.IsZero() {
		out.lastTime = fi.ModTime()
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

// prefixIntact reports whether the bytes before prev.summedTo are still the
// ones summed: an append-only writer keeps them, a rewrite does not.
func prefixIntact(f *os.File, prev *facts) bool {
	if prev.summedTo == 0 {
		return prev.id != ""
	}
	n := int64(len(prev.check))
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, prev.summedTo-n); err != nil {
		return false
	}
	return bytes.Equal(buf, prev.check)
}

// readHead reads the header and the first user prompt.
func (x *facts) readHead(f *os.File, size int64) error {
	n := min(size, headWindow)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read pi session head: %w", err)
	}
	lines := bytes.SplitAfter(buf, []byte("\n"))
	first := true
	for i, line := range lines {
		complete := bytes.HasSuffix(line, []byte("\n")) || int64(len(buf)) == size
		if !complete {
			if x.firstPrompt == "" && i == len(lines)-1 {
				// One long line (a large prompt): follow it a little further.
				off := int64(len(buf) - len(line))
				if long, ok := readLine(f, off, size, headLineMax); ok {
					x.headLine(long, &first)
				}
			}
			break
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		x.headLine(line, &first)
		if !first && x.id == "" {
			return errNoHeader
		}
		if x.firstPrompt != "" && x.headModel != "" {
			break
		}
	}
	if x.id == "" {
		return errNoHeader
	}
	return nil
}

func (x *facts) headLine(line []byte, first *bool) {
	r, ok, warn := parseRecord(line)
	if !ok {
		if *first {
			*first = false
		}
		return
	}
	if warn != nil {
		x.warnings = append(x.warnings, "head: "+warn.Error())
	}
	if *first {
		*first = false
		if r.Type != typeSession || r.ID == "" {
			return
		}
		x.id, x.cwd, x.created = r.ID, r.Cwd, parseTime(r.Timestamp)
		x.headerModel = modelName(r.Provider, r.ModelID)
		return
	}
	switch r.Type {
	case typeModelChange:
		if x.headModel == "" {
			x.headModel = modelName(r.Provider, r.ModelID)
		}
	case typeMessage:
		if r.Message == nil {
			return
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

// readLine reads the line starting at off, up to max bytes; ok is false when
// the line is longer or not yet complete.
func readLine(f *os.File, off, size, max int64) ([]byte, bool) {
	end := min(size, off+max)
	buf := make([]byte, end-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, false
	}
	if i := bytes.IndexByte(buf, '\n'); i >= 0 {
		return buf[:i], true
	}
	if end == size {
		return buf, true // the last line, complete if it parses
	}
	return nil, false
}

// sum adds the usage of assistant messages from x.summedTo to the last
// complete line before size.
func (x *facts) sum(f *os.File, size int64) error {
	sr := io.NewSectionReader(f, x.summedTo, size-x.summedTo)
	br := bufio.NewReaderSize(sr, 256<<10)
	off := x.summedTo
	var long []byte
	skipping := false
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if !skipping {
				long = append(long, chunk...)
				if len(long) > maxLineBytes {
					long, skipping = nil, true
				}
			}
			off += int64(len(chunk))
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break // an unterminated last line is summed once it is complete
			}
			return fmt.Errorf("read pi session: %w", err)
		}
		off += int64(len(chunk))
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		if !skipping {
			x.addUsage(line)
		}
		skipping = false
		x.summedTo = off
	}
	if x.summedTo > 0 {
		n := min(x.summedTo, checkBytes)
		x.check = make([]byte, n)
		if _, err := f.ReadAt(x.check, x.summedTo-n); err != nil {
			x.check = nil
		}
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
// message on the active branch, and how the last turn ended.
func (x *facts) readTail(f *os.File, size int64) error {
	for window := int64(tailWindow); ; window *= 2 {
		start := max(0, size-window)
		buf := make([]byte, size-start)
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read pi session tail: %w", err)
		}
		if start > 0 {
			// The first line may be cut by the window.
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				buf = nil
			} else {
				buf = buf[i+1:]
			}
		}
		if x.tailRecords(buf) || start == 0 || window >= tailMax {
			return nil
		}
	}
}

// tailRecords fills the tail facts from the complete lines in buf; it
// reports whether it found a message record.
func (x *facts) tailRecords(buf []byte) bool {
	var order []string
	byID := map[string]tailEntry{}
	x.lastModel, x.lastMessage, x.lastRole, x.lastStop = "", "", "", ""
	var lastID string
	lines := bytes.Split(buf, []byte("\n"))
	for _, line := range lines {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		r, ok, _ := parseRecord(line)
		if !ok {
			// A half-written last line is expected while Pi writes; garbage
			// elsewhere is skipped, as Pi itself skips it.
			continue
		}
		if r.Type == typeSession {
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
			// Keep only what the branch walk needs: content of messages.
			byID[r.ID] = tailEntry{parent: parent, rec: r}
			order = append(order, r.ID)
			lastID = r.ID
		}
	}
	// Walk the active branch (from the last record towards the root) for
	// the last assistant message with text.
	seen := 0
	for id := lastID; id != "" && seen <= len(order); seen++ {
		e, ok := byID[id]
		if !ok {
			break
		}
		if m := e.rec.Message; e.rec.Type == typeMessage && m != nil && m.Role == roleAssistant {
			if t := textOf(m.Content); t != "" {
				x.lastMessage = clip(t, messageRunes)
				break
			}
			if m.StopReason == stopError && m.ErrorMessage != "" && x.lastMessage == "" {
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
