package spawn

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

// The shim's socket speaks a small protocol: the client sends one JSON
// request line; the shim answers with one JSON line, and for "attach" then
// switches to the frames of api.WriteFrame in both directions. Both lines
// name their version of the monitor protocol (protocol.go).

type controlRequest struct {
	Op string `json:"op"` // "attach", "input", "stop", "resize", "record"
	// Protocol is the version the caller speaks on this connection.
	Protocol int    `json:"protocol,omitempty"`
	Rows     uint16 `json:"rows,omitempty"`
	Cols     uint16 `json:"cols,omitempty"`
	Data     []byte `json:"data,omitempty"`
	Signal   string `json:"signal,omitempty"`
	Grace    string `json:"grace,omitempty"`
	Force    bool   `json:"force,omitempty"`
}

type controlResponse struct {
	OK    bool        `json:"ok"`
	Error string      `json:"error,omitempty"`
	Exit  *ExitRecord `json:"exit,omitempty"`
	// Survivors are processes of the session that outlived a stop.
	Survivors []int `json:"survivors,omitempty"`
	// Ended is how many processes the session had when a stop began.
	Ended int `json:"ended,omitempty"`
	// Record is the monitor's launch record (op "record").
	Record *Record `json:"record,omitempty"`
	// Protocol is the monitor's version: its hello.
	Protocol int `json:"protocol,omitempty"`
}

// answer writes the monitor's answer line, with its hello.
func answer(w io.Writer, resp controlResponse) error {
	resp.Protocol = MonitorProtocol
	return json.NewEncoder(w).Encode(resp)
}

// greet is what a caller knows of a session's monitor before it connects:
// its record's version, refused with a *ProtocolError when this agentctl
// does not speak it, and the record itself (ok false when launch.json
// cannot be read: the monitor's hello is then the only word on its
// version).
func greet(dir string) (Record, bool, error) {
	rec, err := ReadRecord(dir)
	if err != nil {
		return Record{ID: filepath.Base(dir)}, false, nil
	}
	return rec, true, CheckProtocol(rec)
}

// speaks is the version a caller speaks to the monitor of rec: the
// monitor's own when its record was read, else this agentctl's.
func speaks(rec Record, ok bool) int {
	if !ok {
		return MonitorProtocol
	}
	return ProtocolOf(rec)
}

// hello refuses an answer whose version this agentctl does not speak.
func hello(id string, resp controlResponse) error {
	return checkProtocol(id, resp.Protocol, MinMonitorProtocol, MonitorProtocol)
}

// ErrShimGone means the session's shim no longer answers.
var ErrShimGone = errors.New("session monitor is not running")

func dial(ctx context.Context, dir string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", filepath.Join(dir, home.SocketFile))
	if err != nil {
		return nil, fmt.Errorf("connect to session monitor: %w (%w)", ErrShimGone, err)
	}
	return conn, nil
}

// ErrShimNotAnswering means the session's monitor accepted a request and
// did not answer in time: it is stopped (SIGSTOP) or hung.
var ErrShimNotAnswering = errors.New("session monitor is not answering")

// call sends one request to the session's monitor and reads its answer,
// within timeout; a monitor that is stopped fails the call at once.
func call(ctx context.Context, dir string, req controlRequest, timeout time.Duration) (controlResponse, error) {
	rec, known, err := greet(dir)
	if err != nil {
		return controlResponse{}, err
	}
	req.Protocol = speaks(rec, known)
	conn, err := dial(ctx, dir)
	if err != nil {
		return controlResponse{}, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, ErrShimNotAnswering)
	defer cancel()
	ctx, cancelCause := context.WithCancelCause(ctx)
	defer cancelCause(nil)
	if known {
		go watchMonitor(ctx, rec.Shim, cancelCause)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	failed := func(format string, err error) error {
		if cause := context.Cause(ctx); errors.Is(cause, ErrShimNotAnswering) {
			return fmt.Errorf("%s: %w", req.Op, cause)
		}
		return fmt.Errorf(format+": %w", req.Op, err)
	}
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return controlResponse{}, failed("send %s to session monitor", err)
	}
	var resp controlResponse
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		return controlResponse{}, failed("read %s answer from session monitor", err)
	}
	if err := hello(rec.ID, resp); err != nil {
		return controlResponse{}, err
	}
	if !resp.OK {
		return resp, fmt.Errorf("session monitor: %s", resp.Error)
	}
	return resp, nil
}

// SendInput writes data to the session's terminal.
func SendInput(ctx context.Context, dir string, data []byte) error {
	_, err := call(ctx, dir, controlRequest{Op: "input", Data: data}, inputTimeout)
	return err
}

// inputTimeout bounds how long a monitor may take to take input.
const inputTimeout = 10 * time.Second

// watchMonitor cancels ctx with ErrShimNotAnswering as soon as the monitor
// is seen stopped: nothing would ever answer.
func watchMonitor(ctx context.Context, shim proc.Identity, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if p, err := proc.Lookup(shim.PID); err == nil && p.Start == shim.Start && p.Stopped {
				cancel(fmt.Errorf("%w: pid %d is stopped", ErrShimNotAnswering, shim.PID))
				return
			}
		}
	}
}

// StopOptions say how to stop a session.
type StopOptions struct {
	Signal string        // the agent's graceful signal, e.g. "SIGTERM"
	Grace  time.Duration // how long to wait before SIGKILL
	Force  bool          // SIGKILL at once
}

// Stopped is what a stop did.
type Stopped struct {
	// Exit is the session's exit record, when its monitor wrote one.
	Exit *ExitRecord
	// Processes is how many processes the session had when the stop
	// began: those the stop ended.
	Processes int
}

// Stop asks the shim to stop the session; it returns once no process of the
// session remains, or with a *SurvivorsError naming those that outlived
// SIGKILL.
func Stop(ctx context.Context, dir string, opts StopOptions) (Stopped, error) {
	grace := opts.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	resp, err := call(ctx, dir, controlRequest{Op: "stop", Signal: opts.Signal, Grace: opts.Grace.String(), Force: opts.Force}, grace+killBound+5*time.Second)
	if err != nil {
		return Stopped{}, err
	}
	got := Stopped{Exit: resp.Exit, Processes: resp.Ended}
	if len(resp.Survivors) > 0 {
		return got, &SurvivorsError{PIDs: resp.Survivors}
	}
	return got, nil
}

// Attachment is a live connection to a session's terminal.
type Attachment struct {
	conn net.Conn
	r    *bufio.Reader
}

// Attach joins the session's terminal with the given window size.
func Attach(ctx context.Context, dir string, rows, cols uint16) (*Attachment, error) {
	rec, known, err := greet(dir)
	if err != nil {
		return nil, err
	}
	conn, err := dial(ctx, dir)
	if err != nil {
		return nil, err
	}
	// The answer must come soon; a stopped or hung monitor gives none.
	conn.SetDeadline(time.Now().Add(inputTimeout))
	if err := json.NewEncoder(conn).Encode(controlRequest{Op: "attach", Protocol: speaks(rec, known), Rows: rows, Cols: cols}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("attach: %w", err)
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadBytes('\n')
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("attach: %w", err)
	}
	var resp controlResponse
	if err := json.Unmarshal(line, &resp); err != nil || !resp.OK {
		conn.Close()
		return nil, fmt.Errorf("attach refused: %s", resp.Error)
	}
	if err := hello(rec.ID, resp); err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return &Attachment{conn: conn, r: r}, nil
}

// Input sends bytes to the terminal.
func (a *Attachment) Input(p []byte) error { return api.WriteFrame(a.conn, api.FrameInput, p) }

// Resize forwards a new window size.
func (a *Attachment) Resize(rows, cols uint16) error {
	return api.WriteFrame(a.conn, api.FrameResize, api.ResizePayload(rows, cols))
}

// Next returns the next frame from the shim.
func (a *Attachment) Next() (byte, []byte, error) { return api.ReadFrame(a.r) }

// Splice connects the terminal to peer, which speaks the same frames (a
// client attached through the service), until either side ends or ctx
// does. The caller closes both afterwards.
func (a *Attachment) Splice(ctx context.Context, peer io.ReadWriter) {
	stop := context.AfterFunc(ctx, func() { a.conn.Close() })
	defer stop()
	typed, shown := make(chan struct{}), make(chan struct{})
	go func() { io.Copy(a.conn, peer); close(typed) }()
	go func() { io.Copy(peer, a.r); close(shown) }()
	select {
	case <-typed:
	case <-shown:
		// The peer can no longer be shown anything (it left, or the
		// session ended): what it typed before it left is still on its
		// way, and must reach the terminal.
		select {
		case <-typed:
		case <-time.After(2 * time.Second):
		}
	}
}

// Close detaches; the session goes on.
func (a *Attachment) Close() error { return a.conn.Close() }
