// Package sinkhelper is the machinery shared by sinks that send entries to a
// server: a bounded in-memory queue that spills to an on-disk spool, and a
// retry loop with exponential backoff, jitter, a timeout per attempt and
// permanent errors. A network sink is a Sender plus a push function.
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
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
// was delivered (or given up with Batch.Drop); an error wrapped with
// Permanent to give up on the rest; any other error to be retried. It must
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

// spoolKey loads (or makes) the spool's record key when encryption is
// configured; nil when it is not.
func (s *Sender) spoolKey() (*seal.RecordKey, error) {
	if s.opts.Encryption.IsZero() {
		return nil, nil
	}
	sl, err := seal.New(context.Background(), s.opts.Encryption, s.opts.Environ)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool folder: %w", err)
	}
	return sl.RecordKey(filepath.Join(s.opts.Dir, "key.age"))
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

// adoptLocked moves what a dead process left in another lane to the end of
// this one, then empties that lane.
func (s *Sender) adoptLocked(o *spool.Lane) error {
	n := int64(0)
	from := o.Ack()
	for {
		recs, err := o.Read(from, s.opts.MaxBatch, s.opts.MaxBatchBytes)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			break
		}
		for i := range recs {
			recs[i].Seq = s.next
			s.next++
		}
		if err := s.sp.Append(recs); err != nil {
			return err
		}
		n += int64(len(recs))
	}
	if err := s.sp.Sync(); err != nil {
		return err
	}
	if err := o.SetAck(o.Tail()); err != nil {
		return err
	}
	if err := o.Close(true); err != nil {
		return err
	}
	s.adopted.Add(n)
	s.adoptedLanes.Add(1)
	s.log.Info("took over a spool lane left by a process that died", "lane", o.Dir(), "entries", n)
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

// spillLocked moves the memory queue to the end of the spool and fsyncs.
// Entries in flight are written too, so that a crash before their
// acknowledgement does not lose them.
func (s *Sender) spillLocked() error {
	if len(s.mem) == 0 {
		return nil
	}
	recs := make([]spool.Record, 0, len(s.mem))
	room := s.opts.SpoolMaxBytes - s.sp.Bytes()
	var over int64
	var overErr error
	for _, m := range s.mem {
		if m.size > room {
			over++
			if overErr == nil {
				overErr = fmt.Errorf("spool full (%d bytes)", s.opts.SpoolMaxBytes)
			}
			continue
		}
		room -= m.size
		recs = append(recs, spool.Record{Seq: m.seq, Data: encodeEntry(m.e)})
	}
	err := s.sp.Append(recs)
	if err == nil {
		err = s.sp.Sync()
	}
	if err != nil {
		s.spoolErrors.Add(1)
		// Keep in memory only what did not reach the disk.
		k := 0
		for k < len(s.mem) && s.mem[k].seq < s.sp.Tail() {
			s.memSize -= s.mem[k].size
			k++
		}
		s.mem = append(s.mem[:0], s.mem[k:]...)
		return fmt.Errorf("spill to %s: %w", s.sp.Dir(), err)
	}
	if over > 0 {
		s.droppedLocked(over, overErr, "spool full: entries dropped")
	}
	s.spills.Add(1)
	s.spilled.Add(int64(len(recs)))
	clear(s.mem)
	s.mem = s.mem[:0]
	s.memSize = 0
	return nil
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
				if !sleep(ctx, s.opts.Retry.BackoffMax) {
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

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
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
		case IsPermanent(err):
			s.permanent.Add(1)
			s.finish(b, err)
			return
		}
		s.retries.Add(1)
		s.attemptFailed(attempt, err)
		if !sleep(ctx, rc.wait(attempt, err)) {
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

// The spooled form of an entry: a version byte, the session id the host
// routed it by (it may not be in the line), and the line.
const envelopeV1 = 1

func encodeEntry(e core.Entry) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(e.SessionID)+len(e.Raw))
	b = append(b, envelopeV1)
	b = binary.AppendUvarint(b, uint64(len(e.SessionID)))
	b = append(b, e.SessionID...)
	return append(b, e.Raw...)
}

func decodeEntry(b []byte) (core.Entry, error) {
	if len(b) == 0 || b[0] != envelopeV1 {
		return core.Entry{}, errors.New("unknown record version")
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || uint64(len(b)-1-k) < n {
		return core.Entry{}, errors.New("bad session id length")
	}
	sid := string(b[1+k : 1+k+int(n)])
	e, err := core.ParseEntryOwned(b[1+k+int(n):])
	if err != nil {
		return core.Entry{}, err
	}
	if sid != "" {
		e.SessionID = sid
	}
	return e, nil
}
