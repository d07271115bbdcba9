package durable

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplaceFailureLeavesOldOrNew injects a failure at each step of a
// replace: path then holds the old content (before the rename) or the new
// one (after), and no temporary file is left in the folder.
func TestReplaceFailureLeavesOldOrNew(t *testing.T) {
	boom := errors.New("injected")
	cases := []struct {
		at   step
		want string
	}{
		{stepWritten, "old"},
		{stepSynced, "old"},
		{stepClosed, "old"},
		{stepRenamed, "new"},
		{"", "new"}, // no failure
	}
	for _, c := range cases {
		t.Run(string(c.at)+"/"+c.want, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			failAt = func(s step) error {
				if s == c.at {
					return boom
				}
				return nil
			}
			defer func() { failAt = nil }()
			err := WriteFile(path, []byte("new"), 0o644)
			if c.at != "" && !errors.Is(err, boom) {
				t.Fatalf("replace failing at %s returned %v", c.at, err)
			}
			if c.at == "" && err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(path)
			if string(b) != c.want {
				t.Fatalf("after a failure at %q the file holds %q, want %q", c.at, b, c.want)
			}
			assertOnly(t, dir, "f")
		})
	}
}

// TestReplaceFillErrorKeepsOld: a fill that fails half way leaves the old
// file and no temporary one.
func TestReplaceFillErrorKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("fill")
	_, err := Replace(path, Options{}, func(w io.Writer) error {
		_, _ = io.WriteString(w, strings.Repeat("x", 1<<20))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("file holds %d bytes, want the old content", len(b))
	}
	assertOnly(t, dir, "f")
}

// TestReplaceBackupAndModes: a backup keeps the old content under a free
// name, the new file gets the mode asked for, and a missing folder is made.
func TestReplaceBackupAndModes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b", "f")
	if b, err := Replace(path, Options{Backup: "s", Perm: 0o640}, func(w io.Writer) error {
		_, err := io.WriteString(w, "v1")
		return err
	}); err != nil || b != "" {
		t.Fatalf("first write: backup %q, %v", b, err)
	}
	for i, want := range []string{path + ".bak-s", path + ".bak-s-1"} {
		b, err := Replace(path, Options{Backup: "s"}, func(w io.Writer) error {
			_, err := io.WriteString(w, "v"+string(rune('2'+i)))
			return err
		})
		if err != nil || b != want {
			t.Fatalf("write %d: backup %q, %v; want %q", i+2, b, err, want)
		}
		if old, _ := os.ReadFile(b); string(old) != "v"+string(rune('1'+i)) {
			t.Fatalf("backup %s holds %q", b, old)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600 (the default)", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("folder mode %v, %v", fi.Mode(), err)
	}
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("folder holds %v, want %v", got, names)
	}
}

func TestRemoveStaleTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.rec")
	for _, name := range []string{".a.rec.tmp-1", ".a.rec.tmp-22", ".b.rec.tmp-1", "a.rec", ".a.rec.tmpx"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n, err := RemoveStaleTemps(path)
	if err != nil || n != 2 {
		t.Fatalf("RemoveStaleTemps = %d, %v; want 2", n, err)
	}
	left, _ := os.ReadDir(dir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != ".a.rec.tmpx,.b.rec.tmp-1,a.rec" {
		t.Fatalf("left %v", names)
	}
	if n, err := RemoveStaleTemps(filepath.Join(dir, "gone", "x")); n != 0 || err != nil {
		t.Fatalf("in a missing folder: %d, %v", n, err)
	}
}

// TestReplaceNoSync: with NoSync the file is replaced as atomically (the
// new content, no temporary file left) without the fsync step.
func TestReplaceNoSync(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		synced := false
		failAt = func(s step) error {
			synced = synced || s == stepSynced
			return nil
		}
		_, err := Replace(path, Options{NoSync: noSync}, func(w io.Writer) error {
			_, err := io.WriteString(w, "new")
			return err
		})
		failAt = nil
		if b, _ := os.ReadFile(path); err != nil || string(b) != "new" || synced == noSync {
			t.Fatalf("NoSync %v: err %v, content %q, synced %v", noSync, err, b, synced)
		}
		assertOnly(t, dir, "f")
	}
}
