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
// longer than a block: no block is written again once a line was cut from
// it (the write queue keeps lines by reference on that promise).
func TestLineReaderNeverOverwritesALine(t *testing.T) {
	var want []string
	var in bytes.Buffer
	for i := 0; in.Len() < 3*lineBlock; i++ {
		l := fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", i*37%3000))
		if i == 500 {
			l = `{"long":"` + strings.Repeat("y", lineBlock+123) + `"}`
		}
		want = append(want, l)
		in.WriteString(l + "\n")
	}
	want = append(want, `{"torn":`)
	in.WriteString(`{"torn":`)
	lr := NewLineReader(&chunkedReader{b: in.Bytes()})
	var got [][]byte
	var err error
	for err == nil {
		got, err = lr.Read(got)
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
	if _, err := lr.Read(nil); !errors.Is(err, io.EOF) {
		t.Fatalf("Read after the end: %v", err)
	}
}
