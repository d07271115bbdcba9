package reader

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// A layout with a WalkCache answers what one without answers: the walk is
// used again while the subagents folders are as they were, read again
// when a file comes or goes (the folder's time changes), and not kept at
// all while a folder changed within the racy window.
func TestWalkCache(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := Layout{layout.Layout{ConfigDir: dir, Walks: layout.NewWalkCache()}}
	plain := Layout{layout.Layout{ConfigDir: dir}}
	const id = "5ea4c000-0000-4000-8000-0000000000aa"
	main, top, nested := agentFolders(t, l, id)
	row := `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"` + id + `","message":{"role":"user","content":"hi"},"timestamp":"2026-01-01T00:00:00Z"}` + "\n"
	write := func(p string) {
		if err := os.WriteFile(p, []byte(row), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(main)
	write(filepath.Join(top, "agent-a1.jsonl"))
	write(filepath.Join(nested, "agent-a2.jsonl"))
	old := time.Now().Add(-time.Hour)
	age := func(ds ...string) {
		for _, d := range ds {
			if err := os.Chtimes(d, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	same := func(what string) []string {
		t.Helper()
		got, err := l.Subagents(ctx, id, "")
		want, err2 := plain.Subagents(ctx, id, "")
		if err != nil || err2 != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %v (%v), without the cache %v (%v)", what, got, err, want, err2)
		}
		return got
	}

	// Just changed: answered, not kept.
	same("fresh folders")
	if _, ok := l.Walks.Get(top); ok {
		t.Fatal("a walk of folders changed within the racy window was kept")
	}
	age(top, filepath.Dir(nested), nested)
	if got := same("old folders"); !reflect.DeepEqual(got, []string{"a1", "a2"}) {
		t.Fatalf("agents %v", got)
	}
	if _, ok := l.Walks.Get(top); !ok {
		t.Fatal("the walk of unchanged folders was not kept")
	}
	// Kept means used: a change hidden from the folder's time (put back
	// by hand) is not seen.
	write(filepath.Join(top, "agent-a0.jsonl"))
	age(top)
	if got, _ := l.Subagents(ctx, id, ""); !reflect.DeepEqual(got, []string{"a1", "a2"}) {
		t.Fatalf("the kept walk was not used: %v", got)
	}
	// A file added deep down: its folder's time changes, the walk is read
	// again, and the new agent is found.
	write(filepath.Join(nested, "agent-a3.jsonl"))
	if got := same("an agent added"); !reflect.DeepEqual(got, []string{"a0", "a1", "a2", "a3"}) {
		t.Fatalf("agents %v", got)
	}
	if msgs, _, err := l.SubagentMessages(ctx, id, "a3", "", sessions.MessagesOptions{}); err != nil || len(msgs) != 1 {
		t.Fatalf("the new agent's messages: %d, %v", len(msgs), err)
	}
	// One removed: gone.
	age(nested)
	same("aged again")
	if err := os.Remove(filepath.Join(top, "agent-a1.jsonl")); err != nil {
		t.Fatal(err)
	}
	if got := same("an agent removed"); !reflect.DeepEqual(got, []string{"a0", "a2", "a3"}) {
		t.Fatalf("agents %v", got)
	}
	// What a caller does to its list is its own.
	age(top)
	got := same("aged")
	got[0] = "changed"
	same("after a caller changed its list")
}

// agentFolders makes the subagents folder of session id in l (top) and a
// folder nested in it, and returns them with the main transcript's path.
func agentFolders(t *testing.T, l Layout, id string) (main, top, nested string) {
	t.Helper()
	main = claudedir.MainFile(l.ProjectDir("/w"), id)
	top = filepath.Join(claudedir.SessionDirOf(main), claudedir.SubagentsDir)
	nested = filepath.Join(top, "workflows", "run1")
	for _, d := range []string{top, nested} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return main, top, nested
}
