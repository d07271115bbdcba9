package core

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// NamedSink is a sink with its ID, as the pipeline is given it.
type NamedSink struct {
	ID   ID
	Sink Sink
}

// NamedGuard is a guard with its ID.
type NamedGuard struct {
	ID    ID
	Guard Guard
}

// PipelineOptions configures a Pipeline.
type PipelineOptions struct {
	Logger hclog.Logger
	// Guards run in order; the first refusal drops the entry.
	Guards []NamedGuard
	// Sinks receive every accepted entry, each through its own queue.
	Sinks []NamedSink
	// Seeder, if set, tells dedup what a session already holds the first
	// time the pipeline sees that session.
	Seeder Seeder
	// QueueSize bounds each sink's queue, in entries. Default 4096.
	QueueSize int
	// MaxBatch bounds how many entries one Write gets. Default 1024.
	MaxBatch int
	// RetryMin and RetryMax bound the backoff between retries of a failed
	// Write. Defaults 50 ms and 5 s.
	RetryMin, RetryMax time.Duration
}

// Status says what Submit did with an entry.
type Status int

// The outcomes of Submit.
const (
	Accepted Status = iota
	Duplicate
	Refused
)

func (s Status) String() string {
	switch s {
	case Accepted:
		return "accepted"
	case Duplicate:
		return "duplicate"
	case Refused:
		return "refused"
	}
	return fmt.Sprintf("status(%d)", int(s))
}

// Result is the outcome of one Submit.
type Result struct {
	Status Status
	// Guard and Reason are set when Status is Refused.
	Guard  ID
	Reason error
}

// Reporter is implemented by components that count things of their own
// (repairs, spills, retries); the pipeline includes them in its Stats.
type Reporter interface {
	Report() map[string]int64
}

// Pipeline moves entries from Submit through the guards and dedup to every
// sink. Each sink has its own bounded queue and goroutine, so a slow or
// failing sink never delays delivery to another; entries reach each sink in
// submission order, which keeps per-session order.
//
//	Submit ──► guards ──► dedup ──┬──► queue ──► goroutine ──► sink A
//	                              └──► queue ──► goroutine ──► sink B
//
// Flush places a marker in every queue and returns when each sink has
// written everything before its marker and reported it durable.
type Pipeline struct {
	log    hclog.Logger
	guards []NamedGuard
	seeder Seeder
	sinks  []*sinkRunner
	opts   PipelineOptions

	mu       sync.Mutex // orders Submit and Flush; guards seen
	seen     map[string]*sessionSeen
	closed   bool
	started  bool
	stopOnce sync.Once

	submitted, accepted, duplicates atomic.Int64
	waits                           atomic.Int64
	waitNanos                       atomic.Int64
	refusedMu                       sync.Mutex
	refused                         map[ID]int64
	reasons                         map[ID]string
	seedErrors                      atomic.Int64
}

type sessionSeen struct {
	uuids map[string]struct{}
	// meta holds hashes of the uuid-less lines the store already had. While
	// no new chain entry has arrived for the session (live is false), an
	// identical metadata line is a replay of stored input, not a new fact.
	meta map[uint64]struct{}
	live bool
}

var metaSeed = maphash.MakeSeed()

// NewPipeline checks the options and builds a pipeline. Call Start before
// Submit.
func NewPipeline(opts PipelineOptions) (*Pipeline, error) {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 4096
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 1024
	}
	if opts.RetryMin <= 0 {
		opts.RetryMin = 50 * time.Millisecond
	}
	if opts.RetryMax < opts.RetryMin {
		opts.RetryMax = 5 * time.Second
	}
	p := &Pipeline{
		log:     opts.Logger,
		guards:  opts.Guards,
		seeder:  opts.Seeder,
		opts:    opts,
		seen:    make(map[string]*sessionSeen),
		refused: make(map[ID]int64),
		reasons: make(map[ID]string),
	}
	ids := make(map[ID]bool)
	for _, s := range opts.Sinks {
		if ids[s.ID] {
			return nil, fmt.Errorf("pipeline: sink %s listed twice", s.ID)
		}
		ids[s.ID] = true
		p.sinks = append(p.sinks, &sinkRunner{
			id:   s.ID,
			sink: s.Sink,
			log:  opts.Logger.Named(s.ID.String()),
			q:    make(chan item, opts.QueueSize),
			done: make(chan struct{}),
			p:    p,
		})
	}
	return p, nil
}

// Start starts every sink, then the goroutines that feed them. If a sink
// fails to start, the ones already started are shut down.
func (p *Pipeline) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return errors.New("pipeline: already started")
	}
	for i, r := range p.sinks {
		if err := r.sink.Start(ctx); err != nil {
			for _, s := range p.sinks[:i] {
				_ = s.sink.Shutdown(ctx)
			}
			return fmt.Errorf("start sink %s: %w", r.id, err)
		}
	}
	for _, r := range p.sinks {
		go r.run()
	}
	p.started = true
	return nil
}

// Submit runs e through the guards and dedup and queues it for every sink.
// When a sink's queue is full it waits, bounded by ctx; the wait is counted.
// The entry's Raw must not be changed by the caller afterwards.
func (p *Pipeline) Submit(ctx context.Context, e Entry) (Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || !p.started {
		return Result{}, ErrClosed
	}
	p.submitted.Add(1)
	for _, g := range p.guards {
		if err := g.Guard.Check(ctx, &e); err != nil {
			p.refusedMu.Lock()
			p.refused[g.ID]++
			p.reasons[g.ID] = err.Error()
			p.refusedMu.Unlock()
			return Result{Status: Refused, Guard: g.ID, Reason: err}, nil
		}
	}
	if dup, err := p.duplicate(ctx, &e); err != nil {
		return Result{}, err
	} else if dup {
		p.duplicates.Add(1)
		return Result{Status: Duplicate}, nil
	}
	it := item{entry: e}
	for _, r := range p.sinks {
		if err := p.enqueue(ctx, r, it); err != nil {
			// Sinks before r have the entry; the caller learns it is not
			// everywhere. Dedup must not hide a resubmission.
			p.forget(&e)
			return Result{}, fmt.Errorf("queue for sink %s: %w", r.id, err)
		}
	}
	p.accepted.Add(1)
	return Result{Status: Accepted}, nil
}

func (p *Pipeline) enqueue(ctx context.Context, r *sinkRunner, it item) error {
	select {
	case r.q <- it:
		return nil
	default:
	}
	p.waits.Add(1)
	start := time.Now()
	defer func() { p.waitNanos.Add(int64(time.Since(start))) }()
	select {
	case r.q <- it:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// duplicate reports whether dedup drops e, and records it otherwise.
func (p *Pipeline) duplicate(ctx context.Context, e *Entry) (bool, error) {
	ref := e.Ref()
	if ref.SessionID == "" {
		return false, nil
	}
	s, err := p.session(ctx, ref)
	if err != nil {
		return false, err
	}
	if e.UUID == "" {
		if !s.live && len(s.meta) > 0 {
			if _, ok := s.meta[maphash.Bytes(metaSeed, e.Raw)]; ok {
				return true, nil
			}
		}
		return false, nil
	}
	if _, ok := s.uuids[e.UUID]; ok {
		return true, nil
	}
	s.uuids[e.UUID] = struct{}{}
	// Only new conversation rows end a replay: a state event or a uuid'd
	// metadata line may precede stored lines in a replayed stream.
	if e.IsChain() {
		s.live = true
	}
	return false, nil
}

func (p *Pipeline) forget(e *Entry) {
	if s := p.seen[e.Ref().Key()]; s != nil && e.UUID != "" {
		delete(s.uuids, e.UUID)
	}
}

func (p *Pipeline) session(ctx context.Context, ref SessionRef) (*sessionSeen, error) {
	key := ref.Key()
	if s := p.seen[key]; s != nil {
		return s, nil
	}
	s := &sessionSeen{uuids: make(map[string]struct{})}
	if p.seeder != nil {
		seed, err := p.seeder.Seed(ctx, ref)
		if err != nil {
			p.seedErrors.Add(1)
			return nil, fmt.Errorf("seed dedup for session %s: %w", key, err)
		}
		for _, u := range seed.UUIDs {
			s.uuids[u] = struct{}{}
		}
		if len(seed.Metadata) > 0 {
			s.meta = make(map[uint64]struct{}, len(seed.Metadata))
			for _, m := range seed.Metadata {
				s.meta[maphash.Bytes(metaSeed, m)] = struct{}{}
			}
		}
	}
	p.seen[key] = s
	return s, nil
}

// SeedSession adds uuids to a session's dedup set, for hosts that loaded a
// session some other way (resume) and will append to it.
func (p *Pipeline) SeedSession(ctx context.Context, ref SessionRef, uuids []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, err := p.session(ctx, ref)
	if err != nil {
		return err
	}
	for _, u := range uuids {
		s.uuids[u] = struct{}{}
	}
	return nil
}

// Flush returns when everything submitted before it is durable in every
// sink, or ctx ends. The errors of all sinks are joined.
func (p *Pipeline) Flush(ctx context.Context) error {
	p.mu.Lock()
	if !p.started || p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	replies := make([]chan error, len(p.sinks))
	for i, r := range p.sinks {
		replies[i] = make(chan error, 1)
		if err := p.enqueue(ctx, r, item{flush: replies[i], ctx: ctx}); err != nil {
			p.mu.Unlock()
			return fmt.Errorf("flush sink %s: %w", r.id, err)
		}
	}
	p.mu.Unlock()
	var errs []error
	for i, r := range p.sinks {
		select {
		case err := <-replies[i]:
			if err != nil {
				errs = append(errs, fmt.Errorf("flush sink %s: %w", r.id, err))
			}
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("flush sink %s: %w (%d entries still queued)", r.id, ctx.Err(), len(r.q)))
		}
	}
	return errors.Join(errs...)
}

// Shutdown stops intake, lets every queue drain, flushes and shuts down
// every sink. When ctx ends first, what is left in a queue is counted as
// dropped and reported in the error. Safe to call twice.
func (p *Pipeline) Shutdown(ctx context.Context) error {
	var errs []error
	p.stopOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		started := p.started
		p.mu.Unlock()
		if !started {
			for _, r := range p.sinks {
				if err := r.sink.Shutdown(ctx); err != nil {
					errs = append(errs, fmt.Errorf("shutdown sink %s: %w", r.id, err))
				}
			}
			return
		}
		for _, r := range p.sinks {
			r.stopCtx.Store(&ctxBox{ctx})
			close(r.q)
		}
		for _, r := range p.sinks {
			select {
			case <-r.done:
			case <-ctx.Done():
				// The runner sees the same context and stops on its own,
				// unless the sink ignores it; give it a moment to report.
				select {
				case <-r.done:
				case <-time.After(time.Second):
					errs = append(errs, fmt.Errorf("shutdown sink %s: %w (sink still busy)", r.id, ctx.Err()))
					continue
				}
			}
			if r.err != nil {
				errs = append(errs, r.err)
			}
		}
	})
	return errors.Join(errs...)
}

// Stats is a snapshot of what the pipeline did.
type Stats struct {
	Submitted  int64 `json:"submitted"`
	Accepted   int64 `json:"accepted"`
	Duplicates int64 `json:"duplicates"`
	// Refused counts refusals by guard ID; Reasons keeps the last reason.
	Refused map[string]int64  `json:"refused"`
	Reasons map[string]string `json:"refused_reasons,omitempty"`
	// QueueWaits counts Submits that found a queue full and waited.
	QueueWaits    int64         `json:"queue_waits"`
	QueueWaitTime time.Duration `json:"queue_wait_ns"`
	SeedErrors    int64         `json:"seed_errors"`
	Sinks         []SinkStats   `json:"sinks"`
}

// SinkStats is one sink's part of Stats.
type SinkStats struct {
	ID          string           `json:"id"`
	Written     int64            `json:"written"`
	Batches     int64            `json:"batches"`
	WriteErrors int64            `json:"write_errors"`
	Retries     int64            `json:"retries"`
	Flushes     int64            `json:"flushes"`
	Dropped     int64            `json:"dropped"`
	Queued      int              `json:"queued"`
	LastError   string           `json:"last_error,omitempty"`
	Counters    map[string]int64 `json:"counters,omitempty"`
}

// Stats returns a snapshot of the counters.
func (p *Pipeline) Stats() Stats {
	st := Stats{
		Submitted:     p.submitted.Load(),
		Accepted:      p.accepted.Load(),
		Duplicates:    p.duplicates.Load(),
		Refused:       map[string]int64{},
		Reasons:       map[string]string{},
		QueueWaits:    p.waits.Load(),
		QueueWaitTime: time.Duration(p.waitNanos.Load()),
		SeedErrors:    p.seedErrors.Load(),
	}
	p.refusedMu.Lock()
	for id, n := range p.refused {
		st.Refused[id.String()] = n
		st.Reasons[id.String()] = p.reasons[id]
	}
	p.refusedMu.Unlock()
	for _, r := range p.sinks {
		ss := SinkStats{
			ID:          r.id.String(),
			Written:     r.written.Load(),
			Batches:     r.batches.Load(),
			WriteErrors: r.writeErrors.Load(),
			Retries:     r.retries.Load(),
			Flushes:     r.flushes.Load(),
			Dropped:     r.dropped.Load(),
			Queued:      len(r.q),
		}
		if e := r.lastErr.Load(); e != nil {
			ss.LastError = *e
		}
		if rep, ok := r.sink.(Reporter); ok {
			ss.Counters = rep.Report()
		}
		st.Sinks = append(st.Sinks, ss)
	}
	sort.Slice(st.Sinks, func(i, j int) bool { return st.Sinks[i].ID < st.Sinks[j].ID })
	return st
}

// item is an entry or a flush marker in a sink's queue.
type item struct {
	entry Entry
	flush chan error
	ctx   context.Context
}

type ctxBox struct{ ctx context.Context }

type sinkRunner struct {
	id   ID
	sink Sink
	log  hclog.Logger
	q    chan item
	done chan struct{}
	p    *Pipeline
	err  error

	stopCtx atomic.Pointer[ctxBox]

	written, batches, writeErrors, retries, flushes, dropped atomic.Int64
	lastErr                                                  atomic.Pointer[string]
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
	var pending *item // a flush marker met while batching
	for {
		var it item
		var ok bool
		if pending != nil {
			it, ok, pending = *pending, true, nil
		} else {
			it, ok = <-r.q
		}
		if !ok {
			break
		}
		if it.flush != nil {
			it.flush <- r.doFlush(it.ctx)
			continue
		}
		batch = append(batch[:0], it.entry)
	fill:
		for len(batch) < cap(batch) {
			select {
			case next, more := <-r.q:
				if !more {
					break fill
				}
				if next.flush != nil {
					pending = &next
					break fill
				}
				batch = append(batch, next.entry)
			default:
				break fill
			}
		}
		if !r.write(batch) {
			// Shutdown's deadline passed while the sink kept failing.
			n := int64(len(batch))
			for range r.q {
				n++
			}
			r.dropped.Add(n)
			r.err = fmt.Errorf("sink %s: %d entries not delivered: %s", r.id, n, r.lastError())
			r.log.Error("entries dropped at shutdown", "count", n, "error", r.lastError())
			_ = r.sink.Shutdown(context.Background())
			return
		}
		clear(batch)
	}
	ctx := r.stopping()
	if ctx == nil {
		ctx = context.Background()
	}
	if err := r.sink.Shutdown(ctx); err != nil {
		r.err = fmt.Errorf("shutdown sink %s: %w", r.id, err)
	}
}

func (r *sinkRunner) lastError() string {
	if e := r.lastErr.Load(); e != nil {
		return *e
	}
	return ""
}

// write delivers a batch, retrying with backoff until it succeeds. It gives
// up only when Shutdown's context has ended.
func (r *sinkRunner) write(batch []Entry) bool {
	delay := r.p.opts.RetryMin
	for attempt := 0; ; attempt++ {
		ctx := r.stopping()
		if ctx == nil {
			ctx = context.Background()
		}
		err := r.sink.Write(ctx, batch)
		if err == nil {
			r.written.Add(int64(len(batch)))
			r.batches.Add(1)
			return true
		}
		r.writeErrors.Add(1)
		msg := err.Error()
		r.lastErr.Store(&msg)
		r.log.Warn("write failed; will retry", "entries", len(batch), "attempt", attempt+1, "backoff", delay, "error", err)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
		r.retries.Add(1)
		delay = min(delay*2, r.p.opts.RetryMax)
	}
}

func (r *sinkRunner) doFlush(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	r.flushes.Add(1)
	if err := r.sink.Flush(ctx); err != nil {
		msg := err.Error()
		r.lastErr.Store(&msg)
		return err
	}
	return nil
}
