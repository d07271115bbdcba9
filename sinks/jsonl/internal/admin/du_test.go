package admin

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/transcript/fork"
)

// duChain writes a linked conversation of n rows.
func duChain(t *testing.T, l Layout, id string, n int) string {
	t.Helper()
	dir := l.ProjectDir("/work/du")
	os.MkdirAll(dir, 0o700)
	var b strings.Builder
	parent := "null"
	for i := range n {
		typ := "user"
		if i%2 == 1 {
			typ = "assistant"
		}
		u := fmt.Sprintf("d0000000-0000-4000-8000-%012d", i)
		fmt.Fprintf(&b, `{"parentUuid":%s,"isSidechain":false,"type":"%s","message":{"role":"%s","content":"row %d"},"uuid":"%s","timestamp":"2026-05-01T10:%02d:00.000Z","cwd":"/work/du","sessionId":"%s"}`+"\n",
			parent, typ, typ, i, u, i, id)
		parent = `"` + u + `"`
	}
	p := claudedir.MainFile(dir, id)
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// du sorts a session's bytes into transcript, subagents, tool results and
// sidecars, counts archived sessions and the trash apart, and measures what
// forks duplicate of their source, with fresh uuids (the SDK's fork) and
// with kept ones (/branch).
func TestDiskUsageKindsAndForkDuplicates(t *testing.T) {
	l := Layout{Layout: layout.Layout{ConfigDir: t.TempDir()}}
	ctx := context.Background()
	src := "d1000000-0000-4000-8000-000000000001"
	srcPath := duChain(t, l, src, 10)
	dir := filepath.Dir(srcPath)
	write := func(rel, data string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(src+"/subagents/agent-a1.jsonl", strings.Repeat("s", 100))
	write(src+"/subagents/agent-a1.meta.json", strings.Repeat("m", 10))
	write(src+"/tool-results/toolu_1.txt", strings.Repeat("r", 1000))
	write(src+".ccr-tip.json", "12345")
	if _, err := l.SetArchived(ctx, src, true, sessions.ManageOptions{}); err != nil {
		t.Fatal(err)
	}
	arch, _ := os.Stat(filepath.Join(dir, src, "archived.json"))

	fresh, freshPath, err := l.ForkSession(ctx, src, "", fork.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kept, keptPath, err := l.ForkSession(ctx, src, "", fork.Options{KeepUUIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	srcRaw, _ := os.ReadFile(srcPath)
	// A fork line whose text names one of the source's uuids.
	dupOf := func(path string) int64 {
		raw, _ := os.ReadFile(path)
		var n int64
		for _, line := range bytes.SplitAfter(raw, []byte("\n")) {
			for i := range 10 {
				if u := fmt.Sprintf("d0000000-0000-4000-8000-%012d", i); bytes.Contains(line, []byte(`"`+u+`"`)) {
					n += int64(len(line))
					break
				}
			}
		}
		return n
	}
	gone := "d1000000-0000-4000-8000-000000000009"
	duChain(t, l, gone, 2)
	if _, err := l.MoveToTrash(ctx, gone, sessions.TrashOptions{Reason: "rm"}); err != nil {
		t.Fatal(err)
	}

	rep, err := l.DiskUsage(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]DUSession{}
	for _, s := range rep.Sessions {
		by[s.SessionID] = s
	}
	s := by[src]
	if s.Transcript != int64(len(srcRaw)) || s.Subagents != 110 || s.ToolResults != 1000 || s.Sidecars != 5+arch.Size() || !s.Archived {
		t.Errorf("source: %+v", s)
	}
	if s.Total != s.Transcript+s.Subagents+s.ToolResults+s.Sidecars || rep.Archived != s.Total {
		t.Errorf("totals: session %+v, archived %d", s, rep.Archived)
	}
	for _, f := range []struct{ id, path string }{{fresh, freshPath}, {kept, keptPath}} {
		got := by[f.id]
		if want := dupOf(f.path); got.ForkOf != src || got.ForkDuplicate != want || want == 0 {
			t.Errorf("fork %s: forkOf %s, duplicate %d bytes, want %d", f.id, got.ForkOf, got.ForkDuplicate, want)
		}
	}
	if rep.TrashItems != 1 || rep.Trash == 0 || len(rep.Sessions) != 3 || len(rep.Projects) != 1 {
		t.Errorf("report: %d sessions, %d projects, trash %d in %d items", len(rep.Sessions), len(rep.Projects), rep.Trash, rep.TrashItems)
	}
}
