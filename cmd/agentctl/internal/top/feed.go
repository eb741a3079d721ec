package top

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
)

// Source is what the view reads and acts through: the session operations
// and the service's event stream.
type Source interface {
	client.Sessions
	Events(ctx context.Context, o client.EventOptions, started func(after uint64), fn func(api.Event) error) error
}

// snapshotMsg is a list answer; asOf is the last event sequence number the
// view had applied when it asked, so events newer than the answer win.
type snapshotMsg struct {
	list api.SessionList
	asOf uint64
}

// eventMsg is one event off the stream.
type eventMsg api.Event

// linkMsg says the event stream is down ("" when it is up again).
type linkMsg string

// feed keeps the view fed until ctx ends: it opens the event stream, takes
// a snapshot once the stream is open (so nothing falls between the two),
// then hands on every event. When the stream breaks (the service
// restarted), it says so, reconnects from the last sequence number seen
// and takes a new snapshot: no row is lost or shown twice.
func feed(ctx context.Context, src Source, o api.ListOptions, send func(any)) {
	var last uint64
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		since := ""
		if last > 0 {
			since = strconv.FormatUint(last, 10)
		}
		err := src.Events(ctx, client.EventOptions{Since: since, Types: []string{"session"}},
			func(after uint64) {
				last = max(last, after)
				send(linkMsg(""))
				l, err := src.List(ctx, o)
				if err != nil {
					// The view asks again until a list answers.
					send(listErrMsg(fmt.Sprintf("list sessions: %v", err)))
					return
				}
				send(snapshotMsg{list: l, asOf: last})
				backoff = 100 * time.Millisecond
			},
			func(e api.Event) error {
				last = max(last, e.Seq)
				send(eventMsg(e))
				return nil
			})
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return
		}
		msg := "event stream ended (the service stopped?); reconnecting"
		if err != nil {
			msg = fmt.Sprintf("%v; reconnecting", err)
		}
		send(linkMsg(msg))
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
