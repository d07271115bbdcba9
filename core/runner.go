package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// sinkRunner owns one sink: its queue, the goroutine that feeds it, and the
// retry layer around its Write.
//
//	enqueue ──► q (bounded; overflow policy) ──► run: batch ──► write (retry, partial, permanent)
//	                                               │
//	requestFlush ──► flushes (target = entries given) ──► serve when handled ≥ target
type sinkRunner struct {
	id       ID
	sink     Sink
	overflow Overflow
	volatile bool
	// idempotent: the sink also gets what dedup drops as the seeding
	// store's (Idempotent).
	idempotent bool
	log        hclog.Logger
	q          chan Entry
	kick       chan struct{}
	stop       chan struct{} // closed when Shutdown begins
	done       chan struct{}
	p          *Pipeline
	err        error

	stopCtx atomic.Pointer[ctxBox]
	stalled atomic.Bool
	// failingSince is when the sink's writes began to fail (zero while
	// they succeed); once it is older than RetryFor, each batch gets one
	// attempt, so a dead sink does not hold every batch for RetryFor.
	failingSince time.Time
	loggedDrop   time.Time

	// given counts entries put in q (under the gate, shared); handled
	// counts entries the runner finished with, written or dropped.
	given, handled atomic.Int64

	flushMu sync.Mutex
	flushes []flushReq

	written, batches, writeErrors, retries, nflushes, waits atomic.Int64
	lastErr                                                 atomic.Pointer[string]

	dropMu  sync.Mutex
	dropped int64
	reasons map[string]int64
}

type flushReq struct {
	target int64
	ctx    context.Context
	reply  chan error
}

type ctxBox struct{ ctx context.Context }

// The reasons an entry is dropped for a sink.
const (
	dropQueueFull = "queue_full"
	dropRetries   = "retries_exhausted"
	dropRejected  = "rejected"
	dropShutdown  = "shutdown"
)

// enqueue puts e in the queue under the overflow policy. Called with the
// pipeline's gate shared.
func (r *sinkRunner) enqueue(ctx context.Context, e Entry) {
	e.Lease.Retain(1) // the runner's, returned once the sink is done with it
	select {
	case r.q <- e:
		r.given.Add(1)
		return
	default:
	}
	if r.overflow.Mode == OverflowDrop || r.stalled.Load() {
		r.drop(dropQueueFull, e)
		e.Lease.Release()
		return
	}
	p := r.p
	p.waits.Add(1)
	r.waits.Add(1)
	start := time.Now()
	t := time.NewTimer(r.overflow.Wait)
	defer func() {
		t.Stop()
		p.waitNanos.Add(int64(time.Since(start)))
	}()
	select {
	case r.q <- e:
		r.given.Add(1)
	case <-t.C:
		if !r.stalled.Swap(true) {
			r.log.Error("sink queue full; dropping entries for this sink until it catches up",
				"waited", r.overflow.Wait, "queue_size", cap(r.q), "last_error", r.lastError())
		}
		r.drop(dropQueueFull, e)
		e.Lease.Release()
	case <-ctx.Done():
		r.drop(dropQueueFull, e)
		e.Lease.Release()
	}
}

// release returns the runner's references on the entries' leases: the
// sink is done with them (written, or dropped and counted).
func release(es []Entry) {
	for i := range es {
		es[i].Lease.Release()
	}
}

// drop counts entries this sink will never have (their leases are the
// caller's to release).
func (r *sinkRunner) drop(reason string, es ...Entry) {
	if len(es) == 0 {
		return
	}
	r.dropMu.Lock()
	r.dropped += int64(len(es))
	r.reasons[reason] += int64(len(es))
	r.dropMu.Unlock()
	if r.volatile {
		return
	}
	for i := range es {
		r.p.lost(es[i].Seq)
	}
}

func (r *sinkRunner) requestFlush(ctx context.Context) chan error {
	reply := make(chan error, 1)
	r.flushMu.Lock()
	r.flushes = append(r.flushes, flushReq{target: r.given.Load(), ctx: ctx, reply: reply})
	r.flushMu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
	return reply
}

// serveFlushes answers the flush requests whose entries are all handled.
func (r *sinkRunner) serveFlushes() {
	r.flushMu.Lock()
	var ready []flushReq
	rest := r.flushes[:0]
	h := r.handled.Load()
	for _, f := range r.flushes {
		if f.target <= h {
			ready = append(ready, f)
		} else {
			rest = append(rest, f)
		}
	}
	r.flushes = rest
	r.flushMu.Unlock()
	for _, f := range ready {
		f.reply <- r.doFlush(f.ctx)
	}
}

func (r *sinkRunner) stopping() context.Context {
	if b := r.stopCtx.Load(); b != nil {
		return b.ctx
	}
	return nil
}

// run feeds the sink until its queue is closed, then flushes and shuts it
// down with the context Shutdown was given.
func (r *sinkRunner) run() {
	defer close(r.done)
	batch := make([]Entry, 0, r.p.opts.MaxBatch)
	for {
		var e Entry
		var ok bool
		select {
		case e, ok = <-r.q:
		case <-r.kick:
			r.serveFlushes()
			continue
		}
		if !ok {
			break
		}
		batch = append(batch[:0], e)
	fill:
		for len(batch) < cap(batch) {
			select {
			case next, more := <-r.q:
				if !more {
					break fill
				}
				batch = append(batch, next)
			default:
				break fill
			}
		}
		if rest, ok := r.write(batch); !ok {
			release(batch[:len(batch)-len(rest)])
			r.handled.Add(int64(len(batch) - len(rest)))
			r.abandon(rest)
			return
		}
		release(batch)
		r.handled.Add(int64(len(batch)))
		clear(batch)
		if r.stalled.Load() && len(r.q) <= cap(r.q)/2 {
			r.stalled.Store(false)
			r.log.Info("sink caught up; queueing entries again", "queued", len(r.q))
		}
		r.serveFlushes()
	}
	r.serveFlushes()
	ctx := r.stopping()
	if ctx == nil {
		ctx = context.Background()
	}
	if err := r.sink.Shutdown(ctx); err != nil {
		r.err = fmt.Errorf("shutdown sink %s: %w", r.id, err)
	}
}

// abandon gives up at shutdown: Shutdown's deadline passed while the sink
// kept failing. What is left is counted as dropped.
func (r *sinkRunner) abandon(batch []Entry) {
	rest := append([]Entry(nil), batch...)
	for e := range r.q {
		rest = append(rest, e)
	}
	r.drop(dropShutdown, rest...)
	release(rest)
	r.handled.Add(int64(len(rest)))
	r.err = fmt.Errorf("sink %s: %d entries not delivered: %s", r.id, len(rest), r.lastError())
	r.log.Error("entries dropped at shutdown", "count", len(rest), "error", r.lastError())
	r.serveFlushes()
	_ = r.sink.Shutdown(context.Background())
}

func (r *sinkRunner) lastError() string {
	if e := r.lastErr.Load(); e != nil {
		return *e
	}
	return ""
}

// write delivers a batch. A PartialError moves past the entries the sink
// took, so none is given twice; a permanent error for one entry drops that
// entry (counted) and goes on; other errors are retried with backoff for
// RetryFor, then the batch's remaining entries are dropped, counted. When
// Shutdown's context ends first it returns what was not delivered and
// false.
func (r *sinkRunner) write(batch []Entry) ([]Entry, bool) {
	opts := r.p.opts
	delay := opts.RetryMin
	stop := r.stop
	for attempt := 0; len(batch) > 0; attempt++ {
		ctx := r.stopping()
		if ctx == nil {
			ctx = context.Background()
		}
		err := r.sink.Write(ctx, batch)
		if err == nil {
			r.written.Add(int64(len(batch)))
			r.batches.Add(1)
			r.failingSince = time.Time{}
			return nil, true
		}
		var pe *PartialError
		if errors.As(err, &pe) && pe.N > 0 && pe.N <= len(batch) {
			r.written.Add(int64(pe.N))
			batch = batch[pe.N:]
			delay = opts.RetryMin
			r.failingSince = time.Time{}
		}
		r.writeErrors.Add(1)
		msg := err.Error()
		r.lastErr.Store(&msg)
		if len(batch) == 0 {
			return nil, true
		}
		if IsPermanent(err) {
			if pe != nil || len(batch) == 1 {
				r.log.Error("entry cannot be written; dropped for this sink", "uuid", batch[0].UUID, "session", batch[0].SessionID, "error", err)
				r.drop(dropRejected, batch[0])
				batch = batch[1:]
				continue
			}
			// The sink did not say which entry: find it one at a time.
			for i := range batch {
				if rest, ok := r.write(batch[i : i+1]); !ok {
					return append(rest, batch[i+1:]...), false
				}
			}
			return nil, true
		}
		if r.failingSince.IsZero() {
			r.failingSince = time.Now()
		} else if time.Since(r.failingSince) > opts.RetryFor {
			r.drop(dropRetries, batch...)
			if time.Since(r.loggedDrop) > 10*time.Second {
				r.loggedDrop = time.Now()
				r.log.Error("write kept failing; entries dropped for this sink (logged every 10s; counted in drop_reasons)",
					"entries", len(batch), "failing_for", time.Since(r.failingSince).Round(time.Second), "error", err)
			}
			return nil, true
		}
		if attempt < 3 || attempt%10 == 0 {
			r.log.Warn("write failed; will retry", "entries", len(batch), "attempt", attempt+1, "backoff", delay, "error", err)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return batch, false
		case <-stop:
			// Shutdown began: try again at once under its deadline.
			t.Stop()
			stop = nil
		}
		r.retries.Add(1)
		delay = min(delay*2, opts.RetryMax)
	}
	return nil, true
}

func (r *sinkRunner) doFlush(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	r.nflushes.Add(1)
	if err := r.sink.Flush(ctx); err != nil {
		msg := err.Error()
		r.lastErr.Store(&msg)
		return err
	}
	return nil
}

func (r *sinkRunner) stats() SinkStats {
	ss := SinkStats{
		ID:          r.id.String(),
		Written:     r.written.Load(),
		Batches:     r.batches.Load(),
		WriteErrors: r.writeErrors.Load(),
		Retries:     r.retries.Load(),
		Flushes:     r.nflushes.Load(),
		QueueWaits:  r.waits.Load(),
		Queued:      len(r.q),
		Stalled:     r.stalled.Load(),
		Volatile:    r.volatile,
		LastError:   r.lastError(),
	}
	r.dropMu.Lock()
	ss.Dropped = r.dropped
	if len(r.reasons) > 0 {
		ss.DropReasons = make(map[string]int64, len(r.reasons))
		for k, v := range r.reasons {
			ss.DropReasons[k] = v
		}
	}
	r.dropMu.Unlock()
	if rep, ok := r.sink.(Reporter); ok {
		ss.Counters = rep.Report()
	}
	return ss
}
