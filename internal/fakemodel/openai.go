package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

func openAIError(w http.ResponseWriter, code int) {
	writeJSON(w, code, map[string]any{
		"error": map[string]any{"message": fmt.Sprintf("fakellm error %d", code), "type": "server_error", "code": code},
	})
}

// openAITool reads a tool from either the Chat Completions shape
// ({"type":"function","function":{"name","parameters"}}) or the Responses
// shape ({"type":"function","name","parameters"}).
type openAITool struct {
	Type       string         `json:"type"`
	Name       string         `json:"name"`
	Parameters map[string]any `json:"parameters"`
	Function   *struct {
		Name       string         `json:"name"`
		Parameters map[string]any `json:"parameters"`
	} `json:"function"`
}

func (t openAITool) tool() (tool, bool) {
	if t.Function != nil && t.Function.Name != "" {
		return tool{name: t.Function.Name, schema: t.Function.Parameters}, true
	}
	if t.Name != "" {
		return tool{name: t.Name, schema: t.Parameters}, true
	}
	return tool{}, false
}

// userText reads a user message's plain text: a string, or text parts
// ("text" or "input_text").
func userText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" || p.Type == "input_text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), len(texts) > 0
}

// chatAPI is OpenAI Chat Completions (POST /v1/chat/completions).
type chatAPI struct{}

type chatRequest struct {
	Model               string        `json:"model"`
	Stream              bool          `json:"stream"`
	MaxTokens           int           `json:"max_tokens"`
	MaxCompletionTokens int           `json:"max_completion_tokens"`
	Tools               []openAITool  `json:"tools"`
	Messages            []chatMessage `json:"messages"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (chatAPI) parse(body []byte) (*conversation, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("parse chat completions request: %w", err)
	}
	c := &conversation{model: req.Model, stream: req.Stream, maxTokens: req.MaxTokens, nMessages: len(req.Messages)}
	if c.maxTokens == 0 {
		c.maxTokens = req.MaxCompletionTokens
	}
	for _, t := range req.Tools {
		if tl, ok := t.tool(); ok {
			c.tools = append(c.tools, tl)
		}
	}
	callNames := map[string]string{}
	for _, m := range req.Messages {
		c.size += len(m.Content)
		for _, tc := range m.ToolCalls {
			callNames[tc.ID] = tc.Function.Name
		}
	}
	var results []toolResult
	var prompts []string
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role == "tool" {
			if len(prompts) > 0 {
				break
			}
			out, _ := userText(m.Content)
			results = append(results, toolResult{callName: callNames[m.ToolCallID], output: out})
			continue
		}
		if m.Role == "assistant" && len(prompts) > 0 {
			break
		}
		if m.Role != "user" {
			continue
		}
		if text, ok := userText(m.Content); ok {
			prompts = append([]string{text}, prompts...)
		}
	}
	c.prompt = strings.Join(prompts, "\n")
	for i := len(results) - 1; i >= 0; i-- {
		c.results = append(c.results, results[i])
	}
	return c, nil
}

func (chatAPI) writeError(w http.ResponseWriter, code int) { openAIError(w, code) }

func (chatAPI) writeReply(w http.ResponseWriter, c *conversation, rep reply, _ int) {
	id := "chatcmpl-fake" + randomHex(16)
	created := time.Now().Unix()
	var msg map[string]any
	finish := "stop"
	var outLen int
	if rep.isTool() {
		finish = "tool_calls"
		call := map[string]any{"id": "call_fake_" + randomHex(12), "type": "function",
			"function": map[string]any{"name": rep.toolName, "arguments": rep.inputJSON()}}
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{call}}
		outLen = len(rep.inputJSON())
	} else {
		msg = map[string]any{"role": "assistant", "content": rep.text}
		outLen = len(rep.text)
	}
	in, out := tokens(c.size), tokens(outLen)
	usage := map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
	if !c.stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": c.model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   usage,
		})
		return
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": c.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	e := startSSE(w)
	e.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if rep.isTool() {
		call := msg["tool_calls"].([]any)[0].(map[string]any)
		call["index"] = 0
		e.event("", chunk(map[string]any{"tool_calls": []any{call}}, nil))
	} else {
		for _, word := range splitWords(rep.text) {
			e.event("", chunk(map[string]any{"content": word}, nil))
		}
	}
	last := chunk(map[string]any{}, finish)
	last["usage"] = usage
	e.event("", last)
	e.event("", "[DONE]")
}

// responsesAPI is the OpenAI Responses API (POST /v1/responses), which
// Codex uses.
type responsesAPI struct{}

type responsesRequest struct {
	Model           string          `json:"model"`
	Stream          bool            `json:"stream"`
	MaxOutputTokens int             `json:"max_output_tokens"`
	Tools           []openAITool    `json:"tools"`
	Input           json.RawMessage `json:"input"`
}

type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name"`
	CallID  string          `json:"call_id"`
	Output  json.RawMessage `json:"output"`
}

func (responsesAPI) parse(body []byte) (*conversation, error) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("parse responses request: %w", err)
	}
	c := &conversation{model: req.Model, stream: req.Stream, maxTokens: req.MaxOutputTokens, size: len(req.Input)}
	for _, t := range req.Tools {
		if tl, ok := t.tool(); ok {
			c.tools = append(c.tools, tl)
		}
	}
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		c.prompt, c.nMessages = s, 1
		return c, nil
	}
	var items []responsesItem
	if len(req.Input) > 0 {
		if err := json.Unmarshal(req.Input, &items); err != nil {
			return nil, fmt.Errorf("parse responses input: %w", err)
		}
	}
	c.nMessages = len(items)
	callNames := map[string]string{}
	for _, it := range items {
		if it.Type == "function_call" || it.Type == "custom_tool_call" {
			callNames[it.CallID] = it.Name
		}
	}
	var results []toolResult
	var prompts []string
walk:
	for i := len(items) - 1; i >= 0; i-- {
		it := items[i]
		switch it.Type {
		case "function_call_output", "custom_tool_call_output":
			if len(prompts) > 0 {
				break walk
			}
			results = append(results, toolResult{callName: callNames[it.CallID], output: contentText(it.Output)})
			continue
		case "message", "":
		default:
			continue
		}
		if it.Role == "assistant" && len(prompts) > 0 {
			break
		}
		if it.Role != "user" {
			continue
		}
		if text, ok := userText(it.Content); ok {
			prompts = append([]string{text}, prompts...)
		}
	}
	c.prompt = strings.Join(prompts, "\n")
	for i := len(results) - 1; i >= 0; i-- {
		c.results = append(c.results, results[i])
	}
	return c, nil
}

func (responsesAPI) writeError(w http.ResponseWriter, code int) { openAIError(w, code) }

func (responsesAPI) writeReply(w http.ResponseWriter, c *conversation, rep reply, n int) {
	k := fmt.Sprint(n)
	created := time.Now().Unix()
	var item map[string]any
	var outLen int
	if rep.isTool() {
		item = map[string]any{"type": "function_call", "id": "fc_" + k, "call_id": "call_" + k,
			"name": rep.toolName, "arguments": rep.inputJSON(), "status": "completed"}
		outLen = len(rep.inputJSON())
	} else {
		item = map[string]any{"type": "message", "id": "msg_" + k, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": rep.text, "annotations": []any{}}}}
		outLen = len(rep.text)
	}
	in, out := tokens(c.size), tokens(outLen)
	usage := map[string]any{
		"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": out, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": in + out,
	}
	response := func(status string, output []any) map[string]any {
		r := map[string]any{"id": "resp_fake_" + k, "object": "response", "created_at": created,
			"model": c.model, "status": status, "output": output}
		if status == "completed" {
			r["usage"] = usage
		}
		return r
	}
	if !c.stream {
		writeJSON(w, http.StatusOK, response("completed", []any{item}))
		return
	}
	e := startSSE(w)
	e.event("response.created", map[string]any{"type": "response.created", "response": response("in_progress", []any{})})
	if rep.isTool() {
		e.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	} else {
		e.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0,
			"item": map[string]any{"type": "message", "id": "msg_" + k, "role": "assistant", "status": "in_progress", "content": []any{}}})
		half := len(rep.text) / 2
		for half > 0 && !utf8.RuneStart(rep.text[half]) {
			half--
		}
		for _, part := range []string{rep.text[:half], rep.text[half:]} {
			e.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta",
				"item_id": "msg_" + k, "output_index": 0, "content_index": 0, "delta": part})
		}
	}
	e.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	e.event("response.completed", map[string]any{"type": "response.completed", "response": response("completed", []any{item})})
}
