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
	"time"

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
	// Answer, when not zero, bounds the wait for the service to begin its
	// answer (a frozen service accepts connections into its backlog and
	// says nothing); ctx bounds the whole call, the person's decision
	// included. Connect bounds the connection alone.
	Answer  time.Duration
	Connect time.Duration
}

// ReportHook sends a hook's report and returns the service's answer. It
// runs in the agent's critical path: one connection, one request, no
// service start (an agent launched by agentctl has a service to talk to;
// without one there is no decision to wait for). Without a SessionID it is
// an integration's report of an agent started by hand.
func ReportHook(ctx context.Context, r HookReport) (api.HookReply, error) {
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			d := net.Dialer{Timeout: r.Connect}
			return d.DialContext(ctx, "unix", r.Socket)
		},
		DisableKeepAlives: true,
	}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var late *time.Timer
	if r.Answer > 0 {
		// Until the answer begins: the connection, the report written
		// (into a frozen service's full buffer), the headers.
		late = time.AfterFunc(r.Answer, cancel)
		defer late.Stop()
	}
	q := url.Values{}
	if r.Event != "" {
		q.Set("event", r.Event)
	}
	if r.Interactive {
		q.Set("interactive", "1")
	}
	path := "/v1/hooks/" + url.PathEscape(r.Agent)
	if r.SessionID != "" {
		path = sessionPath(r.SessionID, "/hooks/"+url.PathEscape(r.Agent))
	}
	u := "http://agentctl" + path + "?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(r.Payload))
	if err != nil {
		return api.HookReply{}, fmt.Errorf("hook report: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	begun := time.Now()
	resp, err := hc.Do(req)
	if r.Answer > 0 && !late.Stop() && err == nil {
		// The answer began as the time ran out: too late all the same.
		resp.Body.Close()
		err = context.Canceled
	}
	if err != nil {
		if r.Answer > 0 && time.Since(begun) >= r.Answer {
			return api.HookReply{}, fmt.Errorf("hook report to %s: the service did not answer within %s", r.Socket, r.Answer)
		}
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

// IntegrationStatus is what the service knows of the integrations: when
// each agent's last report arrived.
func (c *Client) IntegrationStatus(ctx context.Context) (api.IntegrationStatus, error) {
	var st api.IntegrationStatus
	err := c.do(ctx, http.MethodGet, "/v1/hooks", nil, &st)
	return st, err
}
