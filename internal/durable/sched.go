package durable

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Sleep waits d, or less when ctx ends first, in which case it returns
// ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Each runs fn(ctx, i) for every i in [0, n), at most limit at once (one
// when limit < 1), handing out indexes in order. The first error cancels
// the context given to the calls still running, no index is handed out
// after it, and it is what Each returns; when ctx ends first, Each returns
// ctx's error.
func Each(ctx context.Context, limit, n int, fn func(ctx context.Context, i int) error) error {
	if n <= 0 {
		return ctx.Err()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		next  atomic.Int64
		once  sync.Once
		first error
		wg    sync.WaitGroup
	)
	fail := func(err error) {
		once.Do(func() { first = err; cancel(err) })
	}
	for range min(max(limit, 1), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return context.Cause(ctx)
}
