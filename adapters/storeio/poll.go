package storeio

import (
	"context"
	"time"
)

// Poll calls check at once and then every interval until it reports done,
// fails, or ctx ends (then it returns ctx's error). It is for learning what
// an agent writes only after it starts (its session id), where no event
// says when.
func Poll(ctx context.Context, interval time.Duration, check func() (done bool, err error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if done, err := check(); done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
