package search

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/sinks/jsonl"
)

const otherSession = "5ea4c000-0000-4000-8000-000000000002"

// writeOther writes a one-prompt session under a second project folder.
func writeOther(t *testing.T, l jsonl.Layout, text string) string {
	t.Helper()
	dir := l.ProjectDir("/work/other")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(dir, otherSession+".jsonl")
	line := strings.ReplaceAll(row("user", u(20), "2026-03-04T10:00:00.000Z", `"`+text+`"`), testSession, otherSession)
	if err := os.WriteFile(main, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	return main
}

func fresh(t *testing.T, x *Index, text string) ([]Hit, SyncStats) {
	t.Helper()
	hits, st, err := x.SearchFresh(context.Background(), Query{Text: text}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return hits, st
}

// The check skips untouched folders by their digest and compares a
// changed folder file by file; every change is found by the search that
// follows it: an append, a new session, a torn line completed, a session
// forgotten while its file stayed, a project folder removed.
func TestSearchFreshFollowsEveryChange(t *testing.T) {
	l := jsonl.Layout{ConfigDir: t.TempDir()}
	main := writeSession(t, l)
	other := writeOther(t, l, "the ocelot prompt")
	x, err := Open(l)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if hits, st := fresh(t, x, "ocelot"); len(hits) != 1 || st.New != 3 || st.Changed != 2 {
		t.Fatalf("first search: %+v %+v", hits, st)
	}
	if hits, st := fresh(t, x, "ocelot"); len(hits) != 1 || st.Folders != 2 || st.Changed != 0 {
		t.Fatalf("nothing changed: %+v %+v", hits, st)
	}
	// A torn append to one folder: that folder alone is compared, and
	// again until the line is complete.
	full := row("user", u(4), "2026-03-02T10:00:00.000Z", `"now the wombat"`)
	appendTo(t, main, full[:30])
	if hits, st := fresh(t, x, "wombat"); len(hits) != 0 || st.Changed != 1 || st.Appended != 1 {
		t.Fatalf("torn append: %+v %+v", hits, st)
	}
	if _, st := fresh(t, x, "wombat"); st.Changed != 1 {
		t.Fatalf("a folder holding a torn line was trusted by its digest: %+v", st)
	}
	appendTo(t, main, full[30:])
	if hits, st := fresh(t, x, "wombat"); len(hits) != 1 || st.Changed != 1 || st.Documents != 1 {
		t.Fatalf("completed append: %+v %+v", hits, st)
	}
	// Forgotten while its file stayed: found again.
	if _, err := Forget(l, otherSession); err != nil {
		t.Fatal(err)
	}
	if hits, st := fresh(t, x, "ocelot"); len(hits) != 1 || st.New != 1 {
		t.Fatalf("a forgotten session whose file is there: %+v %+v", hits, st)
	}
	// A project folder removed: its documents go.
	if err := os.RemoveAll(filepath.Dir(other)); err != nil {
		t.Fatal(err)
	}
	if hits, st := fresh(t, x, "ocelot"); len(hits) != 0 || st.Removed != 1 || st.Folders != 1 {
		t.Fatalf("a removed folder: %+v %+v", hits, st)
	}
	if _, st := fresh(t, x, "ocelot"); st.Changed != 0 {
		t.Fatalf("after the folder went: %+v", st)
	}
	// A query with no words is refused after the check ran.
	if _, _, err := x.SearchFresh(context.Background(), Query{Text: "  "}, nil); err == nil {
		t.Fatal("an empty query was accepted")
	}
}

// An index SQLite finds damaged past its first page (which opening does
// not read) is rebuilt by the search, which answers from the new one.
func TestSearchFreshRebuildsADamagedIndex(t *testing.T) {
	l := jsonl.Layout{ConfigDir: t.TempDir()}
	writeSession(t, l)
	x, err := Open(l)
	if err != nil {
		t.Fatal(err)
	}
	if hits, _ := fresh(t, x, "flamingo"); len(hits) == 0 {
		t.Fatal("no hits before the damage")
	}
	if _, err := x.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	x.Close()
	path := l.SearchIndexFile()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 4096; i < len(raw); i++ {
		raw[i] = 0xA5
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if x, err = Open(l); err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	hits, st, err := x.SearchFresh(context.Background(), Query{Text: "flamingo"}, nil)
	if err != nil || len(hits) == 0 || x.Rebuilt == "" || st.New != 2 {
		t.Fatalf("damaged index: %+v %+v, rebuilt %q, %v", hits, st, x.Rebuilt, err)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// Another process that commits a sync between this one's speculative
// search and its look at what changed leaves it nothing to sync; the
// search is made again all the same, on what that process indexed.
func TestSearchFreshSeesAnotherProcessesSync(t *testing.T) {
	l := jsonl.Layout{ConfigDir: t.TempDir()}
	writeOther(t, l, "the ocelot prompt")
	x, err := Open(l)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	other, err := Open(l)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	afterSpeculation = func() {
		if _, err := other.Sync(context.Background(), nil); err != nil {
			t.Error(err)
		}
	}
	defer func() { afterSpeculation = nil }()
	if hits, st := fresh(t, x, "ocelot"); len(hits) != 1 {
		t.Fatalf("a search after another process's sync: %+v %+v", hits, st)
	}
}
