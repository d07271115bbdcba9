package core

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// chunkedReader returns its input in reads of varying size, as a pipe does.
type chunkedReader struct {
	b []byte
	i int
}

func (r *chunkedReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	r.i++
	n := min(len(p), len(r.b), 1+(r.i*7919)%(200<<10))
	copy(p, r.b[:n])
	r.b = r.b[n:]
	return n, nil
}

// Every line stays as it was read until the end, across blocks and a line
// longer than a block, while its region's reference is held: no block is
// written again once a line was cut from it (the write queue keeps lines
// by reference on that promise).
func TestLineReaderNeverOverwritesALine(t *testing.T) {
	want, in := readRegionInput()
	lr := NewLineReader(&chunkedReader{b: in})
	var got [][]byte
	var err error
	for err == nil {
		var region []byte
		region, _, err = lr.ReadRegion() // the references are kept: no block comes back
		got = CutLines(region, got)
	}
	if !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Fatalf("line %d changed after it was read: %.40q, want %.40q", i+1, got[i], want[i])
		}
		if cap(got[i]) != len(got[i]) {
			t.Fatalf("line %d has room after it (cap %d, len %d): an append would write into the block", i+1, cap(got[i]), len(got[i]))
		}
	}
	if region, _, err := lr.ReadRegion(); len(region) > 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("ReadRegion after the end: %d bytes, %v", len(region), err)
	}
}

// readRegionInput is about six blocks of lines of varied length, one
// longer than a block, and a torn last line.
func readRegionInput() ([]string, []byte) {
	var want []string
	var in bytes.Buffer
	for i := 0; in.Len() < 6*lineBlock; i++ {
		l := fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", i*37%3000))
		if i == 700 {
			l = `{"long":"` + strings.Repeat("y", lineBlock+123) + `"}`
		}
		want = append(want, l)
		in.WriteString(l + "\n")
	}
	want = append(want, `{"torn":`)
	in.WriteString(`{"torn":`)
	return want, in.Bytes()
}

// ReadRegion's lines stay as they were read while a reference on their
// lease is held, however many other lines are given back meanwhile: here
// one line of every block is held to the end and every other one is
// given back at once, so no block may be reused while reading. Once all
// are back, the next reader reuses them (the point of leasing).
func TestReadRegionReusesBlocksOnlyWhenReleased(t *testing.T) {
	want, in := readRegionInput()
	// The free list is the package's: what other tests gave back would be
	// reused first.
	freeBlocks.Clear()
	type held struct {
		n     int
		line  []byte
		lease *Lease
	}
	var kept []held
	seen := map[*Lease]bool{}
	lr := NewLineReader(&chunkedReader{b: in})
	n := 0
	for {
		region, lease, err := lr.ReadRegion()
		for _, l := range CutLines(region, nil) {
			if string(l) != want[n] {
				t.Fatalf("line %d read as %.40q, want %.40q (a block was reused while a line of it was held)", n+1, l, want[n])
			}
			if lease != nil && !seen[lease] {
				seen[lease] = true
				lease.Retain(1)
				kept = append(kept, held{n, l, lease})
			}
			n++
		}
		lease.Release()
		for _, h := range kept {
			if string(h.line) != want[h.n] {
				t.Fatalf("line %d changed while its lease was held: %.40q", h.n+1, h.line)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if n != len(want) || len(kept) < 5 {
		t.Fatalf("%d lines in %d leased blocks, want %d lines in at least 5", n, len(kept), len(want))
	}
	for _, h := range kept {
		h.lease.Release()
		if h.lease.Refs() != 0 {
			t.Fatalf("a lease has %d references after every line was given back", h.lease.Refs())
		}
	}
	lr = NewLineReader(bytes.NewReader(in))
	reused := 0
	for {
		region, lease, err := lr.ReadRegion()
		if seen[lease] {
			reused++
		}
		lease.Release()
		if err != nil {
			break
		}
		_ = region
	}
	if reused == 0 {
		t.Fatal("no block given back was reused: leasing saved nothing")
	}
}

// A lease released more often than retained panics rather than letting a
// block be overwritten while read.
func TestLeaseOverReleasePanics(t *testing.T) {
	l := NewLease()
	l.Release()
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	l.Release()
}
