package writer

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
)

// syncLine is the i-th user row of the test session, padded to n bytes.
func syncLine(t *testing.T, i, n int) core.Entry {
	t.Helper()
	parent := "null"
	if i > 0 {
		parent = fmt.Sprintf(`"s-%d"`, i-1)
	}
	line := fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":"user","message":{"role":"user","content":"%s"},"uuid":"s-%d","cwd":%q,"sessionId":%q}`,
		parent, strings.Repeat("p", n), i, cwd, sess)
	e, err := core.ParseEntryOwned([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// startQuiet starts a sink in dir whose drain interval is an hour: no
// tick comes during a test, only the drains Write asks for.
func startQuiet(t *testing.T, dir string, mod func(*Options)) *Sink {
	t.Helper()
	s := newSink(t, dir, func(o *Options) {
		o.DrainInterval = time.Hour
		if mod != nil {
			mod(o)
		}
	})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// writeRows writes 64 KiB rows (syncLine) until at least size bytes went
// and returns how many.
func writeRows(t *testing.T, s *Sink, size int) int {
	t.Helper()
	n := 0
	for written := 0; written < size; written += 64 << 10 {
		if err := s.Write(context.Background(), []core.Entry{syncLine(t, n, 64<<10)}); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// eventually waits, at most 10 s, for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %s", what)
		}
	}
}

// Under the batch policy a drain made because drainAt bytes wait writes
// without syncing (the drain interval is an hour here: no tick comes), and
// the next Flush syncs what it wrote.
func TestBatchSizedDrainsWriteFlushSyncs(t *testing.T) {
	dir, ctx := t.TempDir(), context.Background()
	s := startQuiet(t, dir, nil)
	defer s.Shutdown(ctx)
	n := writeRows(t, s, drainAt+(1<<20))
	eventually(t, "no sized drain wrote the file", func() bool {
		st, err := os.Stat(mainPath(dir))
		return err == nil && st.Size() > 0
	})
	s.io.Lock() // the drain that wrote it has ended (and synced, if it did)
	s.io.Unlock()
	if got := s.Report()["fsyncs"]; got != 0 {
		t.Fatalf("%d fsyncs before any Flush: a sized drain synced", got)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.Report()["fsyncs"]; got == 0 {
		t.Fatal("Flush synced nothing")
	}
	if lines := readLines(t, mainPath(dir)); len(lines) < n {
		t.Fatalf("%d lines on disk after Flush, want %d", len(lines), n)
	}
}

// Once the intake pauses, the interval's drain syncs what was written,
// with no Flush, and the drain loop then goes idle (nothing left to sync).
func TestBatchSyncsWhenTheIntakePauses(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := newSink(t, dir, func(o *Options) { o.DrainInterval = 20 * time.Millisecond })
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)
	if err := s.Write(ctx, []core.Entry{syncLine(t, 0, 100)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no sync after the intake paused", func() bool { return s.Report()["fsyncs"] > 0 })
	eventually(t, "the drain loop stays busy with nothing to write or sync", func() bool { return !s.busy() })
}
