package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
)

// readingSource is a service that says how far its reading of the
// agents' stores got (client.Client).
type readingSource interface {
	DaemonStatus(ctx context.Context) (api.DaemonStatus, error)
}

// readingProgress shows, on a terminal, how far a service got reading the
// stores while a command waits for it: a first list of a large store
// (nothing cached yet) takes seconds, and a silent wait looks hung.
type readingProgress struct {
	w   io.Writer // a terminal (standard error)
	src readingSource
	// after is how long a wait stays silent; every, how often the line
	// is redrawn.
	after, every time.Duration
}

// The line shows after a second of waiting, redrawn five times a second.
const (
	progressAfter = time.Second
	progressEvery = 200 * time.Millisecond
)

// run calls fn; while it waits past after, p's line says how far the
// reading got ("reading 7,000 sessions… 3,200"), and is erased before run
// returns.
func (p readingProgress) run(ctx context.Context, fn func() error) error {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan bool)
	go func() { done <- p.show(ctx) }()
	err := fn()
	cancel()
	if <-done {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	return err
}

// show redraws the line until ctx ends, and says whether it drew one.
func (p readingProgress) show(ctx context.Context) bool {
	t := time.NewTimer(p.after)
	defer t.Stop()
	drawn := false
	for {
		select {
		case <-ctx.Done():
			return drawn
		case <-t.C:
		}
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := p.src.DaemonStatus(qctx)
		cancel()
		if err == nil && st.Reading != nil && st.Reading.Found > 0 && ctx.Err() == nil {
			fmt.Fprintf(p.w, "\r\x1b[Kreading %s sessions… %s", text.Count(st.Reading.Found), text.Count(st.Reading.Read))
			drawn = true
		}
		t.Reset(p.every)
	}
}
