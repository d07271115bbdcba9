package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// Intake hands every line back in input order, parsed or flagged (blank,
// malformed, a torn last line parsed if whole), each parsed entry holding
// one reference on its block's lease; once the host gives them back, no
// reference is left.
func TestIntakeKeepsOrderAndLeases(t *testing.T) {
	var in bytes.Buffer
	var kinds []string
	for i := range 20000 {
		switch {
		case i%501 == 0:
			in.WriteString("  \n")
			kinds = append(kinds, "blank")
		case i%777 == 0:
			in.WriteString("{not json\n")
			kinds = append(kinds, "bad")
		default:
			fmt.Fprintf(&in, `{"type":"user","uuid":"u%d","sessionId":"s","message":{"content":%q}}`+"\n", i, strings.Repeat("x", i%3000))
			kinds = append(kinds, fmt.Sprintf("u%d", i))
		}
	}
	in.WriteString(`{"type":"user","uuid":"torn","sessionId":"s"}`)
	kinds = append(kinds, "torn")

	var got []Line
	leases := map[*Lease]bool{}
	err := Intake(context.Background(), &chunkedReader{b: in.Bytes()}, 3, func(lines []Line) error {
		got = append(got, lines...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(kinds) {
		t.Fatalf("%d lines, want %d", len(got), len(kinds))
	}
	for i, l := range got {
		switch want := kinds[i]; want {
		case "blank":
			if !l.Blank {
				t.Fatalf("line %d: want blank, got %+v", i+1, l.Err)
			}
		case "bad":
			if !errors.Is(l.Err, ErrMalformed) {
				t.Fatalf("line %d: want malformed, got %v", i+1, l.Err)
			}
		default:
			if l.Err != nil || l.Entry.UUID != want {
				t.Fatalf("line %d: uuid %q (%v), want %q", i+1, l.Entry.UUID, l.Err, want)
			}
			if l.Entry.Lease == nil {
				t.Fatalf("line %d has no lease", i+1)
			}
			leases[l.Entry.Lease] = true
		}
	}
	for _, l := range got {
		l.Entry.Lease.Release()
	}
	for l := range leases {
		if l.Refs() != 0 {
			t.Fatalf("a lease holds %d references once every entry was given back", l.Refs())
		}
	}
}

// An error from emit ends the intake with it.
func TestIntakeStopsOnEmitError(t *testing.T) {
	in := strings.Repeat(`{"type":"user","uuid":"u","sessionId":"s"}`+"\n", 100000)
	stop := errors.New("stop")
	calls := 0
	err := Intake(context.Background(), strings.NewReader(in), 2, func([]Line) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("err %v after %d calls, want %v after 1", err, calls, stop)
	}
}

// Intake's parse workers intern sessionId and cwd: entries of one session,
// however interleaved with others, share one string per worker, and every
// value is the line's own, past the interner's bound too.
func TestIntakeInternsRepeatedValues(t *testing.T) {
	var in bytes.Buffer
	const sessions = maxInterned + 100 // past the bound: it starts again
	for i := range 3 * sessions {
		fmt.Fprintf(&in, `{"type":"user","uuid":"u%d","sessionId":"s%d","cwd":"/w/%d","message":{"content":"x"}}`+"\n", i, i%sessions, i%7)
	}
	data := map[string]map[*byte]bool{}
	n := 0
	err := Intake(context.Background(), &in, 2, func(lines []Line) error {
		for _, l := range lines {
			if l.Err != nil {
				return l.Err
			}
			e := l.Entry
			if want := fmt.Sprintf("s%d", n%sessions); e.SessionID != want {
				t.Fatalf("line %d: sessionId %q, want %q", n, e.SessionID, want)
			}
			if want := fmt.Sprintf("/w/%d", n%7); e.CWD != want {
				t.Fatalf("line %d: cwd %q, want %q", n, e.CWD, want)
			}
			if data[e.CWD] == nil {
				data[e.CWD] = map[*byte]bool{}
			}
			data[e.CWD][unsafe.StringData(e.CWD)] = true
			e.Lease.Release()
			n++
		}
		return nil
	})
	if err != nil || n != 3*sessions {
		t.Fatalf("%d lines, error %v", n, err)
	}
	// Two workers, and each interner starts again once past its bound:
	// a handful of copies of each cwd, not one per line.
	for cwd, copies := range data {
		if len(copies) > 8 {
			t.Errorf("cwd %s: %d copies in %d lines", cwd, len(copies), 3*sessions/7)
		}
	}
}
