// Package events carries what happens in the service to whoever listens:
// a broadcaster with per-subscriber bounded buffers, backed by a bounded
// on-disk journal with sequence numbers, so a consumer that reconnects with
// the last sequence number it saw misses nothing and sees nothing twice.
package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/api"
)

// DefaultBuffer is how many events a subscriber may fall behind before the
// broadcaster stops queueing for it; it then catches up from the journal.
const DefaultBuffer = 1024

// Now asks Subscribe for only the events published from now on.
const Now = math.MaxUint64

// ErrClosed is returned by Next once the bus is closed.
var ErrClosed = errors.New("event stream closed")

// GapError reports events a subscriber can no longer get: they were
// dropped from its buffer and have since rotated out of the journal (or
// were never written to it). Next returns it once, then goes on with the
// events that follow.
type GapError struct {
	From, To uint64 // the missing sequence numbers, inclusive
}

func (e *GapError) Error() string {
	return fmt.Sprintf("events %d to %d are no longer available", e.From, e.To)
}

// Options configures a Bus.
type Options struct {
	// JournalPath is the journal file (events.jsonl in the agentctl home).
	JournalPath string
	// JournalBytes is the size at which the journal rotates
	// (DefaultJournalBytes when 0).
	JournalBytes int64
	// Buffer is each subscriber's queue length (DefaultBuffer when 0).
	Buffer int
	Logger *slog.Logger
	// Clock stamps events; time.Now when nil.
	Clock func() time.Time
}

// Bus publishes events to subscribers and to the journal.
type Bus struct {
	journal *journal
	buffer  int
	log     *slog.Logger
	clock   func() time.Time
	dropped atomic.Uint64

	// mu orders publication: an event is numbered, journaled and queued to
	// every subscriber under it, and a subscriber registers under it, so
	// "what was published before" and "what is sent to me" never overlap
	// or leave a gap.
	mu     sync.Mutex
	seq    uint64
	subs   map[*Subscription]struct{}
	closed bool
}

// Open opens the journal and returns a bus numbering on from its last event.
func Open(opts Options) (*Bus, error) {
	j, last, err := openJournal(opts.JournalPath, opts.JournalBytes)
	if err != nil {
		return nil, err
	}
	b := &Bus{journal: j, buffer: opts.Buffer, log: opts.Logger, clock: opts.Clock, seq: last, subs: map[*Subscription]struct{}{}}
	if b.buffer <= 0 {
		b.buffer = DefaultBuffer
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.clock == nil {
		b.clock = time.Now
	}
	return b, nil
}

// Publish numbers e, stamps it when it has no time, writes it to the
// journal and queues it to every subscriber without waiting for any. It
// returns the event as published. After Close it does nothing.
func (b *Bus) Publish(e api.Event) api.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return e
	}
	b.seq++
	e.Seq = b.seq
	if e.Timestamp.IsZero() {
		e.Timestamp = b.clock().UTC()
	}
	if err := b.journal.append(e); err != nil {
		// Live subscribers still get it; a replay will report the gap.
		b.log.Warn("event not journaled", "seq", e.Seq, "type", e.Type, "err", err)
	}
	for s := range b.subs {
		select {
		case s.ch <- e:
		default:
			s.dropped.Add(1)
			b.dropped.Add(1)
			select {
			case s.lagging <- struct{}{}:
			default:
			}
		}
	}
	return e
}

// Last returns the sequence number of the last event published.
func (b *Bus) Last() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

// Dropped counts events a subscriber's full buffer could not take (each
// is then read back from the journal when still there).
func (b *Bus) Dropped() uint64 { return b.dropped.Load() }

// Resolve turns an api.EventsSince into the sequence number to subscribe after.
func (b *Bus) Resolve(s api.EventsSince) (uint64, error) {
	if s.Time.IsZero() {
		return s.Seq, nil
	}
	return b.journal.seqBefore(s.Time, b.Last())
}

// Subscribe returns a subscription to every event with a sequence number
// above after, the journaled ones first, then live ones. after = Now
// subscribes to future events only; a number beyond the last event (a
// journal that was reset) is treated as Now.
func (b *Bus) Subscribe(after uint64) *Subscription {
	s := &Subscription{bus: b, ch: make(chan api.Event, b.buffer), lagging: make(chan struct{}, 1)}
	b.mu.Lock()
	defer b.mu.Unlock()
	s.head = b.seq
	s.next = min(after, b.seq) + 1
	s.start = s.next - 1
	if b.closed {
		close(s.ch)
		return s
	}
	b.subs[s] = struct{}{}
	return s
}

// Close ends every subscription and closes the journal.
func (b *Bus) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	for s := range b.subs {
		close(s.ch)
		delete(b.subs, s)
	}
	return b.journal.close()
}

// Subscription is one consumer's ordered view of the events.
type Subscription struct {
	bus *Bus
	ch  chan api.Event
	// lagging is signalled when the buffer overflowed: the consumer then
	// reads what it missed from the journal.
	lagging chan struct{}
	// start is the sequence number the subscription began after.
	start uint64
	// head is the last event published before the subscription started:
	// events up to it come from the journal, later ones from ch.
	head uint64
	// next is the sequence number Next returns next. Only the consumer's
	// goroutine touches it and pending.
	next    uint64
	pending []api.Event
	dropped atomic.Uint64
}

// Dropped counts events this subscriber's buffer could not take.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// After is the sequence number the subscription started after: a consumer
// that reconnects with it (or the last number it saw, once it saw one)
// misses nothing.
func (s *Subscription) After() uint64 { return s.start }

// Next returns the next event in sequence order. It returns a *GapError
// when events are missing (and the following event on the next call),
// ctx.Err() when ctx ends, and ErrClosed when the bus closes.
func (s *Subscription) Next(ctx context.Context) (api.Event, error) {
	for {
		if len(s.pending) > 0 {
			e := s.pending[0]
			if e.Seq < s.next {
				s.pending = s.pending[1:]
				continue
			}
			if e.Seq > s.next {
				gap := &GapError{From: s.next, To: e.Seq - 1}
				s.next = e.Seq
				return api.Event{}, gap
			}
			s.pending = s.pending[1:]
			s.next++
			return e, nil
		}
		if s.next <= s.head {
			// Catching up on what was published before Subscribe.
			if err := s.fill(s.head); err != nil {
				return api.Event{}, err
			}
			if len(s.pending) == 0 {
				gap := &GapError{From: s.next, To: s.head}
				s.next = s.head + 1
				return api.Event{}, gap
			}
			continue
		}
		select {
		case e, ok := <-s.ch:
			if !ok {
				return api.Event{}, ErrClosed
			}
			switch {
			case e.Seq < s.next:
				continue // already replayed from the journal
			case e.Seq > s.next:
				// The buffer overflowed: the missed events are in the
				// journal, written before e was queued.
				if err := s.fill(e.Seq - 1); err != nil {
					return api.Event{}, err
				}
				s.pending = append(s.pending, e)
				continue
			}
			s.next++
			return e, nil
		case <-s.lagging:
			if err := s.fill(s.bus.Last()); err != nil {
				return api.Event{}, err
			}
		case <-ctx.Done():
			return api.Event{}, ctx.Err()
		}
	}
}

// fill queues the journaled events from s.next up to upto.
func (s *Subscription) fill(upto uint64) error {
	return s.bus.journal.read(s.next-1, upto, func(e api.Event) error {
		s.pending = append(s.pending, e)
		return nil
	})
}

// Close stops the subscription; the bus stops queueing to it.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	delete(s.bus.subs, s)
}
