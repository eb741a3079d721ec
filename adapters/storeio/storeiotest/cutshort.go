package storeiotest

import (
	"context"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

// CheckCutShortGoesOn checks that discoveries whose context ends while a
// store of n sessions is first read each keep what they read, so the
// next goes on from there: a has not read the store yet, and read counts
// the sessions (or files) it has read so far, each time one is read.
// Each discovery gets a deadline; one that ends before it read a
// twentieth of the store (the machine is busy, or the store's fixed cost
// is high) gets a longer one next, so the check holds at any speed and
// takes a few dozen discoveries: what it proves is that, once the store
// is read, it was read once (read is n), with at least one discovery cut
// short after reading some of it.
func CheckCutShortGoesOn(t *testing.T, a adapters.Adapter, n int, read func() int64) {
	t.Helper()
	deadline := 10 * time.Millisecond
	var calls, cutAfterReading int
	for {
		calls++
		before := read()
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		ss, err := a.Discover(ctx)
		cancel()
		if err == nil {
			if len(ss) != n {
				t.Fatalf("%d sessions, want %d", len(ss), n)
			}
			break
		}
		got := read() - before
		if got > 0 {
			cutAfterReading++
		}
		if got < int64(n/20) {
			deadline += deadline / 2
		}
		// Twenty that read a twentieth each, and the ones that grew the
		// deadline: 40 of those make it hours long.
		if calls > 20+40 {
			t.Fatalf("not read after %d cut-short discoveries (the last of %s): %v", calls, deadline, err)
		}
	}
	if got := read(); got != int64(n) {
		t.Errorf("%d sessions read for a store of %d: a cut-short discovery's reads were done again", got, n)
	}
	if cutAfterReading == 0 {
		t.Errorf("no discovery was cut short after reading part of the store (%d calls, the last deadline %s)", calls, deadline)
	}
	t.Logf("read in %d discoveries, %d cut short after reading some, the last deadline %s", calls, cutAfterReading, deadline)
}
