package spool

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzSpoolOpen opens a spool whose segment and released file hold
// arbitrary bytes. It must not panic; every batch it finds reads back, and
// re-encodes (through Append) to the very bytes it was decoded from. The
// seeds are in testdata/fuzz/FuzzSpoolOpen.
func FuzzSpoolOpen(f *testing.F) {
	f.Fuzz(func(t *testing.T, seg []byte, released string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, segName(1)), seg, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "released"), []byte(released), 0o600); err != nil {
			t.Fatal(err)
		}
		s, recs, err := OpenBatches(dir)
		if err != nil {
			return
		}
		defer s.Close()
		for i := 1; i < len(recs); i++ {
			if recs[i].ID <= recs[i-1].ID {
				t.Fatalf("batches not in id order, or twice: %d after %d", recs[i].ID, recs[i-1].ID)
			}
		}
		if len(recs) == 0 {
			return
		}
		s2, _, err := OpenBatches(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		for _, r := range recs {
			if r.ID <= s.Released() {
				t.Fatalf("batch %d is released (through %d) but was returned", r.ID, s.Released())
			}
			payload, err := s.Read(r.Ref)
			if err != nil || len(payload) != r.Bytes {
				t.Fatalf("batch %d: read %d bytes of %d: %v", r.ID, len(payload), r.Bytes, err)
			}
			ref, err := s2.Append(r.ID, r.Entries, payload)
			if err != nil {
				t.Fatal(err)
			}
			enc, err := os.ReadFile(filepath.Join(s2.Dir(), segName(ref.seg)))
			if err != nil {
				t.Fatal(err)
			}
			frame := enc[ref.off-headerSize : ref.off+int64(ref.len)]
			if from := r.Ref.off - headerSize; !bytes.Equal(seg[from:from+int64(len(frame))], frame) {
				t.Fatalf("batch %d re-encodes to other bytes than it was decoded from", r.ID)
			}
		}
	})
}
