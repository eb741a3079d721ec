package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/internal/text"
)

// Reading limits. A rollout is read at its head (metadata and the first
// prompt) and its tail (the latest state); a file that grew is read from
// where the last read stopped.
const (
	// headMax bounds the head read: session_meta alone carries the base
	// instructions (about 20 kB), and the first prompt may be large.
	headMax = 4 << 20
	// fullScanMax: files up to this size are read whole, in one pass.
	// Most of a larger rollout is tool output, which the facts do not
	// use: its head and tail say all they need.
	fullScanMax = 64 << 10
	// tailWindow is the first tail read of a transcript; factsWindow the
	// first of the facts, which the end of the last turn holds; tailMax
	// the furthest either goes back looking for the last turn's state.
	tailWindow  = 256 << 10
	factsWindow = 32 << 10
	tailMax     = 8 << 20
	// growScanMax: appended data up to this size is read whole.
	growScanMax = 8 << 20
	// maxLine bounds one line; longer lines (huge tool outputs) are skipped.
	maxLine = 16 << 20

	promptRunes  = 200
	messageRunes = 1000
)

// turnState is how the last turn in the rollout stands.
type turnState uint8

const (
	turnNone     turnState = iota // no turn record seen
	turnStarted                   // task_started without an end yet
	turnComplete                  // task_complete
	turnFailed                    // task_complete with an error, or an error event
	turnAborted                   // turn_aborted (SIGINT, Esc)
)

// facts is what one rollout says, cached per file version.
type facts struct {
	id          string
	cwd         string
	model       string
	cliVersion  string
	originator  string
	firstPrompt string // from a user-message event: the prompt as typed
	weakPrompt  string // from a user response_item: may be injected context
	created     time.Time
	lastTime    time.Time
	tokensIn    int64
	tokensOut   int64
	hasTokens   bool
	turn        turnState
	turnError   string
	// limited says a usage limit ended the last turn, at limitAt;
	// windows are the account's usage windows as the latest token_count
	// gave them (primary, secondary).
	limited   bool
	limitAt   time.Time
	windows   [2]usageWindow
	windowsAt time.Time // when the snapshot was recorded

	// badLines counts lines that were not JSON objects.
	badLines int
	// skipped counts lines over maxLine.
	skipped int
	// tailOnly is set when the middle of a large file was not read.
	tailOnly bool

	// offset is where the next incremental read continues (just past the
	// last complete line read), and fingerprint the bytes before it.
	offset      int64
	fingerprint []byte
}

// apply folds one line into the facts. Facts that describe the latest state
// are overwritten by later lines; head facts keep their first value.
func (x *facts) apply(line []byte) {
	if irrelevant(line) || x.spent(line) {
		x.skimmed(line)
		return
	}
	x.applyDecoded(line)
}

// applyDecoded folds one line into the facts, decoding it in full.
func (x *facts) applyDecoded(line []byte) {
	r, p, err := decode(line)
	if err != nil {
		x.badLines++
		return
	}
	if t := parseTime(r.Timestamp); !t.IsZero() {
		if x.lastTime.IsZero() || t.After(x.lastTime) {
			x.lastTime = t
		}
	}
	if x.id == "" && r.ThreadID != "" {
		x.id = r.ThreadID
	}
	switch r.Type {
	case typeSessionMeta:
		if x.id == "" {
			x.id = p.ID
		}
		if x.cwd == "" {
			x.cwd = p.Cwd
		}
		if x.created.IsZero() {
			x.created = parseTime(p.Timestamp)
		}
		if x.created.IsZero() {
			x.created = parseTime(r.Timestamp)
		}
		if p.CLIVersion != "" {
			x.cliVersion = p.CLIVersion
		}
		if p.Originator != "" {
			x.originator = p.Originator
		}
	case typeTurnContext:
		if p.Model != "" {
			x.model = p.Model
		}
		if x.cwd == "" {
			x.cwd = p.Cwd
		}
	case typeResponseItem:
		if p.Type != "message" {
			return
		}
		if p.Role == "user" && x.weakPrompt == "" {
			if t := textOf(p.Content); t != "" && !injectedContext(t) {
				x.weakPrompt = text.Ellipsis(t, promptRunes)
			}
		}
	case typeEventMsg:
		x.applyEvent(p, parseTime(r.Timestamp))
	}
}

// skimmed takes from a line that is otherwise not read its timestamp,
// which leads the line in Codex's layout.
func (x *facts) skimmed(line []byte) {
	const key = `{"timestamp":"`
	if !bytes.HasPrefix(line, []byte(key)) {
		return
	}
	rest := line[len(key):]
	end := bytes.IndexByte(rest[:min(len(rest), 64)], '"')
	if end < 0 {
		return
	}
	if t := parseTime(string(rest[:end])); !t.IsZero() && t.After(x.lastTime) {
		x.lastTime = t
	}
}

// usageWindow is one of the account's usage windows.
type usageWindow struct {
	known    bool
	used     float64 // percent
	minutes  int64
	resetsAt time.Time // zero when not said
}

func windowOf(w *rateWindow) usageWindow {
	if w == nil {
		return usageWindow{}
	}
	u := usageWindow{known: true, used: w.UsedPercent, minutes: w.WindowMinutes}
	if w.ResetsAt != nil && *w.ResetsAt > 0 {
		u.resetsAt = time.Unix(*w.ResetsAt, 0).UTC()
	}
	return u
}

// windowNames are Codex's names of its two usage windows.
var windowNames = [2]string{"primary", "secondary"}

// limit is the usage limit that ended the last turn, nil when none did:
// its window is the one the latest snapshot shows used up.
func (x *facts) limit() *adapters.LimitHit {
	if !x.limited {
		return nil
	}
	h := &adapters.LimitHit{Provider: Provider, Message: x.turnError, At: x.limitAt}
	for i, w := range x.windows {
		if w.known && w.used >= 100 {
			h.Window, h.ResetsAt = windowNames[i], w.resetsAt
			break
		}
	}
	return h
}

func (x *facts) applyEvent(p payload, at time.Time) {
	switch p.Type {
	case eventTaskStarted:
		x.turn, x.turnError, x.limited = turnStarted, "", false
	case eventTaskComplete:
		x.limited = false
		if msg := errorText(p.Error); msg != "" {
			x.turn, x.turnError = turnFailed, msg
			if isUsageLimit(p.Error, nil) {
				x.limited, x.limitAt = true, at
			}
		} else {
			x.turn, x.turnError = turnComplete, ""
		}
	case eventTurnAborted:
		x.turn, x.turnError, x.limited = turnAborted, p.Reason, false
	case eventError:
		x.turn, x.turnError = turnFailed, stringOf(p.Message)
		x.limited = isUsageLimit(nil, p.CodexErrorInfo)
		if x.limited {
			x.limitAt = at
		}
	case eventTokenCount:
		if p.RateLimits != nil {
			x.windows = [2]usageWindow{windowOf(p.RateLimits.Primary), windowOf(p.RateLimits.Secondary)}
			x.windowsAt = at
		}
		if p.Info != nil && p.Info.Total != nil {
			in, okIn := count(p.Info.Total.Input)
			out, okOut := count(p.Info.Total.Output)
			if okIn && okOut {
				x.tokensIn, x.tokensOut, x.hasTokens = in, out, true
			}
		}
	case eventSettings:
		if p.ThreadSettings != nil && p.ThreadSettings.Model != "" {
			x.model = p.ThreadSettings.Model
		}
	case eventUserMessage:
		if x.firstPrompt == "" {
			if t := stringOf(p.Message); t != "" {
				x.firstPrompt = text.Ellipsis(t, promptRunes)
			}
		}
	case eventItemCompleted:
		if p.Item != nil && p.Item.Type == itemUserMessage && x.firstPrompt == "" {
			if t := textOf(p.Item.Content); t != "" {
				x.firstPrompt = text.Ellipsis(t, promptRunes)
			}
		}
	}
}

// headComplete reports whether the head facts are all known, so a head
// scan can stop.
func (x *facts) headComplete() bool {
	return x.id != "" && x.cwd != "" && x.firstPrompt != ""
}

// prompt is the first prompt, as typed where the rollout records it.
func (x *facts) prompt() string {
	if x.firstPrompt != "" {
		return x.firstPrompt
	}
	return x.weakPrompt
}

// errStopScan ends a scan early; it is not an error.
var errStopScan = errors.New("stop")

// readFacts reads the facts of the rollout f at version key. prev, when the
// same file was read before, lets a grown file be read from where that read
// stopped. head, when non-nil, supplies the head facts from Codex's thread
// index so the head need not be read. lines lends the read buffers (nil:
// one each read).
func readFacts(f *os.File, key storeio.FileKey, prev *storeio.Entry[*facts], head *thread, lines *storeio.LineBuffers) (*facts, error) {
	size := key.Size
	if prev != nil && prev.Value != nil {
		if off := storeio.ResumeOffset(f, key, prev.Key, prev.Value.offset, prev.Value.fingerprint); off > 0 {
			x := *prev.Value
			return &x, x.readFrom(f, off, size, lines)
		}
	}
	x := &facts{}
	if size <= fullScanMax {
		return x, x.readFrom(f, 0, size, lines)
	}
	if head != nil && head.firstUserMessage != "" {
		x.id, x.cwd, x.model, x.created = head.id, head.cwd, head.model, head.created
		x.firstPrompt = text.Ellipsis(head.firstUserMessage, promptRunes)
	} else if err := x.readHead(f, size, lines); err != nil {
		return x, err
	}
	// The middle of the file is not read: the tail says how things stand.
	x.tailOnly = true
	return x, x.readTail(f, size, lines)
}

// readFrom scans [off, size) line by line (the tail of it, when more than
// growScanMax was appended) and records where to continue.
func (x *facts) readFrom(f *os.File, off, size int64, lines *storeio.LineBuffers) error {
	if size-off > growScanMax {
		x.tailOnly = true
		return x.readTail(f, size, lines)
	}
	end, err := x.scan(f, off, size, nil, lines)
	if err != nil {
		return err
	}
	return x.mark(f, end)
}

// scan applies the lines of [start, size) to x and returns the offset just
// past the last complete line. When start is not at a line start, the line
// it cuts is skipped. An unterminated last line is applied when it is
// valid JSON (it is read again next time; applying a line twice changes
// nothing). stop, when non-nil, ends the scan early once it returns true.
func (x *facts) scan(f *os.File, start, size int64, stop func() bool, lines *storeio.LineBuffers) (int64, error) {
	cut := false
	if start > 0 {
		var b [1]byte
		if _, err := f.ReadAt(b[:], start-1); err != nil {
			return 0, fmt.Errorf("read rollout: %w", err)
		}
		cut = b[0] != '\n'
	}
	res, err := lines.ScanLines(io.NewSectionReader(f, start, size-start), maxLine, func(line []byte) error {
		if cut {
			cut = false
			return nil
		}
		x.apply(line)
		if stop != nil && stop() {
			return errStopScan
		}
		return nil
	})
	if errors.Is(err, errStopScan) {
		return start + res.Consumed, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read rollout: %w", err)
	}
	x.skipped += res.Skipped
	if !cut && res.Partial != nil && json.Valid(bytes.TrimSpace(res.Partial)) {
		x.apply(res.Partial)
	}
	return start + res.Consumed, nil
}

// readHead scans the first lines until the head facts are known.
func (x *facts) readHead(f *os.File, size int64, lines *storeio.LineBuffers) error {
	_, err := x.scan(f, 0, min(size, headMax), x.headComplete, lines)
	return err
}

// readTail reads the last lines, going further back until the last turn's
// state is known or tailMax is reached.
func (x *facts) readTail(f *os.File, size int64, lines *storeio.LineBuffers) error {
	for window := int64(factsWindow); ; window *= 4 {
		window = min(window, tailMax, size)
		y := *x
		end, err := y.scan(f, size-window, size, nil, lines)
		if err != nil {
			return err
		}
		if y.turn != turnNone || window >= tailMax || window >= size {
			*x = y
			return x.mark(f, end)
		}
	}
}

// mark records off as the place the next read continues.
func (x *facts) mark(f *os.File, off int64) error {
	fp, err := storeio.Fingerprint(f, off)
	if err != nil {
		return err
	}
	x.offset, x.fingerprint = off, fp
	return nil
}

// state maps the last turn to the agent's own view. alive says whether a
// live Codex process holds the session.
func (x *facts) state(alive bool) adapters.NativeState {
	switch x.turn {
	case turnStarted:
		// A Codex holds its rollout open while it lives: without one, the
		// turn was cut off (SIGTERM leaves no record of it).
		if alive {
			return adapters.NativeBusy
		}
		return adapters.NativeAborted
	case turnComplete, turnFailed, turnAborted:
		if alive {
			return adapters.NativeIdle
		}
		switch x.turn {
		case turnFailed:
			return adapters.NativeFailed
		case turnAborted:
			return adapters.NativeAborted
		}
		return adapters.NativeDone
	}
	if alive {
		if x.originator == originatorTUI {
			// The TUI opens its thread at start: no turn yet is its
			// prompt, waiting for the first message.
			return adapters.NativeIdle
		}
		return adapters.NativeRunning
	}
	return adapters.NativeAborted
}

// originatorTUI is the originator of a thread Codex's TUI started.
const originatorTUI = "codex-tui"

// native builds the session the adapter reports: ref is its tied process
// (nil: none), alive says a live process holds it (ref, or one of some
// whose which is not known).
func (x *facts) native(path string, mtime time.Time, ref *adapters.ProcessRef, alive bool) adapters.NativeSession {
	s := adapters.NativeSession{
		Adapter:     Name,
		NativeID:    x.id,
		Cwd:         x.cwd,
		Model:       x.model,
		FirstPrompt: x.prompt(),
		CreatedAt:   x.created,
		UpdatedAt:   x.lastTime,
		State:       x.state(alive),
		Process:     ref,
		Path:        path,
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = mtime
	}
	if x.hasTokens {
		in, out := x.tokensIn, x.tokensOut
		s.TokensIn, s.TokensOut = &in, &out
	}
	s.Limit = x.limit()
	for i, w := range x.windows {
		if w.known {
			s.Windows = append(s.Windows, adapters.LimitWindow{Provider: Provider, Name: windowNames[i], UsedPercent: w.used, ResetsAt: w.resetsAt, At: x.windowsAt})
		}
	}
	if x.turn == turnFailed && x.turnError != "" {
		s.Warnings = append(s.Warnings, "last turn failed: "+text.Ellipsis(x.turnError, messageRunes))
	}
	if x.badLines > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d unreadable lines in %s", x.badLines, path))
	}
	if x.skipped > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d lines over %d MB skipped in %s", x.skipped, maxLine>>20, path))
	}
	return s
}
