package jsonl

import (
	"bytes"
	"context"
	"fmt"
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
		pending.add(l)
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
				pending.add(l)
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
