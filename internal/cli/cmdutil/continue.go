package cmdutil

// The last line of resume and pull: the command that continues a session
// in Claude Code on this machine.

import (
	"context"

	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// ContinueCommand is the shell command that continues session id in
// Claude Code from dir, the working directory whose project folder holds
// it ("" when unknown: the command alone).
func ContinueCommand(dir, id string) string {
	if dir == "" {
		return "claude --resume " + id
	}
	return "cd " + ShellQuote(dir) + " && claude --resume " + id
}

// SessionCwd is the working directory Claude Code's /resume lists session
// id under: the local listing's cwd for it, else fallback (a session not
// in the local store, or one whose entries name no cwd). local says
// whether the local store lists the session.
func SessionCwd(ctx context.Context, l jsonl.Layout, id, fallback string) (cwd string, local bool) {
	if info, err := l.Info(ctx, id, ""); err == nil && info != nil {
		if info.Cwd != "" {
			return info.Cwd, true
		}
		return fallback, true
	}
	// A session the listing leaves out (nothing to title it with) may
	// still be there.
	proj, err := l.FindSession(id, "")
	return fallback, err == nil && proj != ""
}
