// Package k8shelper reaches a Kubernetes cluster's sessions through the
// agentctl-k8s helper program, which links client-go (the cluster
// package). Linked into agentctl itself, client-go's package initialisation
// would cost every command several milliseconds and double the binary;
// this package costs nothing until a cluster is asked.
//
// The helper is run once per call: `agentctl-k8s [target flags] OP`, the
// request as JSON on its standard input, answers as JSON lines on its
// standard output (Reply).
package k8shelper

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/internal/text"
)

// Target says which cluster and namespace, and how sessions are made there
// (the cluster package's Config, as flags).
type Target struct {
	Kubeconfig string
	Context    string
	Namespace  string
	Image      string
	PullPolicy string
	Volume     string
	// HostNetwork runs the pods on their node's network.
	HostNetwork bool
}

// Args are the helper's flags for t.
func (t Target) Args() []string {
	var a []string
	for _, f := range []struct{ name, v string }{
		{"kubeconfig", t.Kubeconfig}, {"context", t.Context}, {"namespace", t.Namespace},
		{"image", t.Image}, {"pull-policy", t.PullPolicy}, {"volume", t.Volume},
	} {
		if f.v != "" {
			a = append(a, "--"+f.name+"="+f.v)
		}
	}
	if t.HostNetwork {
		a = append(a, "--host-network")
	}
	return a
}

// Request is what the helper reads on its standard input.
type Request struct {
	ID   string          `json:"id,omitempty"`
	Run  *api.RunRequest `json:"run,omitempty"`
	List api.ListOptions `json:"list"`
	Stop api.StopRequest `json:"stop"`
	Data []byte          `json:"data,omitempty"`
	N    int             `json:"n,omitempty"`
	Logs api.LogOptions  `json:"logs"`
	// Events selects an event stream (op events).
	Events *EventOptions `json:"events,omitempty"`
}

// Reply is one line of the helper's standard output: a log chunk, or the
// last line, a result or an error.
type Reply struct {
	Chunk  *api.LogChunk   `json:"chunk,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *api.Error      `json:"error,omitempty"`
	// Started and Event are an event stream's (op events): where it
	// starts, then each event.
	Started *uint64    `json:"started,omitempty"`
	Event   *api.Event `json:"event,omitempty"`
}

// Sessions is a cluster's sessions through the helper program exe.
type Sessions struct {
	exe    string
	target Target
	limits limits
}

// New returns the sessions of target, reached through the helper exe.
func New(exe string, target Target) *Sessions {
	return &Sessions{exe: exe, target: target, limits: defaultLimits()}
}

// What the helper's answers may hold and how long they may take: the
// client's bounds of an agentctl service's answers (a reply line holds a
// whole result, a list's the whole list), so a broken helper, or a
// cluster that answers without end, costs bounded memory and time.
const (
	// maxStderr is what is kept of the helper's standard error.
	maxStderr = 64 << 10
	// logsSilence is the longest pause in the chunks of logs that are
	// not followed.
	logsSilence = 45 * time.Second
	// waitDelay is how long the helper's output may stay open once it
	// was ended or exited (a process it left behind may hold it).
	waitDelay = 5 * time.Second
)

// limits are the bounds a call applies (tests make them small).
type limits struct {
	list, line int64
	// total bounds an operation that answers one value; silence the
	// pause between the chunks of logs that are not followed.
	total, silence time.Duration
}

func defaultLimits() limits {
	return limits{list: client.MaxListReply, line: client.MaxReply, total: client.ReplyTime, silence: logsSilence}
}

// call runs the helper for op with req, hands each log chunk to emit, and
// decodes the result into out.
func (s *Sessions) call(ctx context.Context, op string, req Request, out any, emit func(api.LogChunk) error) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	// An answer of one value is bounded in time; logs that are not
	// followed by the pause between their chunks; followed ones only
	// by the caller.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	heard := func() {}
	switch {
	case op != "logs":
		timer := time.AfterFunc(s.limits.total, func() {
			cancel(fmt.Errorf("%s: %w: no answer within %s", s.what(op), client.ErrStalled, s.limits.total))
		})
		defer timer.Stop()
	case !req.Logs.Follow:
		silence := s.limits.silence
		timer := time.AfterFunc(silence, func() {
			cancel(fmt.Errorf("%s: %w: nothing came for %s", s.what(op), client.ErrStalled, silence))
		})
		defer timer.Stop()
		heard = func() { timer.Reset(silence) }
	}
	max := s.limits.line
	if op == "list" {
		max = s.limits.list
	}
	cmd := exec.CommandContext(ctx, s.exe, append(s.target.Args(), op)...)
	dieWithParent(cmd)
	cmd.WaitDelay = waitDelay
	cmd.Stdin = bytes.NewReader(body)
	stderr := &headWriter{max: maxStderr}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run the Kubernetes helper %s: %w (it is installed beside agentctl)", s.exe, err)
	}
	var last *Reply
	var emitErr error
	readErr := readReplies(stdout, max, func(line []byte) {
		heard()
		var rep Reply
		if err := json.Unmarshal(line, &rep); err != nil {
			emitErr = errors.Join(emitErr, fmt.Errorf("the Kubernetes helper said %q: %w", text.Truncate(string(line), 200), err))
		} else if rep.Chunk != nil {
			if emitErr == nil && emit != nil {
				emitErr = emit(*rep.Chunk)
			}
		} else {
			last = &rep
		}
	})
	if readErr != nil {
		cancel(fmt.Errorf("%s: %w", s.what(op), readErr))
	}
	waitErr := cmd.Wait()
	switch {
	case emitErr != nil:
		return emitErr
	case bounded(ctx):
		return context.Cause(ctx)
	case last != nil && last.Error != nil:
		return last.Error
	case last == nil:
		msg := strings.TrimSpace(stderr.b.String())
		if msg == "" && waitErr != nil {
			msg = waitErr.Error()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the Kubernetes helper %s answered nothing: %s", s.exe, msg)
	}
	if out != nil && len(last.Result) > 0 {
		return json.Unmarshal(last.Result, out)
	}
	return nil
}

// what names the helper's answer to op in errors.
func (s *Sessions) what(op string) string {
	return fmt.Sprintf("the Kubernetes helper's answer to %s (%s)", op, s.exe)
}

// bounded reports whether ctx was ended by a bound of the answer.
func bounded(ctx context.Context) bool {
	cause := context.Cause(ctx)
	return errors.Is(cause, client.ErrTooLarge) || errors.Is(cause, client.ErrStalled)
}

// readReplies hands each non-blank line of r to fn, until r ends or a
// line is longer than max (an error then).
func readReplies(r io.Reader, max int64, fn func(line []byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		part, err := br.ReadSlice('\n')
		line := part
		if long != nil || errors.Is(err, bufio.ErrBufferFull) {
			if int64(len(long)+len(part)) > max {
				return fmt.Errorf("a line %w of %s", client.ErrTooLarge, text.Bytes(max))
			}
			long = append(long, part...)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			line = long
		}
		if len(bytes.TrimSpace(line)) > 0 {
			fn(line)
		}
		long = nil
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// headWriter keeps the first max bytes written to it (a helper's
// standard error) and drops the rest.
type headWriter struct {
	b   bytes.Buffer
	max int
}

func (w *headWriter) Write(p []byte) (int, error) {
	if room := w.max - w.b.Len(); room > 0 {
		w.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (s *Sessions) Launch(ctx context.Context, req api.RunRequest) (api.Session, error) {
	var out api.Session
	return out, s.call(ctx, "launch", Request{Run: &req}, &out, nil)
}

func (s *Sessions) List(ctx context.Context, o api.ListOptions) (api.SessionList, error) {
	var raw json.RawMessage
	if err := s.call(ctx, "list", Request{List: o}, &raw, nil); err != nil {
		return api.SessionList{}, err
	}
	// Bounded as a service's list is: three bytes of answer ("{},") must
	// not become a session of 512.
	return client.DecodeList(bytes.NewReader(raw), s.what("list"))
}

func (s *Sessions) Get(ctx context.Context, id string) (api.Session, error) {
	var out api.Session
	return out, s.call(ctx, "get", Request{ID: id}, &out, nil)
}

func (s *Sessions) Stop(ctx context.Context, id string, req api.StopRequest) (api.Session, error) {
	var out api.Session
	return out, s.call(ctx, "stop", Request{ID: id, Stop: req}, &out, nil)
}

func (s *Sessions) Input(ctx context.Context, id string, data []byte) (api.Session, error) {
	var out api.Session
	return out, s.call(ctx, "input", Request{ID: id, Data: data}, &out, nil)
}

func (s *Sessions) Transcript(ctx context.Context, id string, n int) (api.Transcript, error) {
	var out api.Transcript
	return out, s.call(ctx, "transcript", Request{ID: id, N: n}, &out, nil)
}

// Explain is the evidence behind a session's status (op explain).
func (s *Sessions) Explain(ctx context.Context, id string) (api.Explanation, error) {
	var out api.Explanation
	return out, s.call(ctx, "explain", Request{ID: id}, &out, nil)
}

func (s *Sessions) Logs(ctx context.Context, id string, o api.LogOptions, emit func(api.LogChunk) error) error {
	return s.call(ctx, "logs", Request{ID: id, Logs: o}, nil, emit)
}

// Backend is what the helper serves: the cluster package's Cluster.
type Backend interface {
	Launch(context.Context, api.RunRequest) (api.Session, error)
	List(context.Context, api.ListOptions) (api.SessionList, error)
	Get(context.Context, string) (api.Session, error)
	Stop(context.Context, string, api.StopRequest) (api.Session, error)
	Input(context.Context, string, []byte) (api.Session, error)
	Transcript(context.Context, string, int) (api.Transcript, error)
	Logs(context.Context, string, api.LogOptions, func(api.LogChunk) error) error
}

// Explainer tells the evidence behind a session's status (op explain).
type Explainer interface {
	Explain(ctx context.Context, id string) (api.Explanation, error)
}

// Fail writes err as the helper's answer and returns its exit code.
func Fail(out io.Writer, err error) int {
	var e *api.Error
	if !errors.As(err, &e) {
		e = &api.Error{Code: api.CodeInternal, Message: err.Error()}
	}
	json.NewEncoder(out).Encode(Reply{Error: e})
	return 1
}

// Serve is the helper's side: it reads a Request from in, runs op on
// sessions, and writes the Replies to out. It returns the helper's exit
// code.
func Serve(ctx context.Context, sessions Backend, op string, in io.Reader, out io.Writer) int {
	enc := json.NewEncoder(out)
	fail := func(err error) int { return Fail(out, err) }
	var req Request
	dec := json.NewDecoder(io.LimitReader(in, 64<<20))
	if err := dec.Decode(&req); err != nil {
		return fail(fmt.Errorf("read the request: %w", err))
	}
	var result any
	var err error
	switch op {
	case "launch":
		if req.Run == nil {
			return fail(api.Errorf(api.CodeInvalid, "launch: no run request"))
		}
		result, err = sessions.Launch(ctx, *req.Run)
	case "list":
		result, err = sessions.List(ctx, req.List)
	case "get":
		result, err = sessions.Get(ctx, req.ID)
	case "stop":
		result, err = sessions.Stop(ctx, req.ID, req.Stop)
	case "input":
		result, err = sessions.Input(ctx, req.ID, req.Data)
	case "transcript":
		result, err = sessions.Transcript(ctx, req.ID, req.N)
	case "logs":
		err = sessions.Logs(ctx, req.ID, req.Logs, func(ch api.LogChunk) error { return enc.Encode(Reply{Chunk: &ch}) })
	case "explain":
		ex, ok := sessions.(Explainer)
		if !ok {
			return fail(api.Errorf(api.CodeInvalid, "%s: not served here", op))
		}
		result, err = ex.Explain(ctx, req.ID)
	case "attach", "events":
		st, ok := sessions.(Streams)
		if !ok {
			return fail(api.Errorf(api.CodeInvalid, "%s: not served here", op))
		}
		if op == "attach" {
			// What follows the request on standard input is typed.
			result, err = st.AttachStreams(ctx, req.ID, io.MultiReader(dec.Buffered(), in), chunkWriter{enc})
		} else {
			err = serveEvents(ctx, st, req, enc)
		}
	default:
		return fail(api.Errorf(api.CodeInvalid, "unknown operation %q", op))
	}
	if err != nil {
		return fail(err)
	}
	b, err := json.Marshal(result)
	if err != nil {
		return fail(err)
	}
	enc.Encode(Reply{Result: b})
	return 0
}
