package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/agentctl/agentctl/api"
)

// Locks lists the directory locks.
func (c *Client) Locks(ctx context.Context) ([]api.Lock, error) {
	var out []api.Lock
	err := c.do(ctx, http.MethodGet, "/v1/locks", nil, &out)
	return out, err
}

// Lock takes a manual lock.
func (c *Client) Lock(ctx context.Context, req api.LockRequest) (api.Lock, error) {
	var out api.Lock
	err := c.do(ctx, http.MethodPost, "/v1/locks", req, &out)
	return out, err
}

// Unlock releases a manual lock.
func (c *Client) Unlock(ctx context.Context, dir string) (api.Lock, error) {
	var out api.Lock
	err := c.do(ctx, http.MethodPost, "/v1/locks/release", api.UnlockRequest{Directory: dir}, &out)
	return out, err
}

// Fuses lists the fuses, soonest first.
func (c *Client) Fuses(ctx context.Context) ([]api.Fuse, error) {
	var out []api.Fuse
	err := c.do(ctx, http.MethodGet, "/v1/fuses", nil, &out)
	return out, err
}

// SetFuse sets a directory's fuse, replacing the one it had.
func (c *Client) SetFuse(ctx context.Context, req api.FuseRequest) (api.Fuse, error) {
	var out api.Fuse
	err := c.do(ctx, http.MethodPost, "/v1/fuses", req, &out)
	return out, err
}

// ExtendFuse re-arms a directory's fuse.
func (c *Client) ExtendFuse(ctx context.Context, req api.FuseRequest) (api.Fuse, error) {
	var out api.Fuse
	err := c.do(ctx, http.MethodPost, "/v1/fuses/extend", req, &out)
	return out, err
}

// CancelFuse removes a directory's fuse without firing it.
func (c *Client) CancelFuse(ctx context.Context, dir string) (api.Fuse, error) {
	var out api.Fuse
	err := c.do(ctx, http.MethodPost, "/v1/fuses/cancel", api.FuseRequest{Directory: dir}, &out)
	return out, err
}

// EventOptions select an event stream.
type EventOptions struct {
	// Since is where the stream starts: a sequence number, a duration or
	// an RFC 3339 time (see api.ParseEventsSince); "" means from now.
	Since string
	Types []string
}

// Events streams events to fn until ctx ends, fn fails or the stream ends
// (the service stopped: reconnect with Since set to the last sequence
// number seen, or to what started reports when none was seen). started is
// called once the stream is open, with the sequence number it starts after.
func (c *Client) Events(ctx context.Context, o EventOptions, started func(after uint64), fn func(api.Event) error) error {
	q := url.Values{}
	if o.Since != "" {
		q.Set("since", o.Since)
	}
	for _, t := range o.Types {
		q.Add("type", t)
	}
	resp, err := c.send(ctx, http.MethodGet, "/v1/events?"+q.Encode(), nil, stream)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if started != nil {
		after, _ := strconv.ParseUint(resp.Header.Get(api.HeaderEventsAfter), 10, 64)
		started(after)
	}
	var fnErr error
	err = readLines(resp.Body, c.silence, c.limits.line, func(line []byte) error {
		var e api.Event
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		fnErr = fn(e)
		return fnErr
	})
	switch {
	case fnErr != nil:
		return fnErr
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return fmt.Errorf("read the event stream of the agentctl service at %s: %w", c.where(), err)
	}
	return fmt.Errorf("the event stream ended (the service stopped?)")
}

// Limits is the service's book of usage limits, by provider.
func (c *Client) Limits(ctx context.Context) ([]api.ProviderLimits, error) {
	var out []api.ProviderLimits
	err := c.do(ctx, http.MethodGet, "/v1/limits", nil, &out)
	return out, err
}
