package storeio

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// Parallel runs fn(i) for i in [0, n) on up to GOMAXPROCS goroutines. Once
// ctx is done it hands out no more work and returns ctx's error; fn calls
// already running finish.
func Parallel(ctx context.Context, n int, fn func(i int)) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}
