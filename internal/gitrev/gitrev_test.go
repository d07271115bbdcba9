package gitrev_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/gitrev"
)

// A checkpoint's commit: HEAD in a repository; nothing outside one, in a
// repository without commits, or in a folder that does not exist.
func TestHead(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ctx := context.Background()
	repo := t.TempDir()
	git(t, repo, "init", "-q")
	if sha, err := gitrev.Head(ctx, repo); sha != "" || err != nil {
		t.Fatalf("repository without commits: %q %v", sha, err)
	}
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", "a.txt")
	git(t, repo, "commit", "-q", "-m", "first")
	want := git(t, repo, "rev-parse", "HEAD")
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

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}
