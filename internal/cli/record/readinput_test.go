package record

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// chunky returns reads of random small sizes, as a pipe does.
type chunky struct {
	r   io.Reader
	rng *rand.Rand
}

func (c chunky) Read(p []byte) (int, error) {
	n := 1 + c.rng.IntN(min(len(p), 70000))
	return c.r.Read(p[:n])
}

// The block reader hands every line on whole and in order, across block
// boundaries, a line longer than a block, blank and malformed lines, and a
// torn last line.
func TestReadInputsCutsEveryLineWhole(t *testing.T) {
	var in strings.Builder
	var want []string
	for i := range 3000 {
		var l string
		switch {
		case i == 1500:
			l = fmt.Sprintf(`{"type":"user","uuid":"u%d","sessionId":"s","message":{"content":%q}}`, i, strings.Repeat("y", 9<<20))
		case i%97 == 0:
			in.WriteString("\n") // blank
			continue
		default:
			l = fmt.Sprintf(`{"type":"user","uuid":"u%d","sessionId":"s","message":{"content":%q}}`, i, strings.Repeat("x", i%5000))
		}
		in.WriteString(l + "\n")
		want = append(want, l)
	}
	in.WriteString("not json\n")
	torn := `{"type":"user","uuid":"torn","sessionId":"s"}`
	in.WriteString(torn) // no newline at the end
	want = append(want, torn)

	out := make(chan []input, 16)
	rep := &recordReport{}
	errc := make(chan error, 1)
	go func() {
		errc <- readInputs(context.Background(), nil, chunky{strings.NewReader(in.String()), rand.New(rand.NewPCG(1, 2))}, out, rep)
	}()
	var got []string
	var lastSeq int64
	eofs := 0
	for batch := range out {
		for _, x := range batch {
			if x.eof {
				eofs++
				continue
			}
			if x.seq <= lastSeq || x.seq != x.line {
				t.Fatalf("line %d has seq %d after %d", x.line, x.seq, lastSeq)
			}
			lastSeq = x.seq
			got = append(got, string(x.entry.Raw))
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if eofs != 1 || len(got) != len(want) {
		t.Fatalf("%d eofs, %d lines, want 1 and %d", eofs, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("line %d: got %.80q, want %.80q", i, got[i], want[i])
		}
	}
	if rep.MalformedCount != 1 || rep.BlankLines == 0 || rep.Lines != int64(len(want))+rep.BlankLines+1 {
		t.Fatalf("report: %d lines, %d blank, %d malformed", rep.Lines, rep.BlankLines, rep.MalformedCount)
	}
}
