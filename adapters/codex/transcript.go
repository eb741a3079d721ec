package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentctl/agentctl/adapters"
)

// Transcript limits: tool output is shortened, and a tail read grows until
// it holds n messages or reaches transcriptMax.
const (
	toolRunes     = 2000
	transcriptMax = 64 << 20
)

// transcript collects messages from rollout lines. Codex records a user's
// prompt and the agent's answer twice: as response items (with injected
// context among the user items) and as events. Events are preferred where
// the rollout has them; response items serve rollouts without.
type transcript struct {
	events []adapters.Message // user/assistant messages from events, tool calls
	items  []adapters.Message // user/assistant messages from response items, tool calls
	hasEvt bool
}

func (t *transcript) apply(line []byte) {
	r, p, err := decode(line)
	if err != nil {
		return
	}
	at := parseTime(r.Timestamp)
	add := func(list *[]adapters.Message, role, text string) {
		*list = append(*list, adapters.Message{Role: role, Text: text, Time: at})
	}
	switch r.Type {
	case typeResponseItem:
		switch p.Type {
		case "message":
			text := textOf(p.Content)
			if text == "" {
				return
			}
			switch p.Role {
			case "user":
				if !injectedContext(text) {
					add(&t.items, "user", text)
				}
			case "assistant":
				add(&t.items, "assistant", text)
			}
		case "function_call", "custom_tool_call", "local_shell_call":
			text := truncate(toolCall(p), toolRunes)
			add(&t.events, "tool", text)
			add(&t.items, "tool", text)
		case "function_call_output", "custom_tool_call_output":
			text := truncate(stringOf(p.Output), toolRunes)
			add(&t.events, "tool", text)
			add(&t.items, "tool", text)
		}
	case typeEventMsg:
		switch p.Type {
		case eventUserMessage:
			if s := stringOf(p.Message); s != "" {
				t.hasEvt = true
				add(&t.events, "user", s)
			}
		case eventAgentMessage:
			if s := stringOf(p.Message); s != "" {
				t.hasEvt = true
				add(&t.events, "assistant", s)
			}
		case eventItemCompleted:
			if p.Item == nil {
				return
			}
			role := ""
			switch p.Item.Type {
			case itemUserMessage:
				role = "user"
			case itemAgentMessage:
				role = "assistant"
			default:
				return
			}
			if s := textOf(p.Item.Content); s != "" {
				t.hasEvt = true
				add(&t.events, role, s)
			}
		}
	}
}

// messages returns the collected messages, the last n when n > 0.
func (t *transcript) messages(n int) []adapters.Message {
	list := t.items
	if t.hasEvt {
		list = t.events
	}
	if n > 0 && len(list) > n {
		list = list[len(list)-n:]
	}
	return append([]adapters.Message(nil), list...)
}

func (t *transcript) count() int {
	if t.hasEvt {
		return len(t.events)
	}
	return len(t.items)
}

// readTranscript reads the last n messages of a rollout (all when n <= 0),
// reading backwards in growing windows so a peek at a large file reads
// only its end.
func readTranscript(ctx context.Context, path string, n int) ([]adapters.Message, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open codex rollout: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat codex rollout: %w", err)
	}
	size := fi.Size()
	for window := int64(tailWindow); ; window *= 4 {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read codex transcript: %w", err)
		}
		start := int64(0)
		if n > 0 {
			start = max(0, size-min(window, transcriptMax))
		}
		var t transcript
		if err := scanTranscript(f, start, size, &t); err != nil {
			return nil, err
		}
		if n <= 0 || start == 0 || t.count() >= n || window >= transcriptMax {
			return t.messages(n), nil
		}
	}
}

// scanTranscript applies the lines of [start, size) to t, skipping the
// line start cuts.
func scanTranscript(f *os.File, start, size int64, t *transcript) error {
	cut := false
	if start > 0 {
		var b [1]byte
		if _, err := f.ReadAt(b[:], start-1); err != nil {
			return fmt.Errorf("read codex rollout: %w", err)
		}
		cut = b[0] != '\n'
	}
	_, err := adapters.ScanLines(io.NewSectionReader(f, start, size-start), maxLine, func(line []byte) error {
		if cut {
			cut = false
			return nil
		}
		t.apply(line)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read codex rollout: %w", err)
	}
	return nil
}

// toolCall renders a tool call: its name and, for a shell tool, the
// command; else its arguments.
func toolCall(p payload) string {
	args := stringOf(p.Arguments)
	if args == "" {
		args = stringOf(p.Input)
	}
	var shell struct {
		Cmd     json.RawMessage `json:"cmd"`
		Command json.RawMessage `json:"command"`
	}
	if json.Unmarshal([]byte(args), &shell) == nil {
		for _, raw := range []json.RawMessage{shell.Cmd, shell.Command} {
			var s string
			var argv []string
			switch {
			case json.Unmarshal(raw, &s) == nil && s != "":
				return p.Name + ": " + s
			case json.Unmarshal(raw, &argv) == nil && len(argv) > 0:
				return p.Name + ": " + strings.Join(argv, " ")
			}
		}
	}
	return strings.TrimSpace(p.Name + " " + args)
}
