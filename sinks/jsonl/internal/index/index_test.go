package index

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// noRacy trusts every file however recently it changed (test files are
// all written moments before they are listed), for the test's duration.
func noRacy(t *testing.T) {
	t.Helper()
	old := racyWindow
	racyWindow = 0
	t.Cleanup(func() { racyWindow = old })
}

// allQueries is every listing variant for the whole config and each
// project path.
func allQueries(projects []string) []sessions.ListOptions {
	qs := []sessions.ListOptions{
		{IncludeWorktrees: true, IncludeProgrammatic: true},
		{IncludeWorktrees: true},
		{IncludeWorktrees: true, IncludeProgrammatic: true, Limit: 3},
		{IncludeWorktrees: true, IncludeProgrammatic: true, Limit: 4, Offset: 2},
		{IncludeWorktrees: true, IncludeProgrammatic: true, Offset: 5},
		{IncludeWorktrees: true, IncludeProgrammatic: true, Offset: 1 << 20},
	}
	for _, d := range projects {
		qs = append(qs,
			sessions.ListOptions{Dir: d, IncludeWorktrees: true, IncludeProgrammatic: true},
			sessions.ListOptions{Dir: d, IncludeProgrammatic: true},
			sessions.ListOptions{Dir: d, IncludeWorktrees: true},
			sessions.ListOptions{Dir: d, IncludeWorktrees: true, IncludeProgrammatic: true, Limit: 2},
			sessions.ListOptions{Dir: d, IncludeWorktrees: true, IncludeProgrammatic: true, Limit: 2, Offset: 1},
		)
	}
	return qs
}

// sameInfos fails unless got equals want in every field, the ones JSON never
// shows included.
func sameInfos(t *testing.T, what string, got, want []sessions.Info) bool {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return true
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d sessions, List has %d\nindex: %v\nList:  %v", what, len(got), len(want), jsonltest.SessionIDs(got), jsonltest.SessionIDs(want))
		return false
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			g, _ := json.Marshal(got[i])
			w, _ := json.Marshal(want[i])
			t.Errorf("%s: entry %d differs\nindex: %s path=%s dir=%s proj=%s ep=%q kind=%q tail=%.80q\nList:  %s path=%s dir=%s proj=%s ep=%q kind=%q tail=%.80q",
				what, i, g, got[i].Path, got[i].ProjectDir, got[i].ProjectPath, got[i].Entrypoint, got[i].SessionKind, got[i].LastEntryTail,
				w, want[i].Path, want[i].ProjectDir, want[i].ProjectPath, want[i].Entrypoint, want[i].SessionKind, want[i].LastEntryTail)
			return false
		}
	}
	return false
}

// compareWithList checks every query through the index (twice: as built, then
// from the saved file) and without the tails against List.
func compareWithList(t *testing.T, l Layout, qs []sessions.ListOptions) {
	t.Helper()
	ctx := context.Background()
	bad := 0
	for _, q := range qs {
		want, err := l.listing().List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("%+v", q)
		for pass := 0; pass < 2; pass++ {
			got, st, err := l.ListIndexed(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if st.SaveError != "" || st.Discarded != "" {
				t.Fatalf("%s: %+v", what, st)
			}
			if pass == 1 && st.Misses != 0 {
				t.Errorf("%s: second listing read %d files again (%+v)", what, st.Misses, st)
			}
			if !sameInfos(t, fmt.Sprintf("%s (pass %d)", what, pass), got, want) {
				bad++
			}
		}
		noTails, _, err := l.ListIndexedWith(ctx, q, sessions.IndexOptions{SkipLastEntryTail: true})
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			want[i].LastEntryTail = nil
		}
		if !sameInfos(t, what+" without tails", noTails, want) {
			bad++
		}
		if bad > 5 {
			t.Fatal("too many differences")
		}
	}
}

// layRules writes one session for each rule the listing applies that the
// index must not bend: titles and sidecars, programmatic sessions,
// continued-in, the collision filter, relocation, duplicates, skipped
// files, windows far apart, torn tails.
func layRules(t *testing.T, root string) (Layout, []string) {
	t.Helper()
	cfg := filepath.Join(root, "cfg")
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	projA := filepath.Join(root, "coll", "proj-a")
	projB := filepath.Join(root, "coll", "proj", "a") // same folder name as projA
	projC := filepath.Join(root, "other")
	for _, d := range []string{projA, projB, projC} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dirA, dirC := l.ProjectDir(projA), l.ProjectDir(projC)
	mt := time.Date(2026, 3, 2, 10, 0, 0, 123456789, time.UTC)
	n := 0
	write := func(dir, name, data string) string {
		n++
		return jsonltest.WriteFile(t, dir, name, data, mt.Add(time.Duration(n)*1500*time.Microsecond))
	}
	big := 150 << 10

	s := jsonltest.NewSession(projA).User("plain prompt", "").Assistant("done")
	write(dirA, s.ID+".jsonl", s.Text())
	s = jsonltest.NewSession(projA).User("far apart", "").Meta("custom-title", "customTitle", "Head title").Filler(big).Meta("tag", "tag", "docs")
	write(dirA, s.ID+".jsonl", s.Text())
	s = jsonltest.NewSession(projA).User("with a sidecar title", "").Filler(big)
	write(dirA, s.ID+".jsonl", s.Text())
	write(filepath.Join(dirA, s.ID), "custom-title.json", `{"customTitle":"Sidecar"}`)
	s = jsonltest.NewSession(projA).User("archived", "").Assistant("ok")
	write(dirA, s.ID+".jsonl", s.Text())
	write(filepath.Join(dirA, s.ID), "archived.json", `{"archived":true,"at":"2026-03-01T10:30:00.000Z"}`)
	s = jsonltest.NewSession(projA).User("with subagents", "").Assistant("ok")
	write(dirA, s.ID+".jsonl", s.Text())
	write(filepath.Join(dirA, s.ID, "subagents"), "agent-a1.jsonl", `{"parentUuid":null,"isSidechain":true,"agentId":"a1","type":"user","message":{"role":"user","content":"sub"},"uuid":"x","timestamp":"2026-03-01T10:00:00.000Z"}`+"\n")
	s = jsonltest.NewSession(projA)
	s.Entry = "sdk-ts"
	s.User("programmatic", "").Assistant("ok")
	write(dirA, s.ID+".jsonl", s.Text())
	target := jsonltest.NewSession(projA).User("continuation", "").Assistant("ok")
	write(dirA, target.ID+".jsonl", target.Text())
	s = jsonltest.NewSession(projA).User("continued elsewhere", "").Assistant("ok").Raw(`{"type":"continued-in","continuedInSessionId":"` + target.ID + `"}`)
	write(dirA, s.ID+".jsonl", s.Text())
	s = jsonltest.NewSession(projA).User("continued nowhere", "").Assistant("ok").Raw(`{"type":"continued-in","continuedInSessionId":"` + jsonltest.NewSessionID() + `"}`)
	write(dirA, s.ID+".jsonl", s.Text())
	s = jsonltest.NewSession(projB).User("recorded in the colliding folder", "").Assistant("ok")
	write(dirA, s.ID+".jsonl", s.Text())
	s = jsonltest.NewSession(projA).User("moved", "").Raw(`{"type":"relocated","relocatedCwd":` + jsonltest.JSONString(projB) + `,"sessionId":"x"}`)
	write(dirA, s.ID+".jsonl", s.Text())
	s = jsonltest.NewSession(projC).User("no cwd in the rows", "")
	write(dirC, s.ID+".jsonl", strings.ReplaceAll(s.Text(), `"cwd":`+jsonltest.JSONString(projC)+`,`, ""))
	s = jsonltest.NewSession(projA).User("torn tail", "").Assistant("half")
	write(dirA, s.ID+".jsonl", strings.TrimSuffix(s.Text(), "\n"))
	s = jsonltest.NewSession(projA).User("interrupted prompt", "")
	write(dirA, s.ID+".jsonl", s.Text())
	dup := jsonltest.NewSession(projA).User("duplicate, older", "")
	write(dirA, dup.ID+".jsonl", dup.Text())
	dup.Lines = nil
	dup.User("duplicate, newer", "")
	write(dirC, dup.ID+".jsonl", dup.Text())

	// Never listed.
	s = jsonltest.NewSession(projA).Assistant("nobody asked")
	write(dirA, s.ID+".jsonl", s.Text())
	s = jsonltest.NewSession(projA).User("sidechain first", "")
	s.Lines[0] = strings.Replace(s.Lines[0], `"isSidechain":false`, `"isSidechain":true`, 1)
	write(dirA, s.ID+".jsonl", s.Text())
	write(dirA, jsonltest.NewSessionID()+".jsonl", "")
	write(dirA, "not-a-uuid.jsonl", jsonltest.NewSession(projA).User("not a uuid", "").Text())
	s = jsonltest.NewSession(projA).User("through a symlink", "")
	real := write(filepath.Join(root, "elsewhere"), s.ID+".jsonl", s.Text())
	if err := os.Symlink(real, filepath.Join(dirA, s.ID+".jsonl")); err != nil {
		t.Fatal(err)
	}
	return l, []string{projA, projB, projC}
}

func TestIndexEqualsListOnRules(t *testing.T) {
	noRacy(t)
	l, projects := layRules(t, t.TempDir())
	compareWithList(t, l, allQueries(projects))
}

func TestIndexEqualsListOnFixture(t *testing.T) {
	noRacy(t)
	p := peer.Find(t)
	root := t.TempDir()
	cfg := filepath.Join(root, "cfg")
	cwd := filepath.Join(root, "proj")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	p.GenFixture(t, cfg, cwd)
	compareWithList(t, Layout{Layout: layout.Layout{ConfigDir: cfg}}, allQueries([]string{cwd}))
}

// TestIndexEqualsListOnSDK337Fixtures: the index keeps what the 0.3.337
// programmatic filter needs (the nested flag), so a listing from the index
// hides what List hides.
func TestIndexEqualsListOnSDK337Fixtures(t *testing.T) {
	noRacy(t)
	compareWithList(t, Layout{Layout: layout.Layout{ConfigDir: jsonltest.SDK337Config(t)}}, allQueries([]string{jsonltest.SDK337Cwd}))
}

func TestIndexEqualsListOnCorpus(t *testing.T) {
	noRacy(t)
	cfg := filepath.Join(t.TempDir(), "cfg")
	ids, projects, _, _ := jsonltest.LayCorpus(t, cfg)
	if len(ids) < 20 {
		t.Fatalf("corpus: only %d sessions", len(ids))
	}
	compareWithList(t, Layout{Layout: layout.Layout{ConfigDir: cfg}}, allQueries(projects))
}

// everyProject is every project, SDK defaults.
var everyProject = sessions.ListOptions{IncludeWorktrees: true, IncludeProgrammatic: true}

// listChecked lists through the index and checks the answer against List.
func listChecked(t *testing.T, l Layout, what string) sessions.IndexStats {
	t.Helper()
	ctx := context.Background()
	got, st, err := l.ListIndexed(ctx, everyProject)
	if err != nil {
		t.Fatal(err)
	}
	want, err := l.listing().List(ctx, everyProject)
	if err != nil {
		t.Fatal(err)
	}
	sameInfos(t, what, got, want)
	return st
}

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
