package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/internal/text"
)

// Transcript limits: tool output is shortened, and a tail read grows until
// it holds n messages or reaches transcriptMax.
const (
	toolRunes = 2000
	// toolHeadBytes of a tool output's JSON always hold more than toolRunes
	// runes: no rune takes more than 12 bytes (a surrogate pair escaped).
	toolHeadBytes = 12*toolRunes + 16
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
			text := text.Ellipsis(toolCall(p), toolRunes)
			add(&t.events, "tool", text)
			add(&t.items, "tool", text)
		case "function_call_output", "custom_tool_call_output":
			text := text.Ellipsis(stringHead(p.Output, toolHeadBytes), toolRunes)
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

// list is the collected messages, not copied.
func (t *transcript) list() []adapters.Message {
	if t.hasEvt {
		return t.events
	}
	return t.items
}

// messages returns the collected messages, the last n when n > 0.
func (t *transcript) messages(n int) []adapters.Message {
	list := t.list()
	if n > 0 && len(list) > n {
		list = list[len(list)-n:]
	}
	return append([]adapters.Message(nil), list...)
}

// prepend puts the messages of an earlier part of the rollout before t's.
func (t *transcript) prepend(earlier *transcript) {
	t.events = append(earlier.events, t.events...)
	t.items = append(earlier.items, t.items...)
	t.hasEvt = t.hasEvt || earlier.hasEvt
}

// readTranscript reads the last n messages of a rollout (all when n <= 0).
// For the last n it reads backwards from the end, each line once, until it
// has them.
func readTranscript(ctx context.Context, path string, n int) ([]adapters.Message, error) {
	if n <= 0 {
		f, size, err := openRollout(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		var t transcript
		if err := scanTranscript(f, size, &t); err != nil {
			return nil, err
		}
		return t.messages(0), nil
	}
	msgs, err := readTranscriptUntil(ctx, path, func(msgs []adapters.Message) bool { return len(msgs) >= n })
	if len(msgs) > n {
		msgs = msgs[len(msgs)-n:]
	}
	return msgs, err
}

// readTranscriptUntil reads a rollout backwards from the end, each line
// once, until its messages read (oldest first) are enough.
func readTranscriptUntil(ctx context.Context, path string, enough func([]adapters.Message) bool) ([]adapters.Message, error) {
	f, size, err := openRollout(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var t transcript
	err = storeio.TailChunks(ctx, f, size, tailWindow, transcriptMax, func(lines [][]byte) bool {
		var chunk transcript
		for _, line := range lines {
			chunk.apply(line)
		}
		t.prepend(&chunk)
		return enough(t.list())
	})
	if err != nil {
		return nil, fmt.Errorf("read codex transcript: %w", err)
	}
	return t.messages(0), nil
}

// openRollout opens a rollout for read, with its size.
func openRollout(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("open codex rollout: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("stat codex rollout: %w", err)
	}
	return f, fi.Size(), nil
}

// scanTranscript applies every line of the first size bytes to t.
func scanTranscript(f *os.File, size int64, t *transcript) error {
	_, err := storeio.ScanLines(io.NewSectionReader(f, 0, size), maxLine, func(line []byte) error {
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
