package writer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/core"
)

// queueLines returns lines of mixed lengths, each in a buffer of its own.
func queueLines(n int) [][]byte {
	var out [][]byte
	for i := range n {
		size := 10 + i%7*300 // 10 .. 1810 bytes
		if i%5 == 0 {
			size = 1 << 10
		}
		out = append(out, bytes.Repeat([]byte{byte('a' + i%26)}, size))
	}
	return out
}

func joined(lines [][]byte) []byte {
	var b []byte
	for _, l := range lines {
		b = append(append(b, l...), '\n')
	}
	return b
}

// A write that stops part-way (a full pipe here) leaves exactly the
// unwritten bytes queued, in front of what is queued after it, and the
// next drains write them once each.
func TestQueueResumesWhereAWriteStopped(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	if _, err := unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, 4096); err != nil {
		t.Fatal(err)
	}
	first, second := queueLines(60), queueLines(45)
	var pending wqueue
	for _, l := range first {
		pending.add(l, nil)
	}
	var got []byte
	readAll := func() {
		buf := make([]byte, 1<<16)
		for {
			n, err := unix.Read(p[0], buf)
			if n <= 0 || err != nil {
				return
			}
			got = append(got, buf[:n]...)
		}
	}
	stops, lines := 0, 0
	added := false
	for pending.len() > 0 {
		job := pending.take()
		rest, _, n, err := job.writeTo(p[1])
		lines += n
		if err != nil {
			if err != unix.EAGAIN {
				t.Fatal(err)
			}
			stops++
			pending.prepend(rest)
		} else {
			job.release()
		}
		if !added {
			for _, l := range second { // queued while the first drain failed
				pending.add(l, nil)
			}
			added = true
		}
		readAll()
	}
	want := joined(append(first, second...))
	if stops == 0 {
		t.Fatal("the pipe never filled: the test proves nothing")
	}
	if !bytes.Equal(got, want) || lines != len(first)+len(second) {
		t.Fatalf("read %d bytes (want %d), %d lines written (want %d), equal %v",
			len(got), len(want), lines, len(first)+len(second), bytes.Equal(got, want))
	}
}

// The sink keeps no entry's Raw (core.Sink): a host that reuses its
// buffers after a Flush must not change what reaches the file later, such
// as the metadata block the store appends again, and the sink never
// changes Raw itself.
func TestSinkKeepsNoRawAfterFlush(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := newSink(t, dir, func(o *Options) { o.ReappendBytes = 4096 })
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("p", 2048)
	mk := func(i int, typ string) core.Entry {
		var line string
		if typ == "custom-title" {
			line = fmt.Sprintf(`{"type":"custom-title","customTitle":"title %d %s","sessionId":%q}`, i, pad, sess)
		} else {
			line = fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"%s"},"uuid":"u-%d","cwd":%q,"sessionId":%q}`, pad, i, cwd, sess)
		}
		e, err := core.ParseEntryOwned([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	var want []string
	var written []core.Entry
	for i := range 10 {
		batch := []core.Entry{mk(i, "user")}
		if i == 1 {
			batch = append(batch, mk(i, "custom-title"))
		}
		for _, e := range batch {
			want = append(want, string(e.Raw))
		}
		copies := make([]string, len(batch))
		for j, e := range batch {
			copies[j] = string(e.Raw)
		}
		if err := s.Write(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		for j, e := range batch {
			if string(e.Raw) != copies[j] {
				t.Fatalf("the sink changed an entry's Raw")
			}
		}
		written = append(written, batch...)
		for _, e := range written { // the host reuses its buffers
			for k := range e.Raw {
				e.Raw[k] = 'X'
			}
		}
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := readLines(t, mainPath(dir))
	reappended := 0
	for _, l := range got {
		if strings.Contains(l, "XXXX") {
			t.Fatalf("a line reached the file from a buffer reused after Flush: %.60s...", l)
		}
		if strings.Contains(l, `"custom-title"`) {
			reappended++
		}
	}
	if reappended < 2 {
		t.Fatalf("the title line was written %d times: the re-append this test needs did not happen", reappended)
	}
	if len(got) < len(want) {
		t.Fatalf("%d lines, want at least %d", len(got), len(want))
	}
}

// A line of copyBelow bytes or more whose entry has a lease is written
// from the entry's own bytes, the queue holding a reference on the lease
// until it is written; every other line is copied (consecutive short ones
// into one segment, a long one without a lease into one of its own).
// Either way the bytes written are the lines and their newlines, in order.
func TestQueueWritesLeasedLongLinesInPlace(t *testing.T) {
	long1 := bytes.Repeat([]byte("L"), copyBelow)
	long2 := bytes.Repeat([]byte("M"), 3*copyBelow)
	huge := bytes.Repeat([]byte("H"), blockSize+10) // no lease: copied whole
	short := [][]byte{[]byte("a"), []byte("bb"), []byte("ccc"), bytes.Repeat([]byte("s"), copyBelow-1)}
	lease := core.NewLease()
	in := [][]byte{short[0], short[1], long1, short[2], short[3], long2, huge}
	leases := []*core.Lease{nil, lease, lease, nil, lease, lease, nil}
	var q wqueue
	for i, l := range in {
		q.add(l, leases[i])
	}
	// [short0 short1] [long1] [\n] [short2 short3] [long2] [\n] [huge\n]
	if len(q.segs) != 7 {
		t.Fatalf("%d segments, want 7", len(q.segs))
	}
	if &q.segs[1][0] != &long1[0] || &q.segs[4][0] != &long2[0] {
		t.Fatal("a leased long line was copied instead of written from its own bytes")
	}
	if &q.segs[0][0] == &short[0][0] || &q.segs[3][0] == &short[2][0] || &q.segs[6][0] == &huge[0] {
		t.Fatal("a short line or one without a lease was not copied")
	}
	if lease.Refs() != 3 {
		t.Fatalf("lease holds %d references, want 3 (the test's and one per long line)", lease.Refs())
	}
	want := joined(in)
	if got := bytes.Join(q.segs, nil); !bytes.Equal(got, want) || q.len() != len(want) || q.lines != len(in) {
		t.Fatalf("queued %d bytes, %d lines; want %d, %d", q.len(), q.lines, len(want), len(in))
	}
	f, err := os.CreateTemp(t.TempDir(), "q")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	job := q.take()
	rest, n, lines, err := job.writeTo(int(f.Fd()))
	if err != nil || rest.len() != 0 || n != len(want) || lines != len(in) {
		t.Fatalf("writeTo: %v, rest %d, %d bytes, %d lines", err, rest.len(), n, lines)
	}
	job.release()
	if lease.Refs() != 1 {
		t.Fatalf("after the write the lease holds %d references, want 1", lease.Refs())
	}
	if got, err := os.ReadFile(f.Name()); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("file holds %d bytes (%v), want %d", len(got), err, len(want))
	}
}

// The sink gives back every reference it takes: once Flush returns, only
// the host's own remain, and what it wrote is the entries' bytes.
func TestSinkReturnsLeasesOnceWritten(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := newSink(t, dir, nil)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	lease := core.NewLease()
	var want []string
	parent := "null"
	for i := range 20 {
		line := fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":"user","message":{"role":"user","content":"%s"},"uuid":"u-%d","cwd":%q,"sessionId":%q}`,
			parent, strings.Repeat("p", i*300), i, cwd, sess)
		parent = fmt.Sprintf("%q", fmt.Sprintf("u-%d", i))
		e, err := core.ParseEntryOwned([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		lease.Retain(1)
		e.Lease = lease
		if err := s.Write(ctx, []core.Entry{e}); err != nil {
			t.Fatal(err)
		}
		lease.Release() // what the pipeline's runner does after Write
		want = append(want, line)
	}
	if lease.Refs() <= 1 {
		t.Fatal("the sink holds no reference before Flush: it copied every line (the test proves nothing)")
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if lease.Refs() != 1 {
		t.Fatalf("after Flush the lease holds %d references, want 1 (the host's)", lease.Refs())
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readLines(t, mainPath(dir)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("file holds %d lines, want %d", len(got), len(want))
	}
}
