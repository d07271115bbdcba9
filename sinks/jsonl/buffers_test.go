package jsonl

import (
	"context"
	"fmt"
	"testing"

	"github.com/e0dc0000/scribe/core"
)

// TestIdleFilesGiveUpTheirBuffers: a drain touches only the files with
// queued bytes, and a file not written for a sweep keeps no buffer, so a
// store that knows 10,000 sessions (scribe watch) costs what is being
// written.
func TestIdleFilesGiveUpTheirBuffers(t *testing.T) {
	dir := t.TempDir()
	s := newSink(t, dir, nil) // not started: drains and sweeps are called here
	ctx := context.Background()
	const n = 50
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("0565a3a4-0000-4000-8000-%012d", i+100)
		line := fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hi"},"uuid":"00000000-0000-4000-8000-%012d","cwd":%q,"sessionId":%q}`, i, cwd, id)
		e, err := core.ParseEntry([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, []core.Entry{e}); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.dirty) != n {
		t.Fatalf("%d files marked for the drain, want %d", len(s.dirty), n)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(s.dirty) != 0 || len(s.toSync) != 0 {
		t.Fatalf("after a flush %d files still marked for the drain and %d for fsync", len(s.dirty), len(s.toSync))
	}
	held := func() int {
		k := 0
		for _, ss := range s.sessions {
			for _, f := range ss.files() {
				if cap(f.pending) > 0 || cap(f.spare) > 0 {
					k++
				}
			}
		}
		return k
	}
	if held() != n {
		t.Fatalf("%d files keep a buffer right after their write, want %d (reused while busy)", held(), n)
	}
	s.sweepBuffers() // written since the last sweep: kept
	s.sweepBuffers() // idle for a whole sweep: given up
	if k := held(); k != 0 {
		t.Fatalf("%d idle files still hold a buffer after two sweeps", k)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}
