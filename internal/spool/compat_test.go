package spool

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// copyFixture copies testdata/<name> to a fresh folder: opening a spool
// cuts its torn tail, and the fixture stays as the old code left it.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("testdata", name)
	dst := filepath.Join(t.TempDir(), name)
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestReadsLanesOfTheOldSpool: testdata/v0/lanes was written by
// sinks/sinkhelper's spool before it moved here (seqs 1 to 6 over two
// segments, ack 3, then a torn frame as a killed spill leaves it). It
// reads back whole, the torn tail is cut and counted, and appending after
// it works.
func TestReadsLanesOfTheOldSpool(t *testing.T) {
	dir := copyFixture(t, "v0/lanes")
	l, err := OpenLane(dir, "events/old", 64, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	if l.Ack() != 3 || l.Tail() != 7 || !l.Pending() {
		t.Fatalf("ack %d tail %d pending %v; want 3, 7, true", l.Ack(), l.Tail(), l.Pending())
	}
	if st := l.Stats(); st.TornTails != 1 || st.Corrupt != 0 {
		t.Fatalf("stats %+v: want one torn tail, nothing corrupt", st)
	}
	if err := l.Append([]Record{{Seq: 7, Data: []byte("entry-7-payload")}}); err != nil {
		t.Fatal(err)
	}
	recs, err := l.Read(l.Ack(), 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 {
		t.Fatalf("read %d records, want seqs 3 to 7", len(recs))
	}
	for i, r := range recs {
		want := "entry-" + strconv.Itoa(3+i) + "-payload"
		if r.Seq != uint64(3+i) || string(r.Data) != want {
			t.Fatalf("record %d: seq %d %q, want %d %q", i, r.Seq, r.Data, 3+i, want)
		}
	}
	if err := l.Close(true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "lane-0", "00000000000000000004.seg.torn")); err != nil {
		t.Fatalf("the torn tail was not kept aside: %v", err)
	}
}

// TestReadsBatchesOfTheOldSpool: testdata/v0/batches was written by the
// plugin host's spool before it moved here (batches 1, 3, 2, 4 in that
// order, released through 1, then a torn record).
func TestReadsBatchesOfTheOldSpool(t *testing.T) {
	dir := copyFixture(t, "v0/batches")
	s, recs, err := OpenBatches(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := []struct {
		id      uint64
		entries int
		payload string
	}{{2, 5, "batch-two"}, {3, 1, "batch-three"}, {4, 7, "batch-four"}}
	if len(recs) != len(want) || s.Released() != 1 {
		t.Fatalf("found %d batches released through %d; want %d through 1", len(recs), s.Released(), len(want))
	}
	for i, w := range want {
		p, err := s.Read(recs[i].Ref)
		if err != nil || recs[i].ID != w.id || recs[i].Entries != w.entries || string(p) != w.payload {
			t.Fatalf("batch %d: id %d entries %d %q (%v); want %d %d %q", i, recs[i].ID, recs[i].Entries, p, err, w.id, w.entries, w.payload)
		}
	}
	if st, err := InspectBatches(dir); err != nil || st.Batches != 3 || st.Entries != 13 {
		t.Fatalf("inspect: %+v, %v", st, err)
	}
}
