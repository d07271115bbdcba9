package core

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// NamedSink is a sink with its ID and its queue's overflow policy, as the
// pipeline is given it.
type NamedSink struct {
	ID   ID
	Sink Sink
	// Overflow says what happens when the sink's queue is full. The zero
	// value waits DefaultOverflowWait, then drops.
	Overflow Overflow
}

// NamedGuard is a guard with its ID.
type NamedGuard struct {
	ID    ID
	Guard Guard
}

// NamedProcessor is a processor with its ID.
type NamedProcessor struct {
	ID        ID
	Processor Processor
}

// OverflowMode says what a full sink queue does with a new entry.
type OverflowMode string

// The overflow modes.
const (
	// OverflowWait makes Submit wait for room up to Overflow.Wait; when the
	// wait runs out the entry is dropped for that sink, counted, and the
	// sink is marked stalled: later entries are dropped at once until its
	// queue is half empty again, so a dead sink costs one wait, not one
	// per entry.
	OverflowWait OverflowMode = "wait"
	// OverflowDrop drops the entry for that sink at once, counted.
	OverflowDrop OverflowMode = "drop"
)

// DefaultOverflowWait is how long Submit waits for room in a full queue.
const DefaultOverflowWait = 5 * time.Second

// Overflow is a sink queue's overflow policy.
type Overflow struct {
	Mode OverflowMode
	Wait time.Duration
}

// PipelineOptions configures a Pipeline.
type PipelineOptions struct {
	Logger hclog.Logger
	// Guards run in order; the first refusal drops the entry.
	Guards []NamedGuard
	// Processors run in order after the guards; each gets what the one
	// before it returned.
	Processors []NamedProcessor
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
	// RetryFor bounds how long one batch is retried before it is given up,
	// counted as dropped. Default 1 minute.
	RetryFor time.Duration
}

// Status says what Submit did with an entry.
type Status int

// The outcomes of Submit.
const (
	Accepted Status = iota
	Duplicate
	// Refused: a guard said persistence is off.
	Refused
	// Dropped: a processor dropped the entry on purpose.
	Dropped
	// Rejected: the entry cannot be stored (a bad id, no cwd).
	Rejected
)

func (s Status) String() string {
	switch s {
	case Accepted:
		return "accepted"
	case Duplicate:
		return "duplicate"
	case Refused:
		return "refused"
	case Dropped:
		return "dropped"
	case Rejected:
		return "rejected"
	}
	return fmt.Sprintf("status(%d)", int(s))
}

// Result is the outcome of one Submit.
type Result struct {
	Status Status
	// By is the component that refused, dropped or rejected the entry (zero
	// when the pipeline itself rejected it); Guard is By for a refusal.
	By     ID
	Guard  ID
	Reason error
}

// Reporter is implemented by components that count things of their own
// (repairs, spills, retries); the pipeline includes them in its Stats.
type Reporter interface {
	Report() map[string]int64
}

// Volatile is implemented by sinks that promise no durability (a memory
// cache): what they lose does not hold acknowledgements back.
type Volatile interface {
	Volatile() bool
}

// Idempotent is implemented by sinks whose destination drops an entry it
// already holds (by uuid, or by content for lines without one): a server
// that keys messages by uuid, a table with a unique index. They get the
// entries dedup drops only because the seeding store had them, so a
// destination that missed them (the process was killed between the local
// write and the upload) catches up when the input is replayed.
type Idempotent interface {
	Idempotent() bool
}

// Pipeline moves entries from Submit through the guards, the processors
// and dedup to every sink. Each sink has its own bounded queue and
// goroutine, so a slow or failing sink never delays delivery to another
// beyond its overflow policy; entries reach each sink in submission order,
// which keeps per-session order.
//
//	Submit ──► guards ──► processors ──► checks ──► dedup ──┬──► queue ──► runner ──► sink A
//	                                                        └──► queue ──► runner ──► sink B
//
// No lock is held across a guard, a processor or a sink: Submit takes the
// gate shared (Flush and Shutdown take it alone, only to read counters or
// close queues) and the lock of the entry's session, which serializes
// seeding and queueing per session. Flush notes how many entries each
// queue has been given and returns when each runner has handled that many
// and its sink reported them durable.
type Pipeline struct {
	log    hclog.Logger
	guards []NamedGuard
	// askGuards are the guards Submit asks per entry: all but the static
	// ones that allow (StaticGuard).
	askGuards  []NamedGuard
	processors []NamedProcessor
	checkers   []namedChecker
	seeder     Seeder
	sinks      []*sinkRunner
	opts       PipelineOptions

	gate    sync.RWMutex // Submit shares it; Flush and Shutdown take it alone
	started bool
	closed  bool
	stopped sync.Once

	seenMu sync.Mutex
	seen   map[string]*sessionSeen

	submitted, accepted, duplicates atomic.Int64
	replayed                        atomic.Int64
	idempotent                      int // sinks that drop what they already hold
	waits, waitNanos, seedErrors    atomic.Int64

	countMu  sync.Mutex
	refused  map[ID]int64
	reasons  map[ID]string
	dropped  map[ID]int64 // by processor
	dreasons map[ID]string
	// rejected counts by who rejected ("pipeline" or a sink ID), never by
	// reason: a reason names the id, and a hostile input has as many ids
	// as lines. rreasons keeps the last reason of each.
	rejected map[string]int64
	rreasons map[string]string
	failed   map[ID]int64 // processor errors (not ErrDropped)

	lostMu  sync.Mutex
	lostMin int64 // the lowest Seq a durable sink lost; 0: none
	lostAny bool  // a durable sink lost an entry (with or without a Seq)
}

type namedChecker struct {
	id ID
	c  EntryChecker
}

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
	if opts.RetryFor <= 0 {
		opts.RetryFor = time.Minute
	}
	p := &Pipeline{
		log:        opts.Logger,
		guards:     opts.Guards,
		askGuards:  askedGuards(opts.Guards),
		processors: opts.Processors,
		seeder:     opts.Seeder,
		opts:       opts,
		seen:       make(map[string]*sessionSeen),
		refused:    make(map[ID]int64),
		reasons:    make(map[ID]string),
		dropped:    make(map[ID]int64),
		dreasons:   make(map[ID]string),
		rejected:   make(map[string]int64),
		rreasons:   make(map[string]string),
		failed:     make(map[ID]int64),
	}
	ids := make(map[ID]bool)
	for _, s := range opts.Sinks {
		if ids[s.ID] {
			return nil, fmt.Errorf("pipeline: sink %s listed twice", s.ID)
		}
		ids[s.ID] = true
		ov := s.Overflow
		if ov.Mode == "" {
			ov.Mode = OverflowWait
		}
		if ov.Mode == OverflowWait && ov.Wait <= 0 {
			ov.Wait = DefaultOverflowWait
		}
		if ov.Mode != OverflowWait && ov.Mode != OverflowDrop {
			return nil, fmt.Errorf("pipeline: sink %s: overflow mode %q: want wait or drop", s.ID, ov.Mode)
		}
		v, _ := s.Sink.(Volatile)
		idem, _ := s.Sink.(Idempotent)
		p.sinks = append(p.sinks, &sinkRunner{
			id:         s.ID,
			sink:       s.Sink,
			overflow:   ov,
			volatile:   v != nil && v.Volatile(),
			idempotent: idem != nil && idem.Idempotent() && !isSeeder(s.Sink, opts.Seeder),
			log:        opts.Logger.Named(s.ID.String()),
			q:          make(chan Entry, opts.QueueSize),
			kick:       make(chan struct{}, 1),
			stop:       make(chan struct{}),
			done:       make(chan struct{}),
			p:          p,
			reasons:    make(map[string]int64),
		})
		if p.sinks[len(p.sinks)-1].idempotent {
			p.idempotent++
		}
		if c, ok := s.Sink.(EntryChecker); ok {
			p.checkers = append(p.checkers, namedChecker{s.ID, c})
		}
	}
	return p, nil
}

// Start starts every sink, then the goroutines that feed them. If a sink
// fails to start, the ones already started are shut down.
func (p *Pipeline) Start(ctx context.Context) error {
	p.gate.Lock()
	defer p.gate.Unlock()
	if p.started {
		return errors.New("pipeline: already started")
	}
	if p.closed {
		return ErrClosed
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

// Submit runs e through the guards, the processors, the entry checks and
// dedup, and queues it for every sink. A refusal, a drop, a rejection or a
// duplicate is a Result, not an error: the caller goes on with its next
// entry. The error is ErrClosed after Shutdown, or the failure to seed
// dedup for the entry's session. The caller must not change e.Raw
// afterwards. Submit takes over e.Lease: it is released, on every path,
// once nothing the pipeline runs reads Raw any more (each sink's Write has
// returned, or the entry ended before).
func (p *Pipeline) Submit(ctx context.Context, e Entry) (Result, error) {
	defer e.Lease.Release()
	p.gate.RLock()
	defer p.gate.RUnlock()
	if p.closed || !p.started {
		return Result{}, ErrClosed
	}
	p.submitted.Add(1)
	if len(p.askGuards) > 0 {
		if res := p.guard(ctx, &e); res != nil {
			return *res, nil
		}
	}
	if len(p.processors) > 0 {
		var res *Result
		if e, res = p.process(ctx, e); res != nil {
			return *res, nil
		}
	}
	if res := p.check(&e); res != nil {
		return *res, nil
	}
	ref := e.Ref()
	if ref.SessionID == "" {
		// Nothing to dedup against; sinks route or count it.
		p.fanout(ctx, e)
		p.accepted.Add(1)
		return Result{Status: Accepted}, nil
	}
	s, err := p.session(ctx, ref)
	if err != nil {
		return Result{}, err
	}
	defer s.mu.Unlock()
	if dup, replay := s.duplicate(&e); dup {
		p.duplicates.Add(1)
		if replay && p.idempotent > 0 {
			for _, r := range p.sinks {
				if r.idempotent {
					r.enqueue(ctx, e)
				}
			}
			p.replayed.Add(1)
		}
		return Result{Status: Duplicate}, nil
	}
	p.fanout(ctx, e)
	p.accepted.Add(1)
	return Result{Status: Accepted}, nil
}

// entryCopies are the entries guards and sink checks are shown: a copy of
// Submit's, so that Submit's own stays off the heap (they are interfaces:
// what they are given escapes). One copy serves all the guards, or all
// the checks, of an entry: they must not change it.
var entryCopies = sync.Pool{New: func() any { return new(Entry) }}

// copyOf takes a pooled copy of *e; giveBack returns it.
func copyOf(e *Entry) *Entry {
	c := entryCopies.Get().(*Entry)
	*c = *e
	return c
}

func giveBack(c *Entry) {
	*c = Entry{}
	entryCopies.Put(c)
}

// askedGuards leaves out the static guards that allow: they would say
// yes to every entry.
func askedGuards(gs []NamedGuard) []NamedGuard {
	var out []NamedGuard
	for _, g := range gs {
		if s, ok := g.Guard.(StaticGuard); ok && s.Allows() {
			continue
		}
		out = append(out, g)
	}
	return out
}

// guard runs the guards on a copy of *e (one for all: a guard does not
// change what it is shown); a non-nil Result ends the entry.
func (p *Pipeline) guard(ctx context.Context, e *Entry) *Result {
	ge := copyOf(e)
	defer giveBack(ge)
	for _, g := range p.askGuards {
		if err := g.Guard.Check(ctx, ge); err != nil {
			p.countMu.Lock()
			p.refused[g.ID]++
			p.reasons[g.ID] = err.Error()
			p.countMu.Unlock()
			return &Result{Status: Refused, By: g.ID, Guard: g.ID, Reason: err}
		}
	}
	return nil
}

// process runs the processors; a non-nil Result ends the entry.
func (p *Pipeline) process(ctx context.Context, e Entry) (Entry, *Result) {
	for _, np := range p.processors {
		out, err := np.Processor.Process(ctx, e)
		if err != nil {
			p.countMu.Lock()
			p.dropped[np.ID]++
			p.dreasons[np.ID] = err.Error()
			if !errors.Is(err, ErrDropped) {
				p.failed[np.ID]++
			}
			p.countMu.Unlock()
			return e, &Result{Status: Dropped, By: np.ID, Reason: err}
		}
		if !sameBytes(out.Raw, e.Raw) {
			// A changed copy: its fields come from its own bytes, its
			// routing fields from the host's where the line lacks them.
			parsed, err := ParseEntryOwned(out.Raw)
			if err != nil {
				p.countMu.Lock()
				p.dropped[np.ID]++
				p.failed[np.ID]++
				p.dreasons[np.ID] = "returned a malformed line: " + err.Error()
				p.countMu.Unlock()
				return e, &Result{Status: Dropped, By: np.ID, Reason: fmt.Errorf("processor %s returned a malformed line: %w", np.ID, err)}
			}
			if parsed.SessionID == "" {
				parsed.SessionID = e.SessionID
			}
			if parsed.CWD == "" {
				parsed.CWD = e.CWD
			}
			parsed.Seq = e.Seq
			// The copy may share memory with the input: keep its block
			// until the sinks are done with the copy.
			parsed.Lease = e.Lease
			out = parsed
		}
		e = out
	}
	return e, nil
}

// check rejects an entry no sink can store; a non-nil Result ends it.
func (p *Pipeline) check(e *Entry) *Result {
	reject := func(by ID, err error) *Result {
		who := "pipeline"
		if by != (ID{}) {
			who = by.String()
		}
		p.countMu.Lock()
		p.rejected[who]++
		p.rreasons[who] = err.Error()
		p.countMu.Unlock()
		return &Result{Status: Rejected, By: by, Reason: err}
	}
	if err := CheckIDs(e); err != nil {
		return reject(ID{}, err)
	}
	if len(p.checkers) == 0 {
		return nil
	}
	ce := copyOf(e)
	defer giveBack(ce)
	for _, c := range p.checkers {
		if err := c.c.CheckEntry(ce); err != nil {
			if !errors.Is(err, ErrRejected) {
				err = fmt.Errorf("%w: %v", ErrRejected, err)
			}
			return reject(c.id, fmt.Errorf("sink %s: %w", c.id, err))
		}
	}
	return nil
}

// CheckIDs rejects session and agent ids that could name a path outside a
// session's folder in any store: empty parts, '/', '\\', NUL or other
// control characters, "." and "..".
func CheckIDs(e *Entry) error {
	if err := checkIDPart("sessionId", e.SessionID); err != nil {
		return err
	}
	return checkIDPart("agentId", e.AgentID)
}

func checkIDPart(name, s string) error {
	if s == "" {
		return nil
	}
	if s == "." || s == ".." || len(s) > 255 {
		return Rejectf("%s %q cannot name a file", name, s)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '/' || c == '\\' {
			return Rejectf("%s %q cannot name a file", name, s)
		}
	}
	return nil
}

// fanout queues e for every sink, each under its own overflow policy.
func (p *Pipeline) fanout(ctx context.Context, e Entry) {
	for _, r := range p.sinks {
		r.enqueue(ctx, e)
	}
}

// lost records that a durable sink will never have the entry of seq.
func (p *Pipeline) lost(seq int64) {
	p.lostMu.Lock()
	defer p.lostMu.Unlock()
	p.lostAny = true
	if seq > 0 && (p.lostMin == 0 || seq < p.lostMin) {
		p.lostMin = seq
	}
}

// Acked returns how far acknowledgements may go after a Flush that
// returned nil and covered every entry up to Seq through: through itself,
// unless a durable sink lost an entry at or below it, or a sink holds one
// back on purpose (then the Seq just before the first such entry).
func (p *Pipeline) Acked(through int64) int64 {
	p.lostMu.Lock()
	if p.lostMin > 0 && p.lostMin <= through {
		through = p.lostMin - 1
	}
	p.lostMu.Unlock()
	for _, r := range p.sinks {
		if h, ok := r.sink.(Holder); ok {
			if s := h.HeldSince(); s > 0 && s <= through {
				through = s - 1
			}
		}
	}
	return through
}

// Lost reports whether a durable sink has lost any entry.
func (p *Pipeline) Lost() bool {
	p.lostMu.Lock()
	defer p.lostMu.Unlock()
	return p.lostAny
}

// Flush returns when everything submitted before it is durable in every
// sink, or ctx ends. It never blocks Submit: it notes each queue's count
// and waits for the runners. The errors of all sinks are joined.
func (p *Pipeline) Flush(ctx context.Context) error {
	p.gate.Lock()
	if !p.started || p.closed {
		p.gate.Unlock()
		return ErrClosed
	}
	replies := make([]chan error, len(p.sinks))
	for i, r := range p.sinks {
		replies[i] = r.requestFlush(ctx)
	}
	p.gate.Unlock()
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
	p.stopped.Do(func() {
		errs = append(errs, p.submitAudits(ctx)...)
		p.gate.Lock()
		p.closed = true
		started := p.started
		if started {
			for _, r := range p.sinks {
				r.stopCtx.Store(&ctxBox{ctx})
				close(r.stop)
				close(r.q)
			}
		}
		p.gate.Unlock()
		if !started {
			for _, r := range p.sinks {
				if err := r.sink.Shutdown(ctx); err != nil {
					errs = append(errs, fmt.Errorf("shutdown sink %s: %w", r.id, err))
				}
			}
			return
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

// submitAudits submits, before intake stops, the audit records that
// processors kept (core.Auditor): what a redaction did, per session.
func (p *Pipeline) submitAudits(ctx context.Context) []error {
	p.gate.RLock()
	live := p.started && !p.closed
	p.gate.RUnlock()
	if !live {
		return nil
	}
	var errs []error
	for _, np := range p.processors {
		a, ok := np.Processor.(Auditor)
		if !ok {
			continue
		}
		entries, err := a.AuditEntries()
		if err != nil {
			errs = append(errs, fmt.Errorf("processor %s: %w", np.ID, err))
		}
		for _, e := range entries {
			if _, err := p.Submit(ctx, e); err != nil {
				errs = append(errs, fmt.Errorf("processor %s: audit record: %w", np.ID, err))
			}
		}
	}
	return errs
}

// Stats is a snapshot of what the pipeline did.
type Stats struct {
	Submitted  int64 `json:"submitted"`
	Accepted   int64 `json:"accepted"`
	Duplicates int64 `json:"duplicates"`
	// Replayed counts duplicates of the seeding store's content that still
	// went to the idempotent sinks.
	Replayed int64 `json:"replayed_to_idempotent"`
	// Refused counts refusals by guard ID; Reasons keeps the last reason.
	Refused map[string]int64  `json:"refused"`
	Reasons map[string]string `json:"refused_reasons,omitempty"`
	// Dropped counts drops by processor ID; DropReasons keeps the last
	// reason; ProcessorErrors counts the drops that were failures.
	Dropped         map[string]int64  `json:"dropped"`
	DropReasons     map[string]string `json:"dropped_reasons,omitempty"`
	ProcessorErrors map[string]int64  `json:"processor_errors,omitempty"`
	// Rejected counts entries no sink could store, by who rejected them
	// ("pipeline" for an id that cannot name a file, else a sink ID);
	// RejectedReasons keeps the last reason of each.
	Rejected        map[string]int64  `json:"rejected"`
	RejectedReasons map[string]string `json:"rejected_reasons,omitempty"`
	// QueueWaits counts Submits that found a queue full and waited.
	QueueWaits    int64         `json:"queue_waits"`
	QueueWaitTime time.Duration `json:"queue_wait_ns"`
	SeedErrors    int64         `json:"seed_errors"`
	Sinks         []SinkStats   `json:"sinks"`
}

// SinkStats is one sink's part of Stats.
type SinkStats struct {
	ID          string `json:"id"`
	Written     int64  `json:"written"`
	Batches     int64  `json:"batches"`
	WriteErrors int64  `json:"write_errors"`
	Retries     int64  `json:"retries"`
	Flushes     int64  `json:"flushes"`
	// QueueWaits counts Submits that found this sink's queue full and
	// waited.
	QueueWaits int64 `json:"queue_waits"`
	// Dropped counts the entries this sink will never have; DropReasons
	// splits it: queue_full, retries_exhausted, rejected (a permanent
	// error for that entry), shutdown.
	Dropped     int64            `json:"dropped"`
	DropReasons map[string]int64 `json:"drop_reasons,omitempty"`
	Queued      int              `json:"queued"`
	Stalled     bool             `json:"stalled,omitempty"`
	Volatile    bool             `json:"volatile,omitempty"`
	LastError   string           `json:"last_error,omitempty"`
	Counters    map[string]int64 `json:"counters,omitempty"`
}

// Stats returns a snapshot of the counters.
func (p *Pipeline) Stats() Stats {
	st := Stats{
		Submitted:       p.submitted.Load(),
		Accepted:        p.accepted.Load(),
		Duplicates:      p.duplicates.Load(),
		Replayed:        p.replayed.Load(),
		Refused:         map[string]int64{},
		Reasons:         map[string]string{},
		Dropped:         map[string]int64{},
		DropReasons:     map[string]string{},
		ProcessorErrors: map[string]int64{},
		Rejected:        map[string]int64{},
		QueueWaits:      p.waits.Load(),
		QueueWaitTime:   time.Duration(p.waitNanos.Load()),
		SeedErrors:      p.seedErrors.Load(),
	}
	p.countMu.Lock()
	for id, n := range p.refused {
		st.Refused[id.String()] = n
		st.Reasons[id.String()] = p.reasons[id]
	}
	for id, n := range p.dropped {
		st.Dropped[id.String()] = n
		st.DropReasons[id.String()] = p.dreasons[id]
	}
	for id, n := range p.failed {
		st.ProcessorErrors[id.String()] = n
	}
	st.RejectedReasons = make(map[string]string, len(p.rreasons))
	for r, n := range p.rejected {
		st.Rejected[r] = n
		st.RejectedReasons[r] = p.rreasons[r]
	}
	p.countMu.Unlock()
	for _, r := range p.sinks {
		st.Sinks = append(st.Sinks, r.stats())
	}
	sort.Slice(st.Sinks, func(i, j int) bool { return st.Sinks[i].ID < st.Sinks[j].ID })
	return st
}

// isSeeder reports whether sink is the seeding store itself.
func isSeeder(sink Sink, seeder Seeder) bool {
	sd, ok := sink.(Seeder)
	return ok && seeder != nil && sd == seeder
}

// sameBytes reports whether a and b are the same slice (not equal bytes:
// the same memory).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
