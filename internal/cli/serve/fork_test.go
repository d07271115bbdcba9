package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
)

// A fork is posted in batches, each posted again (up to three times) when
// a post fails; a fork cut short is moved to the trash, and the error says
// so, or says that nothing was posted when the server holds nothing of it.
func TestPostFork(t *testing.T) {
	entries := make([]core.Entry, 2*forkBatch+5)
	for i := range entries {
		entries[i] = core.Entry{UUID: fmt.Sprint(i)}
	}
	down := errors.New("server down")
	// do forks with posts failing on the calls failOn lists (1-based) and
	// a trash answering trashErr.
	type run struct {
		posts, trashed int
		got            []string
	}
	do := func(failOn map[int]bool, trashErr error) (run, error) {
		var r run
		post := func(b []core.Entry) error {
			r.posts++
			if failOn[r.posts] {
				return down
			}
			for _, e := range b {
				r.got = append(r.got, e.UUID)
			}
			return nil
		}
		trash := func(context.Context) error { r.trashed++; return trashErr }
		err := postFork(context.Background(), entries, post, trash, 0)
		return r, err
	}

	r, err := do(nil, nil)
	if err != nil || r.posts != 3 || len(r.got) != len(entries) || r.trashed != 0 {
		t.Errorf("all well: %d posts, %d entries, %d trashed, %v", r.posts, len(r.got), r.trashed, err)
	}
	r, err = do(map[int]bool{2: true, 3: true}, nil) // the second batch fails twice, then goes in
	if err != nil || r.posts != 5 || len(r.got) != len(entries) || r.trashed != 0 {
		t.Errorf("a batch posted again: %d posts, %d entries, %d trashed, %v", r.posts, len(r.got), r.trashed, err)
	}
	r, err = do(map[int]bool{2: true, 3: true, 4: true}, nil) // the second batch never goes in
	if !errors.Is(err, down) || r.trashed != 1 || !strings.Contains(err.Error(), "200 of 405 entries posted, what was posted moved to the trash") {
		t.Errorf("cut short: %d trashed, %v", r.trashed, err)
	}
	r, err = do(map[int]bool{1: true, 2: true, 3: true}, fmt.Errorf("%w: no such session", sessions.ErrNotFound))
	if !errors.Is(err, down) || r.trashed != 1 || !strings.Contains(err.Error(), "nothing posted") {
		t.Errorf("the first batch never in: %d trashed, %v", r.trashed, err)
	}
	r, err = do(map[int]bool{2: true, 3: true, 4: true}, errors.New("trash refused"))
	if !errors.Is(err, down) || !strings.Contains(err.Error(), "could not be moved to the trash (trash refused)") {
		t.Errorf("the trash refused too: %v", err)
	}
	// The request goes away while a batch fails: what was posted still
	// goes to the trash, with a context of its own.
	ctx, cancel := context.WithCancel(context.Background())
	posts := 0
	var trashCtxErr error = errors.New("trash not called")
	err = postFork(ctx, entries, func([]core.Entry) error {
		posts++
		if posts == 2 {
			cancel()
			return context.Canceled
		}
		return nil
	}, func(tctx context.Context) error { trashCtxErr = tctx.Err(); return nil }, 0)
	if !errors.Is(err, context.Canceled) || trashCtxErr != nil || posts != 2 {
		t.Errorf("cancelled: %d posts, the trash's context %v, %v", posts, trashCtxErr, err)
	}
}
