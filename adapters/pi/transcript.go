package pi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
)

// Transcript limits: tool output is shortened, and a tail read grows until
// it holds n messages of the active branch or reaches transcriptMax.
const (
	toolRunes     = 2000
	textRunes     = 64 << 10
	transcriptMax = 16 << 20
)

// node is one record of the tree, reduced to what a transcript shows.
type node struct {
	parent string
	msgs   []adapters.Message
}

// readTranscript follows the active branch (from the last record back to
// the root, as Pi does on load) and returns its last n messages.
func readTranscript(ctx context.Context, path string, n int) ([]adapters.Message, error) {
	f, size, err := openSession(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if n <= 0 {
		t := newTree()
		i := 0
		_, err := storeio.ScanLines(io.NewSectionReader(f, 0, size), maxLineBytes, func(line []byte) error {
			if i++; i%1024 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			t.add(line)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read pi transcript: %w", err)
		}
		msgs, _ := walk(t.nodes, t.last, 0)
		return msgs, nil
	}
	// From the end backwards, each line once, until the active branch has
	// n messages or reaches its root.
	return tailBranch(ctx, f, size, n, func(msgs []adapters.Message) bool { return len(msgs) >= n })
}

// lastAssistant reads the active branch back from the end until it holds n
// assistant messages or reaches its root.
func lastAssistant(ctx context.Context, path string, n int) ([]adapters.Message, error) {
	f, size, err := openSession(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return tailBranch(ctx, f, size, 0, func(msgs []adapters.Message) bool { return adapters.EnoughAssistant(msgs, n) })
}

// openSession opens a session file for read, with its size.
func openSession(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("open pi session: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("stat pi session: %w", err)
	}
	return f, fi.Size(), nil
}

// tailBranch reads a session file of size bytes from the end backwards,
// each line once, until the active branch's messages read so far (its last
// n, all when n <= 0) are enough or it reaches its root.
func tailBranch(ctx context.Context, f io.ReaderAt, size int64, n int, enough func([]adapters.Message) bool) ([]adapters.Message, error) {
	t := newTree()
	last := "" // the file's last record: where the active branch ends
	var msgs []adapters.Message
	err := storeio.TailChunks(ctx, f, size, tailWindow, transcriptMax, func(lines [][]byte) bool {
		for _, line := range lines {
			t.add(line)
		}
		if last == "" {
			last = t.last
		}
		var complete bool
		msgs, complete = walk(t.nodes, last, n)
		return complete || enough(msgs)
	})
	if err != nil {
		return nil, fmt.Errorf("read pi transcript: %w", err)
	}
	return msgs, nil
}

// tree is the records of a session file, by id.
type tree struct {
	nodes map[string]node
	last  string
}

func newTree() *tree { return &tree{nodes: map[string]node{}} }

func (t *tree) add(line []byte) {
	r, ok, _ := parseRecord(bytes.TrimSpace(line))
	if !ok || r.ID == "" || r.Type == typeSession {
		return
	}
	parent := ""
	if r.ParentID != nil {
		parent = *r.ParentID
	}
	t.nodes[r.ID] = node{parent: parent, msgs: messagesOf(r)}
	t.last = r.ID
}

// walk collects the messages from last back to the root, stopping once it
// has n (n > 0). complete reports whether it reached the root.
func walk(nodes map[string]node, last string, n int) (msgs []adapters.Message, complete bool) {
	var rev [][]adapters.Message
	count := 0
	id := last
	for steps := 0; id != "" && steps <= len(nodes); steps++ {
		nd, ok := nodes[id]
		if !ok {
			return flatten(rev, n), false
		}
		if len(nd.msgs) > 0 {
			rev = append(rev, nd.msgs)
			count += len(nd.msgs)
			if n > 0 && count >= n {
				return flatten(rev, n), nd.parent == ""
			}
		}
		id = nd.parent
	}
	return flatten(rev, n), true
}

// flatten turns the reversed groups into oldest-first order, keeping the
// last n messages.
func flatten(rev [][]adapters.Message, n int) []adapters.Message {
	var out []adapters.Message
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, rev[i]...)
	}
	if n > 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// messagesOf turns one record into transcript messages: the user's and the
// assistant's text, and the assistant's tool calls and their results as
// "tool" messages.
func messagesOf(r record) []adapters.Message {
	if r.Type != typeMessage || r.Message == nil {
		return nil
	}
	m := r.Message
	t := parseTime(r.Timestamp)
	switch m.Role {
	case roleUser:
		if s := textOf(m.Content); s != "" {
			return []adapters.Message{{Role: "user", Text: clip(s, textRunes), Time: t}}
		}
	case roleAssistant:
		var out []adapters.Message
		var texts []string
		var calls []adapters.Message
		for _, b := range blocks(m.Content) {
			switch b.Type {
			case "text":
				if b.Text != "" {
					texts = append(texts, b.Text)
				}
			case "toolCall":
				calls = append(calls, adapters.Message{Role: "tool", Text: clip(toolCallText(b), toolRunes), Time: t})
			}
		}
		if len(texts) > 0 {
			out = append(out, adapters.Message{Role: "assistant", Text: clip(strings.Join(texts, "\n"), textRunes), Time: t})
		} else if m.StopReason == stopError && m.ErrorMessage != "" {
			out = append(out, adapters.Message{Role: "assistant", Text: clip("error: "+m.ErrorMessage, textRunes), Time: t})
		}
		return append(out, calls...)
	case roleToolResult:
		s := textOf(m.Content)
		if m.IsError {
			s = "error: " + s
		}
		return []adapters.Message{{Role: "tool", Text: clip(s, toolRunes), Time: t}}
	case roleBashExecution:
		return []adapters.Message{{Role: "tool", Text: clip("$ "+m.Command+"\n"+m.Output, toolRunes), Time: t}}
	}
	return nil
}

// toolCallText shows a tool call as its name and compact arguments; for
// bash, just the command.
func toolCallText(b contentBlock) string {
	var args map[string]any
	if json.Unmarshal(b.Arguments, &args) == nil {
		if c, ok := args["command"].(string); ok && len(args) <= 2 {
			return b.Name + ": " + c
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b.Arguments) != nil {
		return b.Name
	}
	return b.Name + " " + buf.String()
}
