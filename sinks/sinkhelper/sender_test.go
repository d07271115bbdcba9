package sinkhelper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
)

const sess = "0565a3a4-0000-4000-8000-000000000001"

// fakeServer stores entries once by uuid, in arrival order, and fails on
// demand.
type fakeServer struct {
	mu       sync.Mutex
	stored   []string
	lines    []string
	seen     map[string]bool
	calls    int
	resent   int // entries sent again that were already stored
	fail     func(call int) error
	block    chan struct{}
	inFlight chan struct{}
}

func newFake() *fakeServer { return &fakeServer{seen: map[string]bool{}} }

func (f *fakeServer) push(ctx context.Context, b *Batch) error {
	f.mu.Lock()
	f.calls++
	call, fail, block, inFlight := f.calls, f.fail, f.block, f.inFlight
	f.mu.Unlock()
	if inFlight != nil {
		select {
		case inFlight <- struct{}{}:
		default:
		}
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if fail != nil {
		if err := fail(call); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, e := range b.Entries {
		if b.Done(i) {
			continue
		}
		if f.seen[e.UUID] {
			f.resent++
		} else {
			f.seen[e.UUID] = true
			f.stored = append(f.stored, e.UUID)
			f.lines = append(f.lines, string(e.Raw))
		}
		b.MarkDone(i)
	}
	return nil
}

func (f *fakeServer) setFail(fn func(int) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fn
}

func (f *fakeServer) Stored() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.stored...)
}

func (f *fakeServer) Resent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resent
}

func uuidOf(i int) string { return fmt.Sprintf("4f7e0000-0000-4000-8000-%012d", i) }

// mkEntries returns entries from..to-1 of one session, with payloads of
// about pad bytes.
func mkEntries(t testing.TB, from, to, pad int) ([]core.Entry, []string) {
	t.Helper()
	var es []core.Entry
	var ids []string
	for i := from; i < to; i++ {
		l := coretest.Line(core.TypeUser, sess, uuidOf(i), "")
		if pad > 0 {
			l = strings.Replace(l, `"hello from`, `"`+strings.Repeat("x", pad)+` hello from`, 1)
		}
		es = append(es, coretest.MustEntry(t, l))
		ids = append(ids, uuidOf(i))
	}
	return es, ids
}

func testOptions(dir string) Options {
	return Options{
		Name:         "test/one",
		Dir:          dir,
		QueueSize:    64,
		SegmentBytes: 64 << 10,
		MaxBatch:     50,
		FlushWait:    10 * time.Second,
		Retry: RetryConfig{
			MaxAttempts:    3,
			BackoffMin:     time.Millisecond,
			BackoffMax:     10 * time.Millisecond,
			Jitter:         0.2,
			AttemptTimeout: 5 * time.Second,
		},
		Logger: hclog.NewNullLogger(),
	}
}

func start(t *testing.T, opts Options, push PushFunc) *Sender {
	t.Helper()
	s, err := New(opts, push)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func write(t *testing.T, s *Sender, es []core.Entry) {
	t.Helper()
	for len(es) > 0 {
		n := min(len(es), 37)
		if err := s.Write(context.Background(), es[:n]); err != nil {
			t.Fatal(err)
		}
		es = es[n:]
	}
}

// waitFor polls cond until it holds or 20 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func sameOrder(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("server holds %d entries, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("entry %d is %s, want %s", i, got[i], want[i])
		}
	}
}

func TestDeliversInOrder(t *testing.T) {
	f := newFake()
	s := start(t, testOptions(t.TempDir()), f.push)
	es, ids := mkEntries(t, 0, 1000, 0)
	write(t, s, es)
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	sameOrder(t, f.Stored(), ids)
	r := s.Report()
	if r["delivered"] != 1000 || r["queued"] != 0 || r["dropped"] != 0 || r["retries"] != 0 {
		t.Fatalf("report %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.Resent() != 0 {
		t.Fatalf("%d entries sent twice", f.Resent())
	}
}

func TestRetriesThenRecovers(t *testing.T) {
	f := newFake()
	f.setFail(func(call int) error {
		if call <= 7 {
			return errors.New("503 from a sick server")
		}
		return nil
	})
	s := start(t, testOptions(t.TempDir()), f.push)
	es, ids := mkEntries(t, 0, 300, 0)
	write(t, s, es)
	// Flush does not wait for a failing server: it makes the entries
	// durable in the spool.
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "delivery", func() bool { return s.Report()["queued"] == 0 })
	sameOrder(t, f.Stored(), ids)
	r := s.Report()
	if r["retries"] != 7 || r["failed_rounds"] != 2 || r["delivered"] != 300 || r["failing"] != 0 {
		t.Fatalf("report %v", r)
	}
	if r["spills"] == 0 {
		t.Fatalf("a failing server did not make the queue spill: %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestPermanentErrorDropsAndFlushReports(t *testing.T) {
	f := newFake()
	f.setFail(func(int) error { return Permanent(errors.New("401 Unauthorized")) })
	s := start(t, testOptions(t.TempDir()), f.push)
	es, _ := mkEntries(t, 0, 10, 0)
	write(t, s, es)
	err := s.Flush(context.Background())
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "10 entries") {
		t.Fatalf("Flush = %v, want the permanent error for 10 entries", err)
	}
	r := s.Report()
	if r["dropped"] != 10 || r["permanent_failures"] != 1 || r["retries"] != 0 {
		t.Fatalf("report %v", r)
	}
	// The error is reported once; what comes after is delivered.
	f.setFail(nil)
	es, ids := mkEntries(t, 10, 20, 0)
	write(t, s, es)
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	sameOrder(t, f.Stored(), ids)
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestBatchDropOneEntry(t *testing.T) {
	var mu sync.Mutex
	var got []string
	s := start(t, testOptions(t.TempDir()), func(_ context.Context, b *Batch) error {
		mu.Lock()
		defer mu.Unlock()
		for i, e := range b.Entries {
			if e.UUID == uuidOf(3) {
				b.Drop(i, errors.New("413 too large"))
				continue
			}
			got = append(got, e.UUID)
		}
		return nil
	})
	es, _ := mkEntries(t, 0, 6, 0)
	write(t, s, es)
	if err := s.Flush(context.Background()); err == nil || !strings.Contains(err.Error(), "413") {
		t.Fatalf("Flush = %v, want the drop", err)
	}
	if r := s.Report(); r["dropped"] != 1 || r["delivered"] != 5 {
		t.Fatalf("report %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestOutageSpillsMemoryStaysFlat plays an outage: every attempt fails
// while many entries are written. Memory holds at most a queue's worth;
// the rest goes to disk; when the server is back everything arrives once,
// in order.
func TestOutageSpillsMemoryStaysFlat(t *testing.T) {
	f := newFake()
	down := errors.New("connection refused")
	f.setFail(func(int) error { return down })
	opts := testOptions(t.TempDir())
	s := start(t, opts, f.push)
	const n = 10000
	es, ids := mkEntries(t, 0, n, 900)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i += 100 {
		write(t, s, es[i:i+100])
		if m := s.Report()["memory_entries"]; m > int64(opts.QueueSize) {
			t.Fatalf("%d entries in memory during the outage, bound %d", m, opts.QueueSize)
		}
	}
	r := s.Report()
	if r["spool_bytes"] < n*900 || r["delivered"] != 0 {
		t.Fatalf("during the outage: %v", r)
	}
	// What the sender keeps is the queue bound plus a batch, not the
	// outage (about 12 MB of entries).
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	runtime.KeepAlive(es)
	if grew := int64(during.HeapAlloc) - int64(before.HeapAlloc); grew > 6<<20 {
		t.Fatalf("heap grew by %d bytes during an outage of %d entries", grew, n)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.setFail(nil)
	waitFor(t, "delivery after the outage", func() bool { return s.Report()["queued"] == 0 })
	sameOrder(t, f.Stored(), ids)
	if r := s.Report(); r["spool_bytes"] != 0 || r["failing"] != 0 {
		t.Fatalf("after the outage: %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if segs, _ := filepath.Glob(filepath.Join(opts.Dir, "lane-0", "*.seg")); len(segs) != 0 {
		t.Fatalf("delivered segments left behind: %v", segs)
	}
}

// TestCrashRestart: entries are accepted and flushed while the server is
// away, the process dies (no Shutdown), and a new Sender on the same folder
// delivers every one of them, once, in order.
func TestCrashRestart(t *testing.T) {
	dir := t.TempDir()
	f := newFake()
	// Part of the traffic gets through before the outage.
	f.setFail(func(call int) error {
		if call > 4 {
			return errors.New("server gone")
		}
		return nil
	})
	opts := testOptions(dir)
	s := start(t, opts, f.push)
	es, ids := mkEntries(t, 0, 2000, 100)
	for i := 0; i < len(es); i += 100 {
		write(t, s, es[i:i+100])
		if err := s.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	before := len(f.Stored())
	if before == 0 || before == len(ids) {
		t.Fatalf("%d delivered before the crash; want some, not all", before)
	}
	s.abandon()

	f.setFail(nil)
	s2 := start(t, opts, f.push)
	waitFor(t, "delivery after restart", func() bool { return s2.Report()["queued"] == 0 })
	sameOrder(t, f.Stored(), ids)
	if f.Resent() > opts.MaxBatch {
		t.Fatalf("%d entries sent twice; at most the batch in flight may be", f.Resent())
	}
	if err := s2.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestFlushSlowServer: a server that does not answer within FlushWait
// makes Flush spill; a crash then loses nothing.
func TestFlushSlowServer(t *testing.T) {
	dir := t.TempDir()
	f := newFake()
	f.block = make(chan struct{})
	opts := testOptions(dir)
	opts.FlushWait = 50 * time.Millisecond
	s := start(t, opts, f.push)
	es, ids := mkEntries(t, 0, 30, 0)
	write(t, s, es)
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := s.Report(); r["flush_spills"] != 1 || r["spool_bytes"] == 0 {
		t.Fatalf("report %v", r)
	}
	s.abandon()
	f.block = nil
	s2 := start(t, opts, f.push)
	if err := s2.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	sameOrder(t, f.Stored(), ids)
	if err := s2.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestShutdownLeavesRestInSpool: with the server away, Shutdown returns at
// once and the entries wait in the spool for the next start.
func TestShutdownLeavesRestInSpool(t *testing.T) {
	dir := t.TempDir()
	f := newFake()
	f.setFail(func(int) error { return errors.New("down") })
	opts := testOptions(dir)
	opts.Retry.BackoffMin, opts.Retry.BackoffMax = time.Second, time.Second
	s := start(t, opts, f.push)
	es, ids := mkEntries(t, 0, 40, 0)
	write(t, s, es)
	waitFor(t, "a failed attempt", func() bool { return s.Report()["failing"] == 1 })
	t0 := time.Now()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Fatalf("Shutdown waited %s for a failing server", d)
	}
	if r := s.Report(); r["shutdown_spilled"] != 40 {
		t.Fatalf("report %v", r)
	}
	f.setFail(nil)
	s2 := start(t, opts, f.push)
	if err := s2.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	sameOrder(t, f.Stored(), ids)
}

// TestTornTail: a spill killed half-way leaves a torn frame; reopening cuts
// it (keeping a copy) and delivers everything before it.
func TestTornTail(t *testing.T) {
	dir := t.TempDir()
	f := newFake()
	f.setFail(func(int) error { return errors.New("down") })
	opts := testOptions(dir)
	s := start(t, opts, f.push)
	es, ids := mkEntries(t, 0, 20, 0)
	write(t, s, es)
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.abandon()
	segs, _ := filepath.Glob(filepath.Join(dir, "lane-0", "*.seg"))
	last := segs[len(segs)-1]
	fh, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The start of a frame header, as a killed write leaves it.
	if _, err := fh.Write([]byte{200, 0, 0, 0, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	fh.Close()

	f.setFail(nil)
	s2 := start(t, opts, f.push)
	if err := s2.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	sameOrder(t, f.Stored(), ids)
	if r := s2.Report(); r["spool_torn_tails"] != 1 {
		t.Fatalf("report %v", r)
	}
	if b, err := os.ReadFile(last + ".torn"); err != nil || !bytes.Equal(b, []byte{200, 0, 0, 0, 1, 2, 3}) {
		t.Fatalf("torn bytes kept aside: %q, %v", b, err)
	}
	if err := s2.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedSegment: a flipped byte in an older segment is a disk fault:
// the segment is copied aside, the rest of it skipped and counted, and the
// other segments delivered in order.
func TestDamagedSegment(t *testing.T) {
	dir := t.TempDir()
	f := newFake()
	f.setFail(func(int) error { return errors.New("down") })
	opts := testOptions(dir)
	opts.SegmentBytes = 4 << 10
	s := start(t, opts, f.push)
	es, ids := mkEntries(t, 0, 200, 100)
	write(t, s, es)
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.abandon()
	segs, _ := filepath.Glob(filepath.Join(dir, "lane-0", "*.seg"))
	if len(segs) < 3 {
		t.Fatalf("want several segments, have %d", len(segs))
	}
	b, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(segs[0], b, 0o600); err != nil {
		t.Fatal(err)
	}

	f.setFail(nil)
	s2 := start(t, opts, f.push)
	if err := s2.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := f.Stored()
	if len(got) >= len(ids) || len(got) < len(ids)/2 {
		t.Fatalf("delivered %d of %d after damage in the first of %d segments", len(got), len(ids), len(segs))
	}
	// What arrives is in order, and everything after the damaged segment
	// arrives.
	pos := map[string]int{}
	for i, id := range ids {
		pos[id] = i
	}
	for i := 1; i < len(got); i++ {
		if pos[got[i]] <= pos[got[i-1]] {
			t.Fatalf("out of order: %s after %s", got[i], got[i-1])
		}
	}
	if got[len(got)-1] != ids[len(ids)-1] {
		t.Fatalf("last delivered %s, want %s", got[len(got)-1], ids[len(ids)-1])
	}
	if r := s2.Report(); r["spool_corrupt"] != 1 {
		t.Fatalf("report %v", r)
	}
	if _, err := os.Stat(segs[0] + ".corrupt"); err != nil {
		t.Fatalf("damaged segment not kept aside: %v", err)
	}
	if err := s2.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestLanes: two processes share a sink's spool folder, each in its own
// lane; both die with entries spooled; the next process delivers its own
// lane and takes over the other.
func TestLanes(t *testing.T) {
	dir := t.TempDir()
	f := newFake()
	f.setFail(func(int) error { return errors.New("down") })
	opts := testOptions(dir)
	a := start(t, opts, f.push)
	b := start(t, opts, f.push)
	if a.sp.Dir() == b.sp.Dir() {
		t.Fatalf("two senders share lane %s", a.sp.Dir())
	}
	esA, idsA := mkEntries(t, 0, 100, 0)
	esB, idsB := mkEntries(t, 100, 150, 0)
	write(t, a, esA)
	write(t, b, esB)
	for _, s := range []*Sender{a, b} {
		if err := s.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.abandon()
	}
	f.setFail(nil)
	c := start(t, opts, f.push)
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "delivery", func() bool { return c.Report()["queued"] == 0 })
	sameOrder(t, f.Stored(), append(idsA, idsB...))
	if r := c.Report(); r["adopted"] != 50 || r["adopted_lanes"] != 1 {
		t.Fatalf("report %v", r)
	}
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestContract(t *testing.T) {
	servers := map[core.Sink]*fakeServer{}
	var mu sync.Mutex
	coretest.RunSinkContract(t, coretest.SinkHarness{
		New: func(t *testing.T) core.Sink {
			f := newFake()
			s, err := New(testOptions(t.TempDir()), f.push)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			servers[s] = f
			mu.Unlock()
			return s
		},
		Read: func(t *testing.T, s core.Sink, ref core.SessionRef) []string {
			mu.Lock()
			f := servers[s]
			mu.Unlock()
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.lines
		},
	})
}

func TestLifecycleErrors(t *testing.T) {
	s, err := New(testOptions(t.TempDir()), newFake().push)
	if err != nil {
		t.Fatal(err)
	}
	es, _ := mkEntries(t, 0, 1, 0)
	if err := s.Write(context.Background(), es); err == nil {
		t.Fatal("Write before Start succeeded")
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil {
		t.Fatal("second Start succeeded")
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), es); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Shutdown = %v, want ErrClosed", err)
	}
	if _, err := New(Options{}, newFake().push); err == nil {
		t.Fatal("New without a spool folder succeeded")
	}
}

// TestBigWrite: one Write of many times the queue bound, to a slow but
// healthy server, spills as it goes and drops nothing.
func TestBigWrite(t *testing.T) {
	f := newFake()
	release := make(chan struct{})
	f.block = release
	opts := testOptions(t.TempDir())
	s := start(t, opts, f.push)
	es, ids := mkEntries(t, 0, 1000, 0)
	empty := core.Entry{UUID: "empty"}
	if err := s.Write(context.Background(), append(es, empty)); err != nil {
		t.Fatal(err)
	}
	if r := s.Report(); r["memory_entries"] > int64(opts.QueueSize) || r["spilled"] == 0 || r["dropped"] != 1 {
		t.Fatalf("report %v", r)
	}
	close(release)
	if err := s.Flush(context.Background()); err == nil || !strings.Contains(err.Error(), "empty entry") {
		t.Fatalf("Flush = %v, want the empty entry reported", err)
	}
	sameOrder(t, f.Stored(), ids)
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestSpoolOwner: a spool folder is refused to a sink other than the one
// that made it.
func TestSpoolOwner(t *testing.T) {
	dir := t.TempDir()
	a := start(t, testOptions(dir), newFake().push)
	if err := a.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	opts := testOptions(dir)
	opts.Name = "other/sink"
	b, err := New(opts, newFake().push)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); !errors.Is(err, ErrSpoolOwner) {
		t.Fatalf("Start = %v, want ErrSpoolOwner", err)
	}
}

func TestBackoff(t *testing.T) {
	rc := DefaultRetry()
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second}
	for i, w := range want {
		if got := rc.backoff(i + 1); got != w {
			t.Errorf("backoff after %d failures = %s, want %s", i+1, got, w)
		}
	}
	for range 100 {
		if d := rc.wait(1, errors.New("x")); d < 400*time.Millisecond || d > 600*time.Millisecond {
			t.Fatalf("jittered wait %s outside 500ms ± 20%%", d)
		}
	}
	if d := rc.wait(1, RetryAfter(errors.New("429"), 3*time.Second)); d < 3*time.Second {
		t.Fatalf("wait %s ignores Retry-After 3s", d)
	}
	if d := rc.wait(1, RetryAfter(errors.New("429"), time.Hour)); d > maxRetryAfter {
		t.Fatalf("wait %s above the Retry-After cap", d)
	}
	if IsPermanent(errors.New("x")) || !IsPermanent(fmt.Errorf("wrapped: %w", Permanent(errors.New("x")))) {
		t.Fatal("IsPermanent")
	}
	if Permanent(nil) != nil || RetryAfter(nil, time.Second) != nil {
		t.Fatal("nil errors must stay nil")
	}
}

func TestResponseError(t *testing.T) {
	for _, tc := range []struct {
		code       int
		header     string
		permanent  bool
		unauth     bool
		retryAfter time.Duration
	}{
		{code: 401, permanent: true, unauth: true},
		{code: 403, permanent: true, unauth: true},
		{code: 400, permanent: true},
		{code: 413, permanent: true},
		{code: 404, permanent: true},
		{code: 500},
		{code: 502},
		{code: 408},
		{code: 429, header: "3", retryAfter: 3 * time.Second},
		{code: 503, header: "2", retryAfter: 2 * time.Second},
		{code: 503},
	} {
		t.Run(fmt.Sprint(tc.code, tc.header), func(t *testing.T) {
			req, _ := http.NewRequest("PUT", "http://127.0.0.1/x", nil)
			resp := &http.Response{StatusCode: tc.code, Header: http.Header{}, Request: req,
				Body: io.NopCloser(strings.NewReader(`{"error":"nope"}`))}
			if tc.header != "" {
				resp.Header.Set("Retry-After", tc.header)
			}
			err := ResponseError(resp)
			var se *StatusError
			if !errors.As(err, &se) || se.Code != tc.code || !strings.Contains(err.Error(), "nope") {
				t.Fatalf("error %v", err)
			}
			if IsPermanent(err) != tc.permanent || errors.Is(err, ErrUnauthorized) != tc.unauth {
				t.Fatalf("error %v: permanent %v unauthorized %v", err, IsPermanent(err), errors.Is(err, ErrUnauthorized))
			}
			if got := retryAfter(err); got != tc.retryAfter {
				t.Fatalf("retry after %s, want %s", got, tc.retryAfter)
			}
		})
	}
}

func TestClientConfig(t *testing.T) {
	set := core.Settings{ID: core.MustParseID("ingress/cloud"), Host: core.HostInfo{ConfigDir: "/home/alice/.claude"}}
	ok := DefaultClientConfig()
	ok.BaseURL = "http://127.0.0.1:8080/"
	ok.Token = "secret"
	cl, err := ok.Resolve(set)
	if err != nil {
		t.Fatal(err)
	}
	if cl.BaseURL != "http://127.0.0.1:8080" || cl.Options.Dir != "/home/alice/.claude/scribe/spool/ingress/cloud" ||
		cl.Timeout != 30*time.Second || cl.Options.FlushWait != 5*time.Second ||
		cl.Options.Retry != (RetryConfig{MaxAttempts: 10, BackoffMin: 500 * time.Millisecond, BackoffMax: 8 * time.Second, Jitter: 0.2}) {
		t.Fatalf("resolved %+v", cl)
	}
	for _, tc := range []struct {
		name string
		mod  func(*ClientConfig)
		want string
	}{
		{"no url", func(c *ClientConfig) { c.BaseURL = "" }, "base_url: required"},
		{"bad scheme", func(c *ClientConfig) { c.BaseURL = "ftp://127.0.0.1" }, "base_url"},
		{"both tokens", func(c *ClientConfig) { c.TokenFile = "/x" }, "not both"},
		{"bad timeout", func(c *ClientConfig) { c.Timeout = "soon" }, `timeout "soon"`},
		{"min above max", func(c *ClientConfig) { c.BackoffMin = "10s" }, "backoff_max"},
		{"no attempts", func(c *ClientConfig) { c.MaxAttempts = 0 }, "max_attempts"},
		{"no queue", func(c *ClientConfig) { c.QueueSize = 0 }, "queue_size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

// A block without token or token_file is valid configuration (the built-in
// one has none), but using it fails with ErrNoToken, which says how to
// give one.
func TestNoToken(t *testing.T) {
	c := DefaultClientConfig()
	c.BaseURL = "http://127.0.0.1:8080"
	cl, err := c.Resolve(core.Settings{ID: core.MustParseID("events/team"), Host: core.HostInfo{ConfigDir: "/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Token.Load(); !errors.Is(err, ErrNoToken) || !strings.Contains(err.Error(), "token_file") {
		t.Fatalf("Load = %v, want ErrNoToken naming token_file", err)
	}
	if err := NewToken("").Load(); err != nil {
		t.Fatalf("an inline empty token (a server without auth): %v", err)
	}
}

func TestTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := &Token{file: path}
	if err := tok.Load(); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "http://127.0.0.1/", nil)
	tok.Authorize(req)
	if got := req.Header.Get("Authorization"); got != "Bearer one" {
		t.Fatalf("Authorization %q", got)
	}
	if changed, err := tok.Reload(); err != nil || changed {
		t.Fatalf("Reload of the same token: %v %v", changed, err)
	}
	if err := os.WriteFile(path, []byte("two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := tok.Reload(); err != nil || !changed {
		t.Fatalf("Reload of a rotated token: %v %v", changed, err)
	}
}
