package admin

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// TestStoredSessionsAndTheirFiles: every session is found once (the first
// project folder in name order wins), with its main file, its subagents
// depth first in name order and its sidecar.
func TestStoredSessionsAndTheirFiles(t *testing.T) {
	l := Layout{Layout: layout.Layout{ConfigDir: t.TempDir()}}
	const a, b = "0565a3a4-0000-4000-8000-00000000000a", "0565a3a4-0000-4000-8000-00000000000b"
	pa, pb := l.ProjectDir("/w/a"), l.ProjectDir("/w/b")
	put := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	put(claudedir.MainFile(pa, a), "main\n")
	put(claudedir.AgentFile(pa, a, "z1"), "z\n")
	put(filepath.Join(pa, a, "subagents", "nested", "agent-a2.jsonl"), "nested\n")
	put(filepath.Join(pa, a, "subagents", "agent-.jsonl"), "no id\n")
	put(claudedir.SidecarFile(pa, a), "side\n")
	put(claudedir.MainFile(pb, a), "a copy in a later folder\n")
	put(claudedir.SidecarFile(pb, b), "only a sidecar\n")
	put(filepath.Join(pb, "not-a-session.jsonl"), "x\n")

	got, err := l.StoredSessions()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != (StoredSession{ID: a, ProjectDir: pa}) || got[1] != (StoredSession{ID: b, ProjectDir: pb}) {
		t.Fatalf("sessions %+v", got)
	}
	files, size := TranscriptFiles(pa, a)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f.Path)+"/"+f.AgentID+map[bool]string{true: "/side"}[f.Sidecar])
	}
	want := "a.jsonl/,agent-z1.jsonl/z1,agent-a2.jsonl/a2,scribe-lifecycle.jsonl//side" // agent-z1 sorts before nested/
	if strings.Join(names, ",") != strings.ReplaceAll(want, "a.jsonl/", filepath.Base(claudedir.MainFile(pa, a))+"/") || size != int64(len("main\nz\nnested\nside\n")) {
		t.Fatalf("files %v (%d bytes)", names, size)
	}
	if none, err := (Layout{Layout: layout.Layout{ConfigDir: t.TempDir()}}).StoredSessions(); err != nil || len(none) != 0 {
		t.Fatalf("an empty config folder: %v, %v", none, err)
	}

	// StoredTranscripts lists what TranscriptFiles lists of each session,
	// sidecars left out: with a session spelled in capitals, one with only
	// its folder, a link where a main file would be.
	const c, d, e = "0565a3a4-0000-4000-8000-00000000000c", "0565a3a4-0000-4000-8000-00000000000d", "0565a3a4-0000-4000-8000-00000000000e"
	put(filepath.Join(pb, strings.ToUpper(c)+".jsonl"), "capitals\n")
	put(claudedir.AgentFile(pb, d, "only"), "a subagent without its main file\n")
	if err := os.Symlink(claudedir.MainFile(pa, a), claudedir.MainFile(pb, e)); err != nil {
		t.Fatal(err)
	}
	put(claudedir.SidecarFile(pb, e), "side\n")
	stored, err := l.StoredSessions()
	if err != nil {
		t.Fatal(err)
	}
	listed, folders, err := l.StoredTranscripts()
	if err != nil || len(listed) != len(stored) || len(stored) != 5 || folders != nil {
		t.Fatalf("%d sessions' transcripts, %d sessions, folders %v (want none: a session in capitals), %v", len(listed), len(stored), folders, err)
	}
	for i, s := range stored {
		files, _ := TranscriptFiles(s.ProjectDir, s.ID)
		var want []string
		for _, f := range files {
			if !f.Sidecar {
				want = append(want, f.Path)
			}
		}
		if listed[i].StoredSession != s || strings.Join(listed[i].Paths, ",") != strings.Join(want, ",") {
			t.Fatalf("session %s: StoredTranscripts %+v, TranscriptFiles %v", s.ID, listed[i], want)
		}
	}

	// Without it, the folders the answer comes from: the projects folder,
	// the project folders, each session's folder and those read (or looked
	// for) under it.
	if err := os.Remove(filepath.Join(pb, strings.ToUpper(c)+".jsonl")); err != nil {
		t.Fatal(err)
	}
	if _, folders, err = l.StoredTranscripts(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(folders)
	wantFolders := []string{l.ProjectsDir(), pa, filepath.Join(pa, a), filepath.Join(pa, a, "subagents"), filepath.Join(pa, a, "subagents", "nested"),
		pb, filepath.Join(pb, b), filepath.Join(pb, b, "subagents"), filepath.Join(pb, d), filepath.Join(pb, d, "subagents"),
		filepath.Join(pb, e), filepath.Join(pb, e, "subagents")}
	slices.Sort(wantFolders)
	if !slices.Equal(folders, wantFolders) {
		t.Fatalf("folders\n%v\nwant\n%v", folders, wantFolders)
	}
}

// TestReplaceTranscript: a new file is created, the same bytes leave it
// alone, other bytes replace it keeping a backup, and a path outside the
// store is refused.
func TestReplaceTranscript(t *testing.T) {
	l := Layout{Layout: layout.Layout{ConfigDir: t.TempDir()}}
	const id = "0565a3a4-0000-4000-8000-00000000000c"
	path := claudedir.AgentFile(l.ProjectDir("/w/c"), id, "x")
	steps := []struct{ data, status string }{
		{"one\n", ReplaceCreated}, {"one\n", ReplaceUnchanged}, {"two\n", ReplaceReplaced},
	}
	for _, s := range steps {
		status, backup, err := l.ReplaceTranscript(path, []byte(s.data), "t")
		if err != nil || status != s.status {
			t.Fatalf("%q: %s, %v; want %s", s.data, status, err, s.status)
		}
		if (backup != "") != (s.status == ReplaceReplaced) {
			t.Fatalf("%q: backup %q", s.data, backup)
		}
		if b, _ := os.ReadFile(path); string(b) != s.data {
			t.Fatalf("file holds %q, want %q", b, s.data)
		}
		if s.status == ReplaceReplaced {
			if old, _ := os.ReadFile(backup); string(old) != "one\n" {
				t.Fatalf("backup holds %q", old)
			}
		}
	}
	if _, _, err := l.ReplaceTranscript(filepath.Join(t.TempDir(), "x.jsonl"), nil, "t"); err == nil {
		t.Fatal("a path outside the store was replaced")
	}
	if _, err := l.OpenTranscript(id, ""); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("OpenTranscript of a session with no main file: %v", err)
	}
	if err := os.WriteFile(claudedir.MainFile(l.ProjectDir("/w/c"), id), []byte("m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := l.OpenTranscript(id, "/w/c")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
