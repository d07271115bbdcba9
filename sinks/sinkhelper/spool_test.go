package sinkhelper

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

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
