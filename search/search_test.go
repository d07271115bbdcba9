package search

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/sinks/jsonl"
)

const testSession = "5ea4c000-0000-4000-8000-000000000001"

func row(typ, uuid, ts, content string) string {
	return fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"type":%q,"message":{"role":%q,"content":%s},"uuid":%q,"timestamp":%q,"cwd":"/work/s","sessionId":%q}`+"\n",
		typ, typ, content, uuid, ts, testSession)
}

func u(n int) string { return fmt.Sprintf("5ea4c000-1111-4000-8000-%012d", n) }

func writeSession(t *testing.T, l jsonl.Layout) string {
	t.Helper()
	dir := l.ProjectDir("/work/s")
	if err := os.MkdirAll(filepath.Join(dir, testSession, "subagents"), 0o700); err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(dir, testSession+".jsonl")
	data := row("user", u(1), "2026-03-01T10:00:00.000Z", `"why does the flamingo parser crash"`) +
		row("assistant", u(2), "2026-03-01T10:00:05.000Z", `[{"type":"thinking","thinking":"maybe a nil pointer"},{"type":"text","text":"Let me run the tests."},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"go test ./parser"}}]`) +
		row("user", u(3), "2026-03-01T10:00:09.000Z", `[{"type":"tool_result","tool_use_id":"toolu_1","content":"panic: zanzibar overflow"}]`) +
		`{"type":"custom-title","customTitle":"flamingo title only","sessionId":"` + testSession + `"}` + "\n"
	if err := os.WriteFile(main, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := row("user", u(10), "2026-03-01T10:01:00.000Z", `"search the quokka module"`)
	if err := os.WriteFile(filepath.Join(dir, testSession, "subagents", "agent-a1.jsonl"), []byte(agent), 0o600); err != nil {
		t.Fatal(err)
	}
	return main
}

// sessionIndex writes the test session into a fresh config folder and
// opens its index (closed at the test's end).
func sessionIndex(t *testing.T) *Index {
	t.Helper()
	l := jsonl.Layout{ConfigDir: t.TempDir()}
	writeSession(t, l)
	x, err := Open(l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func mustSearch(t *testing.T, x *Index, q Query) []Hit {
	t.Helper()
	if _, err := x.Sync(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	hits, err := x.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// Prompts, thinking, answers, tool inputs and outputs and subagents are
// found, with the session id, the message uuid and a snippet; the role and
// date filters apply; metadata lines are not indexed.
func TestSearchFindsEveryPartOfASession(t *testing.T) {
	x := sessionIndex(t)
	cases := []struct {
		q, role, uuid, agent string
	}{
		{"flamingo", RoleUser, u(1), ""},
		{"nil pointer", RoleAssistant, u(2), ""},
		{"zanzibar", RoleTool, u(3), ""},
		{"\"go test\"", RoleTool, u(2), ""},
		{"quokka", RoleUser, u(10), "a1"},
	}
	for _, c := range cases {
		hits := mustSearch(t, x, Query{Text: c.q})
		if len(hits) == 0 || hits[0].UUID != c.uuid || hits[0].SessionID != testSession || hits[0].AgentID != c.agent || (c.role != "" && hits[0].Role != c.role) {
			t.Errorf("%s: %+v", c.q, hits)
			continue
		}
		if !strings.Contains(hits[0].Snippet, "[") {
			t.Errorf("%s: snippet %q marks nothing", c.q, hits[0].Snippet)
		}
	}
	if hits := mustSearch(t, x, Query{Text: "parser"}); len(hits) != 2 {
		t.Errorf("parser (a prompt and a tool input): %+v", hits)
	}
	if hits := mustSearch(t, x, Query{Text: "parser", Role: RoleTool}); len(hits) != 1 || hits[0].UUID != u(2) {
		t.Errorf("role tool: %+v", hits)
	}
	if hits := mustSearch(t, x, Query{Text: "flamingo", Since: time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)}); len(hits) != 0 {
		t.Errorf("since: %+v", hits)
	}
	if hits := mustSearch(t, x, Query{Text: "flamingo", Project: "-other"}); len(hits) != 0 {
		t.Errorf("project: %+v", hits)
	}
	if hits := mustSearch(t, x, Query{Text: "title only"}); len(hits) != 0 {
		t.Errorf("a metadata line was indexed: %+v", hits)
	}
	if _, err := x.Search(context.Background(), Query{Text: "  "}); err == nil {
		t.Error("an empty query was accepted")
	}
}

// The index follows the files: an append is read from the offset on, a
// torn last line waits for its newline, a file rewritten in place is
// reindexed, a removed session vanishes, a corrupt index is rebuilt.
func TestSearchIndexFollowsTheFiles(t *testing.T) {
	l := jsonl.Layout{ConfigDir: t.TempDir()}
	main := writeSession(t, l)
	x, err := Open(l)
	if err != nil {
		t.Fatal(err)
	}
	st, err := x.Sync(context.Background(), nil)
	if err != nil || st.New != 2 || st.Documents != 5 {
		t.Fatalf("first sync: %+v, %v", st, err)
	}
	f, _ := os.OpenFile(main, os.O_APPEND|os.O_WRONLY, 0)
	full := row("user", u(4), "2026-03-02T10:00:00.000Z", `"now the wombat"`)
	f.WriteString(full[:40])
	f.Close()
	if st, _ = x.Sync(context.Background(), nil); st.Appended != 1 || st.Documents != 0 {
		t.Fatalf("torn append: %+v", st)
	}
	f, _ = os.OpenFile(main, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(full[40:])
	f.Close()
	if st, _ = x.Sync(context.Background(), nil); st.Appended != 1 || st.Documents != 1 || st.Reindexed != 0 {
		t.Fatalf("completed append: %+v", st)
	}
	if hits := mustSearch(t, x, Query{Text: "wombat"}); len(hits) != 1 || hits[0].UUID != u(4) {
		t.Fatalf("appended line: %+v", hits)
	}
	// Rewritten in place (same inode), longer than before.
	raw, _ := os.ReadFile(main)
	g, _ := os.OpenFile(main, os.O_WRONLY|os.O_TRUNC, 0)
	g.Write([]byte(strings.ReplaceAll(string(raw), "flamingo", "pelican") + row("user", u(5), "2026-03-03T10:00:00.000Z", `"x"`)))
	g.Close()
	if hits := mustSearch(t, x, Query{Text: "flamingo"}); len(hits) != 0 {
		t.Fatalf("a rewritten file still matches its old text: %+v", hits)
	}
	if hits := mustSearch(t, x, Query{Text: "pelican"}); len(hits) != 1 {
		t.Fatalf("a rewritten file: %+v", hits)
	}
	// Removed (rm moves it to the trash): gone from the index.
	if _, err := l.MoveToTrash(context.Background(), testSession, jsonl.TrashOptions{Reason: "rm"}); err != nil {
		t.Fatal(err)
	}
	if hits := mustSearch(t, x, Query{Text: "quokka"}); len(hits) != 0 {
		t.Fatalf("a removed session still matches: %+v", hits)
	}
	x.Close()
	if err := os.WriteFile(l.SearchIndexFile(), []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(l.SearchIndexFile() + "-wal")
	os.Remove(l.SearchIndexFile() + "-shm")
	x, err = Open(l)
	if err != nil || x.Rebuilt == "" {
		t.Fatalf("a corrupt index: %v, rebuilt %q", err, x.Rebuilt)
	}
	x.Close()
}

// Forget drops a session's documents at once, without a sync.
func TestForgetDropsASessionNow(t *testing.T) {
	l := jsonl.Layout{ConfigDir: t.TempDir()}
	if n, err := Forget(l, testSession); n != 0 || err != nil {
		t.Fatalf("Forget with no index: %d, %v", n, err)
	}
	writeSession(t, l)
	x, err := Open(l)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	mustSearch(t, x, Query{Text: "flamingo"})
	if n, err := Forget(l, testSession); n != 2 || err != nil {
		t.Fatalf("Forget: %d files, %v", n, err)
	}
	hits, err := x.Search(context.Background(), Query{Text: "flamingo"})
	if err != nil || len(hits) != 0 {
		t.Fatalf("after Forget, without a sync: %+v, %v", hits, err)
	}
}

// TestQueryTermsAreDeduplicatedAndCapped: the query builder passes each
// word or phrase once (case folded, as the index folds it), at most
// MaxTerms of them, and says how many it dropped.
func TestQueryTermsAreDeduplicatedAndCapped(t *testing.T) {
	terms, dropped := Terms(strings.Repeat("flamingo Flamingo ", 2500) + `"zanzibar  overflow" "Zanzibar overflow" flamingo`)
	if len(terms) != 2 || terms[0] != "flamingo" || terms[1] != "zanzibar  overflow" || dropped != 0 {
		t.Fatalf("terms %q, dropped %d", terms, dropped)
	}
	if got := ftsQuery(strings.Repeat("a b ", 1000)); got != `"a" "b"` {
		t.Fatalf("ftsQuery: %q", got)
	}
	var words []string
	for i := 0; i < 5000; i++ {
		words = append(words, fmt.Sprintf("w%d", i%(MaxTerms+100)))
	}
	terms, dropped = Terms(strings.Join(words, " "))
	if len(terms) != MaxTerms || terms[MaxTerms-1] != fmt.Sprintf("w%d", MaxTerms-1) || dropped != 100 {
		t.Fatalf("%d terms (last %q), dropped %d; want %d, dropped 100", len(terms), terms[len(terms)-1], dropped, MaxTerms)
	}
	// A phrase, or a word of many tokens, counts each of them.
	terms, dropped = Terms(`short "` + strings.Repeat("flamingo ", 5000) + `" ` + strings.Repeat("a-", 300) + " last")
	if len(terms) != 2 || terms[0] != "short" || terms[1] != "last" || dropped != 2 {
		t.Fatalf("terms %q, dropped %d", terms, dropped)
	}
}

// TestLongQueriesAnswer: a query of 5,000 repeated words, and one of
// 5,000 distinct words, answer (the right hit for the first; the first
// MaxTerms words for the second).
func TestLongQueriesAnswer(t *testing.T) {
	x := sessionIndex(t)
	hits := mustSearch(t, x, Query{Text: strings.Repeat("flamingo parser ", 2500)})
	if len(hits) != 1 || hits[0].UUID != u(1) {
		t.Fatalf("5,000 repeated words: %+v", hits)
	}
	words := []string{"flamingo", "parser"}
	for i := 0; len(words) < 5000; i++ {
		words = append(words, fmt.Sprintf("nothere%d", i))
	}
	if hits := mustSearch(t, x, Query{Text: strings.Join(words, " ")}); len(hits) != 0 {
		t.Fatalf("5,000 distinct words: %+v", hits)
	}
}

// A sync that adds many documents merges the full-text index into one
// segment afterwards (what every later query then reads); smaller ones
// leave the segments to FTS5's automerge. The answers stay the same.
func TestLargeSyncMergesTheIndex(t *testing.T) {
	l := jsonl.Layout{ConfigDir: t.TempDir()}
	main := writeSession(t, l)
	x, err := Open(l)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	segments := func() int {
		var n int
		if err := x.db.QueryRow("SELECT count(DISTINCT segid) FROM docs_idx").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	appendRow := func(n int, word string) SyncStats {
		f, err := os.OpenFile(main, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(row("user", u(n), "2026-03-02T10:00:00.000Z", `"`+word+` and the emu"`))
		f.Close()
		st, err := x.Sync(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	x.optimizeAfter = 1000
	for i, w := range []string{"first", "second", "third"} {
		if st := appendRow(20+i, w); st.Optimized || st.Documents == 0 {
			t.Fatalf("small sync %d: %+v", i, st)
		}
	}
	if n := segments(); n < 2 {
		t.Fatalf("three small syncs left %d segment(s); the test needs several", n)
	}
	x.optimizeAfter = 1
	if st := appendRow(30, "fourth"); !st.Optimized {
		t.Fatalf("large sync: %+v", st)
	}
	if n := segments(); n != 1 {
		t.Fatalf("after the merge: %d segments, want 1", n)
	}
	if _, err := x.db.Exec("INSERT INTO docs(docs) VALUES('integrity-check')"); err != nil {
		t.Fatalf("the merged index: %v", err)
	}
	if hits := mustSearch(t, x, Query{Text: "emu"}); len(hits) != 4 {
		t.Fatalf("emu: %d hits, want 4", len(hits))
	}
}

// Query.Marks are what a snippet puts around each matched word.
func TestSnippetMarks(t *testing.T) {
	x := sessionIndex(t)
	hits := mustSearch(t, x, Query{Text: "flamingo parser", Marks: [2]string{"\x02", "\x03"}})
	if len(hits) != 1 || !strings.Contains(hits[0].Snippet, "\x02flamingo\x03 \x02parser\x03") || strings.Contains(hits[0].Snippet, "[") {
		t.Errorf("hits %+v", hits)
	}
}
