package usage

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCachedListing: the listing's snapshot answers while none of the
// folders the listing read changed; a file added or removed in any of
// them, a folder added or removed, lists again, and so does a snapshot
// damaged; a listing whose folders changed within racyWindow, or that
// names none, is not kept.
func TestCachedListing(t *testing.T) {
	root, cache := t.TempDir(), filepath.Join(t.TempDir(), "cache")
	put := func(rel string) {
		t.Helper()
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	put("p1/a.jsonl")
	put("p1/a/subagents/agent-1.jsonl")
	put("p2/b.jsonl")
	if err := os.MkdirAll(filepath.Join(root, "p2", "b", "subagents", "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	calls, folders := 0, true
	walk := func() (Listing, error) {
		var l Listing
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir():
				l.Folders = append(l.Folders, path)
			default:
				l.Files = append(l.Files, File{Path: path, Session: strings.SplitN(strings.TrimPrefix(path, root+"/"), "/", 2)[0]})
			}
			return nil
		})
		if !folders {
			l.Folders = nil
		}
		return l, err
	}
	list := func() (Listing, error) {
		calls++
		return walk()
	}
	check := func(what string, wantUsed bool) {
		t.Helper()
		before := calls
		got, used, err := CachedListing(context.Background(), cache, list)
		if err != nil {
			t.Fatal(err)
		}
		want, err := walk() // the listing as it is
		if err != nil {
			t.Fatal(err)
		}
		if used != wantUsed || !slices.Equal(got, want.Files) || (calls == before) != used {
			t.Fatalf("%s: snapshot used %v (want %v), listed %d time(s); files %v, want %v", what, used, wantUsed, calls-before, got, want.Files)
		}
	}
	check("fresh folders", false)
	check("fresh folders, again", false) // not kept: they changed too lately
	time.Sleep(racyWindow)
	check("still folders", false)
	check("kept", true)
	for _, step := range []struct {
		what   string
		change func()
	}{
		{"a subagent's file added", func() { put("p1/a/subagents/agent-2.jsonl") }},
		{"a file in an empty folder", func() { put("p2/b/subagents/empty/agent-3.jsonl") }},
		{"a session added", func() { put("p2/c.jsonl") }},
		{"a project added", func() { put("p3/d.jsonl") }},
		{"a file removed", func() { must(t, os.Remove(filepath.Join(root, "p1", "a.jsonl"))) }},
		{"a folder removed", func() { must(t, os.RemoveAll(filepath.Join(root, "p2", "b"))) }},
	} {
		step.change()
		check(step.what, false)
		time.Sleep(racyWindow)
		check(step.what+", settled", false)
		check(step.what+", kept", true)
	}
	// A damaged snapshot: listed again, and kept (the folders are still).
	must(t, os.WriteFile(filepath.Join(cache, listingFile), []byte("SCRIBEUL"), 0o600))
	check("the snapshot damaged", false)
	check("the snapshot made again", true)
	folders = false
	must(t, os.Remove(filepath.Join(cache, listingFile)))
	check("a listing without its folders", false)
	if _, err := os.Stat(filepath.Join(cache, listingFile)); err == nil {
		t.Fatal("a listing without its folders was kept")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
