// Package sinkhelper is the machinery shared by sinks that send entries to a
// server: a bounded in-memory queue that spills to an on-disk spool, and a
// retry loop with exponential backoff, jitter, a timeout per attempt and
// permanent errors (the Sender); and around it the finished network sink
// (NetSink: the token, the HTTP client, the counters, the fan-out by
// session), so that a network sink is a push function and its options.
//
//	Write ──► memory queue ──(full │ server failing │ Flush timed out │ Shutdown)──► spool
//	              │                                                                 │
//	              └───────────────► consumer: next batch, oldest first ◄────────────┘
//	                                   │
//	                                   ▼
//	               retry: backoff + jitter ──► timeout ──► push(ctx, batch) ──► server
//
// Entries reach the push function in the order they were written; one
// batch is in flight at a time, and it is acknowledged (removed from memory
// and the spool) only when the push function returns nil. Delivery is at
// least once: after a failed attempt or a crash a batch is sent again, so
// the server must store an entry once (by its uuid), as scribe serve does.
package sinkhelper

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/internal/spool"
)

// Sentinel errors of the spool (internal/spool).
var (
	// ErrSpoolBusy is returned when every lane of a spool is held by a
	// live process.
	ErrSpoolBusy = spool.ErrBusy
	// ErrSpoolOwner is returned when the spool folder belongs to another
	// sink: two sinks given one spool_dir would deliver each other's
	// entries.
	ErrSpoolOwner = spool.ErrOwner
)

// ErrClosed is returned by Write after Shutdown.
var ErrClosed = errors.New("sink shut down")

// Defaults of Options.
const (
	DefaultQueueSize     = 1000
	DefaultQueueBytes    = 16 << 20
	DefaultSpoolMaxBytes = 1 << 30
	DefaultSegmentBytes  = 16 << 20
	DefaultMaxBatch      = 500
	DefaultMaxBatchBytes = 4 << 20
	DefaultFlushWait     = 5 * time.Second
)

// PushFunc delivers a batch. It returns nil when every entry of the batch
// was delivered (or given up with Batch.Drop); an error marked permanent
// (core.Permanent, or Permanent; core.IsPermanent tells) to give up on the
// rest; any other error to be retried. It must
// honour ctx, which ends at the attempt's timeout and at Shutdown, and must
// not change the entries or keep them after it returns.
type PushFunc func(ctx context.Context, b *Batch) error

// Batch is the unit handed to the push function. A failed batch is retried
// as the same Batch, so the push function can mark what it delivered and
// skip it next time.
type Batch struct {
	// Entries are in the order they were written.
	Entries []core.Entry
	done    []atomic.Bool
	drops   atomic.Int64
	s       *Sender
	to      uint64 // one past the last seq of the batch
}

// Done reports whether entry i was delivered or dropped by an earlier
// attempt.
func (b *Batch) Done(i int) bool { return b.done[i].Load() }

// MarkDone records that entry i was delivered. It is safe to call from
// several goroutines for different entries.
func (b *Batch) MarkDone(i int) { b.done[i].Store(true) }

// Drop gives up on entry i for good: it is marked done, counted as
// dropped, logged at error level, and the next Flush returns err.
func (b *Batch) Drop(i int, err error) {
	if b.done[i].Swap(true) {
		return
	}
	b.drops.Add(1)
	b.s.dropped(1, err, "entry dropped")
}

func (b *Batch) pending() int {
	n := 0
	for i := range b.done {
		if !b.done[i].Load() {
			n++
		}
	}
	return n
}

// Options configure a Sender. Zero values take the defaults.
type Options struct {
	// Name names the sink in errors and logs, such as "ingress/cloud".
	Name string
	// Dir is the spool folder (required).
	Dir string
	// QueueSize and QueueBytes bound the entries held in memory; past
	// either, the memory queue is spilled to the spool.
	QueueSize  int
	QueueBytes int64
	// SpoolMaxBytes bounds the spool; entries that do not fit are dropped
	// and counted.
	SpoolMaxBytes int64
	// SegmentBytes is the size at which a new spool segment is started.
	SegmentBytes int64
	// MaxBatch and MaxBatchBytes bound one batch.
	MaxBatch      int
	MaxBatchBytes int
	// Linger is how long the consumer waits for a batch to fill once an
	// entry is queued (0: send at once). Flush does not wait for it.
	Linger time.Duration
	// FlushWait is how long Flush waits for the server to acknowledge
	// before it spills what is left to disk instead.
	FlushWait time.Duration
	Retry     RetryConfig
	Logger    hclog.Logger
	// Encryption, when set, seals every record the spool writes (age and
	// XChaCha20-Poly1305, seal.RecordKey; the data key is kept sealed in
	// <Dir>/key.age); Environ is where its key variables are looked up.
	Encryption seal.Options
	Environ    []string
}

func (o *Options) defaults() error {
	if o.Dir == "" {
		return errors.New("no spool folder")
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.QueueBytes <= 0 {
		o.QueueBytes = DefaultQueueBytes
	}
	if o.SpoolMaxBytes <= 0 {
		o.SpoolMaxBytes = DefaultSpoolMaxBytes
	}
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.MaxBatchBytes <= 0 {
		o.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if o.FlushWait <= 0 {
		o.FlushWait = DefaultFlushWait
	}
	if o.Retry == (RetryConfig{}) {
		o.Retry = DefaultRetry()
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return o.Retry.validate()
}

// Sender is a core.Sink that queues entries, spills them to disk when
// memory is full or the server is failing, and delivers them through a push
// function with retries.
//
// Flush returns nil when every entry written before it is either
// acknowledged by the server or fsynced in the spool; both survive a
// killed process, and what is in the spool is delivered later, by this
// Sender or by the next one started on the same folder. Flush first waits
// for the server, up to FlushWait, and spills at once when the server is
// failing. Shutdown keeps delivering while the server makes progress and
// its ctx allows, then spills what is left.
type Sender struct {
	opts Options
	push PushFunc
	log  hclog.Logger

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when acked or failing change
	sp      *spool.Lane
	mem     []memRec // seqs ascending, all >= acked
	memSize int64
	next    uint64 // seq of the next entry written
	acked   uint64 // every seq below is delivered or dropped
	read    uint64 // next seq for the consumer
	urgent  uint64 // Flush asked for everything below: no lingering
	failing bool
	since   time.Time // when failing began
	dropErr error     // the first drop since Flush last reported one
	// Drops logged, and counted since the last log line.
	dropLoggedAt  time.Time
	dropsUnlogged int64
	started       bool
	closed        bool
	cancel        context.CancelFunc
	done          chan struct{}

	wake, hurry chan struct{}

	written, delivered, batches, retries, failedRounds  atomic.Int64
	permanent, drops, spills, spilled, flushSpills      atomic.Int64
	adopted, adoptedLanes, spoolErrors, shutdownSpilled atomic.Int64
}

type memRec struct {
	seq  uint64
	e    core.Entry
	size int64
}

var (
	_ core.Sink     = (*Sender)(nil)
	_ core.Reporter = (*Sender)(nil)
)

// New returns a Sender that delivers through push.
func New(opts Options, push PushFunc) (*Sender, error) {
	if err := opts.defaults(); err != nil {
		return nil, fmt.Errorf("sink %s: %w", opts.Name, err)
	}
	if push == nil {
		return nil, fmt.Errorf("sink %s: no push function", opts.Name)
	}
	return &Sender{
		opts:    opts,
		push:    push,
		log:     opts.Logger,
		changed: make(chan struct{}),
		wake:    make(chan struct{}, 1),
		hurry:   make(chan struct{}, 1),
	}, nil
}

// Start opens the spool (recovering what an earlier run left in it, and
// taking over lanes left by processes that died) and starts delivering.
func (s *Sender) Start(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("sink %s: already started", s.opts.Name)
	}
	if s.closed {
		return fmt.Errorf("sink %s: %w", s.opts.Name, ErrClosed)
	}
	key, err := s.spoolKey()
	if err != nil {
		return fmt.Errorf("sink %s: spool encryption: %w", s.opts.Name, err)
	}
	sp, err := spool.OpenLane(s.opts.Dir, s.opts.Name, s.opts.SegmentBytes, s.log)
	if err != nil {
		return fmt.Errorf("sink %s: %w", s.opts.Name, err)
	}
	sp.SetKey(key)
	s.sp = sp
	s.next = max(sp.Ack(), sp.Tail(), 1)
	if err := spool.OrphanLanes(s.opts.Dir, sp, s.log, s.adoptLocked); err != nil {
		sp.Close(false)
		s.sp = nil
		return fmt.Errorf("sink %s: take over spool lane: %w", s.opts.Name, err)
	}
	s.acked, s.read = s.next, s.next
	if sp.Pending() {
		// Nothing on disk is below the first segment.
		s.acked = max(sp.Ack(), sp.First())
		s.read = s.acked
	}
	s.started = true
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.done = make(chan struct{})
	go s.run(ctx)
	return nil
}

// Write queues copies of entries. It does not wait for the server; it does
// disk I/O only when it spills.
func (s *Sender) Write(_ context.Context, entries []core.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("sink %s: %w", s.opts.Name, ErrClosed)
	}
	if !s.started {
		return fmt.Errorf("sink %s: write before start", s.opts.Name)
	}
	spillFailed := false
	for _, e := range entries {
		size := int64(len(e.Raw) + len(e.SessionID) + spool.FrameHeader + 8)
		switch {
		case len(e.Raw) == 0:
			s.droppedLocked(1, errors.New("empty entry"), "entry dropped")
			continue
		case size > spool.MaxRecord:
			s.droppedLocked(1, fmt.Errorf("entry %s of %d bytes is larger than %d", e.UUID, len(e.Raw), spool.MaxRecord), "entry too large")
			continue
		}
		if !spillFailed && s.memFull() {
			if err := s.spillLocked(); err != nil {
				spillFailed = true
				s.log.Error("spill failed; entries stay in memory", "error", err)
			}
		}
		// A failing disk keeps entries in memory; past twice the bound
		// they are dropped rather than exhaust it.
		if int64(len(s.mem)) >= 2*int64(s.opts.QueueSize) || s.memSize >= 2*s.opts.QueueBytes {
			s.droppedLocked(1, errors.New("memory queue full and the spool cannot be written"), "entry dropped")
			continue
		}
		c := e
		c.Raw = append([]byte(nil), e.Raw...)
		s.mem = append(s.mem, memRec{seq: s.next, e: c, size: size})
		s.memSize += size
		s.next++
		s.written.Add(1)
	}
	if !spillFailed && (s.failing || s.memFull()) {
		if err := s.spillLocked(); err != nil {
			s.log.Error("spill failed; entries stay in memory", "error", err)
		}
	}
	signal(s.wake)
	return nil
}

func (s *Sender) memFull() bool {
	return len(s.mem) >= s.opts.QueueSize || s.memSize >= s.opts.QueueBytes
}

// signal wakes one waiter of a one-slot channel without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// broadcastLocked wakes every waiter on s.changed.
func (s *Sender) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Sender) dropped(n int64, err error, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.droppedLocked(n, err, msg)
}

// droppedLocked counts entries given up on, keeps the error for the next
// Flush, and logs at error level: at once, then at most every
// dropLogEvery with what was dropped meanwhile, so that a refused token
// or a full disk does not flood the log.
func (s *Sender) droppedLocked(n int64, err error, msg string) {
	s.drops.Add(n)
	if s.dropErr == nil {
		s.dropErr = fmt.Errorf("sink %s: %d entries not delivered: %w", s.opts.Name, n, err)
	}
	s.dropsUnlogged += n
	if now := time.Now(); now.Sub(s.dropLoggedAt) >= dropLogEvery {
		s.log.Error(msg, "count", s.dropsUnlogged, "dropped_total", s.drops.Load(), "error", err)
		s.dropLoggedAt, s.dropsUnlogged = now, 0
	}
}

// dropLogEvery bounds how often drops are logged.
const dropLogEvery = 10 * time.Second

// Flush returns nil when every entry written before it is acknowledged by
// the server or fsynced in the spool. It waits for the server up to
// FlushWait (or ctx), not at all while the server is failing, and then
// spills. It returns an error when entries written before it were dropped
// (a permanent failure such as a refused token, or a full spool) or when
// the spool cannot be written.
func (s *Sender) Flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started || s.closed {
		return s.takeDropErrLocked()
	}
	mark := s.next
	s.urgent = max(s.urgent, mark)
	signal(s.hurry)
	timer := time.NewTimer(s.opts.FlushWait)
	defer timer.Stop()
wait:
	for s.acked < mark && !s.failing {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
			s.mu.Lock()
		case <-ctx.Done():
			s.mu.Lock()
			break wait
		case <-timer.C:
			s.mu.Lock()
			break wait
		}
	}
	if s.acked < mark {
		s.flushSpills.Add(1)
		if err := s.spillLocked(); err != nil {
			return fmt.Errorf("flush sink %s: %w", s.opts.Name, err)
		}
	}
	return s.takeDropErrLocked()
}

func (s *Sender) takeDropErrLocked() error {
	err := s.dropErr
	s.dropErr = nil
	return err
}

// Shutdown stops intake and keeps delivering while the server makes
// progress (none for FlushWait, a failing server, or the end of ctx stops
// it); then it stops the consumer, spills what is left and closes the
// spool. It is safe twice and without Start.
func (s *Sender) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if !s.started {
		s.mu.Unlock()
		return nil
	}
	s.urgent = s.next
	signal(s.hurry)
	last, lastAt := s.acked, time.Now()
	for s.acked < s.next && !s.failing {
		ch := s.changed
		s.mu.Unlock()
		t := time.NewTimer(time.Until(lastAt.Add(s.opts.FlushWait)))
		stop := false
		select {
		case <-ch:
		case <-ctx.Done():
			stop = true
		case <-t.C:
		}
		t.Stop()
		s.mu.Lock()
		if stop {
			break
		}
		if s.acked != last {
			last, lastAt = s.acked, time.Now()
		} else if time.Since(lastAt) >= s.opts.FlushWait {
			break
		}
	}
	s.mu.Unlock()

	s.cancel()
	<-s.done

	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if left := s.next - s.acked; left > 0 {
		s.shutdownSpilled.Add(int64(left))
		s.log.Info("shutting down with entries not yet delivered; they stay in the spool for the next start", "entries", left)
	}
	if err := s.spillLocked(); err != nil {
		errs = append(errs, fmt.Errorf("shutdown sink %s: %w", s.opts.Name, err))
	}
	if err := s.sp.Close(true); err != nil {
		errs = append(errs, fmt.Errorf("shutdown sink %s: %w", s.opts.Name, err))
	}
	errs = append(errs, s.takeDropErrLocked())
	return errors.Join(errs...)
}

// Report implements core.Reporter.
func (s *Sender) Report() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]int64{
		"written":            s.written.Load(),
		"delivered":          s.delivered.Load(),
		"batches":            s.batches.Load(),
		"retries":            s.retries.Load(),
		"failed_rounds":      s.failedRounds.Load(),
		"permanent_failures": s.permanent.Load(),
		"dropped":            s.drops.Load(),
		"spills":             s.spills.Load(),
		"spilled":            s.spilled.Load(),
		"flush_spills":       s.flushSpills.Load(),
		"shutdown_spilled":   s.shutdownSpilled.Load(),
		"adopted":            s.adopted.Load(),
		"adopted_lanes":      s.adoptedLanes.Load(),
		"spool_errors":       s.spoolErrors.Load(),
		"queued":             int64(s.next - s.acked),
		"memory_entries":     int64(len(s.mem)),
		"memory_bytes":       s.memSize,
	}
	if s.failing {
		m["failing"] = 1
	} else {
		m["failing"] = 0
	}
	if s.sp != nil {
		st := s.sp.Stats()
		m["spool_bytes"] = st.Bytes
		m["spool_fsyncs"] = st.Fsyncs
		m["spool_torn_tails"] = st.TornTails
		m["spool_corrupt"] = st.Corrupt
		m["spool_recovered_bytes"] = st.Recovered
	}
	return m
}
