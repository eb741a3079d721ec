package storeio

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestParallelRunsEachIndexOnce(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 7, 1000} {
		counts := make([]atomic.Int32, n)
		if err := Parallel(context.Background(), n, func(i int) { counts[i].Add(1) }); err != nil {
			t.Fatal(err)
		}
		for i := range counts {
			if c := counts[i].Load(); c != 1 {
				t.Fatalf("n=%d: index %d ran %d times", n, i, c)
			}
		}
	}
}

func TestParallelStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int32
	err := Parallel(ctx, 10000, func(i int) {
		if ran.Add(1) == 10 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if n := ran.Load(); n >= 10000 {
		t.Errorf("all %d items ran after the cancel", n)
	}
}
