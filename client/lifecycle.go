package client

import (
	"context"
	"net/http"

	"github.com/agentctl/agentctl/api"
)

// Restart runs a launched session again as a new session; it returns the
// new one.
func (c *Client) Restart(ctx context.Context, id string, req api.RestartRequest) (api.Session, error) {
	var s api.Session
	err := c.do(ctx, http.MethodPost, sessionPath(id, "/restart"), req, &s)
	return s, err
}

// Signal sends one signal to a session's process group.
func (c *Client) Signal(ctx context.Context, id string, req api.SignalRequest) (api.Session, error) {
	var s api.Session
	err := c.do(ctx, http.MethodPost, sessionPath(id, "/signal"), req, &s)
	return s, err
}

// Rename gives a session a new name.
func (c *Client) Rename(ctx context.Context, id, name string) (api.Session, error) {
	var s api.Session
	err := c.do(ctx, http.MethodPost, sessionPath(id, "/rename"), api.RenameRequest{Name: name}, &s)
	return s, err
}

// Remove deletes a session's folder; force stops a running one first.
func (c *Client) Remove(ctx context.Context, id string, force bool) (api.Session, error) {
	var s api.Session
	path := sessionPath(id, "")
	if force {
		path += "?force=true"
	}
	err := c.do(ctx, http.MethodDelete, path, nil, &s)
	return s, err
}

// PruneSessions removes (or with DryRun names) ended sessions' folders.
func (c *Client) PruneSessions(ctx context.Context, req api.PruneRequest) (api.PruneResult, error) {
	var out api.PruneResult
	err := c.do(ctx, http.MethodPost, "/v1/prune", req, &out)
	return out, err
}
