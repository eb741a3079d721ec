package api

import (
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	tests := []struct {
		in   string
		want EventsSince
		err  bool
	}{
		{in: "42", want: EventsSince{Seq: 42}},
		{in: "0", want: EventsSince{}},
		{in: "10m", want: EventsSince{Time: now.Add(-10 * time.Minute)}},
		{in: "2026-05-06T07:00:00Z", want: EventsSince{Time: time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)}},
		{in: "-5m", err: true},
		{in: "yesterday", err: true},
	}
	for _, tt := range tests {
		got, err := ParseEventsSince(tt.in, now)
		if (err != nil) != tt.err {
			t.Fatalf("ParseEventsSince(%q) error = %v, want error %v", tt.in, err, tt.err)
		}
		if !tt.err && (got.Seq != tt.want.Seq || !got.Time.Equal(tt.want.Time)) {
			t.Errorf("ParseEventsSince(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestFilter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		patterns []string
		typ      string
		want     bool
	}{
		{nil, EventSessionStopped, true},
		{[]string{EventSessionStopped}, EventSessionStopped, true},
		{[]string{EventSessionStopped}, EventSessionStarted, false},
		{[]string{"lock.*"}, EventLockReleased, true},
		{[]string{"lock"}, EventLockAcquired, true},
		{[]string{"lock"}, EventSessionLost, false},
		{[]string{"session.*", "hook"}, EventHookFailed, true},
		{[]string{"fuse.*"}, "fusex.expired", false},
	}
	for _, tt := range tests {
		f, err := ParseEventFilter(tt.patterns)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Match(tt.typ); got != tt.want {
			t.Errorf("EventFilter%v.Match(%q) = %v, want %v", tt.patterns, tt.typ, got, tt.want)
		}
	}
	for _, bad := range []string{"session.stoped", "locks", "x.*"} {
		if _, err := ParseEventFilter([]string{bad}); err == nil {
			t.Errorf("ParseEventFilter(%q) accepted a type that does not exist", bad)
		}
	}
}
