package gitrev_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/e0dc0000/scribe/internal/gitrev"
	"github.com/e0dc0000/scribe/internal/testenv"
)

// A checkpoint's commit: HEAD in a repository; nothing outside one, in a
// repository without commits, or in a folder that does not exist.
func TestHead(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ctx := context.Background()
	repo := t.TempDir()
	testenv.Git(t, repo, "init", "-q")
	if sha, err := gitrev.Head(ctx, repo); sha != "" || err != nil {
		t.Fatalf("repository without commits: %q %v", sha, err)
	}
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	testenv.Git(t, repo, "add", "a.txt")
	testenv.Git(t, repo, "commit", "-q", "-m", "first")
	want := testenv.Git(t, repo, "rev-parse", "HEAD")
	sub := filepath.Join(repo, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{repo, sub} {
		if sha, err := gitrev.Head(ctx, dir); sha != want || err != nil {
			t.Fatalf("%s: %q %v, want %s", dir, sha, err, want)
		}
	}
	for _, dir := range []string{"", t.TempDir(), filepath.Join(repo, "missing")} {
		if sha, err := gitrev.Head(ctx, dir); sha != "" || err != nil {
			t.Fatalf("%q: %q %v", dir, sha, err)
		}
	}
}
