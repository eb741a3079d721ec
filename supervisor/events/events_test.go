package events

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

func openBus(t *testing.T, path string, opts Options) *Bus {
	t.Helper()
	opts.JournalPath = path
	b, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// collect reads n events from s, failing on any error.
func collect(t *testing.T, s *Subscription, n int) []api.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []api.Event
	for len(out) < n {
		e, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		out = append(out, e)
	}
	return out
}

func wantSeqs(t *testing.T, got []api.Event, from uint64) {
	t.Helper()
	for i, e := range got {
		if e.Seq != from+uint64(i) {
			t.Fatalf("event %d has seq %d, want %d", i, e.Seq, from+uint64(i))
		}
	}
}

func TestPublishSubscribe(t *testing.T) {
	b := openBus(t, filepath.Join(t.TempDir(), "events.jsonl"), Options{})
	sub := b.Subscribe(Now)
	defer sub.Close()
	code := 3
	b.Publish(api.Event{Type: api.EventSessionStarted, Adapter: "exec", SessionID: "s1"})
	b.Publish(api.Event{Type: api.EventSessionStopped, Adapter: "exec", SessionID: "s1", Session: &api.Session{ID: "s1", ExitCode: &code}})
	got := collect(t, sub, 2)
	wantSeqs(t, got, 1)
	if got[1].Type != api.EventSessionStopped || got[1].Session == nil || *got[1].Session.ExitCode != 3 {
		t.Errorf("second event = %+v", got[1])
	}
	if got[0].Timestamp.IsZero() {
		t.Error("event not stamped")
	}
}

func TestReplayAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	b, err := Open(Options{JournalPath: path})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b.Publish(api.Event{Type: api.EventLockAcquired})
	}
	b.Close()

	b = openBus(t, path, Options{})
	if b.Last() != 5 {
		t.Fatalf("after reopen, last seq = %d, want 5", b.Last())
	}
	sub := b.Subscribe(2)
	defer sub.Close()
	b.Publish(api.Event{Type: api.EventLockReleased})
	got := collect(t, sub, 4)
	wantSeqs(t, got, 3)
	if got[3].Type != api.EventLockReleased {
		t.Errorf("live event after replay = %s", got[3].Type)
	}
}

func TestTornLineRepaired(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	content := `{"seq":1,"type":"lock.acquired","timestamp":"2026-01-02T03:04:05Z"}` + "\n" + `{"seq":2,"type":"lock.rel`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	b := openBus(t, path, Options{})
	if b.Last() != 1 {
		t.Fatalf("last = %d, want 1 (the torn line does not count)", b.Last())
	}
	b.Publish(api.Event{Type: api.EventLockReleased})
	sub := b.Subscribe(0)
	defer sub.Close()
	got := collect(t, sub, 2)
	wantSeqs(t, got, 1)
	if got[1].Type != api.EventLockReleased {
		t.Errorf("event 2 = %s, want the one published after the repair", got[1].Type)
	}
}

// A subscriber that reconnects with the last sequence number it saw, at
// random points while events are published, sees every event exactly once
// and in order.
func TestReconnectNoGapNoDuplicate(t *testing.T) {
	b := openBus(t, filepath.Join(t.TempDir(), "events.jsonl"), Options{Buffer: 4})
	const total = 2000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range total {
			b.Publish(api.Event{Type: api.EventSessionBusy})
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var last uint64
	reconnects := 0
	for last < total {
		sub := b.Subscribe(last)
		for range 1 + reconnects%37 { // read a few, then drop the connection
			e, err := sub.Next(ctx)
			if err != nil {
				t.Fatalf("after seq %d: %v", last, err)
			}
			if e.Seq != last+1 {
				t.Fatalf("got seq %d after %d", e.Seq, last)
			}
			last = e.Seq
			if last == total {
				break
			}
		}
		sub.Close()
		reconnects++
	}
	wg.Wait()
	if reconnects < 10 {
		t.Fatalf("only %d reconnects: the test did not exercise reconnection", reconnects)
	}
}

// A subscriber slower than the publisher overflows its buffer; the missed
// events come back from the journal, in order.
func TestSlowSubscriberRecoversFromJournal(t *testing.T) {
	b := openBus(t, filepath.Join(t.TempDir(), "events.jsonl"), Options{Buffer: 1})
	sub := b.Subscribe(Now)
	defer sub.Close()
	for range 50 {
		b.Publish(api.Event{Type: api.EventSessionIdle})
	}
	if sub.Dropped() == 0 || b.Dropped() != sub.Dropped() {
		t.Fatalf("dropped = %d (bus %d), want > 0 and equal", sub.Dropped(), b.Dropped())
	}
	wantSeqs(t, collect(t, sub, 50), 1)
}

func TestRotationAndGap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	b := openBus(t, path, Options{JournalBytes: 1024})
	for range 100 {
		b.Publish(api.Event{Type: api.EventFuseSet, Meta: map[string]any{"directory": "/some/dir"}})
	}
	for _, p := range []string{path, path + ".1"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 1024 {
			t.Errorf("%s is %d bytes, over the 1024 limit", p, st.Size())
		}
	}
	sub := b.Subscribe(0)
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := sub.Next(ctx)
	var gap *GapError
	if !errors.As(err, &gap) || gap.From != 1 || gap.To < 50 {
		t.Fatalf("first Next = %v, want a gap from 1 covering the rotated-out events", err)
	}
	rest := collect(t, sub, int(100-gap.To))
	wantSeqs(t, rest, gap.To+1)

	// Reopening finds the last number even right after a rotation.
	b.Close()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b2 := openBus(t, path, Options{JournalBytes: 1024})
	if b2.Last() < 90 {
		t.Errorf("last after reopen with an empty current file = %d, want the rotated file's last", b2.Last())
	}
}

func TestResolveSinceTime(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	now := base
	b := openBus(t, filepath.Join(t.TempDir(), "events.jsonl"), Options{Clock: func() time.Time { return now }})
	for i := range 6 {
		now = base.Add(time.Duration(i) * time.Minute)
		b.Publish(api.Event{Type: api.EventSessionStarted})
	}
	tests := []struct {
		since api.EventsSince
		want  uint64
	}{
		{api.EventsSince{Seq: 4}, 4},
		{api.EventsSince{Time: base.Add(150 * time.Second)}, 3}, // events 4.. are at or after 2m30s
		{api.EventsSince{Time: base.Add(-time.Hour)}, 0},
		{api.EventsSince{Time: base.Add(time.Hour)}, 6},
	}
	for _, tt := range tests {
		got, err := b.Resolve(tt.since)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("Resolve(%+v) = %d, want %d", tt.since, got, tt.want)
		}
	}
}

func TestCloseEndsSubscriptions(t *testing.T) {
	b := openBus(t, filepath.Join(t.TempDir(), "events.jsonl"), Options{})
	sub := b.Subscribe(Now)
	b.Close()
	if _, err := sub.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close = %v, want ErrClosed", err)
	}
	if e := b.Publish(api.Event{Type: api.EventSessionLost}); e.Seq != 0 {
		t.Errorf("publish after close numbered the event %d", e.Seq)
	}
}

// An idle subscriber costs next to nothing: its queue is not allocated
// ahead (a buffer of DefaultBuffer events each would be over 100 KB), and
// what a subscriber held is given back once it is closed.
func TestIdleSubscribersCostLittle(t *testing.T) {
	b := openBus(t, filepath.Join(t.TempDir(), "events.jsonl"), Options{})
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	const n = 1000
	before := heap()
	subs := make([]*Subscription, n)
	for i := range subs {
		subs[i] = b.Subscribe(Now)
	}
	// One event queued to each, then taken: the queues drain to nothing.
	b.Publish(api.Event{Type: api.EventSessionIdle})
	for _, s := range subs {
		collect(t, s, 1)
	}
	held := heap()
	if per := (int64(held) - int64(before)) / n; per > 4<<10 {
		t.Errorf("an idle subscriber holds %d bytes, want at most 4 KiB", per)
	}
	for _, s := range subs {
		s.Close()
	}
	if after := heap(); int64(after)-int64(before) > 256<<10 {
		t.Errorf("closed subscribers left %d bytes on the heap", int64(after)-int64(before))
	}
}
