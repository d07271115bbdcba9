package reader

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// A layout with a ReadCache (and a WalkCache, as stores.NewLocal sets)
// answers as one without after a transcript is truncated in place,
// deleted, turned into a symlink (and the symlink pointed elsewhere),
// when the session appears in an earlier project folder, for more
// sessions than the cache keeps, and for readers at once (go test -race).
func TestReadCacheAnswersAsWithout(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	now := time.Now().Add(time.Hour) // every file past the racy window
	cache := layout.NewReadCache()
	cache.MinSize = 0 // these transcripts are small
	cache.Clock = func() time.Time { return now }
	l := Layout{layout.Layout{ConfigDir: dir, Reads: cache, Walks: layout.NewWalkCache()}}
	plain := Layout{layout.Layout{ConfigDir: dir}}
	row := func(id, uuid, text string) string {
		return `{"type":"user","uuid":"` + uuid + `","parentUuid":null,"sessionId":"` + id + `","message":{"role":"user","content":"` + text + `"},"timestamp":"2026-01-01T00:00:00Z"}` + "\n"
	}
	write := func(path, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	answer := func(l Layout, id string) string {
		msgs, rep, err := l.Messages(ctx, id, "", sessions.MessagesOptions{})
		b, _ := json.Marshal(msgs)
		return fmt.Sprintf("%s %s %d %v", b, rep.Path, rep.Lines, err)
	}
	same := func(what, id string) {
		t.Helper()
		for range 2 { // once read, once perhaps from the cache
			if got, want := answer(l, id), answer(plain, id); got != want {
				t.Fatalf("%s: cached %s\nwant %s", what, got, want)
			}
		}
	}
	const id = "5ea4c000-0000-4000-8000-0000000000dd"
	main := claudedir.MainFile(l.ProjectDir("/w"), id)
	write(main, row(id, "u1", "one")+row(id, "u2", "two"))
	same("written", id)
	if err := os.Truncate(main, int64(len(row(id, "u1", "one")))); err != nil {
		t.Fatal(err)
	}
	same("truncated in place", id)
	if err := os.Remove(main); err != nil {
		t.Fatal(err)
	}
	same("deleted", id)
	// linkTo puts a symlink to a file of text in main's place by a rename.
	linkTo := func(name, text string) {
		t.Helper()
		target := filepath.Join(dir, name)
		write(target, row(id, "s1", text))
		if err := os.Symlink(target, main+".tmp"); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(main+".tmp", main); err != nil {
			t.Fatal(err)
		}
	}
	linkTo("elsewhere.jsonl", "linkedA")
	same("a symlink", id)
	linkTo("elsewhere2.jsonl", "linkedB") // the same size
	same("the symlink pointed elsewhere", id)
	write(claudedir.MainFile(l.ProjectDir("/a"), id), row(id, "e1", "earlier folder"))
	same("in an earlier project folder too", id)

	var ids []string
	for n := range 12 {
		s := fmt.Sprintf("5ea4c000-0000-4000-8000-%012d", 100+n)
		write(claudedir.MainFile(l.ProjectDir("/w"), s), row(s, "u1", s))
		ids = append(ids, s)
	}
	for range 2 {
		for _, s := range ids {
			same("one of many", s)
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				s := ids[(g+i)%len(ids)]
				if got, want := answer(l, s), answer(plain, s); got != want {
					t.Errorf("at once: %s, want %s", got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}
