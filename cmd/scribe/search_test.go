package main_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/search"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// search through the binary: a prompt, a subagent's prompt and a tool
// output are found with their session and message uuid (the uuid the SDK
// returns for that message); after rm the session is gone from the
// results, after trash restore it is back.
func TestSearchEndToEnd(t *testing.T) {
	p := peer.Find(t)
	dir := t.TempDir()
	ids := p.GenFixture(t, dir, "/home/alice/src/shop")
	id := ids["withSummaryAndSubagent"]
	type hit struct {
		SessionID, AgentID, UUID, Role, Snippet string
	}
	var hits []hit
	cpOK(t, &hits, "", "search", "login", "bug", "--role", "user", "--json", "--config-dir", dir)
	if len(hits) != 1 || hits[0].SessionID != id || hits[0].AgentID != "" {
		t.Fatalf("search login bug: %+v", hits)
	}
	if uuids := peer.UUIDs(p.Messages(t, dir, id, "", false)); len(uuids) == 0 || uuids[0] != hits[0].UUID {
		t.Fatalf("the hit's uuid %s is not the SDK's first message %v", hits[0].UUID, uuids)
	}
	cpOK(t, &hits, "", "search", "handler", "--json", "--config-dir", dir)
	if len(hits) == 0 || hits[0].AgentID != ids["subagentId"] {
		t.Fatalf("search handler (the subagent's prompt): %+v", hits)
	}
	cpOK(t, &hits, "", "search", "failing", "--role", "tool", "--json", "--config-dir", dir)
	if len(hits) == 0 || hits[0].SessionID != id || hits[0].Role != "tool" {
		t.Fatalf("search failing (a tool output): %+v", hits)
	}
	cpOK(t, nil, "", "rm", id, "--config-dir", dir)
	// rm dropped it from the search index in the same step, before any search.
	db, err := os.ReadFile(filepath.Join(dir, "scribe", "index", "search.db"))
	if err != nil {
		t.Fatal(err)
	}
	wal, _ := os.ReadFile(filepath.Join(dir, "scribe", "index", "search.db-wal"))
	x, err := search.Open(jsonl.Layout{ConfigDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	stale, err := x.Search(context.Background(), search.Query{Text: "login bug", Role: "user"})
	x.Close()
	if err != nil || len(stale) != 0 || len(db) == 0 {
		t.Fatalf("after rm, before a search, the index still has %+v (%v; %d+%d bytes)", stale, err, len(db), len(wal))
	}
	cpOK(t, &hits, "", "search", "login", "bug", "--role", "user", "--json", "--config-dir", dir)
	if len(hits) != 0 {
		t.Fatalf("a removed session is still found: %+v", hits)
	}
	cpOK(t, nil, "", "trash", "restore", id, "--config-dir", dir)
	cpOK(t, &hits, "", "search", "login", "bug", "--role", "user", "--json", "--config-dir", dir)
	if len(hits) != 1 {
		t.Fatalf("a restored session is not found: %+v", hits)
	}
	if _, errs, code := cpScribe(t, "", "search", "x", "--role", "robot", "--config-dir", dir); code != 2 {
		t.Fatalf("--role robot: exit %d, %s", code, errs)
	}
}
