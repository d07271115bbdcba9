// Package testenv holds small helpers shared by scribe's tests: finding the
// repository root, building the scribe binary once per test process, and
// locating the committed test corpus. It is imported only from tests.
package testenv

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	rootOnce sync.Once
	root     string
	rootErr  error
)

// RepoRoot returns the repository root: the nearest directory at or above the
// current working directory (a test's package directory) that holds go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			rootErr = err
			return
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				root = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				rootErr = errors.New("no go.mod found at or above the working directory")
				return
			}
			dir = parent
		}
	})
	if rootErr != nil {
		t.Fatalf("testenv: repository root: %v", rootErr)
	}
	return root
}

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
	buildOut  []byte
)

// BuildScribe installs scribe once per test process the way users do,
// with scripts/install (the light build as scribe, the full build as
// scribe-full beside it), into a fresh temporary directory left behind on
// purpose (other tests of the same process may still be using it), and
// returns the path of scribe. Every command the light build hands over is
// so tested through the hand-over. A build failure fails every caller with
// the compiler output.
func BuildScribe(t testing.TB) string {
	t.Helper()
	r := RepoRoot(t)
	buildOnce.Do(func() {
		goTool, err := goCommand()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "scribe-testbin-")
		if err != nil {
			buildErr = err
			return
		}
		bin := filepath.Join(dir, "scribe")
		cmd := exec.Command("bash", filepath.Join("scripts", "install"), dir)
		cmd.Dir = r
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(goTool)+string(os.PathListSeparator)+os.Getenv("PATH"))
		buildOut, buildErr = cmd.CombinedOutput()
		if buildErr == nil {
			buildBin = bin
		}
	})
	if buildErr != nil {
		t.Fatalf("testenv: scripts/install: %v\n%s", buildErr, buildOut)
	}
	return buildBin
}

// goCommand finds the go tool: on PATH, else under $GOROOT/bin.
func goCommand() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if gr := os.Getenv("GOROOT"); gr != "" {
		p := filepath.Join(gr, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("the go tool is neither on PATH nor in $GOROOT/bin")
}

// CorpusDir returns <repo root>/testdata/corpus/real, the committed corpus of
// real Claude Code (and Codex) transcripts described by
// testdata/corpus/SOURCES.md.
func CorpusDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join(RepoRoot(t), "testdata", "corpus", "real")
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		t.Fatalf("testenv: corpus folder %s is missing", d)
	}
	return d
}

// Git runs git -C dir args with a fixed author and no user or system
// configuration, failing t when it fails, and returns its trimmed output.
func Git(t testing.TB, dir string, args ...string) string {
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
