package plugins

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/protobuf/proto"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/internal/spool"
	"github.com/e0dc0000/scribe/plugins/internal/shared"
	pb "github.com/e0dc0000/scribe/plugins/proto"
)

// The states of a plugin component.
const (
	StateStopped    = "stopped"
	StateStarting   = "starting"
	StateRunning    = "running"
	StateRestarting = "restarting"
	StateFailed     = "failed"
	// StateOK is Probe's verdict: the plugin started, answered and took
	// its configuration (and was stopped again).
	StateOK = "ok"
)

// Tuning of the sink's delivery. Variables so tests can shorten them.
var (
	restartMin    = 100 * time.Millisecond
	restartMax    = 30 * time.Second
	retryMin      = 50 * time.Millisecond
	retryMax      = 5 * time.Second
	maxFailures   = 5               // consecutive Write errors before a restart
	idleCheck     = time.Second     // how often an idle sink looks at its process
	stopGrace     = 3 * time.Second // for a plugin to exit after Shutdown
	maxBatchLines = 2048
	maxBatchBytes = 4 << 20
	// flushWhenIdle has the plugin flush as soon as it has caught up; tests
	// turn it off to hold batches acknowledged but not yet durable.
	flushWhenIdle = true
)

// Sink runs a sink plugin behind a queue of its own, so that nothing the
// plugin does reaches the pipeline:
//
//	pipeline ──Write──► queue (memory, queue_size entries; then spool on disk)
//	                      │ one batch at a time, each with an id
//	                      ▼
//	              delivery goroutine ──Write(batch id)──► plugin process
//	                      ▲            ◄──ack(batch id)──
//	                      └── crash / hang (call_timeout) / 5 failures in a row:
//	                          kill, restart with backoff, send again from the
//	                          first batch the plugin has not made durable
//
// Write only queues: it never waits for the plugin. A batch leaves the
// queue when the plugin has made it durable (its Flush returned, or its
// Write said durable). Batches are sent in id order, one at a time, and a
// batch sent again keeps its id and entries, so the plugin (or whatever it
// writes to) can recognise one it already holds: delivery is in order and,
// with that check, exactly once.
//
// Flush waits (at most call_timeout) for the plugin to make everything
// durable; when the plugin is down or slow it writes what is still in
// memory to the spool and fsyncs it instead, which is durable too.
// Shutdown does the same, then stops the plugin; what is left in the
// spool is delivered at the next Start.
type Sink struct {
	id  core.ID
	cfg *resolved
	l   *launcher
	log hclog.Logger
	dir string

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change of state
	started bool
	closed  bool
	sp      *spool.Batches
	// key seals spooled batches (spool_encryption); nil keeps them plain.
	key     *seal.RecordKey
	environ []string

	batches    []*qbatch // not yet released, in id order
	next       uint64    // id of the next batch
	acked      uint64    // the highest id the current process acknowledged
	released   uint64    // every id <= it is durable downstream
	flushWant  uint64    // a Flush or Shutdown waits for this id
	memEntries int       // entries held in memory
	queued     int       // entries not yet released
	spooled    int       // of which on disk

	state    string
	lastErr  string
	inst     *instance
	loopStop context.CancelFunc
	loopDone chan struct{}

	restarts, startFailures, crashes, timeouts, writeErrors atomic.Int64
	delivered, batchesSent, redelivered, flushes, spills    atomic.Int64
	corrupt                                                 atomic.Int64
}

// qbatch is one batch of the queue: in memory (entries set), on disk (ref
// set), or both while a spilled batch is being sent.
type qbatch struct {
	id      uint64
	entries []*pb.Entry
	n       int
	size    int
	sealed  bool // no more entries join it
	onDisk  bool
	ref     spool.Ref
}

var (
	_ core.Sink     = (*Sink)(nil)
	_ core.Reporter = (*Sink)(nil)
)

// NewSink creates a plugin sink. Nothing starts before Start.
func NewSink(set core.Settings, cfg *Config) (*Sink, error) {
	r, err := resolve(set, cfg)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", set.ID, err)
	}
	log := set.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	s := &Sink{
		id:      set.ID,
		cfg:     r,
		l:       &launcher{id: set.ID, kind: core.KindSink, cfg: r, log: log},
		log:     log,
		changed: make(chan struct{}),
		state:   StateStopped,
		environ: set.Environ,
	}
	if set.Host.ConfigDir != "" {
		s.dir = SpoolDir(set.Host.ConfigDir, set.ID)
	}
	return s, nil
}

// SpoolDir is where the sink with the given ID keeps its spool:
// <config dir>/scribe/spool/<type>/<name>.
func SpoolDir(configDir string, id core.ID) string {
	return filepath.Join(configDir, "scribe", "spool", id.Type, id.Name)
}

// broadcast wakes every waiter; s.mu is held.
func (s *Sink) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Start opens the spool, starts the plugin and hands it its configuration.
// A plugin that cannot be started (a sha256 mismatch, no handshake, a
// configuration it refuses) fails Start, and nothing is left running.
func (s *Sink) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started || s.closed {
		s.mu.Unlock()
		return fmt.Errorf("sink %s: Start called twice or after Shutdown", s.id)
	}
	if s.dir == "" {
		s.mu.Unlock()
		return fmt.Errorf("sink %s: no config folder for the spool", s.id)
	}
	if !s.cfg.SpoolEncryption.IsZero() && s.key == nil {
		sl, err := seal.New(ctx, s.cfg.SpoolEncryption, s.environ)
		if err != nil {
			s.mu.Unlock()
			return fmt.Errorf("sink %s: spool_encryption: %w", s.id, err)
		}
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("sink %s: %w", s.id, err)
		}
		if s.key, err = sl.RecordKey(filepath.Join(s.dir, "spool.key")); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("sink %s: spool_encryption: %w", s.id, err)
		}
	}
	sp, recs, err := spool.OpenBatches(s.dir)
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("sink %s: %w", s.id, err)
	}
	s.sp = sp
	s.released = sp.Released()
	s.acked = s.released
	s.next = s.released + 1
	for _, r := range recs {
		s.batches = append(s.batches, &qbatch{id: r.ID, n: r.Entries, size: r.Bytes, sealed: true, onDisk: true, ref: r.Ref})
		s.queued += r.Entries
		s.spooled += r.Entries
		s.next = max(s.next, r.ID+1)
	}
	s.state = StateStarting
	s.mu.Unlock()
	if len(recs) > 0 {
		s.log.Info("entries waiting in the spool from the last run", "entries", s.spooled, "batches", len(recs), "spool", s.dir)
	}

	in, err := s.startInstance(ctx)
	if err != nil {
		s.mu.Lock()
		s.state = StateFailed
		s.lastErr = err.Error()
		s.sp = nil
		s.batches, s.queued, s.spooled = nil, 0, 0
		s.mu.Unlock()
		_ = sp.Close()
		return fmt.Errorf("sink %s: %w", s.id, err)
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.started = true
	s.inst = in
	s.state = StateRunning
	s.loopStop = cancel
	s.loopDone = make(chan struct{})
	s.mu.Unlock()
	go s.run(loopCtx, in)
	return nil
}

// startInstance launches the plugin and calls its Start.
func (s *Sink) startInstance(ctx context.Context) (*instance, error) {
	in, err := s.l.launch(ctx)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, s.cfg.startTimeout)
	defer cancel()
	_, err = in.stub.(pb.SinkClient).Start(sctx, &pb.StartRequest{
		Config:      s.cfg.pluginConfig(),
		ComponentId: s.id.String(),
		Stream:      s.sp.Stream(),
	})
	if err != nil {
		in.kill()
		return nil, fmt.Errorf("plugin start: %w", callError(err))
	}
	return in, nil
}

// Write queues a copy of the entries for the plugin. It does not wait for
// the plugin; it fails only when the spool cannot be written.
func (s *Sink) Write(_ context.Context, entries []core.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("sink %s: %w", s.id, ErrClosed)
	}
	if !s.started {
		return fmt.Errorf("sink %s: Write before Start", s.id)
	}
	for len(entries) > 0 {
		tail := s.tail()
		if tail == nil || tail.sealed || tail.onDisk || tail.n >= maxBatchLines || tail.size >= maxBatchBytes {
			tail = &qbatch{id: s.next}
			s.next++
			s.batches = append(s.batches, tail)
		}
		k, size := 0, 0
		for k < len(entries) && tail.n+k < maxBatchLines {
			size += sizeOf(entries[k : k+1])
			k++
			if tail.size+size >= maxBatchBytes {
				break
			}
		}
		chunk := entries[:k]
		entries = entries[k:]
		if s.memEntries+k <= s.cfg.QueueSize {
			for i := range chunk {
				tail.entries = append(tail.entries, shared.EntryToProto(&chunk[i]))
			}
			tail.n += k
			tail.size += size
			s.memEntries += k
			s.queued += k
			continue
		}
		// Memory is full: this chunk goes to the spool. A tail that already
		// holds entries in memory stays there; the chunk gets a batch of
		// its own.
		if tail.n > 0 {
			tail.sealed = true
			tail = &qbatch{id: s.next}
			s.next++
			s.batches = append(s.batches, tail)
		}
		msg := &pb.WriteRequest{BatchId: tail.id}
		for i := range chunk {
			msg.Entries = append(msg.Entries, &pb.Entry{Raw: chunk[i].Raw, SessionId: chunk[i].SessionID, Cwd: chunk[i].CWD})
		}
		payload, err := proto.Marshal(msg)
		if err != nil {
			s.dropTail(tail)
			return fmt.Errorf("sink %s: encode batch: %w", s.id, err)
		}
		ref, err := s.sp.Append(tail.id, k, s.sealPayload(payload))
		if err != nil {
			s.dropTail(tail)
			return fmt.Errorf("sink %s: spool: %w", s.id, err)
		}
		tail.n, tail.size, tail.sealed, tail.onDisk, tail.ref = k, len(payload), true, true, ref
		s.queued += k
		s.spooled += k
	}
	s.broadcast()
	return nil
}

func (s *Sink) tail() *qbatch {
	if len(s.batches) == 0 {
		return nil
	}
	return s.batches[len(s.batches)-1]
}

// dropTail forgets an empty batch that could not be written.
func (s *Sink) dropTail(b *qbatch) {
	if t := s.tail(); t == b && b.n == 0 {
		s.batches = s.batches[:len(s.batches)-1]
	}
}

func sizeOf(es []core.Entry) int {
	n := 0
	for i := range es {
		n += len(es[i].Raw) + len(es[i].SessionID) + len(es[i].CWD) + 8
	}
	return n
}

// Flush returns when every entry written before it is durable: delivered
// and flushed by the plugin, or, when the plugin is down or does not manage
// within call_timeout, written to the spool and fsynced.
func (s *Sink) Flush(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("sink %s: %w", s.id, ErrClosed)
	}
	if !s.started {
		s.mu.Unlock()
		return nil
	}
	target := s.next - 1
	s.mu.Unlock()
	if s.waitReleased(ctx, target, s.cfg.callTimeout, false) {
		return nil
	}
	return s.spill(target)
}

// waitReleased asks the delivery goroutine to have the plugin flush
// through target and waits for it, at most d and not past ctx, while the
// plugin is running (or, with throughRestart, being restarted).
func (s *Sink) waitReleased(ctx context.Context, target uint64, d time.Duration, throughRestart bool) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	s.mu.Lock()
	if target > s.flushWant {
		s.flushWant = target
		s.broadcast()
	}
	for s.released < target {
		if s.state != StateRunning && !(throughRestart && s.state == StateRestarting) {
			s.mu.Unlock()
			return false
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-timer.C:
			return false
		}
		s.mu.Lock()
	}
	s.mu.Unlock()
	return true
}

// Shutdown lets the plugin catch up (bounded by ctx, or by call_timeout
// when ctx has no deadline; through a restart in progress, but not past a
// failed start), stops it, and leaves whatever it did not make durable in
// the spool for the next Start. Safe twice and without Start.
func (s *Sink) Shutdown(ctx context.Context) error {
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
	target := s.next - 1
	s.mu.Unlock()

	wait := s.cfg.callTimeout
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl)
	}
	s.waitReleased(ctx, target, wait, true)
	s.loopStop()
	<-s.loopDone

	s.mu.Lock()
	in := s.inst
	s.inst = nil
	s.mu.Unlock()
	var errs []error
	if in != nil && !in.exited() {
		sctx, cancel := context.WithTimeout(context.Background(), s.cfg.callTimeout)
		_, err := in.stub.(pb.SinkClient).Shutdown(sctx, &pb.ShutdownRequest{})
		cancel()
		if err != nil {
			s.log.Warn("plugin shutdown failed", "error", callError(err))
		} else {
			s.mu.Lock()
			s.releaseLocked(s.acked)
			s.mu.Unlock()
		}
		in.stop(stopGrace)
	} else if in != nil {
		in.kill()
	}

	if err := s.spill(target); err != nil {
		errs = append(errs, err)
	}
	s.mu.Lock()
	left := s.queued
	released := s.released
	sp := s.sp
	s.sp = nil
	s.state = StateStopped
	s.broadcast()
	s.mu.Unlock()
	if err := sp.Release(released, true); err != nil {
		errs = append(errs, fmt.Errorf("sink %s: %w", s.id, err))
	}
	if err := sp.Close(); err != nil {
		errs = append(errs, fmt.Errorf("sink %s: %w", s.id, err))
	}
	if left > 0 {
		s.log.Warn("entries kept in the spool for the next start", "entries", left, "spool", s.dir)
	}
	return errors.Join(errs...)
}
