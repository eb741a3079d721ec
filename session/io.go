package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/logs"
	"github.com/agentctl/agentctl/spawn"
)

// launchedDir resolves a session this service started, or explains why the
// session has no folder here.
func (c *reader) launchedDir(ctx context.Context, prefix string) (api.Session, string, error) {
	sess, _, err := c.lookup(ctx, prefix)
	if err != nil {
		return api.Session{}, "", err
	}
	if sess.Origin != api.OriginLaunched {
		return sess, "", faultf(ErrInvalid, "session %s was not started by agentctl, so it has no output log or terminal here", sess.ID)
	}
	return sess, c.opts.Home.SessionDir(sess.ID), nil
}

// inputChunk is the most input one request to a monitor carries.
const inputChunk = 1 << 20

// submitPause is how long a final Enter waits after the text before it:
// TUIs that see a burst of keys as a paste (Codex treats an Enter within
// 120 ms of one as a newline in the paste) then take it as a person's
// Enter, and submit.
const submitPause = 200 * time.Millisecond

// Input writes data to a running session's terminal. Text that ends with
// Enter (a carriage return) is typed as a person would: the text, a pause,
// then Enter, so that every agent's prompt submits it.
func (c *Core) Input(ctx context.Context, id string, data []byte) (api.Session, error) {
	sess, dir, err := c.launchedDir(ctx, id)
	if err != nil {
		return api.Session{}, err
	}
	if sess.Status != api.StatusRunning {
		return api.Session{}, faultf(ErrNotRunning, "session %s is %s: it takes no input", sess.ID, sess.Status)
	}
	if waited, err := c.awaitPrompt(ctx, sess, dir); err != nil {
		return api.Session{}, err
	} else if waited {
		// What it is now, after the wait (ended, or on a dialog).
		if sess, dir, err = c.launchedDir(ctx, id); err != nil {
			return api.Session{}, err
		}
		if sess.Status != api.StatusRunning {
			return api.Session{}, faultf(ErrNotRunning, "session %s is %s: it takes no input", sess.ID, sess.Status)
		}
	}
	if err := c.mayType(ctx, sess, false); err != nil {
		return api.Session{}, err
	}
	if sess.WaitingFor == api.WaitingDialog {
		// Typed blind, the text's Enter would pick whatever choice the
		// dialog has selected (Claude's trust dialog: "No, exit").
		return api.Session{}, faultf(ErrNotWaiting, "session %s shows a dialog in its terminal (%s asks before it takes input; Claude: whether to trust %s): input sent now would answer it blind. Answer it with `agentctl attach %s`, then send again",
			sess.ID, sess.Adapter, sess.Cwd, sess.ID)
	}
	text, submit := data, false
	if len(data) > 1 && data[len(data)-1] == '\r' {
		text, submit = data[:len(data)-1], true
	}
	// In pieces a monitor takes in one request each, in order.
	for len(text) > 0 {
		n := min(len(text), inputChunk)
		if err := spawn.SendInput(ctx, dir, text[:n]); err != nil {
			return api.Session{}, fmt.Errorf("send input to %s: %w", sess.ID, err)
		}
		text = text[n:]
	}
	if submit {
		select {
		case <-time.After(submitPause):
		case <-ctx.Done():
			return api.Session{}, fmt.Errorf("send input to %s: %w", sess.ID, ctx.Err())
		}
		if err := spawn.SendInput(ctx, dir, []byte{'\r'}); err != nil {
			return api.Session{}, fmt.Errorf("send input to %s: %w", sess.ID, err)
		}
	}
	return sess, nil
}

// promptWait bounds how long a send waits for a just-started agent to be
// at its prompt; promptQuiet is how long its terminal stays quiet once
// drawn before it is taken to be there (OpenCode's TUI, drawn, still sets
// itself up for a second or two on a loaded machine, and drops keys
// meanwhile).
const (
	promptWait  = 30 * time.Second
	promptQuiet = 3 * time.Second
	promptPoll  = 100 * time.Millisecond
)

// awaitPrompt waits, for a send to an agent that has not yet drawn its
// terminal or drew it less than promptWait ago, until it has and the
// drawing has settled: keys typed into a TUI still starting are dropped,
// or the Enter after them is (the text then sits unsent in its input
// box). A TUI's terminal queries at start are no drawing (the monitor
// notes the first printed text, spawn.Terminal.PrintedAt). It reports
// whether it waited, and fails, saying why, when the agent drew nothing
// within promptWait. A plain command is not waited for (it may print
// nothing and still read its input), unless it is an agent (`run --
// codex`).
func (c *Core) awaitPrompt(ctx context.Context, sess api.Session, dir string) (bool, error) {
	if sess.Adapter == api.ExecAdapter && c.agentOfCommand(sess.Command) == nil {
		return false, nil
	}
	rec, err := spawn.ReadRecord(dir)
	if err != nil || !rec.NotesDrawing {
		return false, nil // its monitor does not say when the agent drew
	}
	log := filepath.Join(dir, home.LogFile)
	deadline := time.Now().Add(promptWait)
	waited := false
	for {
		var printedAt *time.Time
		if t, err := spawn.ReadTerminal(dir); err == nil && t != nil {
			printedAt = t.PrintedAt
		}
		fi, err := os.Stat(log)
		output := err == nil && fi.Size() > 0
		switch {
		case printedAt != nil && time.Since(*printedAt) >= promptWait:
			return waited, nil // drawn long ago
		case printedAt != nil && output && time.Since(*printedAt) >= promptQuiet && time.Since(fi.ModTime()) >= promptQuiet:
			return waited, nil // drawn, and settled
		}
		if time.Now().After(deadline) {
			if printedAt != nil {
				return waited, nil // drawing all along (a spinner): it runs, and takes keys
			}
			// Terminal queries (a TUI's first bytes) are no drawing.
			return waited, faultf(ErrNotRunning, "session %s: %s has drawn nothing on its terminal in %s, so it is not at its prompt; nothing was sent (see `agentctl logs %s`)", sess.ID, sess.Adapter, promptWait, sess.ID)
		}
		waited = true
		select {
		case <-ctx.Done():
			return waited, fmt.Errorf("send input to %s: waiting for %s's prompt: %w", sess.ID, sess.Adapter, ctx.Err())
		case <-time.After(promptPoll):
		}
	}
}

// Attach joins a running session's terminal through its monitor.
func (c *Core) Attach(ctx context.Context, id string, rows, cols uint16) (*spawn.Attachment, api.Session, error) {
	sess, dir, err := c.launchedDir(ctx, id)
	if err != nil {
		return nil, sess, err
	}
	if sess.Status != api.StatusRunning {
		return nil, sess, faultf(ErrNotRunning, "session %s is %s: nothing to attach to (see `agentctl logs %s`)", sess.ID, sess.Status, sess.ID)
	}
	if err := c.mayType(ctx, sess, true); err != nil {
		return nil, sess, err
	}
	at, err := spawn.Attach(ctx, dir, rows, cols)
	if err != nil {
		return nil, sess, fmt.Errorf("attach to %s: %w", sess.ID, err)
	}
	return at, sess, nil
}

// Partial lines of a followed text view: the unfinished last line is
// shown once the output pauses for partialQuiet (a line still being
// written is usually finished within a few milliseconds), or once it has
// been growing unshown for partialMaxWait.
const (
	partialQuiet   = 150 * time.Millisecond
	partialMaxWait = time.Second
)

// Logs hands a session's output to emit: the last o.Lines lines (all when
// 0), then, with o.Follow, what it writes until it ends. The last chunk has
// End set and, when followed, the session's final state. It holds a
// bounded part of the output at a time whatever its lines' length: the
// text view cuts lines at logs.MaxLine bytes.
func (c *Core) Logs(ctx context.Context, id string, o api.LogOptions, emit func(api.LogChunk) error) error {
	sess, dir, err := c.launchedDir(ctx, id)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, home.LogFile)
	if o.Since != "" || o.Until != "" || o.Timestamps {
		return c.logsTimed(ctx, sess, path, o, emit)
	}
	var pos logs.Position
	if o.After != "" {
		// A stream that broke off goes on where it was.
		if pos, err = logs.ParsePosition(o.After); err != nil {
			return faultf(ErrInvalid, "%v", err)
		}
	} else if pos, err = logs.TailStart(path, o.Lines); err != nil {
		return err
	}
	strip := logs.Stripper{KeepColor: o.Color}
	var text []byte
	// cursor says where the bytes sent so far end: for the text view,
	// where the unfinished line begins, so it comes again whole.
	cursor := func(at logs.Position) error {
		if !o.Cursors || !o.Follow {
			return nil
		}
		if !o.Raw {
			if at.Offset -= strip.SinceLine(); at.Offset < 0 {
				return nil // the line began in an older file
			}
		}
		return emit(api.LogChunk{Cursor: at.String()})
	}
	shown := ""              // the partial line the client shows
	var read, grew time.Time // the last read; when the unfinished line changed unshown
	partials := o.Partial && o.Follow && !o.Raw
	send := func(b []byte, at logs.Position) error {
		read = time.Now()
		if o.Raw {
			if err := sendRaw(b, emit); err != nil {
				return err
			}
			return cursor(at)
		}
		text = strip.AppendText(text[:0], b)
		if len(text) > 0 {
			shown = "" // the lines sent finish the partial one shown
		}
		if err := sendText(text, o.TextAsData, emit); err != nil {
			return err
		}
		if partials && grew.IsZero() && strip.Pending() != shown {
			grew = read
		}
		return cursor(at)
	}
	idle := func() error {
		if !partials || grew.IsZero() {
			return nil
		}
		if now := time.Now(); now.Sub(read) < partialQuiet && now.Sub(grew) < partialMaxWait {
			return nil
		}
		grew = time.Time{}
		if p := strip.Pending(); p != shown {
			shown = p
			return emit(textChunk(p, o.TextAsData, true))
		}
		return nil
	}
	// The log ends when the session does, by the one status rule; read
	// once, it ends where it is now.
	ended := func() bool { return true }
	if o.Follow {
		ended = func() bool {
			s, err := c.records.get(sess.ID)
			return err != nil || s.Status.Ended()
		}
	}
	if err := logs.FollowIdle(ctx, path, pos, ended, send, idle); err != nil {
		return err
	}
	if !o.Raw {
		if last, ok := strip.Flush(); ok {
			if err := emit(textChunk(last, o.TextAsData, false)); err != nil {
				return err
			}
		}
	}
	if o.Follow {
		if final, err := c.records.get(sess.ID); err == nil {
			sess = final
		}
	}
	return emit(api.LogChunk{End: true, Session: &sess})
}

// maxPeekMessages bounds how far back a peek looks for assistant messages.
const maxPeekMessages = 4096

// Transcript returns a session's last n assistant messages (at least one):
// from the agent's own records where it has them, else the tail of the
// output log of a session this service started.
func (c *Core) Transcript(ctx context.Context, id string, n int) (api.Transcript, error) {
	sess, warnings, err := c.lookup(ctx, id)
	if err != nil {
		return api.Transcript{}, err
	}
	n = max(n, 1)
	out := api.Transcript{Session: sess, Warnings: warnings, Messages: []api.Message{}}
	if a := c.adapters.Get(nativeAdapterOf(&sess)); a != nil && sess.NativeID != "" {
		assistant, err := lastAssistant(ctx, a, sess.NativeID, n)
		if err != nil {
			out.Warnings = append(out.Warnings, fmt.Sprintf("adapter %s: read transcript: %v", a.Name(), err))
		} else if len(assistant) > 0 {
			if len(assistant) > n {
				assistant = assistant[len(assistant)-n:]
			}
			for i, m := range assistant {
				if len(m.Text) > maxPeekOutput {
					assistant[i].Text = text.Truncate(m.Text, maxPeekOutput)
					out.Warnings = append(out.Warnings, fmt.Sprintf("a message of %d bytes is cut to its first %d KiB", len(m.Text), maxPeekOutput>>10))
				}
			}
			out.Source, out.Messages = "native", assistant
			return out, nil
		}
	}
	if sess.Origin != api.OriginLaunched {
		out.Source = "native"
		return out, nil
	}
	// Nothing from the agent's own records yet: the tail of its output.
	tail, cut, err := outputTail(ctx, filepath.Join(c.opts.Home.SessionDir(sess.ID), home.LogFile), 40*n)
	if err != nil {
		return api.Transcript{}, err
	}
	if cut {
		out.Warnings = append(out.Warnings, fmt.Sprintf("the output is cut to its last %d KiB: `agentctl logs %s` shows it all", maxPeekOutput>>10, sess.ID))
	}
	out.Source = "log"
	out.Messages = append(out.Messages, api.Message{Role: "output", Text: tail})
	return out, nil
}

// maxPeekOutput bounds what peek shows of a session's output, and of any
// one message: a peek is a glance, and a 100 MB line is not one.
const maxPeekOutput = 64 << 10

// outputTail is the text of the last n lines of a log, as much of their
// end as fits in maxPeekOutput bytes; cut says some was left out.
func outputTail(ctx context.Context, path string, n int) (text string, cut bool, err error) {
	start, err := logs.TailStart(path, n)
	if err != nil {
		return "", false, err
	}
	var kept []string
	size := 0
	keep := func(line string) {
		kept = append(kept, line)
		size += len(line) + 1
		// Whole lines while the rest fills the bound; the first is cut
		// at the end.
		for len(kept) > 1 && size-len(kept[0])-1 >= maxPeekOutput {
			size -= len(kept[0]) + 1
			kept, cut = kept[1:], true
		}
	}
	var strip logs.Stripper
	err = logs.FollowFrom(ctx, path, start, func() bool { return true }, func(b []byte, _ logs.Position) error {
		strip.Lines(b, func(l []byte, _ int) { keep(string(l)) })
		return nil
	})
	if err != nil {
		return "", false, err
	}
	if last, ok := strip.Flush(); ok {
		keep(last)
	}
	if over := size - 1 - maxPeekOutput; over > 0 && len(kept) > 0 {
		first := kept[0][over:]
		for len(first) > 0 && !utf8.RuneStart(first[0]) {
			first = first[1:]
		}
		kept[0], cut = first, true
	}
	return strings.Join(kept, "\n"), cut, nil
}

// lastAssistant returns the last n assistant messages of a native session.
// It reads a bounded tail, enough for n assistant messages among the user
// and tool entries around them, and reads further back only when a long
// run of tool calls hides them.
func lastAssistant(ctx context.Context, a adapters.Adapter, nativeID string, n int) ([]api.Message, error) {
	if ar, ok := a.(adapters.AssistantReader); ok {
		// Reads back as far as the assistant's messages go, each line once.
		msgs, err := ar.LastAssistant(ctx, nativeID, n)
		if err != nil {
			return nil, err
		}
		return assistantOf(msgs), nil
	}
	for want := 8*n + 32; ; want *= 4 {
		msgs, err := a.Transcript(ctx, nativeID, want)
		if err != nil {
			return nil, err
		}
		assistant := assistantOf(msgs)
		if len(assistant) >= n || len(msgs) < want || want >= maxPeekMessages {
			return assistant, nil
		}
	}
}

// assistantOf is the assistant's messages among msgs.
func assistantOf(msgs []adapters.Message) []api.Message {
	var assistant []api.Message
	for _, m := range msgs {
		if m.Role == "assistant" {
			am := api.Message{Role: m.Role, Text: m.Text}
			if !m.Time.IsZero() {
				t := m.Time
				am.Time = &t
			}
			assistant = append(assistant, am)
		}
	}
	return assistant
}

// WatchAdapters follows every adapter that pushes changes (the OpenClaw
// gateway), so their sessions' starts, ends and busy/idle changes reach the
// observers as they happen rather than at the next list. It returns when
// ctx ends.
func (c *Core) WatchAdapters(ctx context.Context) {
	for _, a := range c.adapters.All() {
		w, ok := a.(adapters.ChangeWatcher)
		if !ok {
			continue
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			changes, err := w.WatchChanges(ctx)
			if err != nil {
				c.log.Warn("adapter changes are not watched", "adapter", a.Name(), "err", err)
				return
			}
			for {
				var ch adapters.Change
				select {
				case <-ctx.Done():
					return
				case got, ok := <-changes:
					if !ok {
						return
					}
					ch = got
				}
				if ch.Err != nil {
					c.log.Warn("adapter watch interrupted; it reconnects by itself", "adapter", a.Name(), "err", ch.Err)
					continue
				}
				if ch.Session != nil {
					c.notify(c.moves.pushed(fromNative(ch.Session, true)))
				}
			}
		}()
	}
}
