package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"

	"github.com/agentctl/agentctl/api"
)

// Decide answers a waiting session: approve or deny its pending permission,
// or type an answer into it.
func (c *Client) Decide(ctx context.Context, id string, d api.Decision) (api.Session, error) {
	var s api.Session
	err := c.do(ctx, http.MethodPost, sessionPath(id, "/decide"), d, &s)
	return s, err
}

// HookReport is one report of an agent's hook to the service.
type HookReport struct {
	// Socket is the service's socket; SessionID the reporting session.
	Socket    string
	SessionID string
	// Agent ("claude"), Event (its hook event name) and whether the
	// session is interactive.
	Agent       string
	Event       string
	Interactive bool
	// Payload is the hook's JSON input, passed on as it is.
	Payload []byte
}

// ReportHook sends a hook's report and returns the service's answer. It
// runs in the agent's critical path: one connection, one request, no
// service start (an agent launched by agentctl has a service to talk to;
// without one there is no decision to wait for).
func ReportHook(ctx context.Context, r HookReport) (api.HookReply, error) {
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", r.Socket)
		},
		DisableKeepAlives: true,
	}}
	q := url.Values{}
	if r.Event != "" {
		q.Set("event", r.Event)
	}
	if r.Interactive {
		q.Set("interactive", "1")
	}
	u := "http://agentctl" + sessionPath(r.SessionID, "/hooks/"+url.PathEscape(r.Agent)) + "?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(r.Payload))
	if err != nil {
		return api.HookReply{}, fmt.Errorf("hook report: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return api.HookReply{}, fmt.Errorf("hook report to %s: %w", r.Socket, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return api.HookReply{}, errorOf(resp)
	}
	var reply api.HookReply
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&reply); err != nil {
		return api.HookReply{}, fmt.Errorf("read the service's answer to a hook report: %w", err)
	}
	return reply, nil
}
