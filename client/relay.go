package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/agentctl/agentctl/api"
)

type relayKey struct{}

// WithRelay marks the requests made with ctx as relayed for r, a process
// of this machine (api.RelayedHeader): the service holds it to the rules
// its caller is held to. A client of another machine's service sends no
// relay, whose pid would name nothing there.
func WithRelay(ctx context.Context, r api.Relayed) context.Context {
	return context.WithValue(ctx, relayKey{}, r)
}

// setRelay adds ctx's relay, if any, to a request to this machine's service.
func (c *Client) setRelay(ctx context.Context, req *http.Request) error {
	r, ok := ctx.Value(relayKey{}).(api.Relayed)
	if !ok || c.remote != nil {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	req.Header.Set(api.RelayedHeader, string(b))
	return nil
}
