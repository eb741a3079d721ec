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
// The queue grows to it only while the subscriber is behind.
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
		if !s.offer(e, b.buffer) {
			s.dropped.Add(1)
			b.dropped.Add(1)
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
	s := &Subscription{bus: b, wake: make(chan struct{}, 1)}
	b.mu.Lock()
	defer b.mu.Unlock()
	s.head = b.seq
	s.next = min(after, b.seq) + 1
	s.start = s.next - 1
	if b.closed {
		s.end()
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
		s.end()
		delete(b.subs, s)
	}
	return b.journal.close()
}

// Subscription is one consumer's ordered view of the events.
type Subscription struct {
	bus *Bus
	// wake tells the consumer that queued, lagging or closed changed.
	wake chan struct{}
	// mu guards queued, lagging and closed. The queue holds what the
	// consumer has yet to take, up to the bus's buffer, and no more memory
	// than that: an idle subscriber costs next to nothing.
	mu     sync.Mutex
	queued []api.Event
	// lagging says the queue overflowed: the consumer then reads what it
	// missed from the journal.
	lagging bool
	closed  bool
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
		e, ok, lagging, closed := s.take()
		if !ok {
			switch {
			case lagging:
				if err := s.fill(s.bus.Last()); err != nil {
					return api.Event{}, err
				}
				continue
			case closed:
				return api.Event{}, ErrClosed
			}
			select {
			case <-s.wake:
				continue
			case <-ctx.Done():
				return api.Event{}, ctx.Err()
			}
		}
		switch {
		case e.Seq < s.next:
			continue // already replayed from the journal
		case e.Seq > s.next:
			// The queue overflowed: the missed events are in the journal,
			// written before e was queued.
			if err := s.fill(e.Seq - 1); err != nil {
				return api.Event{}, err
			}
			s.pending = append(s.pending, e)
			continue
		}
		s.next++
		return e, nil
	}
}

// offer queues e for the consumer unless its queue holds max events
// already; then it marks the subscription lagging and reports false.
func (s *Subscription) offer(e api.Event, max int) bool {
	s.mu.Lock()
	ok := len(s.queued) < max
	if ok {
		s.queued = append(s.queued, e)
	} else {
		s.lagging = true
	}
	s.mu.Unlock()
	s.signal()
	return ok
}

// take returns the next queued event (ok), else whether the queue
// overflowed since the last look (lagging, cleared by the look) and
// whether the bus closed. A drained queue gives its memory back.
func (s *Subscription) take() (e api.Event, ok, lagging, closed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queued) > 0 {
		e = s.queued[0]
		s.queued[0] = api.Event{}
		s.queued = s.queued[1:]
		if len(s.queued) == 0 {
			s.queued = nil
		}
		return e, true, false, false
	}
	lagging, s.lagging = s.lagging, false
	return e, false, lagging, s.closed
}

// end marks the subscription closed: the consumer gets ErrClosed once it
// has taken what was queued.
func (s *Subscription) end() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.signal()
}

func (s *Subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
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
