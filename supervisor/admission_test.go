package supervisor

import (
	"context"
	"testing"
	"time"
)

// The budget is handed out first come, first served: a large request
// waiting is not passed by smaller ones, a wait that gives up lets the
// next in, and what is released goes to those waiting.
func TestAdmission(t *testing.T) {
	t.Parallel()
	a := newAdmission(10)
	ctx := context.Background()
	if err := a.acquire(ctx, 6); err != nil {
		t.Fatal(err)
	}
	big := make(chan error, 1)
	go func() { big <- a.acquire(ctx, 8) }()
	waitQueued(t, a, 1)
	// 4 are free, but the 8 waits first: a small one queues behind it.
	small := make(chan error, 1)
	go func() { small <- a.acquire(ctx, 2) }()
	waitQueued(t, a, 2)
	// One that gives up leaves the queue as it was.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if err := a.acquire(gone, 1); err == nil {
		t.Fatal("an acquire whose context ended succeeded while others wait")
	}
	a.release(6)
	if err := <-big; err != nil {
		t.Fatal(err)
	}
	if err := <-small; err != nil {
		t.Fatal(err)
	}
	a.release(8)
	a.release(2)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.free != 10 || len(a.queue) != 0 {
		t.Errorf("after every release: %d free, %d queued; want 10 and none", a.free, len(a.queue))
	}
}

// waitQueued waits until n acquires are queued.
func waitQueued(t *testing.T, a *admission, n int) {
	t.Helper()
	eventually(t, 10*time.Second, "acquires queued", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.queue) == n
	})
}
