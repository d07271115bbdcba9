package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func mustOpen(t *testing.T, dir string) (*Batches, []Batch) {
	t.Helper()
	s, recs, err := OpenBatches(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s, recs
}

func payload(id uint64) []byte { return []byte(fmt.Sprintf("batch-%d-payload", id)) }

func ids(recs []Batch) []uint64 {
	var out []uint64
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

func TestReopenReturnsUnreleasedInIDOrder(t *testing.T) {
	dir := t.TempDir()
	s, recs := mustOpen(t, dir)
	if len(recs) != 0 {
		t.Fatalf("new spool holds %v", ids(recs))
	}
	stream := s.Stream()
	// A spilled batch lands after batches with higher ids.
	for _, id := range []uint64{3, 4, 1, 2, 5} {
		if _, err := s.Append(id, int(id), payload(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, recs = mustOpen(t, dir)
	defer s.Close()
	if got := fmt.Sprint(ids(recs)); got != "[1 2 3 4 5]" {
		t.Fatalf("ids %s", got)
	}
	if s.Stream() != stream {
		t.Fatalf("stream id changed: %s -> %s", stream, s.Stream())
	}
	for _, r := range recs {
		b, err := s.Read(r.Ref)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != string(payload(r.ID)) || r.Entries != int(r.ID) {
			t.Fatalf("record %d: %q, %d entries", r.ID, b, r.Entries)
		}
	}
}

func TestTornTailEndsTheSegment(t *testing.T) {
	for _, cut := range []int{1, headerSize - 3, headerSize + 2} {
		t.Run(fmt.Sprintf("cut %d", cut), func(t *testing.T) {
			dir := t.TempDir()
			s, _ := mustOpen(t, dir)
			for id := uint64(1); id <= 3; id++ {
				if _, err := s.Append(id, 1, payload(id)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			seg := filepath.Join(dir, segName(1))
			fi, err := os.Stat(seg)
			if err != nil {
				t.Fatal(err)
			}
			last := int64(headerSize + len(payload(3)))
			if err := os.Truncate(seg, fi.Size()-last+int64(cut)); err != nil {
				t.Fatal(err)
			}
			s, recs := mustOpen(t, dir)
			if got := fmt.Sprint(ids(recs)); got != "[1 2]" {
				t.Fatalf("after a torn last record: %s", got)
			}
			// Appends go on in a new segment.
			if _, err := s.Append(4, 1, payload(4)); err != nil {
				t.Fatal(err)
			}
			s.Close()
			_, recs = mustOpen(t, dir)
			if got := fmt.Sprint(ids(recs)); got != "[1 2 4]" {
				t.Fatalf("after appending past the torn record: %s", got)
			}
		})
	}
}

func TestCorruptRecordIsNotBelieved(t *testing.T) {
	dir := t.TempDir()
	s, _ := mustOpen(t, dir)
	for id := uint64(1); id <= 3; id++ {
		if _, err := s.Append(id, 1, payload(id)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	seg := filepath.Join(dir, segName(1))
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[headerSize+len(payload(1))+headerSize+2] ^= 0xff // inside record 2's payload
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, recs := mustOpen(t, dir)
	if got := fmt.Sprint(ids(recs)); got != "[1]" {
		t.Fatalf("records after a corrupt one: %s", got)
	}
}

func TestReleaseRemovesSegmentsAndPersists(t *testing.T) {
	dir := t.TempDir()
	s, _ := mustOpen(t, dir)
	for id := uint64(1); id <= 4; id++ {
		if _, err := s.Append(id, 2, payload(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Release(2, true); err != nil {
		t.Fatal(err)
	}
	if segs, _ := filepath.Glob(filepath.Join(dir, "seg-*.log")); len(segs) != 1 {
		t.Fatalf("a segment with unreleased batches went: %v", segs)
	}
	s.Close()
	s, recs := mustOpen(t, dir)
	if got := fmt.Sprint(ids(recs)); got != "[3 4]" || s.Released() != 2 {
		t.Fatalf("after release 2: %s, watermark %d", got, s.Released())
	}
	st, err := InspectBatches(dir)
	if err != nil || st.Batches != 2 || st.Entries != 4 {
		t.Fatalf("Inspect: %+v %v", st, err)
	}
	if err := s.Release(4, false); err != nil {
		t.Fatal(err)
	}
	if segs, _ := filepath.Glob(filepath.Join(dir, "seg-*.log")); len(segs) != 0 {
		t.Fatalf("segments left after everything was released: %v", segs)
	}
	s.Close()
	s, recs = mustOpen(t, dir)
	defer s.Close()
	if len(recs) != 0 || s.Released() != 4 {
		t.Fatalf("reopened: %v, watermark %d", ids(recs), s.Released())
	}
}

func TestSecondOpenIsRefused(t *testing.T) {
	dir := t.TempDir()
	s, _ := mustOpen(t, dir)
	if _, _, err := OpenBatches(dir); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Open: %v", err)
	}
	s.Close()
	s2, _ := mustOpen(t, dir)
	s2.Close()
}

func TestInspectMissingFolder(t *testing.T) {
	st, err := InspectBatches(filepath.Join(t.TempDir(), "nope"))
	if err != nil || st.Batches != 0 {
		t.Fatalf("%+v %v", st, err)
	}
}
