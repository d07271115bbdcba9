package listing

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

func TestListSkipLastEntryTail(t *testing.T) {
	l := Layout{Layout: layout.Layout{ConfigDir: t.TempDir()}}
	id := "8b8b8b8b-0000-4000-8000-000000000001"
	p := claudedir.MainFile(l.ProjectDir("/w/app"), id)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	line := `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hello"},"uuid":"u-1","timestamp":"2026-01-10T11:00:02.267Z","cwd":"/w/app","sessionId":"` + id + `"}` + "\n"
	if err := os.WriteFile(p, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, skip := range []bool{false, true} {
		infos, err := l.List(context.Background(), sessions.ListOptions{IncludeProgrammatic: true, SkipLastEntryTail: skip})
		if err != nil || len(infos) != 1 {
			t.Fatalf("List: %v %v", infos, err)
		}
		if got := infos[0].LastEntryTail != nil; got == skip {
			t.Errorf("SkipLastEntryTail=%v: LastEntryTail set=%v", skip, got)
		}
	}
}
