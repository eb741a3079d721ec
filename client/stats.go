package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/agentctl/agentctl/api"
)

// Stats returns what the sessions named by ids cost (every running one
// the service started when ids is empty), and the machine's load and
// memory.
func (c *Client) Stats(ctx context.Context, ids []string) (api.Stats, error) {
	q := url.Values{}
	for _, id := range ids {
		q.Add("id", id)
	}
	path := "/v1/stats"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out api.Stats
	err := c.do(ctx, http.MethodGet, path, nil, &out)
	return out, err
}
