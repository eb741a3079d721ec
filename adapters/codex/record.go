package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/jsondecode"
)

// Record types of a rollout line ({"timestamp","type","payload"}). Unknown
// types are skipped: Codex adds types between releases.
const (
	typeSessionMeta  = "session_meta"
	typeEventMsg     = "event_msg"
	typeResponseItem = "response_item"
	typeTurnContext  = "turn_context"
)

// Payload types of event_msg records that carry the facts agentctl reads.
const (
	eventTaskStarted   = "task_started"
	eventTaskComplete  = "task_complete"
	eventTurnAborted   = "turn_aborted"
	eventTokenCount    = "token_count"
	eventItemCompleted = "item_completed"
	eventUserMessage   = "user_message"  // releases before item_completed
	eventAgentMessage  = "agent_message" // releases before item_completed
	eventError         = "error"         // releases before task_complete.error
	eventSettings      = "thread_settings_applied"
)

// Item types inside an item_completed event.
const (
	itemUserMessage  = "UserMessage"
	itemAgentMessage = "AgentMessage"
)

// record is one rollout line. Every field is optional: a wrong type in one
// field still yields the others (see decode).
type record struct {
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`
	// ThreadID is the top-level id some older releases wrote.
	ThreadID string `json:"thread_id"`
}

// rolloutLine is a line decoded in one pass, its payload included.
type rolloutLine struct {
	record
	Payload payload `json:"payload"`
}

// payload is the union of the payload fields agentctl reads.
type payload struct {
	Type string `json:"type"`

	// session_meta
	ID         string `json:"id"`
	Timestamp  string `json:"timestamp"`
	Cwd        string `json:"cwd"`
	CLIVersion string `json:"cli_version"`
	Originator string `json:"originator"`

	// turn_context
	Model string `json:"model"`

	// response_item: message, function_call, function_call_output, ...
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	Output    json.RawMessage `json:"output"`

	// event_msg
	Message    json.RawMessage `json:"message"`
	Error      json.RawMessage `json:"error"`
	Reason     string          `json:"reason"`
	Info       *tokenInfo      `json:"info"`
	RateLimits *rateLimits     `json:"rate_limits"`
	// CodexErrorInfo classifies an error event ("usage_limit_exceeded");
	// a task_complete carries it inside Error.
	CodexErrorInfo json.RawMessage `json:"codex_error_info"`
	Item           *eventItem      `json:"item"`
	ThreadSettings *struct {
		Model string `json:"model"`
	} `json:"thread_settings"`
}

// rateLimits is a token_count's snapshot of the account's usage windows.
type rateLimits struct {
	Primary   *rateWindow `json:"primary"`
	Secondary *rateWindow `json:"secondary"`
}

type rateWindow struct {
	UsedPercent   float64 `json:"used_percent"`
	WindowMinutes int64   `json:"window_minutes"`
	ResetsAt      *int64  `json:"resets_at"`
}

// usageLimitExceeded is Codex's codex_error_info of a turn a usage limit
// ended (its UsageLimitExceeded error).
const usageLimitExceeded = "usage_limit_exceeded"

// isUsageLimit reports whether a task_complete's error (or an error
// event's codex_error_info, given as info) is Codex's usage-limit error.
func isUsageLimit(errRaw, info json.RawMessage) bool {
	var s string
	if jsondecode.Unmarshal(info, &s) == nil && s == usageLimitExceeded {
		return true
	}
	var e struct {
		Info json.RawMessage `json:"codex_error_info"`
	}
	if bytes.HasPrefix(bytes.TrimSpace(errRaw), []byte("{")) {
		if err := jsondecode.Unmarshal(errRaw, &e); err == nil || isTypeError(err) {
			return jsondecode.Unmarshal(e.Info, &s) == nil && s == usageLimitExceeded
		}
	}
	return false
}

type tokenInfo struct {
	Total *tokenUsage `json:"total_token_usage"`
}

type tokenUsage struct {
	Input  json.RawMessage `json:"input_tokens"`
	Output json.RawMessage `json:"output_tokens"`
}

// count reads a token count: a non-negative JSON number.
func count(raw json.RawMessage) (int64, bool) {
	var n float64
	if len(raw) == 0 || raw[0] == '"' || jsondecode.Unmarshal(raw, &n) != nil || n < 0 || n > 1e15 {
		return 0, false
	}
	return int64(n), true
}

type eventItem struct {
	Type    string          `json:"type"`
	Content json.RawMessage `json:"content"`
}

// skipHead is how much of a line irrelevant reveals its types in.
const skipHead = 512

// irrelevant reports whether a line is certainly of a kind the facts do not
// use: tool calls and their (often large) output, command results,
// reasoning, developer instructions, the assistant's messages (how a turn
// ended is task_complete's), world state, token records. It looks only at
// the line's head, in the layout Codex writes ("type" before "payload",
// the payload's "type" first); a line it cannot place is decoded in full,
// so a false "relevant" only costs time.
func irrelevant(line []byte) bool {
	recType, payloadType, after := lineTypes(line)
	switch string(recType) {
	case "world_state", "token_usage_record":
		return true
	case typeResponseItem, typeEventMsg:
	default:
		return false
	}
	if string(recType) == typeResponseItem {
		switch string(payloadType) {
		case "message":
			return bytes.Contains(after, []byte(`"role":"developer"`)) || bytes.Contains(after, []byte(`"role":"system"`)) ||
				bytes.Contains(after, []byte(`"role":"assistant"`))
		case "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
			"local_shell_call", "reasoning", "web_search_call", "image_generation_call":
			return true
		}
		return false
	}
	switch string(payloadType) {
	case eventItemCompleted:
		m := bytes.Index(after, []byte(`"item":{"type":"`))
		if m < 0 {
			return false
		}
		it := after[m+len(`"item":{"type":"`):]
		return !bytes.HasPrefix(it, []byte(itemUserMessage+`"`))
	case eventAgentMessage, "exec_command_begin", "exec_command_end", "exec_command_output_delta", "agent_reasoning",
		"agent_reasoning_delta", "agent_message_delta", "mcp_tool_call_begin", "mcp_tool_call_end",
		"patch_apply_begin", "patch_apply_end", "turn_diff", "web_search_end":
		return true
	}
	return false
}

// lineTypes reads a line's record type and its payload's type from the
// line's head, in the layout Codex writes, and returns the head after the
// payload's type; nil where the head does not say. (Bytes, not strings:
// a string made here would be allocated for every line.)
func lineTypes(line []byte) (recType, payloadType, after []byte) {
	head := line[:min(len(line), skipHead)]
	i := bytes.Index(head, []byte(`,"type":"`))
	if i < 0 {
		return nil, nil, nil
	}
	rest := head[i+len(`,"type":"`):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return nil, nil, nil
	}
	recType = rest[:j]
	k := bytes.Index(rest, []byte(`"payload":{"type":"`))
	if k < 0 {
		return recType, nil, nil
	}
	pt := rest[k+len(`"payload":{"type":"`):]
	e := bytes.IndexByte(pt, '"')
	if e < 0 {
		return recType, nil, nil
	}
	return recType, pt[:e], pt[e:]
}

// spent reports whether a line is a user message whose only facts, the
// first prompt (or the weaker one a user response item gives) and the
// thread's id, x already holds: every user message after the first is
// then read for its timestamp alone, as irrelevant lines are. Like
// irrelevant it looks at the line's head; a line it cannot place is
// decoded.
func (x *facts) spent(line []byte) bool {
	if x.id == "" {
		return false
	}
	recType, payloadType, after := lineTypes(line)
	switch {
	case string(recType) == typeResponseItem && string(payloadType) == "message":
		return x.weakPrompt != "" && bytes.Contains(after, []byte(`"role":"user"`))
	case string(recType) == typeEventMsg && string(payloadType) == eventUserMessage:
		return x.firstPrompt != ""
	case string(recType) == typeEventMsg && string(payloadType) == eventItemCompleted:
		return x.firstPrompt != "" && bytes.Contains(after, []byte(`"item":{"type":"`+itemUserMessage+`"`))
	}
	return false
}

// errBadLine marks a line that is not a JSON object at all.
var errBadLine = errors.New("not a JSON object")

// decode parses one rollout line. A line that is JSON but has a wrong type
// in some field is decoded as far as it goes (encoding/json fills every
// field it can and reports the first mismatch), so the fields that are
// right are kept; only a line that is not a JSON object fails.
func decode(line []byte) (record, payload, error) {
	var r record
	var p payload
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return r, p, errBadLine
	}
	// One pass: a line can hold hundreds of KB of tool output, and decoding
	// its payload separately would scan it all again. What the decoder
	// does not read (a session_meta's 20 kB of base instructions) it
	// skips without allocating.
	var l rolloutLine
	if err := jsondecode.Unmarshal(line, &l); err != nil && !isTypeError(err) {
		return r, p, err
	}
	return l.record, l.Payload, nil
}

func isTypeError(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te)
}

// parseTime reads an RFC 3339 timestamp; zero when absent or malformed.
func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// textOf returns the text of a content value: a string, or the text of a
// list of parts ({"type":"input_text"|"output_text"|"text"|"Text","text":…}).
func textOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if jsondecode.Unmarshal(raw, &s) == nil {
			return s
		}
	case '[':
		var parts []struct {
			Type string          `json:"type"`
			Text json.RawMessage `json:"text"`
		}
		if err := jsondecode.Unmarshal(raw, &parts); err != nil && !isTypeError(err) {
			return ""
		}
		var b strings.Builder
		for _, p := range parts {
			switch strings.ToLower(p.Type) {
			case "input_text", "output_text", "text", "":
			default:
				continue
			}
			var s string
			if jsondecode.Unmarshal(p.Text, &s) != nil || s == "" {
				continue
			}
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(s)
		}
		return b.String()
	}
	return ""
}

// stringOf returns raw as a string when it is a JSON string, else its
// compact JSON text (tool arguments and outputs come in both forms).
func stringOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if jsondecode.Unmarshal(raw, &s) == nil {
			return s
		}
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return ""
}

// errorText returns a task_complete or error event's message.
func errorText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	if raw[0] == '{' {
		var e struct {
			Message string `json:"message"`
		}
		if err := jsondecode.Unmarshal(raw, &e); err == nil || isTypeError(err) {
			if e.Message != "" {
				return e.Message
			}
		}
	}
	if s := stringOf(raw); s != "" {
		return s
	}
	return "error"
}

// injectedContext reports whether a user-role message is context Codex
// injects (environment, instructions, AGENTS.md) rather than a prompt.
func injectedContext(text string) bool {
	t := strings.TrimLeft(text, " \t\r\n")
	return strings.HasPrefix(t, "<") || strings.HasPrefix(t, "# AGENTS.md")
}

// truncate shortens s to at most n runes, marking the cut.
// stringHead is stringOf for a view of at most about maxBytes of a string
// value: only that much of it is unquoted, so a peek at a rollout full of
// large tool outputs does not decode them whole. The result may be cut
// short, and then truncate marks it.
func stringHead(raw json.RawMessage, maxBytes int) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) <= maxBytes+2 || raw[0] != '"' {
		return stringOf(raw)
	}
	// Cut after maxBytes bytes of the string's body, not inside an escape
	// sequence (\uXXXX is the longest), and close the string there.
	end := 1
	for end < maxBytes {
		if raw[end] == '\\' {
			end += 2
			if end < len(raw) && raw[end-1] == 'u' {
				end += 4
			}
			continue
		}
		if raw[end] == '"' {
			return stringOf(raw[:end+1]) // ends before maxBytes after all
		}
		end++
	}
	if end >= len(raw) {
		return stringOf(raw)
	}
	head := make([]byte, 0, end+1)
	head = append(head, raw[:end]...)
	head = append(head, '"')
	s := stringOf(head)
	if s == "" {
		return stringOf(raw)
	}
	return s + "…"
}
