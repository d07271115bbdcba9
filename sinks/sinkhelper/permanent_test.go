package sinkhelper

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
)

// refusingSink fails every Write with the error refuse makes, counting the
// calls.
type refusingSink struct {
	coretest.RecordingSink
	refuse func() error
	mu     sync.Mutex
	calls  int
}

func (s *refusingSink) Write(context.Context, []core.Entry) error {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	return s.refuse()
}

// TestSinkhelperPermanentIsCorePermanent: an error marked by sinkhelper's
// Permanent (a network sink's refused token or entry) is one core's runner
// gives up at once: the entry is dropped as rejected, never retried until
// its time runs out.
func TestSinkhelperPermanentIsCorePermanent(t *testing.T) {
	sink := &refusingSink{refuse: func() error { return Permanent(errors.New("401 Unauthorized")) }}
	p, err := core.NewPipeline(core.PipelineOptions{
		Sinks:    []core.NamedSink{{ID: core.MustParseID("net/refusing"), Sink: sink}},
		RetryMin: time.Millisecond,
		RetryMax: time.Millisecond,
		RetryFor: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	es, _ := mkEntries(t, 0, 1, 0)
	if _, err := p.Submit(context.Background(), es[0]); err != nil {
		t.Fatal(err)
	}
	_ = p.Flush(context.Background())
	_ = p.Shutdown(context.Background())
	st := p.Stats().Sinks[0]
	if st.DropReasons["rejected"] != 1 || st.DropReasons["retries_exhausted"] != 0 || st.Retries != 0 {
		t.Fatalf("sink stats %+v: want the entry dropped as rejected, without retries", st)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.calls != 1 {
		t.Fatalf("Write called %d times, want 1", sink.calls)
	}
}

// TestCorePermanentIsSinkhelperPermanent: an error a push function marks
// with core.Permanent ends the Sender's retries as sinkhelper's own do:
// dropped, counted as a permanent failure, and reported by Flush.
func TestCorePermanentIsSinkhelperPermanent(t *testing.T) {
	f := newFake()
	f.setFail(func(int) error { return core.Permanent(errors.New("refused for good")) })
	s := start(t, testOptions(t.TempDir()), f.push)
	es, _ := mkEntries(t, 0, 4, 0)
	write(t, s, es)
	err := s.Flush(context.Background())
	if err == nil || !strings.Contains(err.Error(), "refused for good") || !core.IsPermanent(err) {
		t.Fatalf("Flush = %v, want the permanent error", err)
	}
	if r := s.Report(); r["dropped"] != 4 || r["permanent_failures"] != 1 || r["retries"] != 0 {
		t.Fatalf("report %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
