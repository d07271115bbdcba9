package core_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
)

const sess = "0565a3a4-0000-4000-8000-000000000001"

func uid(i int) string { return fmt.Sprintf("4f7e0000-0000-4000-8000-%012d", i) }

func newPipeline(t *testing.T, opts core.PipelineOptions) *core.Pipeline {
	t.Helper()
	if opts.RetryMin == 0 {
		opts.RetryMin = time.Millisecond
		opts.RetryMax = 5 * time.Millisecond
	}
	p, err := core.NewPipeline(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p
}

func submit(t *testing.T, p *core.Pipeline, line string) core.Result {
	t.Helper()
	r, err := p.Submit(context.Background(), coretest.MustEntry(t, line))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func chain(n int, session string) []string {
	var out []string
	parent := ""
	for i := range n {
		typ := core.TypeUser
		if i%2 == 1 {
			typ = core.TypeAssistant
		}
		out = append(out, coretest.Line(typ, session, uid(i), parent))
		parent = uid(i)
	}
	return out
}

func TestPipelineFanOutKeepsOrderAndFlushIsDurable(t *testing.T) {
	a, b := &coretest.RecordingSink{}, &coretest.RecordingSink{}
	p := newPipeline(t, core.PipelineOptions{
		Sinks:     []core.NamedSink{{ID: core.MustParseID("rec/a"), Sink: a}, {ID: core.MustParseID("rec/b"), Sink: b}},
		QueueSize: 8, MaxBatch: 3,
	})
	lines := chain(100, sess)
	for _, l := range lines {
		if r := submit(t, p, l); r.Status != core.Accepted {
			t.Fatalf("status %v", r.Status)
		}
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*coretest.RecordingSink{"a": a, "b": b} {
		if got := s.Durable(); strings.Join(got, "\n") != strings.Join(lines, "\n") {
			t.Errorf("sink %s durable after Flush: %d lines, want %d in order", name, len(got), len(lines))
		}
	}
	st := p.Stats()
	if st.Accepted != 100 || st.Submitted != 100 || st.Sinks[0].Written != 100 || st.Sinks[1].Written != 100 {
		t.Errorf("stats %+v", st)
	}
}

func TestPipelineDedup(t *testing.T) {
	rec := &coretest.RecordingSink{}
	p := newPipeline(t, core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.MustParseID("rec/a"), Sink: rec}}})
	lines := chain(4, sess)
	for _, l := range lines {
		submit(t, p, l)
	}
	for _, l := range lines {
		if r := submit(t, p, l); r.Status != core.Duplicate {
			t.Fatalf("resubmitted %s: %v, want duplicate", l[:40], r.Status)
		}
	}
	// A sidechain has its own set: the same uuid under an agent is new.
	side := strings.Replace(lines[0], `"isSidechain":false`, `"isSidechain":true,"agentId":"a1"`, 1)
	if r := submit(t, p, side); r.Status != core.Accepted {
		t.Fatalf("sidechain entry with a main-chain uuid: %v, want accepted", r.Status)
	}
	// Metadata without a uuid always passes in a live session.
	title := `{"type":"custom-title","customTitle":"x","sessionId":"` + sess + `"}`
	for range 2 {
		if r := submit(t, p, title); r.Status != core.Accepted {
			t.Fatalf("metadata: %v, want accepted", r.Status)
		}
	}
	if st := p.Stats(); st.Duplicates != 4 || st.Accepted != 7 {
		t.Errorf("duplicates=%d accepted=%d, want 4 and 7", st.Duplicates, st.Accepted)
	}
}

type seeder struct {
	mu    sync.Mutex
	calls map[string]int
	seed  core.Seed
}

func (s *seeder) Seed(_ context.Context, ref core.SessionRef) (core.Seed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[string]int{}
	}
	s.calls[ref.Key()]++
	if ref.AgentID != "" {
		return core.Seed{}, nil
	}
	return s.seed, nil
}

func TestPipelineSeedAndReplay(t *testing.T) {
	lines := chain(4, sess)
	title := `{"type":"custom-title","customTitle":"old","sessionId":"` + sess + `"}`
	sd := &seeder{seed: core.Seed{UUIDs: []string{uid(0), uid(1)}, Metadata: [][]byte{[]byte(title)}}}
	rec := &coretest.RecordingSink{}
	p := newPipeline(t, core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.MustParseID("rec/a"), Sink: rec}}, Seeder: sd})

	// Replaying stored input adds nothing, metadata included; a new state
	// event in the replay does not end it.
	state := `{"type":"scribe-state","state":"running","from":"idle","sessionId":"` + sess + `","uuid":"st-1","timestamp":"2026-01-10T11:00:02.267Z"}`
	if r := submit(t, p, state); r.Status != core.Accepted {
		t.Fatalf("state event: %v", r.Status)
	}
	for i, l := range []string{lines[0], title, lines[1]} {
		if r := submit(t, p, l); r.Status != core.Duplicate {
			t.Fatalf("replayed line %d: %v, want duplicate", i, r.Status)
		}
	}
	// New chain entries make the session live: metadata passes again.
	if r := submit(t, p, lines[2]); r.Status != core.Accepted {
		t.Fatalf("new entry: %v", r.Status)
	}
	if r := submit(t, p, title); r.Status != core.Accepted {
		t.Fatalf("metadata after new entries: %v, want accepted", r.Status)
	}
	if sd.calls[sess] != 1 {
		t.Errorf("seeder called %d times for the session, want once", sd.calls[sess])
	}
}

type denyGuard struct{ reason string }

func (g denyGuard) Check(_ context.Context, e *core.Entry) error {
	if strings.Contains(string(e.Raw), "secret") {
		return core.Refusal("%s", g.reason)
	}
	return nil
}

func TestPipelineGuardsRefuseAndCount(t *testing.T) {
	rec := &coretest.RecordingSink{}
	gid := core.MustParseID("deny/secret")
	p := newPipeline(t, core.PipelineOptions{
		Sinks:  []core.NamedSink{{ID: core.MustParseID("rec/a"), Sink: rec}},
		Guards: []core.NamedGuard{{ID: gid, Guard: denyGuard{"no secrets"}}},
	})
	r := submit(t, p, `{"type":"user","uuid":"secret-1","sessionId":"`+sess+`"}`)
	if r.Status != core.Refused || r.Guard != gid || !errors.Is(r.Reason, core.ErrPersistenceDisabled) {
		t.Fatalf("got %+v", r)
	}
	submit(t, p, chain(1, sess)[0])
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.Refused["deny/secret"] != 1 || !strings.Contains(st.Reasons["deny/secret"], "no secrets") {
		t.Errorf("refusals %v %v", st.Refused, st.Reasons)
	}
	if len(rec.Durable()) != 1 {
		t.Errorf("sink got %d lines, want 1", len(rec.Durable()))
	}
}

// staticGuard decides once; it counts the entries it was asked about.
type staticGuard struct {
	refusal error
	asked   *atomic.Int64
}

func (g staticGuard) Check(context.Context, *core.Entry) error { g.asked.Add(1); return g.refusal }
func (g staticGuard) Allows() bool                             { return g.refusal == nil }

// A static guard that allows is not asked about each entry; one that
// refuses is, and refuses every entry; the other guards are asked as
// before.
func TestPipelineSkipsStaticGuardsThatAllow(t *testing.T) {
	var allowAsked, denyAsked atomic.Int64
	allow := staticGuard{asked: &allowAsked}
	deny := staticGuard{refusal: core.Refusal("off"), asked: &denyAsked}
	rec := &coretest.RecordingSink{}
	p := newPipeline(t, core.PipelineOptions{
		Sinks: []core.NamedSink{{ID: core.MustParseID("rec/a"), Sink: rec}},
		Guards: []core.NamedGuard{{ID: core.MustParseID("static/allow"), Guard: allow},
			{ID: core.MustParseID("deny/secret"), Guard: denyGuard{"no secrets"}}},
	})
	for _, l := range chain(5, sess) {
		if r := submit(t, p, l); r.Status != core.Accepted {
			t.Fatalf("%v", r)
		}
	}
	if r := submit(t, p, `{"type":"user","uuid":"secret-1","sessionId":"`+sess+`"}`); r.Status != core.Refused {
		t.Fatalf("the other guard was not asked: %+v", r)
	}
	if allowAsked.Load() != 0 {
		t.Fatalf("a static guard that allows was asked %d times", allowAsked.Load())
	}
	p2 := newPipeline(t, core.PipelineOptions{
		Sinks:  []core.NamedSink{{ID: core.MustParseID("rec/a"), Sink: &coretest.RecordingSink{}}},
		Guards: []core.NamedGuard{{ID: core.MustParseID("static/deny"), Guard: deny}},
	})
	for _, l := range chain(3, sess) {
		if r := submit(t, p2, l); r.Status != core.Refused {
			t.Fatalf("static refusal: %+v", r)
		}
	}
	if denyAsked.Load() != 3 {
		t.Fatalf("a static guard that refuses was asked %d times, want 3", denyAsked.Load())
	}
}

func TestPipelineSlowSinkDoesNotDelayAnother(t *testing.T) {
	slow, fast := &coretest.RecordingSink{}, &coretest.RecordingSink{}
	release := slow.Block()
	defer release()
	p := newPipeline(t, core.PipelineOptions{
		Sinks:     []core.NamedSink{{ID: core.MustParseID("rec/slow"), Sink: slow}, {ID: core.MustParseID("rec/fast"), Sink: fast}},
		QueueSize: 64,
	})
	lines := chain(20, sess)
	for _, l := range lines {
		submit(t, p, l)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(fast.All()) < len(lines) {
		if time.Now().After(deadline) {
			t.Fatalf("fast sink got %d of %d entries while the slow one was blocked", len(fast.All()), len(lines))
		}
		time.Sleep(time.Millisecond)
	}
	if n := len(slow.All()); n != 0 {
		t.Fatalf("blocked sink wrote %d entries", n)
	}
	release()
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(slow.Durable()) != len(lines) {
		t.Fatalf("slow sink durable %d after release", len(slow.Durable()))
	}
}

func TestPipelineFullQueueWaitsThenDropsForThatSinkOnly(t *testing.T) {
	stuck := &coretest.RecordingSink{}
	release := stuck.Block()
	defer release()
	healthy := &coretest.RecordingSink{}
	p := newPipeline(t, core.PipelineOptions{Sinks: []core.NamedSink{
		{ID: core.MustParseID("rec/stuck"), Sink: stuck, Overflow: core.Overflow{Mode: core.OverflowWait, Wait: 50 * time.Millisecond}},
		{ID: core.MustParseID("rec/ok"), Sink: healthy},
	}, QueueSize: 2, MaxBatch: 1})
	lines := chain(200, sess)
	for i, l := range lines {
		e := coretest.MustEntry(t, l)
		e.Seq = int64(i + 1)
		if r, err := p.Submit(context.Background(), e); err != nil || r.Status != core.Accepted {
			t.Fatalf("Submit %d: %v %v", i, r.Status, err)
		}
	}
	// One wait, then the stalled sink drops at once: the healthy sink got
	// everything.
	st := p.Stats()
	fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var stuckStats core.SinkStats
	for _, s := range st.Sinks {
		if s.ID == "rec/stuck" {
			stuckStats = s
		}
	}
	if stuckStats.DropReasons["queue_full"] == 0 || !stuckStats.Stalled || stuckStats.QueueWaits > 2 {
		t.Fatalf("stuck sink stats %+v, want queue_full drops, stalled, at most two waits (a stalled sink costs one timed-out wait, not one per entry)", stuckStats)
	}
	release()
	if err := p.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	if got := healthy.Durable(); len(got) != len(lines) {
		t.Fatalf("healthy sink durable %d, want %d", len(got), len(lines))
	}
	// Acknowledgements stop below the first entry the stuck sink lost.
	kept := int64(len(stuck.Durable()))
	if a := p.Acked(int64(len(lines))); a != kept {
		t.Fatalf("Acked = %d, want %d (the entries before the first drop)", a, kept)
	}
	if !p.Lost() {
		t.Fatal("Lost() is false after drops")
	}
}

func TestPipelineRetriesFailingSink(t *testing.T) {
	rec := &coretest.RecordingSink{}
	rec.FailWrites(3, errors.New("disk on fire"))
	p := newPipeline(t, core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.MustParseID("rec/a"), Sink: rec}}})
	lines := chain(6, sess)
	for _, l := range lines {
		submit(t, p, l)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rec.Durable(); len(got) != len(lines) {
		t.Fatalf("durable %d, want %d", len(got), len(lines))
	}
	st := p.Stats().Sinks[0]
	if st.WriteErrors != 3 || st.Retries != 3 || !strings.Contains(st.LastError, "disk on fire") {
		t.Errorf("sink stats %+v", st)
	}
}

func TestPipelineFlushFailsWhileSinkCannotWrite(t *testing.T) {
	rec := &coretest.RecordingSink{}
	rec.FailWrites(1<<30, errors.New("read-only file system"))
	p, err := core.NewPipeline(core.PipelineOptions{
		Sinks:    []core.NamedSink{{ID: core.MustParseID("rec/a"), Sink: rec}},
		RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	submit(t, p, chain(1, sess)[0])
	fctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := p.Flush(fctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush with a failing sink = %v, want deadline exceeded", err)
	}
	sctx, scancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer scancel()
	err = p.Shutdown(sctx)
	if err == nil || !strings.Contains(err.Error(), "not delivered") {
		t.Fatalf("Shutdown = %v, want the undelivered entries reported", err)
	}
	if p.Stats().Sinks[0].Dropped != 1 {
		t.Errorf("dropped = %d, want 1", p.Stats().Sinks[0].Dropped)
	}
	if _, err := p.Submit(ctx, coretest.MustEntry(t, chain(2, sess)[1])); !errors.Is(err, core.ErrClosed) {
		t.Errorf("Submit after Shutdown = %v, want ErrClosed", err)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown = %v", err)
	}
}

func TestPipelineShutdownDrains(t *testing.T) {
	rec := &coretest.RecordingSink{}
	rec.Delay(time.Millisecond)
	p, _ := core.NewPipeline(core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.MustParseID("rec/a"), Sink: rec}}, MaxBatch: 2})
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	lines := chain(30, sess)
	for _, l := range lines {
		submit(t, p, l)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if len(rec.Durable()) != 30 || rec.ShutdownCalls != 1 {
		t.Fatalf("durable %d shutdowns %d", len(rec.Durable()), rec.ShutdownCalls)
	}
}

func TestRecordingSinkContract(t *testing.T) {
	coretest.RunSinkContract(t, coretest.SinkHarness{
		New: func(*testing.T) core.Sink { return &coretest.RecordingSink{} },
		Read: func(_ *testing.T, s core.Sink, _ core.SessionRef) []string {
			return s.(*coretest.RecordingSink).Durable()
		},
	})
}

// upper is a processor that returns a changed copy of user rows and drops
// system rows.
type upper struct{}

func (upper) Process(_ context.Context, e core.Entry) (core.Entry, error) {
	switch e.Type {
	case core.TypeSystem:
		return e, fmt.Errorf("%w: no system rows here", core.ErrDropped)
	case core.TypeUser:
		out := e
		out.Raw = []byte(strings.Replace(string(e.Raw), `"type":"user"`, `"type":"user","processed":true`, 1))
		return out, nil
	}
	return e, nil
}

func TestPipelineProcessorsChangeCopiesAndDropWithReasons(t *testing.T) {
	rec := &coretest.RecordingSink{}
	pid := core.MustParseID("upper/x")
	p := newPipeline(t, core.PipelineOptions{
		Sinks:      []core.NamedSink{{ID: core.MustParseID("rec/a"), Sink: rec}},
		Processors: []core.NamedProcessor{{ID: pid, Processor: upper{}}},
	})
	user := coretest.Line(core.TypeUser, sess, "4f7e0000-0000-4000-8000-000000000001", "")
	sys := coretest.Line(core.TypeSystem, sess, "4f7e0000-0000-4000-8000-000000000002", "4f7e0000-0000-4000-8000-000000000001")
	e := coretest.MustEntry(t, user)
	raw := string(e.Raw)
	if r, err := p.Submit(context.Background(), e); err != nil || r.Status != core.Accepted {
		t.Fatalf("user row: %v %v", r.Status, err)
	}
	if string(e.Raw) != raw {
		t.Fatal("the processor's changed copy changed the caller's entry")
	}
	if r, _ := p.Submit(context.Background(), coretest.MustEntry(t, sys)); r.Status != core.Dropped || r.By != pid || !errors.Is(r.Reason, core.ErrDropped) {
		t.Fatalf("system row: %+v", r)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := rec.Durable()
	if len(got) != 1 || !strings.Contains(got[0], `"processed":true`) {
		t.Fatalf("sink holds %q", got)
	}
	st := p.Stats()
	if st.Dropped[pid.String()] != 1 || !strings.Contains(st.DropReasons[pid.String()], "no system rows") {
		t.Fatalf("stats %+v", st)
	}
}

// idemSink is a recording sink whose destination drops what it holds.
type idemSink struct{ coretest.RecordingSink }

func (*idemSink) Idempotent() bool { return true }

// seeder says the store already holds one uuid.
type storeSeeder struct{ uuids []string }

func (s storeSeeder) Seed(context.Context, core.SessionRef) (core.Seed, error) {
	return core.Seed{UUIDs: s.uuids}, nil
}

// An entry the seeding store already holds is a duplicate for the other
// sinks, but an idempotent sink (a server keyed by uuid) still gets it
// once: the store having it says nothing of the server.
func TestPipelineReplayReachesIdempotentSinks(t *testing.T) {
	plain, idem := &coretest.RecordingSink{}, &idemSink{}
	lines := chain(3, sess)
	stored := coretest.MustEntry(t, lines[0]).UUID
	p := newPipeline(t, core.PipelineOptions{
		Sinks:  []core.NamedSink{{ID: core.MustParseID("rec/plain"), Sink: plain}, {ID: core.MustParseID("rec/idem"), Sink: idem}},
		Seeder: storeSeeder{uuids: []string{stored}},
	})
	for _, l := range append(lines, lines...) {
		submit(t, p, l)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := plain.Durable(); len(got) != 2 {
		t.Fatalf("the plain sink holds %d lines, want 2 (the stored one is a duplicate)", len(got))
	}
	if got := idem.Durable(); len(got) != 3 || got[0] != lines[0] {
		t.Fatalf("the idempotent sink holds %q, want all 3 once", got)
	}
	if st := p.Stats(); st.Duplicates != 4 || st.Replayed != 1 {
		t.Fatalf("duplicates %d, replayed %d; want 4 and 1", st.Duplicates, st.Replayed)
	}
}

// Rejections are counted by who rejected, never by reason: a hostile input
// with a new bad id on every line must not grow the counters without end.
func TestPipelineRejectionsCountedByComponent(t *testing.T) {
	p := newPipeline(t, core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.MustParseID("rec/a"), Sink: &coretest.RecordingSink{}}}})
	for i := range 1000 {
		l := strings.Replace(coretest.Line(core.TypeUser, sess, fmt.Sprintf("4f7e0000-0000-4000-8000-%012d", i), ""), sess, fmt.Sprintf("../%d", i), 1)
		if r := submit(t, p, l); r.Status != core.Rejected {
			t.Fatalf("line %d: %v", i, r.Status)
		}
	}
	st := p.Stats()
	if len(st.Rejected) != 1 || st.Rejected["pipeline"] != 1000 || !strings.Contains(st.RejectedReasons["pipeline"], "../999") {
		t.Fatalf("rejected %v, reasons %v", st.Rejected, st.RejectedReasons)
	}
}
