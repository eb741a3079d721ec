package fakemodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func startServer(t *testing.T, opts ...Option) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Start(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		srv.Close()
	})
	return srv
}

type frame struct {
	event string
	data  string
}

// readSSE parses a server-sent event stream into frames.
func readSSE(t *testing.T, r io.Reader) []frame {
	t.Helper()
	var out []frame
	var cur frame
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" || cur.event != "" {
				out = append(out, cur)
			}
			cur = frame{}
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func post(t *testing.T, url string, body any, header map[string]string) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func decodeJSON(t *testing.T, r io.Reader) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.NewDecoder(r).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func field(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

var claudeBash = map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object",
	"properties": map[string]any{"command": map[string]any{"type": "string"}, "timeout": map[string]any{"type": "number"},
		"description": map[string]any{"type": "string"}}}}

func TestParseDirectives(t *testing.T) {
	tests := []struct {
		prompt string
		want   directives
	}{
		{"say hi", directives{text: DefaultText}},
		{"work [[sleep: 2]] [[bash: echo hello > hello.txt]]", directives{text: DefaultText,
			commands: []string{"echo sleeping 2; sleep 2; echo slept 2", "echo hello > hello.txt"}}},
		{"[[text: resumed ok]]", directives{text: "resumed ok"}},
		{"[[bash: printf 'a\nb'\n]] x", directives{text: DefaultText, commands: []string{"printf 'a\nb'"}}},
		{"[[delay: 1.5]] [[error: 529]]", directives{text: DefaultText, delay: 1500 * time.Millisecond, errorCode: 529}},
		{"[[error: 42]] [[sleep: soon]] [[delay: -1]]", directives{text: DefaultText}},
		{"[[limit: 90]]", directives{text: DefaultText, limit: 90 * time.Second}},
		{"[[limit: never]]", directives{text: DefaultText}},
		{"[[delay: 99999999]]", directives{text: DefaultText, delay: maxDelay}},
	}
	for _, tt := range tests {
		got := parseDirectives(tt.prompt)
		if got.text != tt.want.text || got.delay != tt.want.delay || got.errorCode != tt.want.errorCode || got.limit != tt.want.limit ||
			strings.Join(got.commands, "|") != strings.Join(tt.want.commands, "|") {
			t.Errorf("parseDirectives(%q) = %+v, want %+v", tt.prompt, got, tt.want)
		}
	}
}

func TestAnthropicStreamTextAndToolTurns(t *testing.T) {
	srv := startServer(t)
	url := srv.URL() + "/v1/messages?beta=true"
	prompt := "work [[sleep: 2]] [[bash: echo hello]] [[text: all done]]"
	msgs := []any{map[string]any{"role": "user", "content": prompt}}

	// Two tool turns, then the answer.
	for step, wantCmd := range []string{"echo sleeping 2; sleep 2; echo slept 2", "echo hello"} {
		resp := post(t, url, map[string]any{"model": "claude-x", "stream": true, "max_tokens": 100,
			"tools": []any{map[string]any{"name": "Read"}, claudeBash}, "messages": msgs}, map[string]string{"x-api-key": "k"})
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("content type %q", ct)
		}
		frames := readSSE(t, resp.Body)
		var names []string
		for _, f := range frames {
			names = append(names, f.event)
		}
		want := "message_start content_block_start content_block_delta content_block_stop message_delta message_stop"
		if strings.Join(names, " ") != want {
			t.Fatalf("step %d events %v, want %s", step, names, want)
		}
		var start, delta, md map[string]any
		json.Unmarshal([]byte(frames[1].data), &start)
		json.Unmarshal([]byte(frames[2].data), &delta)
		json.Unmarshal([]byte(frames[4].data), &md)
		block := field(start, "content_block").(map[string]any)
		if block["type"] != "tool_use" || block["name"] != "Bash" || !strings.HasPrefix(block["id"].(string), "toolu_fake_") {
			t.Fatalf("step %d block %v", step, block)
		}
		var input map[string]any
		json.Unmarshal([]byte(field(delta, "delta", "partial_json").(string)), &input)
		if input["command"] != wantCmd || input["timeout"] != float64(600000) {
			t.Fatalf("step %d input %v", step, input)
		}
		if field(md, "delta", "stop_reason") != "tool_use" || field(md, "usage", "output_tokens").(float64) < 1 {
			t.Fatalf("step %d message_delta %v", step, md)
		}
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": block["id"], "name": "Bash", "input": input}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": block["id"], "content": "ok"}}})
	}
	resp := post(t, url, map[string]any{"model": "claude-x", "stream": true, "tools": []any{claudeBash}, "messages": msgs}, nil)
	var text strings.Builder
	var events []string
	for _, f := range readSSE(t, resp.Body) {
		events = append(events, f.event)
		var d map[string]any
		json.Unmarshal([]byte(f.data), &d)
		if d["type"] == "content_block_delta" {
			text.WriteString(field(d, "delta", "text").(string))
		}
		if d["type"] == "message_start" && field(d, "message", "usage", "input_tokens").(float64) < 10 {
			t.Errorf("input tokens %v", d)
		}
	}
	if text.String() != "all done (after 2 tool calls)" {
		t.Errorf("text %q", text.String())
	}
	if events[2] != "ping" {
		t.Errorf("events %v: want ping third", events)
	}

	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[0].Auth != "x-api-key" || reqs[0].API != "anthropic" || reqs[2].Step != 2 || reqs[0].Prompt != prompt {
		t.Errorf("request log %+v", reqs)
	}
}

func TestAnthropicJSONAndNoShellTool(t *testing.T) {
	srv := startServer(t)
	// No bash-like tool offered: the tool directives are skipped.
	resp := post(t, srv.URL()+"/v1/messages", map[string]any{"model": "m", "max_tokens": 10,
		"tools":    []any{map[string]any{"name": "Read"}},
		"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "[[sleep: 1]]"}}}}}, nil)
	v := decodeJSON(t, resp.Body)
	if v["type"] != "message" || field(v, "content", 0, "text") != "hi from fakellm (after 0 tool calls)" || v["stop_reason"] != "end_turn" {
		t.Errorf("reply %v", v)
	}
	if resp.ContentLength <= 0 {
		t.Errorf("JSON reply without Content-Length")
	}
}

func TestErrors(t *testing.T) {
	srv := startServer(t)
	tests := []struct {
		path, prompt string
		code         int
		check        func(map[string]any) bool
	}{
		{"/v1/messages", "[[error: 529]]", 529, func(v map[string]any) bool { return field(v, "error", "type") == "overloaded_error" }},
		{"/v1/messages", "[[error: 500]]", 500, func(v map[string]any) bool {
			return field(v, "error", "type") == "api_error" && field(v, "error", "message") == "fakellm error 500"
		}},
		{"/v1/chat/completions", "[[error: 429]]", 429, func(v map[string]any) bool { return field(v, "error", "code") == float64(429) }},
		{"/v1/responses", "[[error: 503]]", 503, func(v map[string]any) bool { return field(v, "error", "type") == "server_error" }},
	}
	for _, tt := range tests {
		body := map[string]any{"stream": true, "messages": []any{map[string]any{"role": "user", "content": tt.prompt}}}
		if tt.path == "/v1/responses" {
			body = map[string]any{"stream": true, "input": tt.prompt}
		}
		resp := post(t, srv.URL()+tt.path, body, nil)
		v := decodeJSON(t, resp.Body)
		if resp.StatusCode != tt.code || !tt.check(v) {
			t.Errorf("%s %q: %d %v", tt.path, tt.prompt, resp.StatusCode, v)
		}
	}
	// Malformed JSON is a 400, not a crash.
	resp, err := http.Post(srv.URL()+"/v1/messages", "application/json", strings.NewReader("{"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("malformed body: %d", resp.StatusCode)
	}
}

func TestChatCompletions(t *testing.T) {
	srv := startServer(t)
	bash := map[string]any{"type": "function", "function": map[string]any{"name": "bash", "parameters": map[string]any{
		"properties": map[string]any{"command": map[string]any{"type": "string"}, "description": map[string]any{"type": "string"},
			"timeout": map[string]any{"type": "number", "description": "Optional timeout in milliseconds"}}}}}
	msgs := []any{map[string]any{"role": "system", "content": "sys"}, map[string]any{"role": "user", "content": "go [[bash: ls]]"}}

	resp := post(t, srv.URL()+"/v1/chat/completions", map[string]any{"model": "fake-model", "stream": true, "tools": []any{bash}, "messages": msgs},
		map[string]string{"Authorization": "Bearer x"})
	frames := readSSE(t, resp.Body)
	if len(frames) != 4 || frames[3].data != "[DONE]" {
		t.Fatalf("frames %v", frames)
	}
	var call, last map[string]any
	json.Unmarshal([]byte(frames[1].data), &call)
	json.Unmarshal([]byte(frames[2].data), &last)
	tc := field(call, "choices", 0, "delta", "tool_calls", 0).(map[string]any)
	var args map[string]any
	json.Unmarshal([]byte(field(tc, "function", "arguments").(string)), &args)
	if field(tc, "function", "name") != "bash" || args["command"] != "ls" || args["description"] != "fakellm: ls" || args["timeout"] != float64(600000) || tc["index"] != float64(0) {
		t.Fatalf("tool call %v args %v", tc, args)
	}
	if field(last, "choices", 0, "finish_reason") != "tool_calls" || field(last, "usage", "total_tokens") == nil {
		t.Fatalf("last chunk %v", last)
	}

	msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{tc}},
		map[string]any{"role": "tool", "tool_call_id": tc["id"], "content": "file"})
	resp = post(t, srv.URL()+"/v1/chat/completions", map[string]any{"model": "fake-model", "tools": []any{bash}, "messages": msgs}, nil)
	v := decodeJSON(t, resp.Body)
	if field(v, "choices", 0, "message", "content") != "hi from fakellm (after 1 tool calls)" || field(v, "choices", 0, "finish_reason") != "stop" ||
		v["object"] != "chat.completion" {
		t.Errorf("reply %v", v)
	}

	// Streamed text arrives word by word.
	resp = post(t, srv.URL()+"/v1/chat/completions", map[string]any{"stream": true,
		"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "[[text: a b c]]"}}}}}, nil)
	var text strings.Builder
	n := 0
	for _, f := range readSSE(t, resp.Body) {
		if f.data == "[DONE]" {
			continue
		}
		var c map[string]any
		json.Unmarshal([]byte(f.data), &c)
		if s, ok := field(c, "choices", 0, "delta", "content").(string); ok && s != "" {
			text.WriteString(s)
			n++
		}
	}
	if text.String() != "a b c" || n != 3 {
		t.Errorf("streamed %q in %d chunks", text.String(), n)
	}
}

func TestResponsesCodexFlow(t *testing.T) {
	srv := startServer(t)
	execCommand := map[string]any{"type": "function", "name": "exec_command", "parameters": map[string]any{
		"properties": map[string]any{"cmd": map[string]any{"type": "string"}, "yield_time_ms": map[string]any{"type": "number"}}}}
	writeStdin := map[string]any{"type": "function", "name": "write_stdin"}
	tools := []any{map[string]any{"type": "web_search"}, execCommand, writeStdin}
	input := []any{
		map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "rules"}}},
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "please [[sleep: 45]]"}}},
	}
	call := func() (string, map[string]any) {
		resp := post(t, srv.URL()+"/v1/responses", map[string]any{"model": "fake-model", "stream": true, "tools": tools, "input": input}, nil)
		frames := readSSE(t, resp.Body)
		var names []string
		for _, f := range frames {
			names = append(names, f.event)
		}
		var done map[string]any
		json.Unmarshal([]byte(frames[len(frames)-2].data), &done)
		var completed map[string]any
		json.Unmarshal([]byte(frames[len(frames)-1].data), &completed)
		if field(completed, "response", "status") != "completed" || field(completed, "response", "usage", "output_tokens_details", "reasoning_tokens") != float64(0) {
			t.Fatalf("response.completed %v", completed)
		}
		return strings.Join(names, " "), field(done, "item").(map[string]any)
	}

	names, item := call()
	if names != "response.created response.output_item.added response.output_item.done response.completed" ||
		item["name"] != "exec_command" || item["arguments"] != `{"cmd":"echo sleeping 45; sleep 45; echo slept 45","yield_time_ms":30000}` {
		t.Fatalf("first turn %s %v", names, item)
	}
	input = append(input, item, map[string]any{"type": "function_call_output", "call_id": item["call_id"],
		"output": "Chunk ID: 1\nWall time: 30.0 seconds\nProcess running with session ID 3869\nOutput:\nsleeping 45"})
	_, item = call()
	if item["name"] != "write_stdin" || item["arguments"] != `{"chars":"","session_id":3869,"yield_time_ms":30000}` {
		t.Fatalf("poll %v", item)
	}
	input = append(input, item, map[string]any{"type": "function_call_output", "call_id": item["call_id"],
		"output": "Chunk ID: 2\nProcess exited with code 0\nOutput:\nslept 45"})
	names, item = call()
	if names != "response.created response.output_item.added response.output_text.delta response.output_text.delta response.output_item.done response.completed" ||
		field(item, "content", 0, "text") != "hi from fakellm (after 1 tool calls)" {
		t.Fatalf("answer %s %v", names, item)
	}
}

func TestOtherRoutes(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "requests.jsonl")
	srv := startServer(t, WithLogFile(logPath))
	resp, err := http.Get(srv.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	v := decodeJSON(t, resp.Body)
	resp.Body.Close()
	if field(v, "data", 0, "id") != "fake-model" {
		t.Errorf("models %v", v)
	}
	resp, err = http.Head(srv.URL() + "/api/hello")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("HEAD: %d", resp.StatusCode)
	}
	resp, err = http.Get(srv.URL() + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	v = decodeJSON(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || field(v, "error", "type") != "not_found_error" || field(v, "error", "message") != "/nope" {
		t.Errorf("404: %d %v", resp.StatusCode, v)
	}
	resp = post(t, srv.URL()+"/v1/messages/count_tokens", map[string]any{"messages": []any{}}, nil)
	if v := decodeJSON(t, resp.Body); v["input_tokens"] == nil {
		t.Errorf("count_tokens %v", v)
	}

	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 4 {
		t.Fatalf("log has %d lines: %s", len(lines), b)
	}
	var first Request
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.API != "models" || first.N != 1 {
		t.Errorf("first log line %q: %v", lines[0], err)
	}
}

func TestDelayAndClose(t *testing.T) {
	srv := startServer(t)
	start := time.Now()
	resp := post(t, srv.URL()+"/v1/messages", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "[[delay: 0.3]]"}}}, nil)
	decodeJSON(t, resp.Body)
	if time.Since(start) < 300*time.Millisecond {
		t.Errorf("answered before the delay")
	}

	// Close ends an answer still waiting out a long delay.
	errc := make(chan error, 1)
	go func() {
		b, _ := json.Marshal(map[string]any{"messages": []any{map[string]any{"role": "user", "content": "[[delay: 3600]]"}}})
		resp, err := http.Post(srv.URL()+"/v1/messages", "application/json", bytes.NewReader(b))
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	for len(srv.Requests()) < 2 && !inFlight(srv) {
		time.Sleep(10 * time.Millisecond)
	}
	srv.Close()
	select {
	case <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("request still waiting after Close")
	}
	if _, err := http.Get(srv.URL() + "/v1/models"); err == nil {
		t.Error("server still answers after Close")
	}
}

// inFlight reports whether the server has assigned a sequence number it
// has not logged yet.
func inFlight(s *Server) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq > len(s.requests)
}

func TestStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(srv.URL() + "/v1/models")
		if err != nil {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("server still up after its context ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSplitWords(t *testing.T) {
	for _, s := range []string{"", "a", "hi from fakellm", "  two  spaces ", "ünï côde"} {
		if got := strings.Join(splitWords(s), ""); got != s {
			t.Errorf("splitWords(%q) joins to %q", s, got)
		}
	}
}

// Some clients (OpenClaw) send their own context as a second user message
// after the user's: the directives come from every user text since the last
// assistant turn, on every API.
func TestDirectivesFromEveryUserMessageOfTheTurn(t *testing.T) {
	srv := startServer(t)
	history := func(userRole string) []any {
		return []any{
			map[string]any{"role": userRole, "content": "earlier [[text: old answer]]"},
			map[string]any{"role": "assistant", "content": "old answer"},
			map[string]any{"role": userRole, "content": "now [[text: fresh answer]]"},
			map[string]any{"role": userRole, "content": "<<<client context, no directives>>>"},
		}
	}
	resp := post(t, srv.URL()+"/v1/chat/completions", map[string]any{"model": "m", "messages": history("user")}, nil)
	if v := decodeJSON(t, resp.Body); field(v, "choices", 0, "message", "content") != "fresh answer" {
		t.Errorf("chat completions answered %v", v)
	}
	resp = post(t, srv.URL()+"/v1/messages", map[string]any{"model": "m", "max_tokens": 10, "messages": history("user")}, nil)
	if v := decodeJSON(t, resp.Body); field(v, "content", 0, "text") != "fresh answer" {
		t.Errorf("messages answered %v", v)
	}
}

// [[escalate: CMD]] asks Codex's exec_command to run CMD outside the
// sandbox (Codex then asks the user's permission); the next [[bash: …]]
// does not, nor does a tool without that option.
func TestEscalate(t *testing.T) {
	t.Parallel()
	d := parseDirectives("go [[escalate: touch x]] [[bash: ls]]")
	codexExec := tool{name: "exec_command", schema: map[string]any{"properties": map[string]any{
		"cmd": map[string]any{"type": "string"}, "sandbox_permissions": map[string]any{"type": "string"}}}}
	c := &conversation{tools: []tool{codexExec}}
	if r := decide(c, d); r.command != "touch x" || r.toolInput["sandbox_permissions"] != "require_escalated" || r.toolInput["justification"] == nil {
		t.Errorf("first step: %+v", r)
	}
	c.results = []toolResult{{callName: "exec_command", output: "ok"}}
	if r := decide(c, d); r.command != "ls" || r.toolInput["sandbox_permissions"] != nil {
		t.Errorf("second step: %+v", r)
	}
	c = &conversation{tools: []tool{{name: "Bash"}}}
	if r := decide(c, d); r.command != "touch x" || r.toolInput["sandbox_permissions"] != nil {
		t.Errorf("a tool without the option: %+v", r)
	}
}
