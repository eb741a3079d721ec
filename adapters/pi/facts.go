package pi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/internal/jsonscan"
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

// smallFile is the size up to which a session file is read in one go.
const smallFile = 256 << 10

// sumLaterOver is the size above which readFactsMode, later, leaves a file's
// usage sums for later: a file larger than the head window is most of a
// store's bytes (at 7,000 sessions, a fifth of the files held 85% of
// them), and its row needs only its head and tail.
const sumLaterOver = headWindow

// readerAt is what the readers need of a file.
type readerAt interface {
	io.ReaderAt
}

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
	// sumsPending says the sums were left for later (readFactsMode, later): a
	// first read answers a large file's row without them.
	sumsPending bool

	lastModel string
	lastRole  string
	lastStop  string
	// lastError and lastProvider are the last message's error and
	// provider, when it failed.
	lastError    string
	lastProvider string
	lastTime     time.Time

	warnings []string
}

var errNoHeader = errors.New("no session header on the first line")

// readFacts reads the file f at version key. prev, the value cached for an
// earlier version, lets the usage sums continue where they stopped when the
// file only grew.
func readFacts(file *os.File, key storeio.FileKey, prev *storeio.Entry[*facts]) (*facts, error) {
	return readFactsMode(file, key, prev, false, nil)
}

// sumPending completes facts readFactsMode, later, left without their sums: for
// the same version it adds the sums alone, else it reads the file whole
// as readFacts does. lines lends the read buffers (nil: one each read).
func sumPending(file *os.File, key storeio.FileKey, prev *storeio.Entry[*facts], lines *storeio.LineBuffers) (*facts, error) {
	if prev == nil || prev.Value == nil || !prev.Value.sumsPending || !prev.Key.Same(key) {
		return readFactsMode(file, key, prev, false, lines)
	}
	out := *prev.Value
	out.sumsPending, out.summedTo, out.fingerprint = false, 0, nil
	out.tokensIn, out.tokensOut, out.cost, out.hasUsage, out.hasCost = 0, 0, 0, false, false
	if err := out.sum(file, key.Size, lines); err != nil {
		return nil, err
	}
	return &out, nil
}

// readFactsMode is readFacts; with later, it leaves the usage sums of a
// file read for the first time, when it is larger than sumLaterOver, for
// sumPending: its row comes from its head and tail alone. lines lends the
// read buffers (nil: one each read).
func readFactsMode(file *os.File, key storeio.FileKey, prev *storeio.Entry[*facts], later bool, lines *storeio.LineBuffers) (*facts, error) {
	out := &facts{mtime: key.ModTime}
	// Most sessions are small: one read serves the head, the sums and the
	// tail.
	var f readerAt = file
	if key.Size <= smallFile {
		buf := make([]byte, key.Size)
		n, err := file.ReadAt(buf, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read pi session: %w", err)
		}
		f = storeio.Bytes(buf[:n])
	}
	var p *facts
	if prev != nil && prev.Value != nil && prev.Value.bad == nil && prev.Value.sumsKnown {
		p = prev.Value
		if storeio.ResumeOffset(f, key, prev.Key, p.summedTo, p.fingerprint) != p.summedTo || p.summedTo == 0 {
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
		out.sumsPending = later && out.sumsKnown && key.Size > sumLaterOver
		if !out.sumsKnown {
			out.warnings = append(out.warnings, fmt.Sprintf("tokens and cost not summed: the transcript is %d MB (over %d MB)", key.Size>>20, maxSumBytes>>20))
		}
	}
	if out.sumsKnown && !out.sumsPending && out.summedTo < key.Size {
		if err := out.sum(f, key.Size, lines); err != nil {
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
func (x *facts) readHead(f readerAt, size int64) error {
	lines, err := storeio.HeadLines(f, size, headLines, headWindow)
	if err != nil {
		return fmt.Errorf("read pi session head: %w", err)
	}
	x.headLines(lines)
	if x.bad == nil && x.firstPrompt == "" && len(lines) < headLines && size > headWindow {
		// A long line (a large first prompt) was cut by the window: follow
		// it further.
		if lines, err = storeio.HeadLines(f, size, len(lines)+1, headLineMax); err == nil {
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
		if x.firstPrompt != "" && x.headModel != "" {
			return
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
// complete line before size; lines lends the read buffer (nil: its own).
func (x *facts) sum(f readerAt, size int64, lines *storeio.LineBuffers) error {
	res, err := lines.ScanLines(io.NewSectionReader(f, x.summedTo, size-x.summedTo), maxLineBytes, func(line []byte) error {
		x.addUsage(line)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read pi session: %w", err)
	}
	x.summedTo += res.Consumed
	if x.fingerprint, err = storeio.Fingerprint(f, x.summedTo); err != nil {
		x.fingerprint = nil
	}
	return nil
}

var (
	markAssistant = []byte(`"role":"assistant"`)
	markUsage     = []byte(`"usage":`)
)

// addUsage adds one line's usage. Pi writes compact JSON with the usage
// after the content, so a line is checked for the role and usage keys and
// only the usage object is decoded: the scan of a large transcript never
// decodes its contents.
func (x *facts) addUsage(line []byte) {
	if !bytes.Contains(line, markAssistant) {
		return
	}
	i := bytes.LastIndex(line, markUsage)
	if i < 0 {
		return
	}
	// The usage object alone is decoded: its end found by a scan, not by
	// a decoder made for each line, and its values read without
	// reflection.
	rest := line[i+len(markUsage):]
	start := jsonscan.Space(rest, 0)
	end, err := jsonscan.Skip(rest, start)
	if err != nil {
		return
	}
	u, err := decodeUsage(rest[start:end])
	if err != nil {
		return
	}
	x.hasUsage = true
	x.tokensIn += int64(u.Input + u.CacheRead + u.CacheWrite)
	x.tokensOut += int64(u.Output)
	if c, ok := u.costUSD(); ok {
		x.hasCost = true
		x.cost += c
	}
}

// readTail reads the last records: the latest model and how the last turn
// ended. The window grows until it holds a message record.
func (x *facts) readTail(f readerAt, size int64) error {
	for window := int64(tailWindow); ; window *= 4 {
		lines, start, err := storeio.TailLines(f, size, 1<<30, window)
		if err != nil {
			return fmt.Errorf("read pi session tail: %w", err)
		}
		if x.tailRecords(lines) || window >= size || window >= tailMax || (start == 0 && len(lines) > 0) {
			return nil
		}
	}
}

// tailRecords fills the tail facts from complete lines, reading them from
// the last one backwards and stopping as soon as it knows the latest
// message and model, so that large records further back are not decoded.
// It reports whether it found a message record.
func (x *facts) tailRecords(lines [][]byte) bool {
	x.lastModel, x.lastRole, x.lastStop, x.lastTime = "", "", "", time.Time{}
	x.lastError, x.lastProvider = "", ""
	started := false
	for i := len(lines) - 1; i >= 0; i-- {
		if x.lastRole != "" && x.lastModel != "" {
			break
		}
		line := bytes.TrimSpace(lines[i])
		if len(line) == 0 {
			continue
		}
		r, ok, _ := parseRecord(line)
		if !ok || r.Type == typeSession {
			// A half-written or garbled line is skipped, as Pi skips it.
			continue
		}
		if !started {
			started = true
			if t := parseTime(r.Timestamp); !t.IsZero() {
				x.lastTime = t
			}
		}
		switch r.Type {
		case typeModelChange:
			if x.lastModel == "" {
				x.lastModel = modelName(r.Provider, r.ModelID)
			}
		case typeMessage:
			m := r.Message
			if m == nil {
				break
			}
			if x.lastRole == "" {
				x.lastRole, x.lastStop = m.Role, m.StopReason
				if m.StopReason == stopError {
					x.lastError, x.lastProvider = clip(m.ErrorMessage, messageRunes), m.Provider
				}
			}
			if m.Role == roleAssistant && x.lastModel == "" {
				x.lastModel = modelName(m.Provider, m.Model)
			}
		}
	}
	return x.lastRole != ""
}

// state is the agent's own view of the session as far as the file tells:
// how the last turn ended. alive says whether a live Pi process was matched
// to the session. Without one, a turn the file shows unfinished was cut off
// (no Pi of this store runs it); the caller keeps the session unknown
// while a Pi that may be working on it lives.
func (x *facts) state(alive bool) adapters.NativeState {
	switch x.lastRole {
	case "":
		if alive {
			return adapters.NativeRunning
		}
		return adapters.NativeAborted
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
	// busy while a process works on it; without one it was cut off.
	if alive {
		return adapters.NativeBusy
	}
	return adapters.NativeAborted
}

// native builds the session the adapter reports.
func (x *facts) native(adapter, path string, m match) adapters.NativeSession {
	ref := m.ref
	s := adapters.NativeSession{
		Adapter:     adapter,
		NativeID:    x.id,
		Cwd:         x.cwd,
		FirstPrompt: x.firstPrompt,
		CreatedAt:   x.created,
		UpdatedAt:   x.lastTime,
		State:       x.state(m.running()),
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
	s.TotalsPending = x.sumsPending
	if x.sumsKnown && !x.sumsPending && x.hasUsage {
		in, out := x.tokensIn, x.tokensOut
		s.TokensIn, s.TokensOut = &in, &out
	}
	if x.sumsKnown && !x.sumsPending && x.hasCost {
		c := x.cost
		s.CostUSD = &c
	}
	s.Limit = x.limit()
	if len(x.warnings) > 0 {
		s.Warnings = append([]string(nil), x.warnings...)
	}
	if len(m.contenders) > 0 {
		s.State = adapters.NativeUnknown
	}
	if m.warning != "" {
		s.Warnings = append(s.Warnings, m.warning)
	}
	s.Evidence = append(s.Evidence, m.evidence...)
	return s
}

// limitErrorRE tells a provider's usage or rate limit in Pi's error text:
// the SDKs put the HTTP status first ("429 …"), and the providers' error
// types name it.
var limitErrorRE = regexp.MustCompile(`^429\b|rate_limit_error|rate_limit_exceeded|usage_limit_reached`)

// limit is the usage limit that ended the last turn, nil when none did. Pi
// retries a limit a few times, writing each failure; the last one stands.
func (x *facts) limit() *adapters.LimitHit {
	if x.lastRole != roleAssistant || x.lastStop != stopError || !limitErrorRE.MatchString(x.lastError) {
		return nil
	}
	return &adapters.LimitHit{Provider: x.lastProvider, Message: x.lastError, At: x.lastTime, ResetsAt: adapters.TryAgainAt(x.lastError, x.lastTime)}
}
