package reader

// Reading the sidecar: lifecycle records and checkpoints (see checkpoint.go).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/transcript"
)

// SidecarRecords returns the lines of a session's sidecar (lifecycle events and
// checkpoints) in file order, with what was skipped. The session is found
// as Messages finds it (dir "" searches every project folder); a session
// without a sidecar has no records.
func (l Layout) SidecarRecords(ctx context.Context, sessionID, dir string) ([]core.Entry, sessions.ReadReport, error) {
	path, err := l.sidecarPath(ctx, sessionID, dir)
	if err != nil || path == "" {
		return nil, sessions.ReadReport{}, err
	}
	out, rep, err := readFile(l.FS, path, ReadOptions{NoPrecompactSkip: true}, keepLine)
	if errors.Is(err, os.ErrNotExist) {
		return nil, sessions.ReadReport{}, nil
	}
	return out.entries, rep, err
}

// sidecarPath is the sidecar beside the session's transcript ("" when the
// session has only an empty transcript).
func (l Layout) sidecarPath(ctx context.Context, sessionID, dir string) (string, error) {
	main, empty, err := l.FindMain(ctx, sessionID, dir)
	if err != nil {
		return "", err
	}
	if empty || main == "" {
		return "", nil
	}
	return claudedir.SidecarFile(filepath.Dir(main), sessionID), nil
}

// Lifecycle returns a session's lifecycle events in the order they were
// recorded. Lines that do not parse are skipped.
func (l Layout) Lifecycle(ctx context.Context, sessionID, dir string) ([]core.Lifecycle, error) {
	entries, _, err := l.SidecarRecords(ctx, sessionID, dir)
	if err != nil {
		return nil, err
	}
	var out []core.Lifecycle
	for i := range entries {
		if entries[i].Type != core.TypeLifecycle {
			continue
		}
		if lc, err := core.ParseLifecycle(&entries[i]); err == nil {
			out = append(out, lc)
		}
	}
	return out, nil
}

// Checkpoints returns a session's checkpoints in the order they were taken
// (a checkpoint recorded twice counts once). Lines that do not parse are
// skipped.
func (l Layout) Checkpoints(ctx context.Context, sessionID, dir string) ([]core.Checkpoint, error) {
	entries, _, err := l.SidecarRecords(ctx, sessionID, dir)
	if err != nil {
		return nil, err
	}
	return sessions.CheckpointsIn(entries), nil
}

// CheckpointAtLeaf builds a checkpoint of a session as it stands: after the
// leaf of its conversation (as getSessionMessages rebuilds it), with the
// commit checked out in the session's cwd (the cwd of the conversation's
// last row that has one) as commitOf finds it (nil: no commit; hosts pass
// gitrev.Head). It writes nothing:
// submit the entry (or use AppendCheckpoint). A writer should hold the
// session's lock while it reads, so the leaf is still the leaf when the
// checkpoint is written.
func (l Layout) CheckpointAtLeaf(ctx context.Context, sessionID, dir, label string, at time.Time, commitOf core.CommitLookup) (core.Checkpoint, core.Entry, error) {
	path, _, err := l.FindMain(ctx, sessionID, dir)
	if err != nil {
		return core.Checkpoint{}, core.Entry{}, err
	}
	if path == "" {
		return core.Checkpoint{}, core.Entry{}, fmt.Errorf("checkpoint: session %s has no conversation", sessionID)
	}
	entries, _, err := ReadFile(path, ReadOptions{})
	if err != nil {
		return core.Checkpoint{}, core.Entry{}, err
	}
	ch := transcript.BuildChain(entries, transcript.ChainOptions{})
	if ch.Leaf == "" {
		return core.Checkpoint{}, core.Entry{}, fmt.Errorf("checkpoint: session %s has no conversation in %s", sessionID, path)
	}
	cwd := ""
	for i := len(ch.Entries) - 1; i >= 0 && cwd == ""; i-- {
		cwd = ch.Entries[i].CWD
	}
	commit := ""
	if commitOf != nil {
		if commit, err = commitOf(ctx, cwd); err != nil {
			return core.Checkpoint{}, core.Entry{}, err
		}
	}
	cp, e, err := core.NewCheckpoint(core.Checkpoint{
		SessionID: sessionID, Label: label, Commit: commit, MessageUUID: ch.Leaf, CWD: cwd,
	}, at)
	if err != nil {
		return cp, e, err
	}
	e.CWD = cwd
	return cp, e, nil
}
