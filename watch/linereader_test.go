package watch

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// readRound reads the complete lines of fh from *off up to its size, as
// one readFrom does, carrying the torn line's newline-free prefix from
// round to round as the follower does; it returns what it read and how
// many bytes it searched for a newline.
func readRound(t *testing.T, fh *os.File, off, nlAt, nlFree *int64, maxLine int64) (lines []pendingLine, scanned int64) {
	t.Helper()
	fi, err := fh.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if *off >= fi.Size() {
		return nil, 0
	}
	r := newLineReader(fh, *off, fi.Size(), maxLine)
	r.nlAt, r.nlFree = *nlAt, *nlFree
	for {
		pl, ok, err := r.next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if !pl.owned {
			pl.raw = bytes.Clone(pl.raw)
		}
		lines = append(lines, pl)
	}
	*off, *nlAt, *nlFree = r.off, r.nlAt, r.nlFree
	return lines, r.scanned
}

// TestLineReaderSearchesEachByteOnce writes a 3 MiB line in pieces, each
// followed by a read (the line torn at every read, shorter than the read
// buffer at first, then longer): every byte of the file is searched for a
// newline at most once over all the reads, and the lines come out whole.
func TestLineReaderSearchesEachByteOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var off, nlAt, nlFree, scanned int64
	var got []pendingLine
	write := func(b []byte) {
		if _, err := fh.Write(b); err != nil {
			t.Fatal(err)
		}
		lines, n := readRound(t, fh, &off, &nlAt, &nlFree, DefaultMaxLine)
		got, scanned = append(got, lines...), scanned+n
	}
	write([]byte("first\n"))
	long := bytes.Repeat([]byte("x"), 3<<20)
	for p := 0; p < len(long); p += 300 << 10 {
		write(long[p:min(p+300<<10, len(long))])
	}
	write([]byte("\nlast\n"))
	size := int64(len("first\n") + len(long) + len("\nlast\n"))
	if scanned > size {
		t.Fatalf("searched %d bytes for newlines in a file of %d: bytes searched again", scanned, size)
	}
	if len(got) != 3 || string(got[0].raw) != "first" || !bytes.Equal(got[1].raw, long) || string(got[2].raw) != "last" || got[2].end != size {
		t.Fatalf("lines: %d, want first, the long line, last", len(got))
	}
}

// TestLineReaderLongLineMemory reads a 64 MiB line: what it allocates
// stays under 1.5 times the line plus a constant (the read buffer).
func TestLineReaderLongLineMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB")
	}
	const n = 64 << 20
	path := filepath.Join(t.TempDir(), "t.jsonl")
	content := append(bytes.Repeat([]byte("y"), n), "\nafter\n"...)
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	content = nil
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var off, nlAt, nlFree int64
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	lines, scanned := readRound(t, fh, &off, &nlAt, &nlFree, DefaultMaxLine)
	runtime.ReadMemStats(&after)
	if len(lines) != 2 || len(lines[0].raw) != n || string(lines[1].raw) != "after" {
		t.Fatalf("got %d lines", len(lines))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > n*3/2+(4<<20) {
		t.Fatalf("reading a %d-byte line allocated %d bytes (%.2fx)", n, alloc, float64(alloc)/n)
	}
	if scanned > int64(n+len("\nafter\n")) {
		t.Fatalf("searched %d bytes", scanned)
	}
}

// TestLineReaderPassesOverLinesPastTheCap: a line past the cap, short
// (inside the read buffer) or long, comes back as its length only, and
// the lines after it are read.
func TestLineReaderPassesOverLinesPastTheCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	var b bytes.Buffer
	b.WriteString("a\n")
	b.Write(bytes.Repeat([]byte("s"), 5000))
	b.WriteString("\nb\n")
	b.Write(bytes.Repeat([]byte("l"), 3<<20))
	b.WriteString("\nc\n")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var off, nlAt, nlFree int64
	lines, _ := readRound(t, fh, &off, &nlAt, &nlFree, 1000)
	var got []string
	for _, l := range lines {
		if l.over > 0 {
			got = append(got, fmt.Sprintf("over %d (%d bytes held)", l.over, len(l.raw)))
			continue
		}
		got = append(got, string(l.raw))
	}
	want := []string{"a", "over 5000 (0 bytes held)", "b", fmt.Sprintf("over %d (0 bytes held)", 3<<20), "c"}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	if off != int64(b.Len()) {
		t.Fatalf("read up to %d of %d", off, b.Len())
	}
}

// TestCatchUpOfALongLineAllocatesItOnce: watch reads a transcript with a
// 64 MiB line into a jsonl archive; all it allocates (reading, parsing,
// the pipeline, the sink) stays under 1.5 times the line plus a constant:
// the line is read into memory once and written from there.
func TestCatchUpOfALongLineAllocatesItOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB")
	}
	const n = 64 << 20
	r := newRig(t)
	appendFile(t, r.mainPath(), userLine("short")+"\n")
	appendFile(t, r.mainPath(), userLine(strings.Repeat("z", n))+"\n"+userLine("after")+"\n")
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s := r.mustOnce()
	runtime.ReadMemStats(&after)
	if s.Accepted.Load() != 3 {
		t.Fatalf("accepted %d of 3", s.Accepted.Load())
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > n*3/2+(8<<20) {
		t.Fatalf("mirroring a %d-byte line allocated %d bytes (%.2fx)", n, alloc, float64(alloc)/n)
	}
}
