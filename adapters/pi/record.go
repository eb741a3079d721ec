package pi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/internal/jsondecode"
)

// Record types of a Pi session file (format version 3). Unknown types are
// skipped: the format grows between releases.
const (
	typeSession     = "session"
	typeMessage     = "message"
	typeModelChange = "model_change"
)

// Message roles inside a "message" record.
const (
	roleUser          = "user"
	roleAssistant     = "assistant"
	roleToolResult    = "toolResult"
	roleBashExecution = "bashExecution"
)

// Assistant stop reasons.
const (
	stopStop    = "stop"
	stopLength  = "length"
	stopToolUse = "toolUse"
	stopError   = "error"
	stopAborted = "aborted"
)

// record is one line of a session file. Every field is optional: a line
// with a wrong type in one field still yields the others.
type record struct {
	Type      string   `json:"type"`
	ID        string   `json:"id"`
	ParentID  *string  `json:"parentId"`
	Timestamp string   `json:"timestamp"`
	Cwd       string   `json:"cwd"`
	Provider  string   `json:"provider"`
	ModelID   string   `json:"modelId"`
	Message   *message `json:"message"`
}

type message struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	Provider     string          `json:"provider"`
	Model        string          `json:"model"`
	Usage        *usage          `json:"usage"`
	StopReason   string          `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
	ToolName     string          `json:"toolName"`
	IsError      bool            `json:"isError"`
	Command      string          `json:"command"` // bashExecution
	Output       string          `json:"output"`  // bashExecution
}

type usage struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
	Cost       cost    `json:"cost"`
}

// cost is {..., "total": n} or, in older files, a plain number.
type cost struct {
	total float64
	known bool
}

func (c *cost) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] == 'n' { // null
		return nil
	}
	if b[0] == '{' {
		var v struct {
			Total *float64 `json:"total"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		if v.Total != nil {
			c.total, c.known = *v.Total, true
		}
		return nil
	}
	if err := json.Unmarshal(b, &c.total); err != nil {
		return err
	}
	c.known = true
	return nil
}

// costUSD returns the total cost the usage carries.
func (u *usage) costUSD() (float64, bool) {
	if u == nil {
		return 0, false
	}
	return u.Cost.total, u.Cost.known
}

// parseRecord decodes one line. A syntax error (a half-written or garbled
// line) returns ok=false; a wrong type in a known field returns the record
// with the other fields filled and a non-nil warn.
func parseRecord(line []byte) (r record, ok bool, warn error) {
	err := jsondecode.Unmarshal(line, &r)
	if err == nil {
		return r, true, nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return r, true, fmt.Errorf("field %q has a %s, not a %s", te.Field, te.Value, te.Type)
	}
	return record{}, false, err
}

// parseTime reads an ISO timestamp as Pi writes it (Date.toISOString).
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

// contentBlock is one element of a message's content array.
type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Name      string          `json:"name"`      // toolCall
	Arguments json.RawMessage `json:"arguments"` // toolCall
}

// blocks decodes a content value: a plain string or an array of blocks.
func blocks(raw json.RawMessage) []contentBlock {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if jsondecode.Unmarshal(raw, &s) == nil {
			return []contentBlock{{Type: "text", Text: s}}
		}
		return nil
	}
	var bs []contentBlock
	if jsondecode.Unmarshal(raw, &bs) != nil {
		// Decode element by element so one odd block does not hide the rest.
		var items []json.RawMessage
		if jsondecode.Unmarshal(raw, &items) != nil {
			return nil
		}
		for _, it := range items {
			var b contentBlock
			if jsondecode.Unmarshal(it, &b) == nil {
				bs = append(bs, b)
			}
		}
	}
	return bs
}

// textOf joins the text blocks of a content value.
func textOf(raw json.RawMessage) string {
	var parts []string
	for _, b := range blocks(raw) {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// clip shortens s to at most n runes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i, count := 0, 0
	for i < len(s) && count < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	if i >= len(s) {
		return s
	}
	return s[:i] + "…"
}

// modelName is how agentctl names a Pi model: "provider/model", the form
// --model takes.
func modelName(provider, model string) string {
	switch {
	case model == "":
		return ""
	case provider == "":
		return model
	}
	return provider + "/" + model
}
