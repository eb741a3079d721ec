package opencode

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/internal/jsondecode"
	"github.com/agentctl/agentctl/internal/text"
)

// Limits on what a session keeps of its texts.
const (
	promptRunes  = 200
	messageRunes = 1000
	toolRunes    = 2000
)

// messageData is the JSON of a message (the message table's data column,
// or a legacy storage/message file). Every field is optional.
type messageData struct {
	ID         string          `json:"id"`
	SessionID  string          `json:"sessionID"`
	Role       string          `json:"role"`
	ModelID    string          `json:"modelID"`
	ProviderID string          `json:"providerID"`
	Model      json.RawMessage `json:"model"` // user messages: {"providerID","modelID"}
	Finish     string          `json:"finish"`
	Error      json.RawMessage `json:"error"`
	Tokens     *struct {
		Input  json.RawMessage `json:"input"`
		Output json.RawMessage `json:"output"`
	} `json:"tokens"`
	Cost json.RawMessage `json:"cost"`
	Time struct {
		Created   json.RawMessage `json:"created"`
		Completed json.RawMessage `json:"completed"`
	} `json:"time"`
}

// partData is the JSON of a part. Every field is optional.
type partData struct {
	ID        string          `json:"id"`
	MessageID string          `json:"messageID"`
	Type      string          `json:"type"`
	Text      json.RawMessage `json:"text"`
	Synthetic bool            `json:"synthetic"`
	Ignored   bool            `json:"ignored"`
	Tool      string          `json:"tool"`
	State     *struct {
		Status string          `json:"status"`
		Input  json.RawMessage `json:"input"`
		Output json.RawMessage `json:"output"`
		Error  json.RawMessage `json:"error"`
	} `json:"state"`
}

// decodeJSON decodes an object as far as it goes: a wrong type in one
// field keeps the others. Only input that is not a JSON object fails.
func decodeJSON(b []byte, v any) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not a JSON object")
	}
	err := jsondecode.Unmarshal(b, v)
	var te *json.UnmarshalTypeError
	if err != nil && !errors.As(err, &te) {
		return err
	}
	return nil
}

// number reads a finite JSON number; ok is false for anything else.
func number(raw json.RawMessage) (float64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == '"' || raw[0] == 'n' {
		return 0, false
	}
	var f float64
	if jsondecode.Unmarshal(raw, &f) != nil {
		return 0, false
	}
	return f, true
}

// timeOf reads a time given as epoch milliseconds or an RFC 3339 string.
func timeOf(raw json.RawMessage) time.Time {
	if ms, ok := number(raw); ok && ms > 0 && ms < 1e15 {
		return time.UnixMilli(int64(ms))
	}
	var s string
	if jsondecode.Unmarshal(raw, &s) == nil {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// str reads a JSON string; "" for anything else.
func str(raw json.RawMessage) string {
	var s string
	if jsondecode.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// compact renders raw as a string when it is one, else as compact JSON.
func compact(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	if raw[0] == '"' {
		return str(raw)
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return ""
}

// errorText returns a message error's text: data.message, else its name.
func errorText(raw json.RawMessage) (text, name string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", ""
	}
	var e struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
		Message string `json:"message"`
	}
	if decodeJSON(raw, &e) != nil {
		if s := compact(raw); s != "" {
			return s, ""
		}
		return "error", ""
	}
	switch {
	case e.Data.Message != "":
		return e.Data.Message, e.Name
	case e.Message != "":
		return e.Message, e.Name
	case e.Name != "":
		return e.Name, e.Name
	}
	return "error", ""
}

// errorStatus returns an API error's HTTP status (data.statusCode), 0
// when it has none.
func errorStatus(raw json.RawMessage) int64 {
	var e struct {
		Data struct {
			StatusCode json.RawMessage `json:"statusCode"`
		} `json:"data"`
	}
	if decodeJSON(raw, &e) != nil {
		return 0
	}
	var n int64
	if jsondecode.Unmarshal(e.Data.StatusCode, &n) != nil {
		return 0
	}
	return n
}

// abortedError is the error name OpenCode gives a message the user
// interrupted.
const abortedError = "MessageAbortedError"

// modelOf returns "provider/model" from a model value: the session
// column's {"id","providerID"} or a message's {"providerID","modelID"}.
func modelOf(raw json.RawMessage) string {
	var m struct {
		ID         string `json:"id"`
		ModelID    string `json:"modelID"`
		ProviderID string `json:"providerID"`
	}
	if decodeJSON(raw, &m) != nil {
		return ""
	}
	id := m.ID
	if id == "" {
		id = m.ModelID
	}
	return joinModel(m.ProviderID, id)
}

func joinModel(provider, model string) string {
	switch {
	case model == "":
		return ""
	case provider == "":
		return model
	}
	return provider + "/" + model
}

// textParts joins the text of a message's text parts, leaving out the
// ones OpenCode adds itself (synthetic) or hides (ignored).
func textParts(parts []partData) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" || p.Synthetic || p.Ignored {
			continue
		}
		s := str(p.Text)
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(s)
	}
	return b.String()
}

// toolText renders a tool part: the tool and its command or input, and
// its output or error.
func toolText(p partData) string {
	var b strings.Builder
	b.WriteString(p.Tool)
	if p.State == nil {
		return b.String()
	}
	var in struct {
		Command string `json:"command"`
	}
	if decodeJSON(p.State.Input, &in) == nil && in.Command != "" {
		b.WriteString(": " + in.Command)
	} else if s := compact(p.State.Input); s != "" {
		b.WriteString(" " + s)
	}
	out := compact(p.State.Output)
	if out == "" {
		out = compact(p.State.Error)
	}
	if out != "" {
		b.WriteString("\n" + out)
	}
	return text.Ellipsis(b.String(), toolRunes)
}

// entries turns one message and its parts into transcript messages.
func entries(m messageData, parts []partData) []adapters.Message {
	at := timeOf(m.Time.Created)
	switch m.Role {
	case "user":
		if t := textParts(parts); t != "" {
			return []adapters.Message{{Role: "user", Text: t, Time: at}}
		}
		return nil
	case "assistant":
	default:
		return nil
	}
	var out []adapters.Message
	var text []partData
	flush := func() {
		if t := textParts(text); t != "" {
			out = append(out, adapters.Message{Role: "assistant", Text: t, Time: at})
		}
		text = text[:0]
	}
	for _, p := range parts {
		switch p.Type {
		case "text":
			text = append(text, p)
		case "tool":
			flush()
			out = append(out, adapters.Message{Role: "tool", Text: toolText(p), Time: at})
		}
	}
	flush()
	if e, _ := errorText(m.Error); e != "" {
		out = append(out, adapters.Message{Role: "assistant", Text: "[error] " + e, Time: at})
	}
	return out
}
