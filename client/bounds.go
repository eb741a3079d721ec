package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/internal/text"
)

// What an answer may hold and how long it may take. Another host's
// service (over ssh) may be broken or hostile: no answer of it may take
// this process's memory, or hang a command, without bound. The sizes are
// several times what a real answer holds: a session in a list is 0.5 to
// 1.5 KB, so a list of 50,000 (the most a service is meant to hold) is
// 25 to 75 MB; a transcript is the last messages of a session; an error
// is a sentence.
const (
	// MaxListReply bounds a list's answer.
	MaxListReply = 128 << 20
	// maxListSessions bounds the sessions of a list, at twice the most a
	// service is meant to hold: decoded, each costs 512 bytes before its
	// strings, and "{}," is three bytes of answer.
	maxListSessions = 100_000
	// MaxReply bounds any other answer that is one value (a session, a
	// transcript, an explanation…).
	MaxReply = 64 << 20
	// maxListSession bounds one session in a list's answer: its command
	// line is the most of it, and the system bounds a command line's
	// length (2 MiB on Linux by default).
	maxListSession = 8 << 20
	// maxErrorReply bounds an error's answer.
	maxErrorReply = 1 << 20
	// maxStreamLine bounds one line of a stream (a log chunk, an event).
	maxStreamLine = 16 << 20
	// maxResponseHeader bounds an answer's header.
	maxResponseHeader = 64 << 10
	// replyIdle is the longest pause within an answer that is one value:
	// the service writes one whole, so a pause this long is a service
	// that stopped. Streams (logs, events) have their keep-alive instead
	// (streamSilence), and an attached terminal may be quiet for hours.
	replyIdle = 30 * time.Second
	// ReplyTime bounds the reading of an answer that is one value, once
	// it began (answerTimeout bounds the wait for it to begin): a list of
	// 50,000 sessions over a slow link is read in well under a minute.
	ReplyTime = 5 * time.Minute
)

// limits are the bounds a client applies (tests make them small).
type limits struct {
	list, session, reply, errorReply, line int64
	sessions                               int
	idle, total                            time.Duration
}

func defaultLimits() limits {
	return limits{list: MaxListReply, sessions: maxListSessions, session: maxListSession, reply: MaxReply, errorReply: maxErrorReply, line: maxStreamLine, idle: replyIdle, total: ReplyTime}
}

// ErrTooLarge marks an answer, or a line of a stream, over its bound.
var ErrTooLarge = errors.New("over its bound")

// ErrStalled marks an answer that stopped coming, or came too slowly.
var ErrStalled = errors.New("stalled")

// boundedBody reads an answer that is one value within bounds: at most
// max bytes, no pause longer than idle, all of it within total. Past a
// bound the request is cancelled (which ends a read that waits) and the
// read fails saying which service exceeded what.
type boundedBody struct {
	r      io.ReadCloser
	left   int64
	max    int64
	what   string // "host build's answer to GET /v1/sessions"
	idle   time.Duration
	cancel context.CancelCauseFunc
	idleT  *time.Timer
	totalT *time.Timer
	why    atomic.Pointer[error]
}

func newBoundedBody(r io.ReadCloser, cancel context.CancelCauseFunc, what string, max int64, l limits) *boundedBody {
	b := &boundedBody{r: r, left: max, max: max, what: what, idle: l.idle, cancel: cancel}
	// The idle timer runs while a read waits, not while the reader
	// works on what came.
	b.idleT = time.AfterFunc(l.idle, func() {
		b.stop(fmt.Errorf("%s: %w: nothing came for %s", what, ErrStalled, l.idle))
	})
	b.idleT.Stop()
	b.totalT = time.AfterFunc(l.total, func() {
		b.stop(fmt.Errorf("%s: %w: not read whole within %s", what, ErrStalled, l.total))
	})
	return b
}

func (b *boundedBody) stop(err error) {
	if b.why.CompareAndSwap(nil, &err) {
		b.cancel(err)
	}
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if why := b.why.Load(); why != nil {
		return 0, *why
	}
	// One byte past the bound tells an answer over it from one that ends
	// at it.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	b.idleT.Reset(b.idle)
	n, err := b.r.Read(p)
	b.idleT.Stop()
	if int64(n) > b.left {
		b.stop(fmt.Errorf("%s: %w of %s", b.what, ErrTooLarge, text.Bytes(b.max)))
		return int(b.left), *b.why.Load()
	}
	b.left -= int64(n)
	if err != nil && err != io.EOF {
		if why := b.why.Load(); why != nil {
			return n, *why
		}
	}
	return n, err
}

func (b *boundedBody) Close() error {
	b.idleT.Stop()
	b.totalT.Stop()
	return b.r.Close()
}
