package admin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// rm of a session a live writer holds is refused and moves nothing; with a
// lock wait it goes once the writer lets go.
func TestMoveToTrashRefusesALiveWriter(t *testing.T) {
	l := Layout{Layout: layout.Layout{ConfigDir: t.TempDir()}}
	id := gcSession(t, l, 50, gcNow, gcNow, 500)
	lk, err := layout.AcquireLock(context.Background(), l.LockFile(id), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.MoveToTrash(context.Background(), id, sessions.TrashOptions{Reason: "rm"}); !errors.Is(err, layout.ErrLocked) {
		t.Fatalf("MoveToTrash of a held session: %v, want ErrLocked", err)
	}
	if _, err := os.Stat(claudedir.MainFile(l.ProjectDir("/work/gc"), id)); err != nil {
		t.Fatalf("the refused rm moved the transcript: %v", err)
	}
	if items, _, _ := l.ListTrash(); len(items) != 0 {
		t.Fatalf("the refused rm left %d trash items", len(items))
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.MoveToTrash(context.Background(), id, sessions.TrashOptions{Reason: "rm", LockWait: time.Minute})
		done <- err
	}()
	lk.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if items, _, _ := l.ListTrash(); len(items) != 1 || !items[0].Complete {
		t.Fatalf("trash after the wait: %+v", items)
	}
}

// The sessions index forgets a trashed session in the same step: the next
// listing finds no entry of a file that is gone to drop. (The index keeps
// no entry of a file changed within the last second: the test waits that
// out, so that both sessions are in it before rm.)
func TestMoveToTrashForgetsTheIndexEntry(t *testing.T) {
	l := Layout{Layout: layout.Layout{ConfigDir: t.TempDir()}}
	ctx := context.Background()
	gcSession(t, l, 60, gcNow, gcNow, 500)
	gone := gcSession(t, l, 61, gcNow, gcNow, 500)
	time.Sleep(1100 * time.Millisecond)
	if _, st, err := l.index().ListIndexed(ctx, sessions.ListOptions{}); err != nil || !st.Saved || st.Files != 2 {
		t.Fatalf("the index before rm: %+v, %v", st, err)
	}
	if _, err := l.MoveToTrash(ctx, gone, sessions.TrashOptions{Reason: "rm"}); err != nil {
		t.Fatal(err)
	}
	if _, st, err := l.index().ListIndexed(ctx, sessions.ListOptions{}); err != nil || st.Dropped != 0 || st.Files != 1 || st.Hits != 1 {
		t.Fatalf("after rm the index still held the trashed session: %+v, %v", st, err)
	}
}

// The trash lists only session items: another command's folder there
// (scribe redact's originals) is neither listed, nor a problem, nor
// emptied.
func TestTrashListsOnlySessionItems(t *testing.T) {
	l := Layout{Layout: layout.Layout{ConfigDir: t.TempDir()}}
	id := gcSession(t, l, 70, gcNow, gcNow, 500)
	other := filepath.Join(l.TrashDir(), "redact", "20261201T000000Z")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := l.MoveToTrash(context.Background(), id, sessions.TrashOptions{Reason: "rm"}); err != nil {
		t.Fatal(err)
	}
	items, problems, err := l.ListTrash()
	if err != nil || len(items) != 1 || len(problems) != 0 || items[0].SessionID != id {
		t.Fatalf("ListTrash: %+v, %v, %v", items, problems, err)
	}
	if _, err := l.EmptyTrash(0, false, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("trash empty removed another command's folder: %v", err)
	}
}
