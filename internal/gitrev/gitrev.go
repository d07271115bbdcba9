// Package gitrev asks git which commit a folder has checked out: the commit
// lookup a host gives to checkpoints (core.CommitLookup).
package gitrev

import (
	"bytes"
	"context"
	"os/exec"
)

// Head returns the commit checked out in dir (`git -C dir rev-parse
// HEAD`), or "" when dir is not in a git repository, the repository has no
// commit yet, or git is not installed. Only a cancelled ctx is an error.
func Head(ctx context.Context, dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return "", nil
	}
	cmd := exec.CommandContext(ctx, git, "-C", dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	cmd.Env = append(cmd.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		return "", nil
	}
	sha := string(bytes.TrimSpace(out))
	if !isHexString(sha) || (len(sha) != 40 && len(sha) != 64) {
		return "", nil
	}
	return sha, nil
}

func isHexString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}
