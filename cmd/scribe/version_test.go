package main_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/testenv"
)

// scripts/install stamps the binaries with `git describe` of the checkout
// they were built from; `scribe version` prints it, not a placeholder.
func TestVersionNamesTheBuild(t *testing.T) {
	bin := testenv.BuildScribe(t)
	out, _, code := runScribe(t, runOpts{bin: bin}, "version")
	if code != 0 || !strings.HasPrefix(out, "scribe ") || strings.Contains(out, "unknown") {
		t.Fatalf("scribe version = %q, exit %d", out, code)
	}
	desc, err := exec.Command("git", "-C", testenv.RepoRoot(t), "describe", "--tags", "--always").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	if want := strings.TrimSpace(string(desc)); !strings.HasPrefix(out, "scribe "+want) {
		t.Fatalf("scribe version = %q, want it to start with %q", out, "scribe "+want)
	}
}
