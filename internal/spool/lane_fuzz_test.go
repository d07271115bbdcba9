package spool

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// FuzzSpoolDecode opens a spool lane whose segment and ack index hold
// arbitrary bytes and reads every record back. It must not panic, and what
// it decodes re-encodes (through append) to the bytes it came from: a
// prefix of the segment, the rest being a torn or damaged tail that is cut
// or skipped. The seeds are in testdata/fuzz/FuzzSpoolDecode.
func FuzzSpoolDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, seg, ack []byte) {
		dir := filepath.Join(t.TempDir(), "lane")
		if err := os.MkdirAll(dir, dirMode); err != nil {
			t.Fatal(err)
		}
		segPath := filepath.Join(dir, "00000000000000000001"+segExt)
		if err := os.WriteFile(segPath, seg, fileMode); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "ack"), ack, fileMode); err != nil {
			t.Fatal(err)
		}
		s, err := openSpool(dir, 1<<20, hclog.NewNullLogger())
		if err != nil {
			return
		}
		defer s.Close(false)
		var recs []Record
		for range 1 << 16 {
			batch, err := s.Read(0, 1024, 1<<20)
			if err != nil || len(batch) == 0 {
				break
			}
			recs = append(recs, batch...)
		}
		for i := 1; i < len(recs); i++ {
			if recs[i].Seq <= recs[i-1].Seq {
				t.Fatalf("records out of order: seq %d after %d", recs[i].Seq, recs[i-1].Seq)
			}
		}
		if len(recs) == 0 {
			return
		}
		out := filepath.Join(t.TempDir(), "lane")
		s2, err := openSpool(out, 1<<40, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close(false)
		if err := s2.Append(recs); err != nil {
			t.Fatal(err)
		}
		enc, err := os.ReadFile(s2.segs[0].path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(seg, enc) {
			t.Fatalf("%d decoded records re-encode to %d bytes that do not begin the segment", len(recs), len(enc))
		}
	})
}
