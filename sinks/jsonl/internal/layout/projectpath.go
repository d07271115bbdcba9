package layout

// The SDK's rules for a project path: its real path and its git worktrees.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Realpath resolves a path as fs.realpath does, falling back to the
// path as given.
func Realpath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	r, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return p
	}
	return r
}

// GitWorktrees runs `git worktree list --porcelain` in dir as the SDK
// does (hooks and fsmonitor off, 5 s timeout) and returns the worktree
// paths; nil without git or outside a repository.
func GitWorktrees(ctx context.Context, dir string) []string {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, git, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=",
		"worktree", "list", "--porcelain")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_REFERENCE_BACKEND=files")
	out, err := cmd.Output()
	if err != nil || len(out) == 0 {
		return nil
	}
	var trees []string
	for _, line := range strings.Split(string(out), "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			trees = append(trees, p)
		}
	}
	return trees
}
