package writer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

const (
	sess = jsonltest.Sess
	cwd  = jsonltest.Cwd
)

func newSink(t *testing.T, dir string, mod func(*Options)) *Sink {
	t.Helper()
	o := Options{ConfigDir: dir, Fsync: FsyncBatch, DrainInterval: DrainLocal, ReappendBytes: 32 << 10}
	if mod != nil {
		mod(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func mainPath(dir string) string { return jsonltest.MainPath(dir) }

func TestSinkContract(t *testing.T) {
	coretest.RunSinkContract(t, coretest.SinkHarness{
		New: func(t *testing.T) core.Sink { return newSink(t, t.TempDir(), nil) },
		Read: func(t *testing.T, s core.Sink, ref core.SessionRef) []string {
			dir := Layout{Layout: layout.Layout{ConfigDir: s.(*Sink).opts.ConfigDir}}.ProjectDir(ref.CWD)
			if ref.AgentID != "" {
				return readLines(t, claudedir.AgentFile(dir, ref.SessionID, ref.AgentID))
			}
			return readLines(t, claudedir.MainFile(dir, ref.SessionID))
		},
		Sessions:   true,
		Sidechains: true,
	})
}

func entries(t *testing.T, lines ...string) []core.Entry { return jsonltest.Entries(t, lines...) }

func TestLayoutModesAndSubagents(t *testing.T) {
	dir := t.TempDir()
	s := newSink(t, dir, nil)
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	main := coretest.Line("user", sess, "u-1", "")
	side := strings.Replace(coretest.Line("user", sess, "s-1", ""), `"isSidechain":false`, `"isSidechain":true,"agentId":"a1b2c3"`, 1)
	if err := s.Write(ctx, entries(t, main, side)); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	proj := Layout{Layout: layout.Layout{ConfigDir: dir}}.ProjectDir(cwd)
	if got := readLines(t, claudedir.MainFile(proj, sess)); len(got) != 1 || got[0] != main {
		t.Errorf("main file: %q", got)
	}
	agent := claudedir.AgentFile(proj, sess, "a1b2c3")
	if got := readLines(t, agent); len(got) != 1 || got[0] != side {
		t.Errorf("agent file: %q", got)
	}
	for _, p := range []string{claudedir.MainFile(proj, sess), agent} {
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", p, fi.Mode().Perm())
		}
	}
	for _, p := range []string{filepath.Join(dir, "projects"), proj, filepath.Join(proj, sess), filepath.Dir(agent)} {
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o700 {
			t.Errorf("%s mode %v, want 0700", p, fi.Mode().Perm())
		}
	}
}

func TestLazyMaterialization(t *testing.T) {
	dir := t.TempDir()
	s := newSink(t, dir, nil)
	ctx := context.Background()
	_ = s.Start(ctx)
	title := `{"type":"custom-title","customTitle":"Early","sessionId":"` + sess + `"}`
	if err := s.Write(ctx, entries(t, title)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mainPath(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file exists before any user or assistant entry: %v", err)
	}
	if s.Report()["held"] != 1 {
		t.Errorf("held = %d, want 1", s.Report()["held"])
	}
	sys := coretest.Line("system", sess, "sys-1", "")
	if err := s.Write(ctx, entries(t, sys)); err != nil {
		t.Fatal(err)
	}
	user := coretest.Line("user", sess, "u-1", "sys-1")
	if err := s.Write(ctx, entries(t, user)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := readLines(t, mainPath(dir))
	if strings.Join(got, "\n") != strings.Join([]string{title, sys, user}, "\n") {
		t.Fatalf("after the first user entry the file holds %q", got)
	}
	_ = s.Shutdown(ctx)
}

func TestMetadataReappend(t *testing.T) {
	dir := t.TempDir()
	s := newSink(t, dir, func(o *Options) { o.ReappendBytes = 2000 })
	ctx := context.Background()
	_ = s.Start(ctx)
	title := `{"type":"custom-title","customTitle":"README work","sessionId":"` + sess + `"}`
	tag := `{"type":"tag","tag":"docs","sessionId":"` + sess + `"}`
	parent := ""
	var lines []string
	for i := range 40 {
		u := fmt.Sprintf("u-%d", i)
		lines = append(lines, coretest.Line("user", sess, u, parent))
		parent = u
		if i == 1 {
			lines = append(lines, title, tag)
		}
	}
	if err := s.Write(ctx, entries(t, lines...)); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := readLines(t, mainPath(dir))
	// Every 2000 bytes, and at close, the title and tag come again.
	var titles, tags int
	var since int
	maxGap := 0
	for _, l := range got {
		since += len(l) + 1
		switch l {
		case title:
			titles++
			maxGap = max(maxGap, since)
			since = 0
		case tag:
			tags++
		}
	}
	if titles < 5 || titles != tags {
		t.Fatalf("title appears %d times and tag %d times in %d lines", titles, tags, len(got))
	}
	if got[len(got)-2] != title || got[len(got)-1] != tag {
		t.Errorf("the file does not end with the metadata block: %q", got[len(got)-2:])
	}
	if maxGap > 2000+600 {
		t.Errorf("gap of %d bytes between title lines, want about 2000", maxGap)
	}
	if s.Report()["metadata_reappends"] < 4 {
		t.Errorf("reappends = %d", s.Report()["metadata_reappends"])
	}
}

func TestTornTailSealed(t *testing.T) {
	dir := t.TempDir()
	p := mainPath(dir)
	first := coretest.Line("user", sess, "u-1", "")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	torn := first + "\n" + `{"parentUuid":"u-1","isSidechain":false,"type":"assis`
	if err := os.WriteFile(p, []byte(torn), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newSink(t, dir, nil)
	ctx := context.Background()
	_ = s.Start(ctx)
	seed, err := s.Seed(ctx, core.SessionRef{SessionID: sess, CWD: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if len(seed.UUIDs) != 1 || seed.UUIDs[0] != "u-1" {
		t.Errorf("seed uuids %v", seed.UUIDs)
	}
	next := coretest.Line("assistant", sess, "a-1", "u-1")
	if err := s.Write(ctx, entries(t, next)); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	want := torn + "\n" + next + "\n"
	if string(b) != want {
		t.Fatalf("file:\n%s\nwant:\n%s", b, want)
	}
	if s.Report()["torn_tails_sealed"] != 1 {
		t.Errorf("torn_tails_sealed = %d", s.Report()["torn_tails_sealed"])
	}
}

func TestSecondWriterIsRefusedNamingTheHolder(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a := newSink(t, dir, nil)
	_ = a.Start(ctx)
	if _, err := a.Seed(ctx, core.SessionRef{SessionID: sess, CWD: cwd}); err != nil {
		t.Fatal(err)
	}
	b := newSink(t, dir, nil)
	_ = b.Start(ctx)
	_, err := b.Seed(ctx, core.SessionRef{SessionID: sess, CWD: cwd})
	if !errors.Is(err, layout.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second writer: %v, want ErrLocked naming pid %d", err, os.Getpid())
	}
	_ = a.Shutdown(ctx)
	if _, err := b.Seed(ctx, core.SessionRef{SessionID: sess, CWD: cwd}); err != nil {
		t.Fatalf("after the first writer closed: %v", err)
	}
	_ = b.Shutdown(ctx)
}

func TestWriteErrorKeepsEntriesQueued(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := newSink(t, dir, func(o *Options) { o.DrainInterval = time.Hour })
	_ = s.Start(ctx)
	line := coretest.Line("user", sess, "u-1", "")
	if err := s.Write(ctx, entries(t, line)); err != nil {
		t.Fatal(err)
	}
	// A file where the project folder should be makes the write fail.
	proj := Layout{Layout: layout.Layout{ConfigDir: dir}}.ProjectDir(cwd)
	if err := os.MkdirAll(filepath.Dir(proj), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(proj, []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err == nil {
		t.Fatal("Flush succeeded though nothing could be written")
	}
	if s.Report()["write_errors"] == 0 {
		t.Error("write error not counted")
	}
	if err := os.Remove(proj); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush after the obstacle is gone: %v", err)
	}
	if got := readLines(t, mainPath(dir)); len(got) != 1 || got[0] != line {
		t.Fatalf("file holds %q", got)
	}
	_ = s.Shutdown(ctx)
}

func TestAppendsToExistingSessionInAnotherProjectFolder(t *testing.T) {
	dir := t.TempDir()
	other := claudedir.MainFile(Layout{Layout: layout.Layout{ConfigDir: dir}}.ProjectDir("/elsewhere"), sess)
	_ = os.MkdirAll(filepath.Dir(other), 0o700)
	first := coretest.Line("user", sess, "u-1", "")
	_ = os.WriteFile(other, []byte(first+"\n"), 0o600)
	ctx := context.Background()
	s := newSink(t, dir, nil)
	_ = s.Start(ctx)
	next := coretest.Line("assistant", sess, "a-1", "u-1")
	if err := s.Write(ctx, entries(t, next)); err != nil {
		t.Fatal(err)
	}
	_ = s.Shutdown(ctx)
	if got := readLines(t, other); len(got) != 2 {
		t.Fatalf("existing file holds %d lines, want 2", len(got))
	}
	if _, err := os.Stat(mainPath(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Error("a second file was created for the same session")
	}
}
