package jsonl

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testenv"
)

// ixNoRacy trusts every file however recently it changed (test files are
// all written moments before they are listed), for the test's duration.
func ixNoRacy(t *testing.T) {
	t.Helper()
	old := ixRacyWindow
	ixRacyWindow = 0
	t.Cleanup(func() { ixRacyWindow = old })
}

// ixQueries is every listing variant for the whole config and each
// project path.
func ixQueries(projects []string) []ListOptions {
	qs := []ListOptions{
		{IncludeWorktrees: true, IncludeProgrammatic: true},
		{IncludeWorktrees: true},
		{IncludeWorktrees: true, IncludeProgrammatic: true, Limit: 3},
		{IncludeWorktrees: true, IncludeProgrammatic: true, Limit: 4, Offset: 2},
		{IncludeWorktrees: true, IncludeProgrammatic: true, Offset: 5},
		{IncludeWorktrees: true, IncludeProgrammatic: true, Offset: 1 << 20},
	}
	for _, d := range projects {
		qs = append(qs,
			ListOptions{Dir: d, IncludeWorktrees: true, IncludeProgrammatic: true},
			ListOptions{Dir: d, IncludeProgrammatic: true},
			ListOptions{Dir: d, IncludeWorktrees: true},
			ListOptions{Dir: d, IncludeWorktrees: true, IncludeProgrammatic: true, Limit: 2},
			ListOptions{Dir: d, IncludeWorktrees: true, IncludeProgrammatic: true, Limit: 2, Offset: 1},
		)
	}
	return qs
}

// ixSame fails unless got equals want in every field, the ones JSON never
// shows included.
func ixSame(t *testing.T, what string, got, want []SessionInfo) bool {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return true
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d sessions, List has %d\nindex: %v\nList:  %v", what, len(got), len(want), lstIDs(got), lstIDs(want))
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

// ixCompare checks every query through the index (twice: as built, then
// from the saved file) and without the tails against List.
func ixCompare(t *testing.T, l Layout, qs []ListOptions) {
	t.Helper()
	ctx := context.Background()
	bad := 0
	for _, q := range qs {
		want, err := l.List(ctx, q)
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
			if !ixSame(t, fmt.Sprintf("%s (pass %d)", what, pass), got, want) {
				bad++
			}
		}
		lite, _, err := l.ListIndexedWith(ctx, q, IndexOptions{SkipLastEntryTail: true})
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			want[i].LastEntryTail = nil
		}
		if !ixSame(t, what+" without tails", lite, want) {
			bad++
		}
		if bad > 5 {
			t.Fatal("too many differences")
		}
	}
}

// ixLayRules writes one session for each rule the listing applies that the
// index must not bend: titles and sidecars, programmatic sessions,
// continued-in, the collision filter, relocation, duplicates, skipped
// files, windows far apart, torn tails.
func ixLayRules(t *testing.T, root string) (Layout, []string) {
	t.Helper()
	cfg := filepath.Join(root, "cfg")
	l := Layout{ConfigDir: cfg}
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
		return lstWrite(t, dir, name, data, mt.Add(time.Duration(n)*1500*time.Microsecond))
	}
	big := 150 << 10

	s := lstNew(projA).user("plain prompt", "").assistant("done")
	write(dirA, s.id+".jsonl", s.text())
	s = lstNew(projA).user("far apart", "").meta("custom-title", "customTitle", "Head title").filler(big).meta("tag", "tag", "docs")
	write(dirA, s.id+".jsonl", s.text())
	s = lstNew(projA).user("with a sidecar title", "").filler(big)
	write(dirA, s.id+".jsonl", s.text())
	write(filepath.Join(dirA, s.id), "custom-title.json", `{"customTitle":"Sidecar"}`)
	s = lstNew(projA).user("archived", "").assistant("ok")
	write(dirA, s.id+".jsonl", s.text())
	write(filepath.Join(dirA, s.id), "archived.json", `{"archived":true,"at":"2026-03-01T10:30:00.000Z"}`)
	s = lstNew(projA).user("with subagents", "").assistant("ok")
	write(dirA, s.id+".jsonl", s.text())
	write(filepath.Join(dirA, s.id, "subagents"), "agent-a1.jsonl", `{"parentUuid":null,"isSidechain":true,"agentId":"a1","type":"user","message":{"role":"user","content":"sub"},"uuid":"x","timestamp":"2026-03-01T10:00:00.000Z"}`+"\n")
	s = lstNew(projA)
	s.entry = "sdk-ts"
	s.user("programmatic", "").assistant("ok")
	write(dirA, s.id+".jsonl", s.text())
	target := lstNew(projA).user("continuation", "").assistant("ok")
	write(dirA, target.id+".jsonl", target.text())
	s = lstNew(projA).user("continued elsewhere", "").assistant("ok").raw(`{"type":"continued-in","continuedInSessionId":"` + target.id + `"}`)
	write(dirA, s.id+".jsonl", s.text())
	s = lstNew(projA).user("continued nowhere", "").assistant("ok").raw(`{"type":"continued-in","continuedInSessionId":"` + lstID() + `"}`)
	write(dirA, s.id+".jsonl", s.text())
	s = lstNew(projB).user("recorded in the colliding folder", "").assistant("ok")
	write(dirA, s.id+".jsonl", s.text())
	s = lstNew(projA).user("moved", "").raw(`{"type":"relocated","relocatedCwd":` + lstQ(projB) + `,"sessionId":"x"}`)
	write(dirA, s.id+".jsonl", s.text())
	s = lstNew(projC).user("no cwd in the rows", "")
	write(dirC, s.id+".jsonl", strings.ReplaceAll(s.text(), `"cwd":`+lstQ(projC)+`,`, ""))
	s = lstNew(projA).user("torn tail", "").assistant("half")
	write(dirA, s.id+".jsonl", strings.TrimSuffix(s.text(), "\n"))
	s = lstNew(projA).user("interrupted prompt", "")
	write(dirA, s.id+".jsonl", s.text())
	dup := lstNew(projA).user("duplicate, older", "")
	write(dirA, dup.id+".jsonl", dup.text())
	dup.lines = nil
	dup.user("duplicate, newer", "")
	write(dirC, dup.id+".jsonl", dup.text())

	// Never listed.
	s = lstNew(projA).assistant("nobody asked")
	write(dirA, s.id+".jsonl", s.text())
	s = lstNew(projA).user("sidechain first", "")
	s.lines[0] = strings.Replace(s.lines[0], `"isSidechain":false`, `"isSidechain":true`, 1)
	write(dirA, s.id+".jsonl", s.text())
	write(dirA, lstID()+".jsonl", "")
	write(dirA, "not-a-uuid.jsonl", lstNew(projA).user("not a uuid", "").text())
	s = lstNew(projA).user("through a symlink", "")
	real := write(filepath.Join(root, "elsewhere"), s.id+".jsonl", s.text())
	if err := os.Symlink(real, filepath.Join(dirA, s.id+".jsonl")); err != nil {
		t.Fatal(err)
	}
	return l, []string{projA, projB, projC}
}

func TestIndexEqualsListOnRules(t *testing.T) {
	ixNoRacy(t)
	l, projects := ixLayRules(t, t.TempDir())
	ixCompare(t, l, ixQueries(projects))
}

func TestIndexEqualsListOnFixture(t *testing.T) {
	ixNoRacy(t)
	p := peer.Find(t)
	root := t.TempDir()
	cfg := filepath.Join(root, "cfg")
	cwd := filepath.Join(root, "proj")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	p.GenFixture(t, cfg, cwd)
	ixCompare(t, Layout{ConfigDir: cfg}, ixQueries([]string{cwd}))
}

func TestIndexEqualsListOnCorpus(t *testing.T) {
	ixNoRacy(t)
	cfg := filepath.Join(t.TempDir(), "cfg")
	ids, projects, _, _ := lstLayCorpus(t, cfg)
	if len(ids) < 20 {
		t.Fatalf("corpus: only %d sessions", len(ids))
	}
	ixCompare(t, Layout{ConfigDir: cfg}, ixQueries(projects))
}

// ixAll is every project, SDK defaults.
var ixAll = ListOptions{IncludeWorktrees: true, IncludeProgrammatic: true}

// ixList lists through the index and checks the answer against List.
func ixList(t *testing.T, l Layout, what string) IndexStats {
	t.Helper()
	ctx := context.Background()
	got, st, err := l.ListIndexed(ctx, ixAll)
	if err != nil {
		t.Fatal(err)
	}
	want, err := l.List(ctx, ixAll)
	if err != nil {
		t.Fatal(err)
	}
	ixSame(t, what, got, want)
	return st
}

func ixAppend(t *testing.T, path, line string) {
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

func TestIndexIncremental(t *testing.T) {
	ixNoRacy(t)
	root := t.TempDir()
	l, _ := ixLayRules(t, root)
	st := ixList(t, l, "first listing")
	if !st.Rebuilt || st.Hits != 0 || st.Misses != st.Files || !st.Saved || st.Discarded != "" {
		t.Fatalf("first listing: %+v", st)
	}
	files := st.Files
	if st = ixList(t, l, "second listing"); st.Hits != files || st.Misses != 0 || st.Saved || st.Rebuilt {
		t.Fatalf("second listing: %+v", st)
	}

	proj := filepath.Join(root, "coll", "proj-a")
	dir := l.ProjectDir(proj)
	ents, _ := os.ReadDir(dir)
	var sessions []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && IsSessionID(id) && e.Type().IsRegular() {
			sessions = append(sessions, filepath.Join(dir, e.Name()))
		}
	}

	// A line appended: that file is read again, the others are hits.
	ixAppend(t, sessions[0], `{"type":"custom-title","customTitle":"Renamed","sessionId":"x"}`)
	if st = ixList(t, l, "after an append"); st.Misses != 1 || st.Hits != files-1 || !st.Saved {
		t.Fatalf("after an append: %+v", st)
	}
	got, _, _ := l.ListIndexed(context.Background(), ixAll)
	found := false
	for _, s := range got {
		found = found || (s.Path == sessions[0] && s.CustomTitle == "Renamed")
	}
	if !found {
		t.Fatalf("the renamed session is not listed with its new title")
	}

	// Rewritten with the same size and mtime: the ctime gives it away.
	fi, _ := os.Stat(sessions[1])
	data, _ := os.ReadFile(sessions[1])
	data = bytes.Replace(data, []byte(`"gitBranch":"main"`), []byte(`"gitBranch":"mayn"`), -1)
	if err := os.WriteFile(sessions[1], data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(sessions[1], fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if st = ixList(t, l, "after a same-size rewrite"); st.Misses != 1 {
		t.Fatalf("after a same-size rewrite: %+v", st)
	}

	// A sidecar changed: its session is read again.
	var side string
	for _, s := range sessions {
		p := filepath.Join(strings.TrimSuffix(s, ".jsonl"), "archived.json")
		if _, err := os.Stat(p); err == nil {
			side = p
		}
	}
	if err := os.WriteFile(side, []byte(`{"archived":false,"at":"2026-03-01T10:30:00.000Z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if st = ixList(t, l, "after a sidecar change"); st.Misses != 1 {
		t.Fatalf("after a sidecar change: %+v", st)
	}

	// A file deleted: its entry is dropped.
	if err := os.Remove(sessions[2]); err != nil {
		t.Fatal(err)
	}
	if st = ixList(t, l, "after a delete"); st.Dropped != 1 || st.Misses != 0 || st.Hits != files-1 || !st.Saved {
		t.Fatalf("after a delete: %+v", st)
	}
	files--

	// A new file: listed, read once.
	s := lstNew(proj).user("brand new", "")
	lstWrite(t, dir, s.id+".jsonl", s.text(), time.Now())
	if st = ixList(t, l, "after a new file"); st.Misses != 1 || st.Hits != files {
		t.Fatalf("after a new file: %+v", st)
	}
	files++

	// A whole project folder gone.
	other := l.ProjectDir(filepath.Join(root, "other"))
	gone, _ := os.ReadDir(other)
	if err := os.RemoveAll(other); err != nil {
		t.Fatal(err)
	}
	if st = ixList(t, l, "after a folder removal"); st.Dropped != len(gone) || st.Misses != 0 {
		t.Fatalf("after a folder removal (%d files): %+v", len(gone), st)
	}
	if st = ixList(t, l, "at rest"); st.Misses != 0 || st.Saved {
		t.Fatalf("at rest: %+v", st)
	}
}

func TestIndexRacyEntriesAreNotSaved(t *testing.T) {
	old := ixRacyWindow
	ixRacyWindow = time.Hour
	t.Cleanup(func() { ixRacyWindow = old })
	l, _ := ixLayRules(t, t.TempDir())
	st := ixList(t, l, "first")
	if st.Misses != st.Files {
		t.Fatalf("first: %+v", st)
	}
	if st = ixList(t, l, "second"); st.Hits != 0 || st.Misses != st.Files {
		t.Fatalf("files changed within the racy window were trusted: %+v", st)
	}
	ixRacyWindow = 0
	ixList(t, l, "third")
	if st = ixList(t, l, "fourth"); st.Misses != 0 {
		t.Fatalf("outside the window: %+v", st)
	}
}

func TestIndexCorruptOrMissingLosesNothing(t *testing.T) {
	ixNoRacy(t)
	l, _ := ixLayRules(t, t.TempDir())
	st := ixList(t, l, "build")
	files := st.Files
	good, err := os.ReadFile(l.IndexFile())
	if err != nil {
		t.Fatal(err)
	}
	h, why := ixDecodeHeader(good)
	if why != "" {
		t.Fatal(why)
	}
	flip := func(off int) []byte {
		b := bytes.Clone(good)
		b[off] ^= 0x40
		return b
	}
	if !bytes.Equal(h.encode(), good[:ixHeaderSize]) {
		t.Fatalf("header does not round-trip")
	}
	h2 := h
	h2.stamp[0] ^= 1
	other := append(h2.encode(), good[ixHeaderSize:]...) // another build's
	newer := h.encode()
	newer[8] = 99
	binary.LittleEndian.PutUint32(newer[60:], crc32.Checksum(newer[:60], ixCRC))
	newer = append(newer, good[ixHeaderSize:]...)
	for _, c := range []struct {
		name string
		data []byte
		why  string
	}{
		{"empty file", []byte{}, "short header"},
		{"garbage", []byte(strings.Repeat("not an index ", 20)), "bad magic"},
		{"header byte flipped", flip(14), "header checksum"},
		{"first section byte flipped", flip(ixHeaderSize + int(h.lenA)/2), "first section checksum"},
		{"second section byte flipped", flip(ixHeaderSize + int(h.lenA) + int(h.lenB)/2), "second section checksum"},
		{"truncated", good[:len(good)-7], "header says"},
		{"grown", append(bytes.Clone(good), 0), "header says"},
		{"another build", other, "another build"},
		{"another format", newer, "format version 99"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(l.IndexFile(), c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			st := ixList(t, l, c.name)
			wantRebuilt := c.name != "second section byte flipped"
			if st.Rebuilt != wantRebuilt || !strings.Contains(st.Discarded, c.why) || !st.Saved {
				t.Fatalf("%+v, want rebuilt=%v and a reason with %q", st, wantRebuilt, c.why)
			}
			// The records need the second section: a damaged one is read
			// again from the files.
			if _, err := l.Sessions(context.Background()); err != nil {
				t.Fatal(err)
			}
			if st := ixList(t, l, c.name+", after"); st.Hits != files || st.Discarded != "" {
				t.Fatalf("after: %+v", st)
			}
		})
	}

	if err := os.Remove(l.IndexFile()); err != nil {
		t.Fatal(err)
	}
	if st := ixList(t, l, "deleted"); !st.Rebuilt || st.Discarded != "" || st.Misses != files {
		t.Fatalf("deleted: %+v", st)
	}

	// An index that cannot be written: the listing is right anyway.
	if err := os.Remove(l.IndexFile()); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(l.IndexFile(), "blocker"), 0o700); err != nil {
		t.Fatal(err)
	}
	if st := ixList(t, l, "unwritable"); st.SaveError == "" || st.Saved || st.Discarded == "" {
		t.Fatalf("unwritable: %+v", st)
	}
}

func TestIndexSecondSectionDamagedForRecords(t *testing.T) {
	ixNoRacy(t)
	l, _ := ixLayRules(t, t.TempDir())
	want, err := l.Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(l.IndexFile())
	h, _ := ixDecodeHeader(good)
	good[ixHeaderSize+int(h.lenA)+1] ^= 0x10
	if err := os.WriteFile(l.IndexFile(), good, 0o600); err != nil {
		t.Fatal(err)
	}
	got, st, err := l.ListRecords(context.Background(), ListOptions{IncludeProgrammatic: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Discarded, "second section") || st.Misses == 0 || !st.Saved {
		t.Fatalf("%+v", st)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("records differ after a damaged second section")
	}
}

// ixLoadAll decodes the saved index, both sections.
func ixLoadAll(t *testing.T, l Layout) map[string]map[string]*ixEntry {
	t.Helper()
	x, why := l.ixLoad()
	if x == nil {
		t.Fatalf("load: %s", why)
	}
	defer x.close()
	if why := x.loadLife(); why != "" {
		t.Fatalf("load life: %s", why)
	}
	return x.folders
}

func TestIndexRebuiltEqualsIncremental(t *testing.T) {
	ixNoRacy(t)
	root := t.TempDir()
	l, projects := ixLayRules(t, root)
	ctx := context.Background()
	ixList(t, l, "start")
	dir := l.ProjectDir(projects[0])
	ents, _ := os.ReadDir(dir)
	k := 0
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if !strings.HasSuffix(p, ".jsonl") || !e.Type().IsRegular() {
			continue
		}
		switch k++; k % 4 {
		case 0:
			ixAppend(t, p, `{"type":"tag","tag":"t`+fmt.Sprint(k)+`","sessionId":"x"}`)
		case 1:
			ixAppend(t, p, lstNew(projects[0]).user("another prompt", "").lines[0])
		case 2:
			os.Remove(p)
		}
		if _, _, err := l.ListIndexed(ctx, ListOptions{Dir: projects[k%len(projects)], IncludeProgrammatic: true}); err != nil {
			t.Fatal(err)
		}
	}
	s := lstNew(projects[1]).user("added late", "").assistant("fine")
	lstWrite(t, l.ProjectDir(projects[2]), s.id+".jsonl", s.text(), time.Now())
	ixList(t, l, "after the changes")
	recs1, err := l.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inc := ixLoadAll(t, l)

	st, err := l.RebuildIndex(ctx)
	if err != nil || !st.Rebuilt || st.Hits != 0 || !st.Saved {
		t.Fatalf("rebuild: %+v %v", st, err)
	}
	reb := ixLoadAll(t, l)
	if !reflect.DeepEqual(inc, reb) {
		for f, m := range reb {
			for n, e := range m {
				if o := inc[f][n]; !reflect.DeepEqual(o, e) {
					t.Errorf("%s/%s:\nincremental %+v %+v\nrebuilt     %+v %+v", f, n, o, o.life, e, e.life)
				}
			}
			if len(m) != len(inc[f]) {
				t.Errorf("%s: %d entries rebuilt, %d kept", f, len(m), len(inc[f]))
			}
		}
		t.Fatal("the rebuilt index differs from the one kept up to date")
	}
	recs2, err := l.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(recs1, recs2) {
		t.Fatal("records differ after the rebuild")
	}
}

func TestIndexConcurrentListers(t *testing.T) {
	ixNoRacy(t)
	root := t.TempDir()
	l, projects := ixLayRules(t, root)
	dir := l.ProjectDir(projects[2])
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // a writer adding sessions meanwhile
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s := lstNew(projects[2]).user(fmt.Sprint("concurrent ", i), "")
			if err := os.WriteFile(filepath.Join(dir, s.id+".jsonl"), []byte(s.text()), 0o600); err != nil {
				errs <- err
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var listers sync.WaitGroup
	for g := 0; g < 4; g++ {
		listers.Add(1)
		go func() {
			defer listers.Done()
			for i := 0; i < 15; i++ {
				_, st, err := l.ListIndexed(ctx, ixAll)
				if err != nil {
					errs <- err
					return
				}
				if st.Discarded != "" || st.SaveError != "" {
					errs <- fmt.Errorf("lister saw %+v", st)
					return
				}
			}
		}()
	}
	listers.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := ixList(t, l, "after the race"); st.Discarded != "" {
		t.Fatalf("after the race: %+v", st)
	}
	ents, _ := os.ReadDir(filepath.Dir(l.IndexFile()))
	for _, e := range ents {
		if e.Name() != filepath.Base(l.IndexFile()) {
			t.Errorf("left behind in the index folder: %s", e.Name())
		}
	}
}

// ixRow is a conversation row for the status tests.
type ixConv struct {
	id, cwd string
	last    string
	n       int
	t       time.Time
}

func (c *ixConv) row(typ, own string) string {
	c.n++
	id := fmt.Sprintf("%08x-0000-4000-8000-%012x", c.n, c.n)
	parent := "null"
	if c.last != "" {
		parent = lstQ(c.last)
	}
	c.last = id
	c.t = c.t.Add(time.Second)
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,%s,"type":%q,"uuid":%q,"timestamp":%q,"userType":"external","entrypoint":"cli","cwd":%s,"sessionId":%q,"version":"2.1.332"}`,
		parent, own, typ, id, c.t.Format("2006-01-02T15:04:05.000Z"), lstQ(c.cwd), c.id)
}

func (c *ixConv) prompt(text string) string {
	return c.row("user", `"message":{"role":"user","content":`+lstQ(text)+`}`)
}

func (c *ixConv) reply(text string) string {
	return c.row("assistant", fmt.Sprintf(`"message":{"model":"claude-opus-4-1","id":"msg_%d","type":"message","role":"assistant","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","stop_sequence":null}`, c.n, lstQ(text)))
}

func (c *ixConv) toolUse(tool, id string) string {
	return c.row("assistant", fmt.Sprintf(`"message":{"model":"claude-sonnet-4-5","id":"msg_%d","type":"message","role":"assistant","content":[{"type":"tool_use","id":%q,"name":%q,"input":{}}],"stop_reason":"tool_use","stop_sequence":null}`, c.n, id, tool))
}

func (c *ixConv) toolResult(id string) string {
	return c.row("user", fmt.Sprintf(`"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"ok"}]}`, id))
}

// ixStatus is the session's record through the index and without it;
// they must agree.
func ixStatus(t *testing.T, l Layout, id string) SessionRecord {
	t.Helper()
	ctx := context.Background()
	recs, _, err := l.ListRecords(ctx, ixAll)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := l.List(ctx, ixAll)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := l.Records(ctx, infos)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(recs, direct) {
		t.Fatalf("records through the index differ from the ones read directly:\n%+v\n%+v", recs, direct)
	}
	for _, r := range recs {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("session %s not listed", id)
	return SessionRecord{}
}

func TestIndexStatusTransitions(t *testing.T) {
	ixNoRacy(t)
	dir := t.TempDir()
	l := Layout{ConfigDir: dir}
	ctx := context.Background()
	c := &ixConv{id: sess, cwd: cwd, t: time.Date(2026, 1, 10, 11, 0, 0, 0, time.UTC)}
	record := func(lines ...string) *Sink {
		t.Helper()
		s := newSink(t, dir, nil)
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, entries(t, lines...)); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
	check := func(what string, want SessionStatus, class core.Interruption) SessionRecord {
		t.Helper()
		r := ixStatus(t, l, sess)
		if r.Status != want || r.Interruption != class {
			t.Fatalf("%s: status %s (%s), want %s (%s)", what, r.Status, r.Interruption, want, class)
		}
		return r
	}

	// Recorded by a live writer: active until it stops.
	w := record(c.prompt("Fix the login bug"), c.reply("Fixed."))
	check("while recording", StatusActive, core.InterruptionNone)
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	r := check("recorded", StatusCompleted, core.InterruptionNone)
	if r.CompletedAt != c.t || r.UpdatedAt.Before(r.CreatedAt) || r.Metadata.Model != "claude-opus-4-1" ||
		r.Metadata.LastMessageID != c.last || r.Name != "Fix the login bug" || r.TranscriptPath != mainPath(dir) || r.ProjectPath != cwd {
		t.Fatalf("completed record: %+v", r)
	}

	// Held by a live writer (the lock taken here).
	lk, err := acquireLock(ctx, l.LockFile(sess), 0)
	if err != nil {
		t.Fatal(err)
	}
	check("locked", StatusActive, core.InterruptionNone)
	lk.release()
	check("unlocked", StatusCompleted, core.InterruptionNone)

	// A tool call cut off, then its result, then the answer.
	w = record(c.prompt("Run the tests"), c.toolUse("Bash", "toolu_1"))
	check("tool call in flight", StatusActive, core.InterruptedTurn)
	_ = w.Shutdown(ctx)
	r = check("tool call without a result", StatusInterrupted, core.InterruptedTurn)
	if !r.CompletedAt.IsZero() || r.Metadata.Model != "claude-sonnet-4-5" || !reflect.DeepEqual(r.Metadata.Tools, []string{"Bash"}) {
		t.Fatalf("interrupted record: %+v", r)
	}
	_ = record(c.toolResult("toolu_1")).Shutdown(ctx)
	check("result without an answer", StatusInterrupted, core.InterruptedTurn)
	_ = record(c.reply("All green.")).Shutdown(ctx)
	check("answered", StatusCompleted, core.InterruptionNone)
	_ = record(c.prompt("Now the docs")).Shutdown(ctx)
	check("unanswered prompt", StatusInterrupted, core.InterruptedPrompt)
	_ = record(c.toolUse("Read", "toolu_2"), c.toolResult("toolu_2"), c.reply("Done.")).Shutdown(ctx)
	r = check("resumed and finished", StatusCompleted, core.InterruptionNone)
	if !reflect.DeepEqual(r.Metadata.Tools, []string{"Bash", "Read"}) {
		t.Fatalf("tools: %v", r.Metadata.Tools)
	}

	// A stale lock file (its writer gone) is not a live writer.
	if _, err := os.Stat(l.LockFile(sess)); err != nil {
		t.Fatalf("lock file: %v", err)
	}
	check("stale lock file", StatusCompleted, core.InterruptionNone)
}

func TestIndexExportSessionsJSON(t *testing.T) {
	ixNoRacy(t)
	l, _ := ixLayRules(t, t.TempDir())
	var b bytes.Buffer
	if err := l.ExportSessionsJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc []map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	infos, _ := l.List(context.Background(), ixAll)
	if len(doc) != len(infos) || len(doc) == 0 {
		t.Fatalf("%d records for %d sessions", len(doc), len(infos))
	}
	iso := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	statuses := map[string]int{}
	for i, r := range doc {
		if r["id"] != infos[i].SessionID || r["name"] != infos[i].Summary || r["transcriptPath"] != infos[i].Path || r["projectPath"] != infos[i].Cwd {
			t.Errorf("record %d: %v for %+v", i, r, infos[i])
		}
		for k := range r {
			switch k {
			case "id", "name", "status", "createdAt", "updatedAt", "completedAt", "projectPath", "transcriptPath", "metadata":
			default:
				t.Errorf("record %d: unexpected key %q", i, k)
			}
		}
		for _, k := range []string{"createdAt", "updatedAt", "completedAt"} {
			if v, ok := r[k]; ok && !iso.MatchString(v.(string)) {
				t.Errorf("record %d: %s = %v", i, k, v)
			}
		}
		st := r["status"].(string)
		statuses[st]++
		if _, ok := r["completedAt"]; ok != (st == "completed") {
			t.Errorf("record %d: status %s, completedAt %v", i, st, r["completedAt"])
		}
		meta := r["metadata"].(map[string]any)
		for k := range meta {
			if k != "model" && k != "tools" && k != "lastMessageId" {
				t.Errorf("record %d: unexpected metadata key %q", i, k)
			}
		}
	}
	if statuses["completed"] == 0 || statuses["interrupted"] == 0 {
		t.Errorf("statuses: %v", statuses)
	}
}

// TestIndexPlainReplyShortcut checks that the shortcut taken for a
// finished reply gives ClassifyAndRepair's answer, on the tail of every
// corpus file and of random transcripts.
func TestIndexPlainReplyShortcut(t *testing.T) {
	var tails [][]byte
	err := filepath.WalkDir(testenv.CorpusDir(t), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		tails = append(tails, b[max(len(b)-liteWindow, 0):])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 200; seed++ {
		b := randomTranscript(seed, false)
		tails = append(tails, b[max(len(b)-liteWindow, 0):])
	}
	shortcuts, classes := 0, map[core.Interruption]int{}
	for i, tail := range tails {
		_, rows := ixLifeRows(tail, nil)
		if len(rows) == 0 {
			continue
		}
		full, state := ixClassify(rows)
		classes[full]++
		if ixPlainReply(rows) {
			shortcuts++
			if full != core.InterruptionNone || state != core.StateIdle {
				t.Errorf("tail %d: the shortcut says none and idle, ClassifyAndRepair %s, StateFromTail %s", i, full, state)
			}
		}
		if got, gs := ixClass(rows); got != full || gs != state {
			t.Errorf("tail %d: %s %s, want %s %s", i, got, gs, full, state)
		}
	}
	t.Logf("%d tails: %d took the shortcut; classes %v", len(tails), shortcuts, classes)
	if shortcuts == 0 || len(classes) < 2 {
		t.Fatalf("the tails do not exercise the shortcut")
	}
}

func TestIndexEncodingRoundTrip(t *testing.T) {
	ixNoRacy(t)
	l, _ := ixLayRules(t, t.TempDir())
	if _, err := l.RebuildIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	x := &ixIndex{folders: ixLoadAll(t, l)}
	a, b, n := ixEncode(x)
	y, err := ixDecodeA(string(a), uint32(n))
	if err != nil {
		t.Fatal(err)
	}
	lives, err := ixDecodeB(b, len(y.listed))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range y.listed {
		e.life = lives[i]
	}
	y.listed = nil
	if !reflect.DeepEqual(x.folders, y.folders) {
		t.Fatal("the index does not survive encoding")
	}
}

func FuzzIndexDecode(f *testing.F) {
	x := &ixIndex{folders: map[string]map[string]*ixEntry{}}
	ca := int64(1)
	x.put("-p", "a.jsonl", &ixEntry{key: ixKey{present: true, size: 10, mtime: 2, ctime: 3, ino: 4}, listed: true,
		info: SessionInfo{SessionID: "a", Summary: "s", CreatedAt: &ca}, recCwd: "/p", recFound: true,
		life: &ixLife{tail: []byte(`{"type":"user"}`), model: "m", tools: []string{"Bash"}, lastTSok: true, lastTS: 5, class: core.InterruptedTurn, state: core.StateRunning}})
	x.put("-p", "b.jsonl", &ixEntry{key: ixKey{present: true}, sideDir: true, sideArch: ixKey{present: true, size: 1}})
	a, b, n := ixEncode(x)
	f.Add(a, b, uint32(n), 1)
	f.Add([]byte{}, []byte{}, uint32(0), 0)
	f.Add((&ixHeader{count: 1, lenA: 3}).encode(), []byte{0xff, 0xff}, uint32(1), 2)
	f.Fuzz(func(t *testing.T, a, b []byte, count uint32, listed int) {
		if x, err := ixDecodeA(string(a), count); err == nil && x == nil {
			t.Fatal("nil index without an error")
		}
		n := listed % 1000
		lives, err := ixDecodeB(b, n)
		if err == nil && len(lives) != n {
			t.Fatalf("decoded %d lives for a count of %d", len(lives), n)
		}
		if n < 0 && err == nil {
			t.Fatal("a negative count was accepted")
		}
		_, _ = ixDecodeHeader(a)
	})
}

// The export's model and tools are the whole session's, not the tail
// window's: many opus turns (one of them split over two rows, one turn),
// a tool used only early, then more than 64 KiB of haiku turns.
func TestIndexExportModelAndToolsOfTheWholeSession(t *testing.T) {
	dir := t.TempDir()
	l := Layout{ConfigDir: dir}
	c := &ixConv{id: sess, cwd: cwd, t: time.Date(2026, 1, 10, 11, 0, 0, 0, time.UTC)}
	withModel := func(line, model string) string {
		return strings.Replace(line, `"model":"claude-sonnet-4-5"`, `"model":"`+model+`"`, 1)
	}
	lines := []string{c.prompt("start"), withModel(c.toolUse("Grep", "toolu_0"), "claude-opus-4-1"), c.toolResult("toolu_0")}
	for i := range 40 {
		lines = append(lines, c.prompt(fmt.Sprintf("step %d", i)), c.reply("done"))
	}
	// A split assistant message: two rows, one message.id, one turn.
	split := c.row("assistant", `"message":{"model":"claude-haiku-4-5","id":"msg_split","type":"message","role":"assistant","content":[{"type":"text","text":"a"}],"stop_reason":null,"stop_sequence":null}`)
	lines = append(lines, c.prompt("split"), split, strings.Replace(split, c.last, "split-2", 1))
	pad := strings.Repeat("z", 2000)
	for i := range 39 {
		lines = append(lines, c.prompt(pad), c.row("assistant", fmt.Sprintf(`"message":{"model":"claude-haiku-4-5","id":"msg_h%d","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null}`, i)))
	}
	p := mainPath(dir)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tail := ixStatus(t, l, sess)
	if tail.Metadata.Model != "claude-haiku-4-5" || slices.Contains(tail.Metadata.Tools, "Grep") {
		t.Fatalf("the tail window's record: model %s, tools %v; the test needs haiku and no Grep there", tail.Metadata.Model, tail.Metadata.Tools)
	}
	var b bytes.Buffer
	if err := l.ExportSessionsJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc []struct {
		Metadata SessionRecordMetadata `json:"metadata"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil || len(doc) != 1 {
		t.Fatalf("%v\n%s", err, b.String())
	}
	// 41 opus turns, 40 haiku turns (39 + the split one).
	if doc[0].Metadata.Model != "claude-opus-4-1" || !reflect.DeepEqual(doc[0].Metadata.Tools, []string{"Grep"}) {
		t.Fatalf("exported model %s, tools %v; want claude-opus-4-1 and [Grep]", doc[0].Metadata.Model, doc[0].Metadata.Tools)
	}
}

func TestIxWholeSessionTieGoesToTheModelUsedLast(t *testing.T) {
	c := &ixConv{id: sess, cwd: cwd, t: time.Date(2026, 1, 10, 11, 0, 0, 0, time.UTC)}
	p := filepath.Join(t.TempDir(), "s.jsonl")
	body := strings.Join([]string{c.prompt("a"), c.reply("x"), c.prompt("b"), c.toolUse("Bash", "toolu_1"), c.toolResult("toolu_1"),
		`{"type":"assistant","message":{"model":"<synthetic>","id":"msg_s","role":"assistant","content":[]}}`, "not json"}, "\n")
	if err := os.WriteFile(p, []byte(body+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, tools, err := ixWholeSession(context.Background(), p)
	if err != nil || m != "claude-sonnet-4-5" || !reflect.DeepEqual(tools, []string{"Bash"}) {
		t.Fatalf("model %q tools %v err %v", m, tools, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := ixWholeSession(ctx, p); err == nil {
		t.Fatal("a cancelled read succeeded")
	}
}
