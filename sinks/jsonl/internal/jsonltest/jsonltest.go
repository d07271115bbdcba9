// Package jsonltest holds what the local store's tests share: sessions
// made up at random, the SDK 0.3.337 fixtures, the SDK's answers filtered
// as its options filter them. Only tests import it.
package jsonltest

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/internal/testenv"
)

// WithoutSystem is the SDK's includeSystemMessages:false answer derived from
// its includeSystemMessages:true answer: the output filter is the only step
// that looks at the flag, and system rows have no message for the later
// steps to change.
func WithoutSystem(t *testing.T, msgs []json.RawMessage) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, m := range msgs {
		var v struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(m, &v); err != nil {
			t.Fatal(err)
		}
		if v.Type != "system" {
			out = append(out, m)
		}
	}
	return out
}

// CopyTree copies the files and folders below src into dst, keeping
// their modes and mtimes.
func CopyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(to, fi.Mode().Perm())
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, b, fi.Mode().Perm()); err != nil {
			return err
		}
		return os.Chtimes(to, fi.ModTime(), fi.ModTime())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// SDK337Cwd is the fixtures' project path.
const SDK337Cwd = "/home/alice/src/shop"

// SDK337Config copies the fixture tree into a new config folder.
func SDK337Config(t *testing.T) string {
	t.Helper()
	cfg := t.TempDir()
	CopyTree(t, filepath.Join(testenv.RepoRoot(t), "testdata", "sdk-0.3.337"), cfg)
	return cfg
}

// SDK337Sessions are the fixture's session ids (main transcripts and
// session folders), sorted.
func SDK337Sessions(t *testing.T, cfg string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(cfg, "projects", claudedir.SanitizePath(SDK337Cwd)))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var ids []string
	for _, e := range ents {
		id := strings.TrimSuffix(e.Name(), ".jsonl")
		if claudedir.IsSessionID(id) && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	if len(ids) < 15 {
		t.Fatalf("testdata/sdk-0.3.337 has %d sessions, want 15", len(ids))
	}
	return ids
}

// The session and the working directory of the tests' made-up sessions.
const (
	Sess = "0565a3a4-0000-4000-8000-000000000001"
	Cwd  = "/home/alice/src/shop"
)

// MainPath is the main transcript of Sess, started in Cwd, in the config
// folder dir.
func MainPath(dir string) string {
	return claudedir.MainFile(filepath.Join(dir, "projects", claudedir.SanitizePath(Cwd)), Sess)
}

// Entries parses lines into entries.
func Entries(t *testing.T, lines ...string) []core.Entry {
	t.Helper()
	var es []core.Entry
	for _, l := range lines {
		es = append(es, coretest.MustEntry(t, l))
	}
	return es
}

// SealKey writes a fresh age identity into a file and returns options
// that seal with it.
func SealKey(t *testing.T) seal.Options {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "archive.key")
	if err := os.WriteFile(p, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return seal.Options{Identity: seal.KeySource{File: p}}
}
