package fakemodel

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// anthropicAPI is the Anthropic Messages API (POST /v1/messages).
type anthropicAPI struct{}

type anthropicRequest struct {
	Model     string             `json:"model"`
	Stream    bool               `json:"stream"`
	MaxTokens int                `json:"max_tokens"`
	Messages  []anthropicMessage `json:"messages"`
	Tools     []struct {
		Name        string         `json:"name"`
		InputSchema map[string]any `json:"input_schema"`
	} `json:"tools"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

func (anthropicAPI) parse(body []byte) (*conversation, error) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("parse messages request: %w", err)
	}
	c := &conversation{model: req.Model, stream: req.Stream, maxTokens: req.MaxTokens, nMessages: len(req.Messages)}
	for _, t := range req.Tools {
		if t.Name != "" {
			c.tools = append(c.tools, tool{name: t.Name, schema: t.InputSchema})
		}
	}
	size := 0
	callNames := map[string]string{}
	for _, m := range req.Messages {
		size += len(m.Content)
		if m.Role != "assistant" {
			continue
		}
		for _, b := range anthropicBlocks(m.Content) {
			if b.Type == "tool_use" {
				callNames[b.ID] = b.Name
			}
		}
	}
	c.size = size
	// Walk back to the latest user message with plain text, collecting the
	// tool results after it.
	var results []toolResult
	// The prompt is every plain user text since the last assistant turn:
	// some clients (OpenClaw) send their own context as a second user
	// message after the user's.
	var prompts []string
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role == "assistant" && len(prompts) > 0 {
			break
		}
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			prompts = append([]string{s}, prompts...)
			continue
		}
		blocks := anthropicBlocks(m.Content)
		var texts []string
		hasResult := false
		for j := len(blocks) - 1; j >= 0; j-- {
			b := blocks[j]
			switch b.Type {
			case "tool_result":
				hasResult = true
				if len(prompts) == 0 {
					results = append(results, toolResult{callName: callNames[b.ToolUseID], output: contentText(b.Content)})
				}
			case "text":
				texts = append([]string{b.Text}, texts...)
			}
		}
		if hasResult && len(prompts) > 0 {
			break
		}
		if !hasResult && len(texts) > 0 {
			prompts = append([]string{strings.Join(texts, "\n")}, prompts...)
		}
	}
	c.prompt = strings.Join(prompts, "\n")
	for i := len(results) - 1; i >= 0; i-- {
		c.results = append(c.results, results[i])
	}
	return c, nil
}

func anthropicBlocks(raw json.RawMessage) []anthropicBlock {
	var blocks []anthropicBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	return blocks
}

// contentText reads a tool result's content: a string, or blocks with text.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			parts = append(parts, b.Text)
		}
		return strings.Join(parts, "\n")
	}
	return string(raw)
}

func (anthropicAPI) writeError(w http.ResponseWriter, code int) {
	typ := "api_error"
	switch code {
	case 529:
		typ = "overloaded_error"
	case 400:
		typ = "invalid_request_error"
	}
	writeJSON(w, code, map[string]any{
		"type":  "error",
		"error": map[string]any{"type": typ, "message": fmt.Sprintf("fakellm error %d", code)},
	})
}

func randomHex(n int) string {
	b := make([]byte, (n+1)/2)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read never fails
	return hex.EncodeToString(b)[:n]
}

func (anthropicAPI) writeReply(w http.ResponseWriter, c *conversation, rep reply, _ int) {
	id := "msg_fake_" + randomHex(20)
	inTokens := tokens(c.size)
	var block map[string]any
	stop := "end_turn"
	if rep.isTool() {
		stop = "tool_use"
		block = map[string]any{"type": "tool_use", "id": "toolu_fake_" + randomHex(16), "name": rep.toolName, "input": rep.toolInput}
	} else {
		block = map[string]any{"type": "text", "text": rep.text}
	}
	blockJSON, _ := json.Marshal(block)
	outTokens := tokens(len(blockJSON))
	usage := func(out int) map[string]any {
		return map[string]any{
			"input_tokens": inTokens, "output_tokens": out,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
		}
	}
	if !c.stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": c.model,
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage(outTokens),
		})
		return
	}
	e := startSSE(w)
	e.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": c.model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usage(1),
	}})
	if rep.isTool() {
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{
			"type": "tool_use", "id": block["id"], "name": rep.toolName, "input": map[string]any{},
		}})
		e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": rep.inputJSON()}})
	} else {
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		e.event("ping", map[string]any{"type": "ping"})
		for _, word := range splitWords(rep.text) {
			e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": word}})
		}
	}
	e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	e.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": usage(outTokens)})
	e.event("message_stop", map[string]any{"type": "message_stop"})
}

// splitWords splits text into words, each but the first keeping the space
// before it, so that the pieces concatenate to text.
func splitWords(text string) []string {
	var out []string
	start := 0
	for i := 1; i < len(text); i++ {
		if text[i] == ' ' && text[i-1] != ' ' {
			out = append(out, text[start:i])
			start = i
		}
	}
	return append(out, text[start:])
}
