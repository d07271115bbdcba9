package durable

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestEachRunsAtMostLimit: with a limit of 3, never more than 3 calls run
// at once, and every index runs exactly once.
func TestEachRunsAtMostLimit(t *testing.T) {
	const n, limit = 50, 3
	var running, peak atomic.Int32
	var mu sync.Mutex
	seen := map[int]int{}
	gate := make(chan struct{})
	go func() {
		// Let the workers pile up before each release, so that an
		// unbounded loop would be caught running more than limit.
		for range n {
			time.Sleep(time.Millisecond)
			gate <- struct{}{}
		}
	}()
	err := Each(context.Background(), limit, n, func(ctx context.Context, i int) error {
		r := running.Add(1)
		for {
			p := peak.Load()
			if r <= p || peak.CompareAndSwap(p, r) {
				break
			}
		}
		<-gate
		mu.Lock()
		seen[i]++
		mu.Unlock()
		running.Add(-1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p > limit || p < 2 {
		t.Fatalf("peak of %d calls at once, want 2..%d", p, limit)
	}
	for i := range n {
		if seen[i] != 1 {
			t.Fatalf("index %d ran %d times", i, seen[i])
		}
	}
}

// TestEachStopsAtFirstError: the first error cancels the calls running,
// no index starts after it, and it is returned.
func TestEachStopsAtFirstError(t *testing.T) {
	boom := errors.New("boom")
	var started atomic.Int32
	err := Each(context.Background(), 2, 1000, func(ctx context.Context, i int) error {
		started.Add(1)
		if i == 5 {
			return boom
		}
		if i > 5 {
			// A call running beside the failure sees its context end.
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the first error", err)
	}
	if s := started.Load(); s > 8 {
		t.Fatalf("%d calls started; the loop went on past the error", s)
	}
}

// TestEachAndSleepHonourContext: a cancelled context stops both.
func TestEachAndSleepHonourContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	if err := Each(ctx, 4, 10, func(context.Context, int) error { ran = true; return nil }); !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("Each on a cancelled context: %v, ran %v", err, ran)
	}
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep: %v", err)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep: %v", err)
	}
}
