package client

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/agentctl/agentctl/api"
)

// Attachment is a live connection to a session's terminal, through the
// service.
type Attachment struct {
	conn io.ReadWriteCloser
	r    *bufio.Reader
}

// Attach joins a running session's terminal with the given window size.
func (c *Client) Attach(ctx context.Context, id string, rows, cols uint16) (*Attachment, error) {
	q := url.Values{}
	q.Set("rows", strconv.Itoa(int(rows)))
	q.Set("cols", strconv.Itoa(int(cols)))
	req, err := c.request(ctx, http.MethodGet, sessionPath(id, "/attach?"+q.Encode()), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "agentctl-attach")
	resp, err := c.sendRequest(req, stream)
	if err != nil {
		return nil, err
	}
	conn, ok := resp.Body.(io.ReadWriteCloser)
	if resp.StatusCode != http.StatusSwitchingProtocols || !ok {
		resp.Body.Close()
		return nil, fmt.Errorf("attach to %s: the service answered %s, not a terminal", id, resp.Status)
	}
	return &Attachment{conn: conn, r: bufio.NewReader(conn)}, nil
}

// Input sends bytes to the terminal.
func (a *Attachment) Input(p []byte) error { return api.WriteFrame(a.conn, api.FrameInput, p) }

// Resize forwards a new window size.
func (a *Attachment) Resize(rows, cols uint16) error {
	return api.WriteFrame(a.conn, api.FrameResize, api.ResizePayload(rows, cols))
}

// Next returns the next frame from the terminal (api.FrameOutput or
// api.FrameExit).
func (a *Attachment) Next() (byte, []byte, error) { return api.ReadFrame(a.r) }

// Close detaches; the session goes on.
func (a *Attachment) Close() error { return a.conn.Close() }
