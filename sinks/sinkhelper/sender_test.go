package sinkhelper

import (
	"context"
	"errors"
	"fmt"
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
