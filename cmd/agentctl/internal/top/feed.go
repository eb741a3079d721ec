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

// Events is the service's event stream.
type Events interface {
	Events(ctx context.Context, o client.EventOptions, started func(after uint64), fn func(api.Event) error) error
}

// Decider answers a session that waits for a permission (approve, deny).
type Decider interface {
	Decide(ctx context.Context, id string, d api.Decision) (api.Session, error)
}

// Source is what the view reads and acts through: the session operations,
// the answers to waiting sessions and the service's event stream.
type Source interface {
	client.Sessions
	Decider
	Events
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

// Follow keeps the stream of session events open until ctx ends. opened
// is called each time it (re)opens, with the sequence number it starts
// after, before any of its events; event with each event; down when it
// broke (the service stopped or restarted), before it reconnects from
// the last sequence number seen, so no event is missed in between.
func Follow(ctx context.Context, src Events, opened func(after uint64), event func(api.Event), down func(error)) {
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
				backoff = 100 * time.Millisecond
				opened(after)
			},
			func(e api.Event) error {
				last = max(last, e.Seq)
				event(e)
				return nil
			})
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return
		}
		if err == nil {
			err = errors.New("the event stream ended (the service stopped?)")
		}
		down(err)
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

// feed keeps the view fed until ctx ends: once the stream is open it
// takes a snapshot (so nothing falls between the two), then hands on
// every event. When the stream breaks it says so, and on reconnecting
// takes a new snapshot: no row is lost or shown twice.
func feed(ctx context.Context, src Source, o api.ListOptions, send func(any)) {
	Follow(ctx, src,
		func(after uint64) {
			send(linkMsg(""))
			l, err := src.List(ctx, o)
			if err != nil {
				// The view asks again until a list answers.
				send(listErrMsg(fmt.Sprintf("list sessions: %v", err)))
				return
			}
			send(snapshotMsg{list: l, asOf: after})
		},
		func(e api.Event) { send(eventMsg(e)) },
		func(err error) { send(linkMsg(fmt.Sprintf("%v; reconnecting", err))) })
}
