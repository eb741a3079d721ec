package events

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
func collect(t *testing.T, s *Subscription, n int) []Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []Event
	for len(out) < n {
		e, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		out = append(out, e)
	}
	return out
}

func wantSeqs(t *testing.T, got []Event, from uint64) {
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
	b.Publish(Event{Type: SessionStarted, Adapter: "exec", SessionID: "s1"})
	b.Publish(Event{Type: SessionStopped, Adapter: "exec", SessionID: "s1", Session: &api.Session{ID: "s1", ExitCode: &code}})
	got := collect(t, sub, 2)
	wantSeqs(t, got, 1)
	if got[1].Type != SessionStopped || got[1].Session == nil || *got[1].Session.ExitCode != 3 {
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
		b.Publish(Event{Type: LockAcquired})
	}
	b.Close()

	b = openBus(t, path, Options{})
	if b.Last() != 5 {
		t.Fatalf("after reopen, last seq = %d, want 5", b.Last())
	}
	sub := b.Subscribe(2)
	defer sub.Close()
	b.Publish(Event{Type: LockReleased})
	got := collect(t, sub, 4)
	wantSeqs(t, got, 3)
	if got[3].Type != LockReleased {
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
	b.Publish(Event{Type: LockReleased})
	sub := b.Subscribe(0)
	defer sub.Close()
	got := collect(t, sub, 2)
	wantSeqs(t, got, 1)
	if got[1].Type != LockReleased {
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
			b.Publish(Event{Type: SessionBusy})
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
		b.Publish(Event{Type: SessionIdle})
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
		b.Publish(Event{Type: FuseSet, Meta: map[string]any{"directory": "/some/dir"}})
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
		b.Publish(Event{Type: SessionStarted})
	}
	tests := []struct {
		since Since
		want  uint64
	}{
		{Since{Seq: 4}, 4},
		{Since{Time: base.Add(150 * time.Second)}, 3}, // events 4.. are at or after 2m30s
		{Since{Time: base.Add(-time.Hour)}, 0},
		{Since{Time: base.Add(time.Hour)}, 6},
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
	if e := b.Publish(Event{Type: SessionLost}); e.Seq != 0 {
		t.Errorf("publish after close numbered the event %d", e.Seq)
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	tests := []struct {
		in   string
		want Since
		err  bool
	}{
		{in: "42", want: Since{Seq: 42}},
		{in: "0", want: Since{}},
		{in: "10m", want: Since{Time: now.Add(-10 * time.Minute)}},
		{in: "2026-05-06T07:00:00Z", want: Since{Time: time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)}},
		{in: "-5m", err: true},
		{in: "yesterday", err: true},
	}
	for _, tt := range tests {
		got, err := ParseSince(tt.in, now)
		if (err != nil) != tt.err {
			t.Fatalf("ParseSince(%q) error = %v, want error %v", tt.in, err, tt.err)
		}
		if !tt.err && (got.Seq != tt.want.Seq || !got.Time.Equal(tt.want.Time)) {
			t.Errorf("ParseSince(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestFilter(t *testing.T) {
	tests := []struct {
		patterns []string
		typ      string
		want     bool
	}{
		{nil, SessionStopped, true},
		{[]string{SessionStopped}, SessionStopped, true},
		{[]string{SessionStopped}, SessionStarted, false},
		{[]string{"lock.*"}, LockReleased, true},
		{[]string{"lock"}, LockAcquired, true},
		{[]string{"lock"}, SessionLost, false},
		{[]string{"session.*", "hook"}, HookFailed, true},
		{[]string{"fuse.*"}, "fusex.expired", false},
	}
	for _, tt := range tests {
		f, err := ParseFilter(tt.patterns)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Match(tt.typ); got != tt.want {
			t.Errorf("Filter%v.Match(%q) = %v, want %v", tt.patterns, tt.typ, got, tt.want)
		}
	}
	for _, bad := range []string{"session.stoped", "locks", "x.*"} {
		if _, err := ParseFilter([]string{bad}); err == nil {
			t.Errorf("ParseFilter(%q) accepted a type that does not exist", bad)
		}
	}
}
