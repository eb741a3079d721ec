package claude

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/internal/jsondecode"
)

// A Claude Code transcript (~/.claude/projects/<slug>/<uuid>.jsonl) holds one
// JSON record per line, told apart by "type". Only the types below are read;
// the schema grows with every release (api-request*, atis-latch, mode,
// attachment, ...), so every other type is skipped without complaint.

// record is the union of the fields read from the record types used.
type record struct {
	Type        string    `json:"type"`
	SessionID   string    `json:"sessionId"`
	Cwd         string    `json:"cwd"`
	Timestamp   time.Time `json:"timestamp"`
	IsMeta      bool      `json:"isMeta"`
	IsSidechain bool      `json:"isSidechain"`
	// IsAPIErrorMessage marks the synthetic assistant message Claude writes
	// when the model API failed for good.
	IsAPIErrorMessage bool     `json:"isApiErrorMessage"`
	Message           *message `json:"message"`
	// Error and APIErrorStatus say, on an API error message, what failed:
	// "rate_limit" and 429 for a usage or rate limit. Raw, so that a
	// shape other than the one read never makes the line unreadable.
	Error          json.RawMessage `json:"error"`
	APIErrorStatus json.RawMessage `json:"apiErrorStatus"`

	// queue-operation
	Operation string          `json:"operation"`
	Content   json.RawMessage `json:"content"`

	// cost-state: cumulative over the session, resumes included, as the
	// process that wrote it (started at StartTime, epoch ms) knew it: a
	// process killed before writing one is missing from the next.
	TotalCostUSD *float64              `json:"totalCostUSD"`
	ModelUsage   map[string]modelUsage `json:"modelUsage"`
	StartTime    int64                 `json:"startTime"`
}

type message struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Model      string          `json:"model"`
	Content    json.RawMessage `json:"content"`
	StopReason string          `json:"stop_reason"`
	Usage      *usage          `json:"usage"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// input is all input tokens: fresh, cache reads and cache writes.
func (u *usage) input() int64 {
	return u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
}

type modelUsage struct {
	InputTokens              int64 `json:"inputTokens"`
	OutputTokens             int64 `json:"outputTokens"`
	CacheReadInputTokens     int64 `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64 `json:"cacheCreationInputTokens"`
}

type block struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"`
	IsError bool            `json:"is_error"`
}

// syntheticModel is the model name on messages Claude Code writes itself
// (API errors, interruptions), not a model that answered.
const syntheticModel = "<synthetic>"

// interruptedPrefix starts the user text Claude records when a turn is
// interrupted.
const interruptedPrefix = "[Request interrupted by user"

// recordTypes are the types decoded; lines of other types are recognised by
// a cheap look at their "type" and skipped, which matters because the
// api-request* records hold the whole system prompt.
var recordTypes = map[string]bool{"user": true, "assistant": true, "queue-operation": true, "cost-state": true}

// parseRecord decodes one line. ok is false for a line of a type not read;
// err is set for a line that is not a JSON object or has wrong types in the
// fields read.
func parseRecord(line []byte) (rec record, ok bool, err error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return rec, false, nil
	}
	if t, found := peekType(line); found && !recordTypes[t] {
		return rec, false, nil
	}
	if err := jsondecode.Unmarshal(line, &rec); err != nil {
		return rec, false, fmt.Errorf("unreadable record: %w", err)
	}
	return rec, recordTypes[rec.Type], nil
}

// peekType returns the value of the record's top-level "type" key by
// scanning the line without decoding it, so that large records of types
// not read (attachments, api-request*) cost a byte scan only. found is
// false when the line has no such string value where expected.
func peekType(line []byte) (typ string, found bool) {
	depth := 0
	expectKey := false
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '"':
			end := stringEnd(line, i+1)
			if end < 0 {
				return "", false
			}
			if depth == 1 && expectKey && string(line[i+1:end]) == "type" {
				return stringValueAfterColon(line[end+1:])
			}
			expectKey = false
			i = end
		case '{':
			depth++
			expectKey = depth == 1
		case '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			expectKey = depth == 1
		}
	}
	return "", false
}

// stringEnd returns the index of the quote closing the string that starts
// at b[from], or -1.
func stringEnd(b []byte, from int) int {
	for {
		j := bytes.IndexByte(b[from:], '"')
		if j < 0 {
			return -1
		}
		q := from + j
		bs := 0
		for k := q - 1; k >= from && b[k] == '\\'; k-- {
			bs++
		}
		if bs%2 == 0 {
			return q
		}
		from = q + 1
	}
}

// stringValueAfterColon reads `: "value"` (with optional spaces) when the
// value is a string without escapes.
func stringValueAfterColon(b []byte) (string, bool) {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 || b[0] != ':' {
		return "", false
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	if len(b) == 0 || b[0] != '"' {
		return "", false
	}
	end := stringEnd(b, 1)
	if end < 0 || bytes.IndexByte(b[1:end], '\\') >= 0 {
		return "", false
	}
	return string(b[1:end]), true
}

// userText returns a user message's own text: a string, or its text
// blocks. Tool results are not user text.
func userText(content json.RawMessage) (text string, hasToolResult bool) {
	var s string
	if jsondecode.Unmarshal(content, &s) == nil {
		return s, false
	}
	var blocks []block
	if jsondecode.Unmarshal(content, &blocks) != nil {
		return "", false
	}
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "tool_result":
			hasToolResult = true
		}
	}
	return strings.Join(parts, "\n"), hasToolResult
}

func decodeBlocks(content json.RawMessage) []block {
	var blocks []block
	if jsondecode.Unmarshal(content, &blocks) != nil {
		return nil
	}
	return blocks
}

// maxKept bounds the first prompt and last message a summary keeps: the
// cache holds one summary per session.
const maxKept = 8 << 10

// keep returns s cut to maxKept bytes (on a character boundary), as a copy
// that does not pin the line it was decoded from.
func keep(s string) string {
	if len(s) <= maxKept {
		return strings.Clone(s)
	}
	cut := maxKept
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return strings.Clone(s[:cut]) + "…"
}

// turnState follows the last turn of a transcript.
type turnState int

const (
	turnUnknown     turnState = iota
	turnInProgress            // a prompt or tool call without its answer yet
	turnDone                  // the model ended its turn
	turnFailed                // the API failed for good
	turnInterrupted           // the user (or a signal) interrupted it
)

func (t turnState) native() adapters.NativeState {
	switch t {
	case turnDone:
		return adapters.NativeDone
	case turnFailed:
		return adapters.NativeFailed
	case turnInterrupted:
		return adapters.NativeAborted
	}
	return adapters.NativeUnknown
}

// summary is what Discover knows of one transcript. It is built from the
// head and tail of the file and then kept up to date by reading only what
// was appended.
type summary struct {
	ID          string
	Cwd         string
	FirstPrompt string
	Model       string
	Created     time.Time
	Updated     time.Time
	Turn        turnState
	// Limit is the usage limit that ended the last turn, if one did.
	Limit *adapters.LimitHit

	// Cost and tokens: Claude's cumulative cost-state, plus the assistant
	// usage after it (a turn still running has no cost-state yet).
	HaveCost bool
	CostUSD  float64
	CostIn   int64
	CostOut  int64
	UsageIn  int64
	UsageOut int64
	// CarriedIn and CarriedOut are the usage of processes that wrote no
	// cost-state (SIGKILLed) before a later process's cost-state, which
	// does not count them.
	CarriedIn  int64
	CarriedOut int64
	// sinceCost is the usage of each message since the last cost-state,
	// with when it was written (a forward read).
	sinceCost    []usageAt
	lastUsageMsg string // message id whose usage was counted last
	lastMsgIn    int64  // and its usage
	lastMsgOut   int64
	// lastBackMsg and usageSeen track usage while reading backwards;
	// costStart is the start of the process that wrote the latest
	// cost-state, and carryBackMsg the message last carried.
	lastBackMsg  string
	usageSeen    bool
	costStart    time.Time
	carryBackMsg string
	// Complete is true when every line up to Offset was read, so usage
	// sums are exact even without a cost-state.
	Complete bool

	// Offset is where reading stopped (after the last complete line), with
	// a fingerprint of the bytes before it, for incremental reads.
	Offset      int64
	Fingerprint []byte

	BadLines  int
	LongLines int
	Warnings  []string
}

// clone copies s so that an update never changes a value another reader
// holds from the cache.
func (s summary) clone() summary {
	s.Warnings = append([]string(nil), s.Warnings...)
	s.sinceCost = append([]usageAt(nil), s.sinceCost...)
	s.Fingerprint = append([]byte(nil), s.Fingerprint...)
	return s
}

// head applies a record from the start of the file: where the session
// began, in which directory, with which prompt.
func (s *summary) head(r record) {
	if s.ID == "" && r.SessionID != "" {
		s.ID = r.SessionID
	}
	if s.Cwd == "" && r.Cwd != "" {
		s.Cwd = r.Cwd
	}
	if s.Created.IsZero() && !r.Timestamp.IsZero() {
		s.Created = r.Timestamp
	}
	if s.FirstPrompt != "" || r.IsSidechain || r.IsMeta {
		return
	}
	switch {
	case r.Type == "user" && r.Message != nil:
		if text, isResult := userText(r.Message.Content); !isResult && text != "" {
			s.FirstPrompt = keep(text)
		}
	case r.Type == "queue-operation" && r.Operation == "enqueue":
		var text string
		if jsondecode.Unmarshal(r.Content, &text) == nil && text != "" {
			s.FirstPrompt = keep(text)
		}
	}
}

// apply applies a record in file order: the latest state.
func (s *summary) apply(r record) {
	if !r.Timestamp.IsZero() && r.Timestamp.After(s.Updated) {
		s.Updated = r.Timestamp
	}
	if r.IsSidechain {
		return
	}
	s.applyTotals(r)
	switch r.Type {
	case "assistant":
		m := r.Message
		if m == nil {
			return
		}
		if m.Model != "" && m.Model != syntheticModel {
			s.Model = m.Model
		}
		switch {
		case r.IsAPIErrorMessage:
			s.Turn, s.Limit = turnFailed, limitOf(r)
		case m.StopReason == "tool_use":
			s.Turn, s.Limit = turnInProgress, nil
		case m.StopReason != "":
			s.Turn, s.Limit = turnDone, nil
		}
	case "user":
		if r.Message == nil || r.IsMeta {
			return
		}
		s.Limit = nil
		text, _ := userText(r.Message.Content)
		if strings.HasPrefix(text, interruptedPrefix) {
			s.Turn = turnInterrupted
		} else {
			s.Turn = turnInProgress
		}
	}
}

// applyTotals applies what of a record (not a sidechain's) in file order
// the totals depend on: a cost-state, an assistant message's usage. It is
// all the usage scanner applies.
func (s *summary) applyTotals(r record) {
	switch r.Type {
	case "cost-state":
		if r.TotalCostUSD == nil {
			return
		}
		s.HaveCost, s.CostUSD = true, *r.TotalCostUSD
		s.CostIn, s.CostOut = 0, 0
		for _, u := range r.ModelUsage {
			s.CostIn += u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
			s.CostOut += u.OutputTokens
		}
		// What was written before this process started, since the last
		// cost-state, is a killed process's: this cost-state has it not.
		if r.StartTime > 0 {
			start := time.UnixMilli(r.StartTime)
			for _, u := range s.sinceCost {
				if u.at.Before(start) {
					s.CarriedIn, s.CarriedOut = s.CarriedIn+u.in, s.CarriedOut+u.out
				}
			}
		}
		s.sinceCost = s.sinceCost[:0]
		s.UsageIn, s.UsageOut = 0, 0
		s.lastUsageMsg, s.lastMsgIn, s.lastMsgOut = "", 0, 0
	case "assistant":
		m := r.Message
		// Claude writes one record per content block, each repeating the
		// message's usage: count it once per message, the last record's.
		if m == nil || m.Usage == nil || m.Model == syntheticModel {
			return
		}
		in, out := m.Usage.input(), m.Usage.OutputTokens
		if m.ID != "" && m.ID == s.lastUsageMsg {
			s.UsageIn, s.UsageOut = s.UsageIn-s.lastMsgIn, s.UsageOut-s.lastMsgOut
			if n := len(s.sinceCost); n > 0 {
				s.sinceCost = s.sinceCost[:n-1]
			}
		}
		s.UsageIn, s.UsageOut = s.UsageIn+in, s.UsageOut+out
		s.lastUsageMsg, s.lastMsgIn, s.lastMsgOut = m.ID, in, out
		s.sinceCost = append(s.sinceCost, usageAt{at: r.Timestamp, in: in, out: out})
	}
}

// setTotals takes t's totals (and what continues them) for s's.
func (s *summary) setTotals(t *summary) {
	s.HaveCost, s.CostUSD, s.CostIn, s.CostOut = t.HaveCost, t.CostUSD, t.CostIn, t.CostOut
	s.UsageIn, s.UsageOut, s.CarriedIn, s.CarriedOut = t.UsageIn, t.UsageOut, t.CarriedIn, t.CarriedOut
	s.sinceCost = append([]usageAt(nil), t.sinceCost...)
	s.lastUsageMsg, s.lastMsgIn, s.lastMsgOut = t.lastUsageMsg, t.lastMsgIn, t.lastMsgOut
}

// usageAt is one message's usage and when it was written.
type usageAt struct {
	at      time.Time
	in, out int64
}

// tailFacts says which latest facts a backwards read has found. carried:
// the usage of killed processes before the latest cost-state is counted
// (the cost-state before it was met, or that cost-state's process began
// the session).
type tailFacts struct {
	updated, model, turn, cost, carried bool
}

func (f tailFacts) all() bool {
	return f.updated && f.model && f.turn && f.cost && f.carried
}

// applyBackwards applies a record met reading from the end of the file:
// the first value found for each fact is the latest. It gives the same
// summary as apply over the same records in file order, and reports when
// nothing older can change it.
func (s *summary) applyBackwards(r record, f *tailFacts) bool {
	if !f.updated && !r.Timestamp.IsZero() {
		s.Updated, f.updated = r.Timestamp, true
	}
	if r.IsSidechain {
		return f.all()
	}
	switch r.Type {
	case "cost-state":
		if f.cost && r.TotalCostUSD != nil {
			f.carried = true // an earlier cost-state: what lies before it, it counted
		}
		if f.cost || r.TotalCostUSD == nil {
			break
		}
		f.cost = true
		// Its process began the session when it started before the
		// session's first record (known from the head): no other
		// process's records can precede it.
		if r.StartTime <= 0 {
			f.carried = true
		} else if s.costStart = time.UnixMilli(r.StartTime); !s.Created.IsZero() && !s.costStart.After(s.Created) {
			f.carried = true
		}
		s.HaveCost, s.CostUSD = true, *r.TotalCostUSD
		s.CostIn, s.CostOut = 0, 0
		for _, u := range r.ModelUsage {
			s.CostIn += u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
			s.CostOut += u.OutputTokens
		}
	case "assistant":
		m := r.Message
		if m == nil {
			break
		}
		if !f.model && m.Model != "" && m.Model != syntheticModel {
			s.Model, f.model = m.Model, true
		}
		// Backwards, the first record met of a message is its last.
		if f.cost && !f.carried && m.Usage != nil && m.Model != syntheticModel && r.Timestamp.Before(s.costStart) && (m.ID == "" || m.ID != s.carryBackMsg) {
			// Before the latest cost-state's process began, after the
			// cost-state before it: a killed process's usage.
			s.CarriedIn += m.Usage.input()
			s.CarriedOut += m.Usage.OutputTokens
			s.carryBackMsg = m.ID
		}
		if !f.cost && m.Usage != nil && m.Model != syntheticModel && (m.ID == "" || !s.usageSeen || m.ID != s.lastBackMsg) {
			in, out := m.Usage.input(), m.Usage.OutputTokens
			s.UsageIn += in
			s.UsageOut += out
			// Newest first: the caller turns them around (sinceCostInOrder).
			s.sinceCost = append(s.sinceCost, usageAt{at: r.Timestamp, in: in, out: out})
			if !s.usageSeen {
				// The latest counted message, as a forward read would
				// leave it.
				s.lastUsageMsg, s.lastMsgIn, s.lastMsgOut = m.ID, in, out
			}
			s.lastBackMsg, s.usageSeen = m.ID, true
		}
		if !f.turn {
			switch {
			case r.IsAPIErrorMessage:
				s.Turn, s.Limit, f.turn = turnFailed, limitOf(r), true
			case m.StopReason == "tool_use":
				s.Turn, f.turn = turnInProgress, true
			case m.StopReason != "":
				s.Turn, f.turn = turnDone, true
			}
		}
	case "user":
		if r.Message == nil || r.IsMeta || f.turn {
			break
		}
		text, _ := userText(r.Message.Content)
		if strings.HasPrefix(text, interruptedPrefix) {
			s.Turn = turnInterrupted
		} else {
			s.Turn = turnInProgress
		}
		f.turn = true
	}
	return f.all()
}

// sinceCostInOrder puts the usage a backwards read met since the latest
// cost-state in file order, as a forward read keeps it.
func (s *summary) sinceCostInOrder() { slices.Reverse(s.sinceCost) }

// tokens returns the session's token totals, nil when they cannot be known
// from what was read.
func (s *summary) tokens() (in, out *int64) {
	switch {
	case s.HaveCost:
		i, o := s.CarriedIn+s.CostIn+s.UsageIn, s.CarriedOut+s.CostOut+s.UsageOut
		return &i, &o
	case s.Complete:
		i, o := s.UsageIn, s.UsageOut
		return &i, &o
	}
	return nil, nil
}

func (s *summary) cost() *float64 {
	if !s.HaveCost {
		return nil
	}
	c := s.CostUSD
	return &c
}

// rateLimitError is the error Claude Code records on an API error message
// when the API answered with a usage or rate limit.
const rateLimitError = "rate_limit"

// resetSuffixRE is the reset time (epoch seconds) Claude Code's usage-limit
// text ends with for subscribers: "Claude AI usage limit reached|1767225600".
var resetSuffixRE = regexp.MustCompile(`\|(\d{9,11})\s*$`)

// limitOf is the usage limit an API error message records, or nil when
// the error was another. Claude gives up on a limit at once (the API says
// not to retry), so the record is the turn's end.
func limitOf(r record) *adapters.LimitHit {
	if !r.IsAPIErrorMessage || r.Message == nil {
		return nil
	}
	var errName string
	var status int
	json.Unmarshal(r.Error, &errName)         //nolint:errcheck // another shape is not a limit
	json.Unmarshal(r.APIErrorStatus, &status) //nolint:errcheck // likewise
	if errName != rateLimitError && status != adapters.LimitStatus {
		return nil
	}
	h := &adapters.LimitHit{Provider: Provider, At: r.Timestamp}
	for _, b := range decodeBlocks(r.Message.Content) {
		if b.Type == "text" && strings.TrimSpace(b.Text) != "" {
			h.Message = keep(b.Text)
		}
	}
	if m := resetSuffixRE.FindStringSubmatch(h.Message); m != nil {
		if sec, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			h.ResetsAt = time.Unix(sec, 0).UTC()
		}
	}
	return h
}
