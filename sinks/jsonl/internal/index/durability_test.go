package index

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
)

func TestIndexIncremental(t *testing.T) {
	noRacy(t)
	root := t.TempDir()
	l, _ := layRules(t, root)
	st := listChecked(t, l, "first listing")
	if !st.Rebuilt || st.Hits != 0 || st.Misses != st.Files || !st.Saved || st.Discarded != "" {
		t.Fatalf("first listing: %+v", st)
	}
	files := st.Files
	if st = listChecked(t, l, "second listing"); st.Hits != files || st.Misses != 0 || st.Saved || st.Rebuilt {
		t.Fatalf("second listing: %+v", st)
	}

	proj := filepath.Join(root, "coll", "proj-a")
	dir := l.ProjectDir(proj)
	ents, _ := os.ReadDir(dir)
	var sessions []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && claudedir.IsSessionID(id) && e.Type().IsRegular() {
			sessions = append(sessions, filepath.Join(dir, e.Name()))
		}
	}

	// A line appended: that file is read again, the others are hits.
	appendLine(t, sessions[0], `{"type":"custom-title","customTitle":"Renamed","sessionId":"x"}`)
	if st = listChecked(t, l, "after an append"); st.Misses != 1 || st.Hits != files-1 || !st.Saved {
		t.Fatalf("after an append: %+v", st)
	}
	got, _, _ := l.ListIndexed(context.Background(), everyProject)
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
	if st = listChecked(t, l, "after a same-size rewrite"); st.Misses != 1 {
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
	if st = listChecked(t, l, "after a sidecar change"); st.Misses != 1 {
		t.Fatalf("after a sidecar change: %+v", st)
	}

	// A file deleted: its entry is dropped.
	if err := os.Remove(sessions[2]); err != nil {
		t.Fatal(err)
	}
	if st = listChecked(t, l, "after a delete"); st.Dropped != 1 || st.Misses != 0 || st.Hits != files-1 || !st.Saved {
		t.Fatalf("after a delete: %+v", st)
	}
	files--

	// A new file: listed, read once.
	s := jsonltest.NewSession(proj).User("brand new", "")
	jsonltest.WriteFile(t, dir, s.ID+".jsonl", s.Text(), time.Now())
	if st = listChecked(t, l, "after a new file"); st.Misses != 1 || st.Hits != files {
		t.Fatalf("after a new file: %+v", st)
	}
	files++

	// A whole project folder gone.
	other := l.ProjectDir(filepath.Join(root, "other"))
	gone, _ := os.ReadDir(other)
	if err := os.RemoveAll(other); err != nil {
		t.Fatal(err)
	}
	if st = listChecked(t, l, "after a folder removal"); st.Dropped != len(gone) || st.Misses != 0 {
		t.Fatalf("after a folder removal (%d files): %+v", len(gone), st)
	}
	if st = listChecked(t, l, "at rest"); st.Misses != 0 || st.Saved {
		t.Fatalf("at rest: %+v", st)
	}
}

func TestIndexRacyEntriesAreNotSaved(t *testing.T) {
	old := racyWindow
	racyWindow = time.Hour
	t.Cleanup(func() { racyWindow = old })
	l, _ := layRules(t, t.TempDir())
	st := listChecked(t, l, "first")
	if st.Misses != st.Files {
		t.Fatalf("first: %+v", st)
	}
	if st = listChecked(t, l, "second"); st.Hits != 0 || st.Misses != st.Files {
		t.Fatalf("files changed within the racy window were trusted: %+v", st)
	}
	racyWindow = 0
	listChecked(t, l, "third")
	if st = listChecked(t, l, "fourth"); st.Misses != 0 {
		t.Fatalf("outside the window: %+v", st)
	}
}

func TestIndexCorruptOrMissingLosesNothing(t *testing.T) {
	noRacy(t)
	l, _ := layRules(t, t.TempDir())
	st := listChecked(t, l, "build")
	files := st.Files
	good, err := os.ReadFile(l.IndexFile())
	if err != nil {
		t.Fatal(err)
	}
	h, why := decodeHeader(good)
	if why != "" {
		t.Fatal(why)
	}
	flip := func(off int) []byte {
		b := bytes.Clone(good)
		b[off] ^= 0x40
		return b
	}
	if !bytes.Equal(h.encode(), good[:headerSize]) {
		t.Fatalf("header does not round-trip")
	}
	h2 := h
	h2.stamp[0] ^= 1
	other := append(h2.encode(), good[headerSize:]...) // another build's
	newer := h.encode()
	newer[8] = 99
	binary.LittleEndian.PutUint32(newer[60:], crc32.Checksum(newer[:60], crcTable))
	newer = append(newer, good[headerSize:]...)
	for _, c := range []struct {
		name string
		data []byte
		why  string
	}{
		{"empty file", []byte{}, "short header"},
		{"garbage", []byte(strings.Repeat("not an index ", 20)), "bad magic"},
		{"header byte flipped", flip(14), "header checksum"},
		{"first section byte flipped", flip(headerSize + int(h.lenA)/2), "first section checksum"},
		{"second section byte flipped", flip(headerSize + int(h.lenA) + int(h.lenB)/2), "second section checksum"},
		{"truncated", good[:len(good)-7], "header says"},
		{"grown", append(bytes.Clone(good), 0), "header says"},
		{"another build", other, "another build"},
		{"another format", newer, "format version 99"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(l.IndexFile(), c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			st := listChecked(t, l, c.name)
			wantRebuilt := c.name != "second section byte flipped"
			if st.Rebuilt != wantRebuilt || !strings.Contains(st.Discarded, c.why) || !st.Saved {
				t.Fatalf("%+v, want rebuilt=%v and a reason with %q", st, wantRebuilt, c.why)
			}
			// The records need the second section: a damaged one is read
			// again from the files.
			if _, err := l.Sessions(context.Background()); err != nil {
				t.Fatal(err)
			}
			if st := listChecked(t, l, c.name+", after"); st.Hits != files || st.Discarded != "" {
				t.Fatalf("after: %+v", st)
			}
		})
	}

	if err := os.Remove(l.IndexFile()); err != nil {
		t.Fatal(err)
	}
	if st := listChecked(t, l, "deleted"); !st.Rebuilt || st.Discarded != "" || st.Misses != files {
		t.Fatalf("deleted: %+v", st)
	}

	// An index that cannot be written: the listing is right anyway.
	if err := os.Remove(l.IndexFile()); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(l.IndexFile(), "blocker"), 0o700); err != nil {
		t.Fatal(err)
	}
	if st := listChecked(t, l, "unwritable"); st.SaveError == "" || st.Saved || st.Discarded == "" {
		t.Fatalf("unwritable: %+v", st)
	}
}

func TestIndexSecondSectionDamagedForRecords(t *testing.T) {
	noRacy(t)
	l, _ := layRules(t, t.TempDir())
	want, err := l.Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(l.IndexFile())
	h, _ := decodeHeader(good)
	good[headerSize+int(h.lenA)+1] ^= 0x10
	if err := os.WriteFile(l.IndexFile(), good, 0o600); err != nil {
		t.Fatal(err)
	}
	got, st, err := l.ListRecords(context.Background(), sessions.ListOptions{IncludeProgrammatic: true})
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

// loadAll decodes the saved index, both sections.
func loadAll(t *testing.T, l Layout) map[string]map[string]*entry {
	t.Helper()
	x, why := l.load()
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
	noRacy(t)
	root := t.TempDir()
	l, projects := layRules(t, root)
	ctx := context.Background()
	listChecked(t, l, "start")
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
			appendLine(t, p, `{"type":"tag","tag":"t`+fmt.Sprint(k)+`","sessionId":"x"}`)
		case 1:
			appendLine(t, p, jsonltest.NewSession(projects[0]).User("another prompt", "").Lines[0])
		case 2:
			os.Remove(p)
		}
		if _, _, err := l.ListIndexed(ctx, sessions.ListOptions{Dir: projects[k%len(projects)], IncludeProgrammatic: true}); err != nil {
			t.Fatal(err)
		}
	}
	s := jsonltest.NewSession(projects[1]).User("added late", "").Assistant("fine")
	jsonltest.WriteFile(t, l.ProjectDir(projects[2]), s.ID+".jsonl", s.Text(), time.Now())
	listChecked(t, l, "after the changes")
	recs1, err := l.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inc := loadAll(t, l)

	st, err := l.RebuildIndex(ctx)
	if err != nil || !st.Rebuilt || st.Hits != 0 || !st.Saved {
		t.Fatalf("rebuild: %+v %v", st, err)
	}
	reb := loadAll(t, l)
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
	noRacy(t)
	root := t.TempDir()
	l, projects := layRules(t, root)
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
			s := jsonltest.NewSession(projects[2]).User(fmt.Sprint("concurrent ", i), "")
			if err := os.WriteFile(filepath.Join(dir, s.ID+".jsonl"), []byte(s.Text()), 0o600); err != nil {
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
				_, st, err := l.ListIndexed(ctx, everyProject)
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
	if st := listChecked(t, l, "after the race"); st.Discarded != "" {
		t.Fatalf("after the race: %+v", st)
	}
	ents, _ := os.ReadDir(filepath.Dir(l.IndexFile()))
	for _, e := range ents {
		if e.Name() != filepath.Base(l.IndexFile()) {
			t.Errorf("left behind in the index folder: %s", e.Name())
		}
	}
}
