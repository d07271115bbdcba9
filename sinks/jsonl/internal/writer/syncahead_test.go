package writer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/e0dc0000/scribe/core"
)

// Under the batch policy, once aheadEvery bytes were written by sized
// drains, the files are synced in the background, and the books do not
// change: "fsyncs" counts only the syncs that promise something, made by
// Flush, which still syncs every file written.
func TestSyncAheadAfterSizedDrains(t *testing.T) {
	dir, ctx := t.TempDir(), context.Background()
	s := startQuiet(t, dir, nil)
	defer s.Shutdown(ctx)
	n := writeRows(t, s, aheadEvery+drainAt+(1<<20))
	eventually(t, "no background sync after the sized drains", func() bool {
		return s.Report()["fsyncs_ahead"] > 0
	})
	if got := s.Report()["fsyncs"]; got != 0 {
		t.Fatalf("%d fsyncs counted before any Flush: the background syncs changed the books", got)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rep := s.Report()
	if rep["fsyncs"] == 0 || rep["fsyncs_ahead_failed"] != 0 {
		t.Fatalf("after Flush: fsyncs %d, fsyncs_ahead_failed %d", rep["fsyncs"], rep["fsyncs_ahead_failed"])
	}
	if lines := readLines(t, mainPath(dir)); len(lines) != n {
		t.Fatalf("%d lines on disk after Flush, want %d", len(lines), n)
	}
}

// Under the never policy nothing is synced, ahead or not.
func TestSyncAheadNeverPolicy(t *testing.T) {
	dir, ctx := t.TempDir(), context.Background()
	s := startQuiet(t, dir, func(o *Options) { o.Fsync = FsyncNever })
	n := writeRows(t, s, aheadEvery+drainAt+(1<<20))
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if rep := s.Report(); rep["fsyncs"] != 0 || rep["fsyncs_ahead"] != 0 {
		t.Fatalf("never policy: fsyncs %d, fsyncs_ahead %d", rep["fsyncs"], rep["fsyncs_ahead"])
	}
	if lines := readLines(t, mainPath(dir)); len(lines) != n {
		t.Fatalf("%d lines on disk, want %d", len(lines), n)
	}
}

// A file closed before its background sync (the drain closed it, over the
// budget of open files) is skipped, not counted as a failure; an open one
// is synced; wait returns once the round is over.
func TestSyncAheadRounds(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) *os.File {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("x\n"); err != nil {
			t.Fatal(err)
		}
		return f
	}
	live, closed := open("live"), open("closed")
	defer live.Close()
	closed.Close()
	a := newSyncAhead()
	a.wrote(live, 1)
	a.wrote(closed, 1)
	a.wait()
	if a.rounds.Load() != 0 {
		t.Fatalf("a round ran after 2 bytes (aheadEvery is %d)", aheadEvery)
	}
	a.wrote(live, aheadEvery)
	a.wait()
	if got := [3]int64{a.rounds.Load(), a.syncs.Load(), a.failed.Load()}; got != [3]int64{1, 1, 0} {
		t.Fatalf("rounds, syncs, failed = %v, want [1 1 0]", got)
	}
}

// Flush syncs every file written, side by side (syncFiles), each once, and
// the folders it created.
func TestFlushSyncsEveryFile(t *testing.T) {
	ctx := context.Background()
	s := startQuiet(t, t.TempDir(), nil)
	defer s.Shutdown(ctx)
	const sessions = 3 * syncWorkers
	for i := range sessions {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		line := fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hi"},"uuid":"u-%d","cwd":"/w/p%d","sessionId":%q}`, i, i%5, id)
		e, err := core.ParseEntryOwned([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, []core.Entry{e}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.Report()["fsyncs"]; got != sessions {
		t.Fatalf("fsyncs %d after Flush, want %d (one per file)", got, sessions)
	}
	s.io.Lock()
	defer s.io.Unlock()
	for f := range s.toSync {
		t.Errorf("%s still to sync after Flush", f.path)
	}
	for _, ss := range s.sessions {
		if f := ss.main; f.unsynced || f.created {
			t.Errorf("%s: unsynced %v, folder not synced %v", f.path, f.unsynced, f.created)
		}
	}
}
