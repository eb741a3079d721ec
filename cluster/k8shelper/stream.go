package k8shelper

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/internal/text"
)

// EventOptions select an event stream (client.EventOptions on the wire).
type EventOptions struct {
	Since string   `json:"since,omitempty"`
	Types []string `json:"types,omitempty"`
}

// Streams is what the helper serves beyond Backend: the streams that last
// as long as the caller wants (the cluster package's Cluster).
type Streams interface {
	AttachStreams(ctx context.Context, id string, in io.Reader, out io.Writer) (api.Session, error)
	Events(ctx context.Context, o client.EventOptions, started func(after uint64), fn func(api.Event) error) error
}

var _ Streams = (*Sessions)(nil)

// AttachStreams joins session id's terminal through the helper: what is
// read from in is typed (after the request, on the helper's standard
// input), its output is written to out, until the session ends (its final
// state returned) or ctx does (the helper is then ended: the session goes
// on).
func (s *Sessions) AttachStreams(ctx context.Context, id string, in io.Reader, out io.Writer) (api.Session, error) {
	var sess api.Session
	last, err := s.stream(ctx, "attach", Request{ID: id}, in, func(r Reply) error {
		if r.Chunk != nil {
			_, err := out.Write(r.Chunk.Data)
			return err
		}
		return nil
	})
	if err != nil {
		return sess, err
	}
	return sess, json.Unmarshal(last.Result, &sess)
}

// Events streams the cluster's session events through the helper until
// ctx ends, fn fails or the stream breaks off.
func (s *Sessions) Events(ctx context.Context, o client.EventOptions, started func(after uint64), fn func(api.Event) error) error {
	_, err := s.stream(ctx, "events", Request{Events: &EventOptions{Since: o.Since, Types: o.Types}}, nil, func(r Reply) error {
		switch {
		case r.Started != nil && started != nil:
			started(*r.Started)
		case r.Event != nil:
			return fn(*r.Event)
		}
		return nil
	})
	if err == nil {
		err = fmt.Errorf("the Kubernetes helper's event stream ended")
	}
	return err
}

// stream runs the helper for op: req, then what in brings, on its standard
// input; each reply but the last to each, as it comes; the last returned.
// ctx ending, or each failing, ends the helper.
func (s *Sessions) stream(ctx context.Context, op string, req Request, in io.Reader, each func(Reply) error) (*Reply, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cmd := exec.CommandContext(ctx, s.exe, append(s.target.Args(), op)...)
	dieWithParent(cmd)
	cmd.WaitDelay = waitDelay
	stderr := &headWriter{max: maxStderr}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("run the Kubernetes helper %s: %w (it is installed beside agentctl)", s.exe, err)
	}
	// Not waited for: in may block (a terminal) after the helper is done;
	// the pipe's close by Wait ends its writes.
	go func() {
		defer stdin.Close()
		// The request ends at its closing brace: what follows is typed.
		if _, err := stdin.Write(body); err != nil || in == nil {
			return
		}
		io.Copy(stdin, in)
	}()
	var last *Reply
	var eachErr error
	// Streams last as long as the caller wants: bounded in memory (a
	// line), not in time.
	readErr := readReplies(stdout, s.limits.line, func(line []byte) {
		if eachErr != nil {
			return
		}
		var rep Reply
		switch err := json.Unmarshal(line, &rep); {
		case err != nil:
			eachErr = fmt.Errorf("the Kubernetes helper said %q: %w", text.Truncate(string(line), 200), err)
		case rep.Result != nil || rep.Error != nil:
			last = &rep
		default:
			eachErr = each(rep)
		}
		if eachErr != nil {
			cancel(nil)
		}
	})
	if readErr != nil {
		cancel(fmt.Errorf("%s: %w", s.what(op), readErr))
	}
	waitErr := cmd.Wait()
	switch {
	case eachErr != nil:
		return nil, eachErr
	case bounded(ctx):
		return nil, context.Cause(ctx)
	case last != nil && last.Error != nil:
		return nil, last.Error
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case last == nil:
		msg := strings.TrimSpace(stderr.b.String())
		if msg == "" && waitErr != nil {
			msg = waitErr.Error()
		}
		return nil, fmt.Errorf("the Kubernetes helper %s answered nothing: %s", s.exe, msg)
	}
	return last, nil
}

// chunkWriter sends what is written as log chunks (an attach's output).
type chunkWriter struct{ enc *json.Encoder }

func (w chunkWriter) Write(p []byte) (int, error) {
	if err := w.enc.Encode(Reply{Chunk: &api.LogChunk{Data: p}}); err != nil {
		return 0, err
	}
	return len(p), nil
}

// serveEvents is the helper's side of op events.
func serveEvents(ctx context.Context, st Streams, req Request, enc *json.Encoder) error {
	var o client.EventOptions
	if req.Events != nil {
		o = client.EventOptions{Since: req.Events.Since, Types: req.Events.Types}
	}
	return st.Events(ctx, o, func(after uint64) {
		enc.Encode(Reply{Started: &after})
	}, func(e api.Event) error {
		return enc.Encode(Reply{Event: &e})
	})
}
