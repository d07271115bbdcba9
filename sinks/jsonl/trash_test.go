package jsonl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
)

// rm of a session a live writer holds is refused and moves nothing; with a
// lock wait it goes once the writer lets go.
func TestMoveToTrashRefusesALiveWriter(t *testing.T) {
	l := Layout{ConfigDir: t.TempDir()}
	id := gcSession(t, l, 50, gcNow, gcNow, 500)
	lk, err := acquireLock(context.Background(), l.LockFile(id), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.MoveToTrash(context.Background(), id, TrashOptions{Reason: "rm"}); !errors.Is(err, ErrLocked) {
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
		_, err := l.MoveToTrash(context.Background(), id, TrashOptions{Reason: "rm", LockWait: time.Minute})
		done <- err
	}()
	lk.release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if items, _, _ := l.ListTrash(); len(items) != 1 || !items[0].Complete {
		t.Fatalf("trash after the wait: %+v", items)
	}
}

// The sessions index forgets a trashed session in the same step.
func TestMoveToTrashForgetsTheIndexEntry(t *testing.T) {
	l := Layout{ConfigDir: t.TempDir()}
	ixNoRacy(t)
	keep := gcSession(t, l, 60, gcNow, gcNow, 500)
	gone := gcSession(t, l, 61, gcNow, gcNow, 500)
	if _, _, err := l.ListIndexed(context.Background(), ListOptions{}); err != nil {
		t.Fatal(err)
	}
	folder := claudedir.SanitizePath("/work/gc")
	if x := ixLoadAll(t, l)[folder]; x[gone+".jsonl"] == nil || x[keep+".jsonl"] == nil {
		t.Fatalf("the index lacks the sessions before rm: %v", x)
	}
	if _, err := l.MoveToTrash(context.Background(), gone, TrashOptions{Reason: "rm"}); err != nil {
		t.Fatal(err)
	}
	if x := ixLoadAll(t, l)[folder]; x[gone+".jsonl"] != nil || x[keep+".jsonl"] == nil {
		t.Fatalf("after rm the index holds %v", x)
	}
}

// The trash lists only session items: another command's folder there
// (scribe redact's originals) is neither listed, nor a problem, nor
// emptied.
func TestTrashListsOnlySessionItems(t *testing.T) {
	l := Layout{ConfigDir: t.TempDir()}
	id := gcSession(t, l, 70, gcNow, gcNow, 500)
	other := filepath.Join(l.TrashDir(), "redact", "20261201T000000Z")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := l.MoveToTrash(context.Background(), id, TrashOptions{Reason: "rm"}); err != nil {
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
