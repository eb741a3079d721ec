package cluster

import (
	"bytes"
	"context"
	"time"

	"k8s.io/client-go/tools/remotecommand"

	"github.com/agentctl/agentctl/api"
)

// inputTimeout bounds one write to a session's terminal.
const inputTimeout = 10 * time.Second

// Input types data into the session's terminal through the API's attach:
// the container's standard input, which the monitor writes to the pty.
func (c *Cluster) Input(ctx context.Context, id string, data []byte) (api.Session, error) {
	at, err := c.attachRunning(ctx, id, false)
	if err != nil {
		return at.sess, err
	}
	full, s, exec := at.id, at.sess, at.exec
	ctx, cancel := context.WithTimeout(ctx, inputTimeout)
	defer cancel()
	if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: bytes.NewReader(data)}); err != nil {
		return api.Session{}, c.explain("type into "+full, err)
	}
	return s, nil
}
