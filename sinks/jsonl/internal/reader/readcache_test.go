package reader

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// A layout with a ReadCache answers Messages as one without does: the
// conversation kept is given again while the transcript is as it was, and
// read again after an append, a rewrite of the same size with its time put
// back, and a rename over it; a transcript changed within the racy window
// is not kept at all.
func TestReadCacheMessages(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	now := time.Now()
	cache := layout.NewReadCache()
	cache.MinSize = 0 // these transcripts are small
	cache.Clock = func() time.Time { return now }
	l := Layout{layout.Layout{ConfigDir: dir, Reads: cache}}
	plain := Layout{layout.Layout{ConfigDir: dir}}
	const id = "5ea4c000-0000-4000-8000-0000000000cc"
	main := claudedir.MainFile(l.ProjectDir("/w"), id)
	if err := os.MkdirAll(claudedir.SessionDirOf(main), 0o700); err != nil {
		t.Fatal(err)
	}
	row := func(uuid, parent, text string) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return `{"type":"user","uuid":"` + uuid + `","parentUuid":` + p + `,"sessionId":"` + id + `","message":{"role":"user","content":"` + text + `"},"timestamp":"2026-01-01T00:00:00Z"}` + "\n"
	}
	write := func(path, s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// check reads through both layouts: the same messages, the last text
	// the one wanted, answered from the cache or not as wanted.
	check := func(what string, wantCached bool, want ...string) {
		t.Helper()
		before := cache.Hits()
		got, rep, err := l.Messages(ctx, id, "", sessions.MessagesOptions{})
		ref, rrep, rerr := plain.Messages(ctx, id, "", sessions.MessagesOptions{})
		if err != nil || rerr != nil {
			t.Fatalf("%s: %v / %v", what, err, rerr)
		}
		g, _ := json.Marshal(got)
		r, _ := json.Marshal(ref)
		if string(g) != string(r) || rep.Path != rrep.Path || rep.Lines != rrep.Lines {
			t.Fatalf("%s: cached layout gives %s (%+v), plain %s (%+v)", what, g, rep, r, rrep)
		}
		var texts []string
		for _, m := range got {
			var body struct{ Content string }
			_ = json.Unmarshal(m.Message, &body)
			texts = append(texts, body.Content)
		}
		if len(texts) != len(want) || (len(want) > 0 && texts[len(texts)-1] != want[len(want)-1]) {
			t.Fatalf("%s: messages %v, want %v", what, texts, want)
		}
		if cached := cache.Hits() > before; cached != wantCached {
			t.Errorf("%s: answered from the cache: %v, want %v", what, cached, wantCached)
		}
	}
	write(main, row("u1", "", "one")+row("u2", "u1", "two"))
	check("a file just written", false, "one", "two")
	check("still within the racy window", false, "one", "two")

	now = now.Add(2 * time.Second)
	check("read after the racy window", false, "one", "two")
	check("unchanged", true, "one", "two")
	got, _, _ := l.Messages(ctx, id, "", sessions.MessagesOptions{Limit: 1, Offset: 1})
	if len(got) != 1 || got[0].UUID != "u2" {
		t.Errorf("a page of the kept conversation: %+v", got)
	}

	f, err := os.OpenFile(main, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(row("u3", "u2", "three"))
	_ = f.Close()
	now = now.Add(2 * time.Second)
	check("appended to", false, "one", "two", "three")
	check("unchanged after the append", true, "one", "two", "three")

	fi, _ := os.Stat(main)
	write(main, row("u1", "", "ONE")+row("u2", "u1", "TWO")+row("u3", "u2", "THREE"))
	if err := os.Chtimes(main, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	check("rewritten, its time put back", false, "ONE", "TWO", "THREE")

	tmp := main + ".new"
	write(tmp, row("u9", "", "renamed"))
	if err := os.Rename(tmp, main); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	check("renamed over", false, "renamed")
	check("unchanged after the rename", true, "renamed")
}

// A transcript below the cache's MinSize (1 MiB by default) is not kept:
// re-reading it costs little, and it would push out the large ones.
func TestReadCacheLeavesSmallFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	now := time.Now().Add(time.Hour) // every file long past the racy window
	cache := layout.NewReadCache()
	cache.Clock = func() time.Time { return now }
	l := Layout{layout.Layout{ConfigDir: dir, Reads: cache}}
	const id = "5ea4c000-0000-4000-8000-0000000000dd"
	main := claudedir.MainFile(l.ProjectDir("/w"), id)
	if err := os.MkdirAll(claudedir.SessionDirOf(main), 0o700); err != nil {
		t.Fatal(err)
	}
	line := `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"` + id + `","message":{"role":"user","content":"hi"},"timestamp":"2026-01-01T00:00:00Z"}` + "\n"
	if err := os.WriteFile(main, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if msgs, _, err := l.Messages(ctx, id, "", sessions.MessagesOptions{}); err != nil || len(msgs) != 1 {
			t.Fatalf("Messages: %d, %v", len(msgs), err)
		}
	}
	if cache.Hits() != 0 {
		t.Errorf("a %d-byte transcript was answered from the cache %d times", len(line), cache.Hits())
	}
	cache.MinSize = 0
	for range 2 {
		_, _, _ = l.Messages(ctx, id, "", sessions.MessagesOptions{})
	}
	if cache.Hits() != 1 {
		t.Errorf("with MinSize 0: %d hits, want 1", cache.Hits())
	}
}
