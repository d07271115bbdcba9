package core_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
)

// leaseSink checks, at every Write, that each entry's lease still holds a
// reference (the runner's) and that Raw is what was submitted; it fails
// every entry when fail is set (permanently: the runner drops it), and
// blocks until release is closed when one is given (its queue fills and
// the overflow policy drops for it).
type leaseSink struct {
	coretest.RecordingSink
	fail    bool
	release chan struct{}
	mu      sync.Mutex
	bad     []string
}

func (s *leaseSink) Write(ctx context.Context, es []core.Entry) error {
	for _, e := range es {
		if e.Lease.Refs() < 1 {
			s.mu.Lock()
			s.bad = append(s.bad, e.UUID)
			s.mu.Unlock()
		}
	}
	if s.release != nil {
		<-s.release
	}
	if s.fail {
		return core.Permanent(errors.New("never"))
	}
	return s.RecordingSink.Write(ctx, es)
}

// Every reference Submit takes on an entry's lease comes back, whatever
// happens to the entry: accepted by every sink, refused by a guard,
// dropped by a processor or changed into a copy, rejected, a duplicate,
// dropped by a sink that fails it, or by a full queue; and no sink sees an
// entry whose lease was already given back.
func TestSubmitReturnsEveryLeaseReference(t *testing.T) {
	ok, failing := &leaseSink{}, &leaseSink{fail: true}
	stuck := &leaseSink{release: make(chan struct{})}
	p, err := core.NewPipeline(core.PipelineOptions{
		Sinks: []core.NamedSink{
			{ID: core.MustParseID("rec/ok"), Sink: ok},
			{ID: core.MustParseID("rec/failing"), Sink: failing},
			{ID: core.MustParseID("rec/stuck"), Sink: stuck, Overflow: core.Overflow{Mode: core.OverflowDrop}},
		},
		Guards:     []core.NamedGuard{{ID: core.MustParseID("deny/secret"), Guard: denyGuard{"no secrets"}}},
		Processors: []core.NamedProcessor{{ID: core.MustParseID("upper/x"), Processor: upper{}}},
		QueueSize:  2,
		RetryMin:   time.Millisecond,
		RetryMax:   time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	lease := core.NewLease() // the test's own reference
	lines := chain(40, sess)
	lines = append(lines,
		lines[3], // a duplicate
		coretest.Line(core.TypeSystem, sess, uid(100), uid(39)),         // dropped by the processor
		`{"type":"user","uuid":"secret-1","sessionId":"`+sess+`"}`,      // refused
		`{"type":"user","uuid":"`+uid(101)+`","sessionId":"../escape"}`, // rejected
	)
	statuses := map[core.Status]int{}
	for _, l := range lines {
		e := coretest.MustEntry(t, l)
		lease.Retain(1)
		e.Lease = lease
		r, err := p.Submit(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		statuses[r.Status]++
	}
	close(stuck.release)
	if err := p.Shutdown(context.Background()); err != nil && !errors.Is(err, core.ErrClosed) {
		t.Logf("shutdown: %v (the failing sink's drops)", err)
	}
	if n := lease.Refs(); n != 1 {
		t.Fatalf("after shutdown the lease holds %d references, want 1 (the test's): statuses %v", n, statuses)
	}
	lease.Release()
	for _, s := range []*leaseSink{ok, failing, stuck} {
		if len(s.bad) > 0 {
			t.Fatalf("a sink was given entries whose lease was already back: %v", s.bad)
		}
	}
	if statuses[core.Accepted] != 40 || statuses[core.Duplicate] != 1 || statuses[core.Dropped] != 1 ||
		statuses[core.Refused] != 1 || statuses[core.Rejected] != 1 {
		t.Fatalf("statuses %v: the test did not reach every path", statuses)
	}
	st := p.Stats()
	var dropped int64
	for _, s := range st.Sinks {
		dropped += s.Dropped
	}
	if dropped < 41 {
		t.Fatalf("%d drops in all: the failing and the stuck sink should have dropped entries", dropped)
	}
}
