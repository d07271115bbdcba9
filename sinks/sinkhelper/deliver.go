package sinkhelper

// The Sender's delivery loop: one goroutine takes batches from memory,
// or from the spool once memory overflowed, pushes them with retries, and
// moves the ack forward.

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
)

// run is the consumer: one batch at a time, oldest first.
func (s *Sender) run(ctx context.Context) {
	defer close(s.done)
	for {
		b := s.nextBatch(ctx)
		if b == nil {
			return
		}
		s.deliver(ctx, b)
		if ctx.Err() != nil {
			return
		}
	}
}

func (s *Sender) nextBatch(ctx context.Context) *Batch {
	lingered := false
	for {
		s.mu.Lock()
		if s.read < s.next {
			if s.opts.Linger > 0 && !lingered && s.read >= s.urgent && s.next-s.read < uint64(s.opts.MaxBatch) {
				lingered = true
				s.mu.Unlock()
				t := time.NewTimer(s.opts.Linger)
				select {
				case <-ctx.Done():
					t.Stop()
					return nil
				case <-t.C:
				case <-s.hurry:
					t.Stop()
				}
				continue
			}
			b, err := s.takeLocked()
			s.mu.Unlock()
			if err != nil {
				s.spoolErrors.Add(1)
				s.log.Error("reading the spool failed; will retry", "error", err)
				if durable.Sleep(ctx, s.opts.Retry.BackoffMax) != nil {
					return nil
				}
				continue
			}
			if b != nil {
				return b
			}
			continue
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
		case <-s.hurry:
		}
	}
}

// takeLocked builds the next batch from the spool when it holds pending
// entries, else from memory. Nothing is in flight when it is called, so
// acked == read.
func (s *Sender) takeLocked() (*Batch, error) {
	b := &Batch{s: s}
	if s.sp.Pending() && s.read < s.sp.Tail() {
		recs, err := s.sp.Read(s.read, s.opts.MaxBatch, s.opts.MaxBatchBytes)
		if err != nil {
			return nil, err
		}
		if len(recs) == 0 {
			// What is left on disk was damaged (counted when met): go on
			// with memory.
			s.read = s.sp.Tail()
			s.ackLocked(s.read)
			return nil, nil
		}
		for _, r := range recs {
			e, err := decodeEntry(r.Data)
			if err != nil {
				s.droppedLocked(1, fmt.Errorf("spooled record %d: %w", r.Seq, err), "spooled record unreadable")
				continue
			}
			b.Entries = append(b.Entries, e)
		}
		b.to = recs[len(recs)-1].Seq + 1
	} else {
		size := 0
		for _, m := range s.mem {
			if m.seq < s.read {
				continue
			}
			if len(b.Entries) >= s.opts.MaxBatch || (len(b.Entries) > 0 && size+len(m.e.Raw) > s.opts.MaxBatchBytes) {
				break
			}
			b.Entries = append(b.Entries, m.e)
			size += len(m.e.Raw)
			b.to = m.seq + 1
		}
		if len(b.Entries) == 0 {
			// Only gaps (entries dropped at a full spool) were left.
			s.read = s.next
			s.ackLocked(s.read)
			return nil, nil
		}
	}
	s.read = b.to
	b.done = make([]atomic.Bool, len(b.Entries))
	return b, nil
}

// deliver pushes b until it is delivered, permanently refused, or the
// Sender stops.
func (s *Sender) deliver(ctx context.Context, b *Batch) {
	rc := s.opts.Retry
	for attempt := 1; ; attempt++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if rc.AttemptTimeout > 0 {
			actx, cancel = context.WithTimeout(ctx, rc.AttemptTimeout)
		}
		err := s.push(actx, b)
		cancel()
		switch {
		case err == nil:
			s.finish(b, nil)
			return
		case ctx.Err() != nil:
			return // stopping: the batch stays queued
		case core.IsPermanent(err):
			s.permanent.Add(1)
			s.finish(b, err)
			return
		}
		s.retries.Add(1)
		s.attemptFailed(attempt, err)
		if durable.Sleep(ctx, rc.wait(attempt, err)) != nil {
			return
		}
	}
}

// attemptFailed marks the server as failing and spills the memory queue,
// so that Flush does not wait for it and an outage costs no memory.
func (s *Sender) attemptFailed(attempt int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.failing {
		s.failing = true
		s.since = time.Now()
		s.log.Warn("delivery failing; spilling to disk and retrying", "error", err)
		s.broadcastLocked()
	} else {
		s.log.Debug("delivery attempt failed", "attempt", attempt, "error", err)
	}
	if attempt%s.opts.Retry.MaxAttempts == 0 {
		s.failedRounds.Add(1)
		s.log.Warn("server away: batch kept in the spool; still retrying",
			"attempts", attempt, "failing_for", time.Since(s.since).Round(time.Millisecond), "error", err)
	}
	if err := s.spillLocked(); err != nil {
		s.log.Error("spill failed; entries stay in memory", "error", err)
	}
}

// finish acknowledges b; with err (permanent), what it had not delivered
// is dropped.
func (s *Sender) finish(b *Batch, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pending := int64(0)
	if err != nil {
		pending = int64(b.pending())
	}
	s.delivered.Add(int64(len(b.Entries)) - pending - b.drops.Load())
	if err != nil {
		if pending > 0 {
			s.droppedLocked(pending, err, "permanent failure: entries dropped")
		}
	} else {
		s.batches.Add(1)
		if s.failing {
			s.log.Info("delivering again", "failed_for", time.Since(s.since).Round(time.Millisecond))
		}
		s.failing = false
	}
	s.ackLocked(b.to)
}

// ackLocked records that every seq below to is done.
func (s *Sender) ackLocked(to uint64) {
	if to <= s.acked {
		return
	}
	s.acked = to
	k := 0
	for k < len(s.mem) && s.mem[k].seq < to {
		s.memSize -= s.mem[k].size
		k++
	}
	if k > 0 {
		n := copy(s.mem, s.mem[k:])
		clear(s.mem[n:])
		s.mem = s.mem[:n]
	}
	if s.sp.HasSegments() {
		if err := s.sp.SetAck(to); err != nil {
			s.spoolErrors.Add(1)
			s.log.Error("spool ack failed; entries may be sent again after a restart", "error", err)
		}
	}
	s.broadcastLocked()
}
