package plugins

// The plugin sink's delivery loop: one goroutine takes batches, from
// memory or the spool, to the running plugin, and faults restart it.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
	pb "github.com/e0dc0000/scribe/plugins/proto"
)

// run is the delivery goroutine: it owns the plugin process from Start to
// Shutdown.
func (s *Sink) run(ctx context.Context, in *instance) {
	defer close(s.loopDone)
	backoff := restartMin
	failures := 0
	for {
		if in == nil {
			s.setState(StateRestarting)
			if durable.Sleep(ctx, backoff) != nil {
				return
			}
			backoff = min(backoff*2, restartMax)
			var err error
			in, err = s.startInstance(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				s.startFailures.Add(1)
				s.setError(err)
				s.setState(StateFailed)
				s.log.Error("plugin restart failed", "error", err, "next_attempt_in", backoff)
				continue
			}
			s.restarts.Add(1)
			s.mu.Lock()
			s.inst = in
			s.state = StateRunning
			s.broadcast()
			s.mu.Unlock()
			s.log.Info("plugin restarted", "pid", in.pid())
			failures = 0
		}

		job, b, entries := s.nextJob(ctx, in)
		var err error
		switch job {
		case jobStop:
			return
		case jobExited:
			err = fmt.Errorf("%w: the process exited", ErrUnavailable)
		case jobWrite:
			err = s.deliver(ctx, in, b, entries)
		case jobFlush:
			err = s.flushPlugin(ctx, in)
		}
		if err == nil {
			if job == jobWrite {
				failures = 0
				backoff = restartMin
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		s.setError(err)
		if transportFault(err) {
			s.fault(in, err)
			in = nil
			continue
		}
		failures++
		s.writeErrors.Add(1)
		if failures >= maxFailures {
			s.fault(in, fmt.Errorf("%d calls failed in a row: %w", failures, err))
			in = nil
			failures = 0
			continue
		}
		d := min(retryMin<<(failures-1), retryMax)
		s.log.Warn("plugin call failed; will retry", "attempt", failures, "backoff", d, "error", err)
		if durable.Sleep(ctx, d) != nil {
			return
		}
	}
}

type job int

const (
	jobStop job = iota
	jobExited
	jobWrite
	jobFlush
)

// nextJob waits for something to do: the next batch to send, a flush, or
// the process having died while idle.
func (s *Sink) nextJob(ctx context.Context, in *instance) (job, *qbatch, []*pb.Entry) {
	tick := time.NewTicker(idleCheck)
	defer tick.Stop()
	for {
		s.mu.Lock()
		var next *qbatch
		for _, b := range s.batches {
			if b.id > s.acked {
				next = b
				break
			}
		}
		unflushed := s.acked > s.released
		// Flush when caught up, when a Flush waits for what was acked, or
		// when acked batches hold half the memory queue.
		flushNow := unflushed && (next == nil && flushWhenIdle ||
			(s.flushWant > s.released && s.acked >= s.flushWant) ||
			s.unreleasedMem() >= s.cfg.QueueSize/2)
		switch {
		case flushNow:
			s.mu.Unlock()
			return jobFlush, nil, nil
		case next != nil:
			next.sealed = true
			entries, onDisk, ref := next.entries, next.onDisk && next.entries == nil, next.ref
			s.mu.Unlock()
			if onDisk {
				var err error
				entries, err = s.readSpooled(ref)
				if err != nil {
					s.dropCorrupt(next, err)
					continue
				}
			}
			return jobWrite, next, entries
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return jobStop, nil, nil
		case <-ch:
		case <-tick.C:
			if in.exited() {
				return jobExited, nil, nil
			}
		}
	}
}

func (s *Sink) deliver(ctx context.Context, in *instance, b *qbatch, entries []*pb.Entry) error {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.callTimeout)
	defer cancel()
	resp, err := in.stub.(pb.SinkClient).Write(cctx, &pb.WriteRequest{BatchId: b.id, Entries: entries})
	if err != nil {
		return callError(err)
	}
	if resp.GetAckedBatchId() != b.id {
		return fmt.Errorf("%w: the plugin acknowledged batch %d for batch %d", ErrUnavailable, resp.GetAckedBatchId(), b.id)
	}
	s.batchesSent.Add(1)
	s.delivered.Add(int64(b.n))
	s.mu.Lock()
	if b.id > s.acked {
		s.acked = b.id
	}
	if resp.GetDurable() {
		s.releaseLocked(b.id)
	}
	s.broadcast()
	s.mu.Unlock()
	return nil
}

func (s *Sink) flushPlugin(ctx context.Context, in *instance) error {
	s.mu.Lock()
	through := s.acked
	s.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, s.cfg.callTimeout)
	defer cancel()
	if _, err := in.stub.(pb.SinkClient).Flush(cctx, &pb.FlushRequest{}); err != nil {
		return callError(err)
	}
	s.flushes.Add(1)
	s.mu.Lock()
	s.releaseLocked(through)
	s.broadcast()
	s.mu.Unlock()
	return nil
}

// fault kills a process that crashed, hung or kept failing; the batches
// it had not made durable will be sent again to the next one.
func (s *Sink) fault(in *instance, err error) {
	if errors.Is(err, ErrTimeout) {
		s.timeouts.Add(1)
	} else {
		s.crashes.Add(1)
	}
	s.log.Warn("plugin fault; restarting it", "pid", in.pid(), "error", err)
	in.kill()
	s.mu.Lock()
	for _, b := range s.batches {
		if b.id <= s.acked {
			s.redelivered.Add(1)
		}
	}
	s.acked = s.released
	s.inst = nil
	s.state = StateRestarting
	s.broadcast()
	s.mu.Unlock()
}

func (s *Sink) setState(st string) {
	s.mu.Lock()
	if s.state != st {
		s.state = st
		s.broadcast()
	}
	s.mu.Unlock()
}

func (s *Sink) setError(err error) {
	s.mu.Lock()
	s.lastErr = err.Error()
	s.mu.Unlock()
}

// Status is the state of a plugin component, for `scribe plugins status`.
type Status struct {
	ID            string `json:"id"`
	Kind          string `json:"kind"`
	State         string `json:"state"`
	PID           int    `json:"pid,omitempty"`
	Reattached    bool   `json:"reattached,omitempty"`
	PluginType    string `json:"plugin_type,omitempty"`
	PluginVersion string `json:"plugin_version,omitempty"`
	Restarts      int64  `json:"restarts"`
	LastError     string `json:"last_error,omitempty"`
	// Queued counts entries not yet durable downstream; Spooled, those of
	// them on disk.
	Queued  int `json:"queued"`
	Spooled int `json:"spooled"`
	// Counters are the component's Report.
	Counters map[string]int64 `json:"counters"`
}

// Status returns the sink's state and counters.
func (s *Sink) Status() Status {
	s.mu.Lock()
	st := Status{
		ID: s.id.String(), Kind: string(core.KindSink), State: s.state,
		LastError: s.lastErr, Queued: s.queued, Spooled: s.spooled,
	}
	s.inst.describe(&st)
	s.mu.Unlock()
	st.Restarts = s.restarts.Load()
	st.Counters = s.Report()
	return st
}

// Report implements core.Reporter.
func (s *Sink) Report() map[string]int64 {
	s.mu.Lock()
	queued, spooled, running := s.queued, s.spooled, int64(0)
	if s.state == StateRunning {
		running = 1
	}
	var spoolBytes int64
	if s.sp != nil {
		spoolBytes = s.sp.Size()
	}
	s.mu.Unlock()
	return map[string]int64{
		"running":             running,
		"queued":              int64(queued),
		"spooled":             int64(spooled),
		"spool_bytes":         spoolBytes,
		"restarts":            s.restarts.Load(),
		"start_failures":      s.startFailures.Load(),
		"crashes":             s.crashes.Load(),
		"timeouts":            s.timeouts.Load(),
		"plugin_errors":       s.writeErrors.Load(),
		"entries_delivered":   s.delivered.Load(),
		"batches_delivered":   s.batchesSent.Load(),
		"batches_redelivered": s.redelivered.Load(),
		"plugin_flushes":      s.flushes.Load(),
		"spills":              s.spills.Load(),
		"entries_lost":        s.corrupt.Load(),
	}
}
