package writer

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

func idleTestEntry(t *testing.T, i int) core.Entry {
	t.Helper()
	id := fmt.Sprintf("0565a3a4-0000-4000-8000-%012d", i+100)
	line := fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hi"},"uuid":"00000000-0000-4000-8000-%012d","cwd":%q,"sessionId":%q}`, i, cwd, id)
	e, err := core.ParseEntry([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestDrainAndFlushTouchOnlyWrittenFiles: a drain and a flush cost the
// files written since the last one, not every file the store knows (scribe
// watch keeps thousands of sessions open).
func TestDrainAndFlushTouchOnlyWrittenFiles(t *testing.T) {
	s := newSink(t, t.TempDir(), nil) // not started: drains come from Flush
	ctx := context.Background()
	const n = 50
	for i := 0; i < n; i++ {
		if err := s.Write(ctx, []core.Entry{idleTestEntry(t, i)}); err != nil {
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
		t.Fatalf("after a flush %d files are still marked for the drain and %d for fsync", len(s.dirty), len(s.toSync))
	}
	if err := s.Write(ctx, []core.Entry{idleTestEntry(t, 0)}); err != nil {
		t.Fatal(err)
	}
	if len(s.dirty) != 1 {
		t.Fatalf("one more write marks %d files, want 1", len(s.dirty))
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestIdleDrainLoopWakesForAWrite: the drain loop sleeps while nothing is
// queued and a write wakes it: the line reaches the file without a Flush.
func TestIdleDrainLoopWakesForAWrite(t *testing.T) {
	dir := t.TempDir()
	s := newSink(t, dir, func(o *Options) { o.DrainInterval = 5 * time.Millisecond })
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)
	time.Sleep(20 * time.Millisecond) // idle: the loop parks
	if s.busy() {
		t.Fatal("an empty store says it has work")
	}
	e := idleTestEntry(t, 7)
	if err := s.Write(ctx, []core.Entry{e}); err != nil {
		t.Fatal(err)
	}
	path := claudedir.MainFile(Layout{Layout: layout.Layout{ConfigDir: dir}}.ProjectDir(cwd), e.SessionID)
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), e.UUID) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the parked drain loop never wrote the entry")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
