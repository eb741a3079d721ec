package spawn

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"time"
)

// The shim's socket speaks a small protocol: the client sends one JSON
// request line; the shim answers with one JSON line, and for "attach" then
// switches to frames in both directions.
//
// A frame is one type byte, a big-endian uint32 length, and the payload.
const (
	FrameOutput = 'o' // shim → client: terminal output
	FrameExit   = 'x' // shim → client: the agent ended (payload: ExitRecord JSON)
	FrameInput  = 'i' // client → shim: bytes for the terminal
	FrameResize = 'r' // client → shim: rows, cols as two big-endian uint16
)

// maxFrame bounds a frame's payload so a broken peer cannot make us allocate
// without limit.
const maxFrame = 1 << 20

type controlRequest struct {
	Op     string `json:"op"` // "attach", "input", "stop", "resize"
	Rows   uint16 `json:"rows,omitempty"`
	Cols   uint16 `json:"cols,omitempty"`
	Data   []byte `json:"data,omitempty"`
	Signal string `json:"signal,omitempty"`
	Grace  string `json:"grace,omitempty"`
	Force  bool   `json:"force,omitempty"`
}

type controlResponse struct {
	OK    bool        `json:"ok"`
	Error string      `json:"error,omitempty"`
	Exit  *ExitRecord `json:"exit,omitempty"`
}

// WriteFrame writes one frame.
func WriteFrame(w io.Writer, typ byte, payload []byte) error {
	var hdr [5]byte
	hdr[0] = typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(payload)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// ReadFrame reads one frame.
func ReadFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes exceeds the limit", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, err
	}
	return hdr[0], buf, nil
}

// ResizePayload encodes a window size for a FrameResize.
func ResizePayload(rows, cols uint16) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint16(b, rows)
	binary.BigEndian.PutUint16(b[2:], cols)
	return b
}

// ErrShimGone means the session's shim no longer answers.
var ErrShimGone = errors.New("session monitor is not running")

func dial(ctx context.Context, dir string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", filepath.Join(dir, SocketFile))
	if err != nil {
		return nil, fmt.Errorf("connect to session monitor: %w (%w)", ErrShimGone, err)
	}
	return conn, nil
}

func call(ctx context.Context, dir string, req controlRequest) (controlResponse, error) {
	conn, err := dial(ctx, dir)
	if err != nil {
		return controlResponse{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return controlResponse{}, fmt.Errorf("send %s to session monitor: %w", req.Op, err)
	}
	var resp controlResponse
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		return controlResponse{}, fmt.Errorf("read %s answer from session monitor: %w", req.Op, err)
	}
	if !resp.OK {
		return resp, fmt.Errorf("session monitor: %s", resp.Error)
	}
	return resp, nil
}

// SendInput writes data to the session's terminal.
func SendInput(ctx context.Context, dir string, data []byte) error {
	_, err := call(ctx, dir, controlRequest{Op: "input", Data: data})
	return err
}

// StopOptions say how to stop a session.
type StopOptions struct {
	Signal string        // the agent's graceful signal, e.g. "SIGTERM"
	Grace  time.Duration // how long to wait before SIGKILL
	Force  bool          // SIGKILL at once
}

// Stop asks the shim to stop the session; it returns once no process of the
// session remains.
func Stop(ctx context.Context, dir string, opts StopOptions) (*ExitRecord, error) {
	resp, err := call(ctx, dir, controlRequest{Op: "stop", Signal: opts.Signal, Grace: opts.Grace.String(), Force: opts.Force})
	if err != nil {
		return nil, err
	}
	return resp.Exit, nil
}

// Attachment is a live connection to a session's terminal.
type Attachment struct {
	conn net.Conn
	r    *bufio.Reader
}

// Attach joins the session's terminal with the given window size.
func Attach(ctx context.Context, dir string, rows, cols uint16) (*Attachment, error) {
	conn, err := dial(ctx, dir)
	if err != nil {
		return nil, err
	}
	if err := json.NewEncoder(conn).Encode(controlRequest{Op: "attach", Rows: rows, Cols: cols}); err != nil {
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
	return &Attachment{conn: conn, r: r}, nil
}

// Input sends bytes to the terminal.
func (a *Attachment) Input(p []byte) error { return WriteFrame(a.conn, FrameInput, p) }

// Resize forwards a new window size.
func (a *Attachment) Resize(rows, cols uint16) error {
	return WriteFrame(a.conn, FrameResize, ResizePayload(rows, cols))
}

// Next returns the next frame from the shim.
func (a *Attachment) Next() (byte, []byte, error) { return ReadFrame(a.r) }

// Close detaches; the session goes on.
func (a *Attachment) Close() error { return a.conn.Close() }
