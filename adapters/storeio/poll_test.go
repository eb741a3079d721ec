package storeio

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	calls := 0
	err := Poll(context.Background(), time.Millisecond, func() (bool, error) { calls++; return calls == 3, nil })
	if err != nil || calls != 3 {
		t.Errorf("done on the third check: %v after %d calls", err, calls)
	}
	boom := errors.New("boom")
	if err := Poll(context.Background(), time.Millisecond, func() (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Errorf("a failing check: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := Poll(ctx, time.Millisecond, func() (bool, error) { return false, nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("never done: %v, want the context's error", err)
	}
}
