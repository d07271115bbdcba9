package admin

// relocate: after a project folder moved on disk, its sessions move to the
// project folder of the new path with every cwd rewritten (cc#63801).
//
// A session belongs to the move when the cwd its listing reports is OLD or
// below it. For each, under its lock: its files are copied into a staging
// folder with every "cwd" and "relocatedCwd" value that is OLD or below it
// rewritten to the same place under NEW (byte-level, on Claude Code's
// compact JSON, so nothing else on a line changes); the originals then go
// to the trash (the backup, reason "relocate", restorable with trash
// restore; the index forgets them); then the staged files are renamed into
// the new project folder, the transcript last. If placing fails, the
// originals come back from the trash.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/listing"
	"github.com/e0dc0000/scribe/transcript"
)

// RelocateOptions tune a relocation.
type RelocateOptions struct {
	DryRun   bool
	LockWait time.Duration
	Progress func(done, total int)
}

// RelocatedSession is one session a relocation moved (or would move).
type RelocatedSession struct {
	SessionID string `json:"sessionId"`
	From      string `json:"from"` // project folder names
	To        string `json:"to"`
	OldCwd    string `json:"oldCwd"`
	NewCwd    string `json:"newCwd"`
	// Lines is how many lines had a cwd rewritten, over all its files.
	Lines   int    `json:"lines"`
	Files   int    `json:"files"`
	TrashID string `json:"backup,omitempty"`
	// FromRemoved: the move left the project folder From empty, and it
	// was removed (a folder holding anything else stays).
	FromRemoved bool `json:"fromRemoved,omitempty"`
}

// Relocate moves the sessions of the project at oldPath (and of the
// folders below it) to newPath. Both must be absolute.
func (l Layout) Relocate(ctx context.Context, oldPath, newPath string, opt RelocateOptions) ([]RelocatedSession, error) {
	oldPath, newPath = filepath.Clean(oldPath), filepath.Clean(newPath)
	if !filepath.IsAbs(oldPath) || !filepath.IsAbs(newPath) || oldPath == newPath || oldPath == "/" {
		return nil, fmt.Errorf("relocate: want two different absolute paths, got %q and %q", oldPath, newPath)
	}
	var plan []RelocatedSession
	err := l.EachTranscript("", func(folder, dir, id string, _ os.FileInfo) error {
		info, ok, err := listing.ReadInfo(claudedir.MainFile(dir, id), "")
		if err != nil {
			return err
		}
		if !ok || info.Cwd == "" {
			// Not listed (a sidechain-first file, no title): its first cwd.
			info.Cwd = headCwd(claudedir.MainFile(dir, id))
		}
		rest, under := underPath(info.Cwd, oldPath)
		if !under {
			return nil
		}
		s := RelocatedSession{SessionID: id, From: folder, OldCwd: info.Cwd, NewCwd: newPath + rest}
		s.To = claudedir.SanitizePath(s.NewCwd)
		plan = append(plan, s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("relocate: %w", err)
	}
	for i := range plan {
		s := &plan[i]
		if err := ctx.Err(); err != nil {
			return plan[:i], err
		}
		if err := l.relocateOne(ctx, s, oldPath, newPath, opt); err != nil {
			return plan[:i], fmt.Errorf("relocate %s: %w", s.SessionID, err)
		}
		if opt.Progress != nil {
			opt.Progress(i+1, len(plan))
		}
	}
	return plan, nil
}

// headCwd is the first "cwd" of the first 64 KiB of a transcript.
func headCwd(path string) string {
	for _, line := range headLines(path) {
		var v struct {
			Cwd string `json:"cwd"`
		}
		if bytes.Contains(line, []byte(`"cwd"`)) && json.Unmarshal(line, &v) == nil && v.Cwd != "" {
			return v.Cwd
		}
	}
	return ""
}

// underPath reports whether p is base or below it, and the rest of p.
func underPath(p, base string) (string, bool) {
	if p == base {
		return "", true
	}
	if rest, ok := strings.CutPrefix(p, base+"/"); ok {
		return "/" + rest, true
	}
	return "", false
}

func (l Layout) relocateOne(ctx context.Context, s *RelocatedSession, oldPath, newPath string, opt RelocateOptions) error {
	src := l.ProjectFolder(s.From)
	dst := l.ProjectFolder(s.To)
	if s.From != s.To {
		if names, _ := sessionEntries(dst, s.SessionID); len(names) > 0 {
			return fmt.Errorf("%w: %s already has %s", ErrSessionExists, dst, names[0])
		}
	}
	lk, err := l.Lock(ctx, s.SessionID, opt.LockWait)
	if err != nil {
		return err
	}
	defer lk.Release()
	stage, done, err := l.stageDir(ctx)
	if err != nil {
		return err
	}
	defer done()
	names, err := sessionEntries(src, s.SessionID)
	if err != nil {
		return err
	}
	rw := cwdRewriter(oldPath, newPath)
	for _, n := range names {
		files, err := describeTree(src, n)
		if err != nil {
			return err
		}
		for _, f := range files {
			from, to := filepath.Join(src, filepath.FromSlash(f.Path)), filepath.Join(stage, filepath.FromSlash(f.Path))
			switch {
			case f.Dir:
				err = os.MkdirAll(to, layout.DirMode)
			case f.Link != "":
				err = os.Symlink(f.Link, to)
			default:
				var lines int
				lines, err = copyRewriting(from, to, strings.HasSuffix(f.Path, ".jsonl"), rw)
				s.Lines += lines
				s.Files++
			}
			if err != nil {
				return err
			}
		}
	}
	if opt.DryRun {
		return nil
	}
	backup, err := l.trashOne(s.SessionID, s.From, sessions.TrashOptions{Reason: "relocate"}, time.Now().UTC())
	if err != nil {
		return fmt.Errorf("back up to the trash: %w", err)
	}
	s.TrashID = backup.ID
	if err := l.placeStaged(stage, s.To, s.SessionID); err != nil {
		// Take back what was placed, then the originals.
		if names, _ := sessionEntries(dst, s.SessionID); len(names) > 0 {
			for _, n := range names {
				os.RemoveAll(filepath.Join(dst, n))
			}
		}
		if _, rerr := l.restoreItem(backup); rerr != nil {
			return fmt.Errorf("%w; restoring the originals failed too (they are in the trash as %s): %v", err, backup.ID, rerr)
		}
		return err
	}
	if s.From != s.To {
		removed, err := removeIfEmpty(src)
		if err != nil {
			return fmt.Errorf("moved, but the emptied project folder %s: %w", src, err)
		}
		s.FromRemoved = removed
	}
	return nil
}

// removeIfEmpty removes the folder dir if it is empty (rmdir(2): never
// anything in it), and reports whether it did.
func removeIfEmpty(dir string) (bool, error) {
	err := unix.Rmdir(dir)
	switch {
	case err == nil:
		return true, durable.SyncDir(filepath.Dir(dir))
	case errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOENT):
		return false, nil
	}
	return false, &os.PathError{Op: "rmdir", Path: dir, Err: err}
}

// cwdRewriter returns a function that rewrites the cwd values of one line.
func cwdRewriter(oldPath, newPath string) func(line []byte) ([]byte, bool) {
	quote := func(p string) []byte { b := core.AppendJSString(nil, p); return b[:len(b)-1] } // without the closing quote
	o, n := quote(oldPath), quote(newPath)
	var pairs [][2][]byte
	for _, key := range []string{`"cwd":`, `"relocatedCwd":`} {
		for _, end := range []string{`"`, `/`} {
			pairs = append(pairs, [2][]byte{append(append([]byte(key), o...), end...), append(append([]byte(key), n...), end...)})
		}
	}
	return func(line []byte) ([]byte, bool) {
		changed := false
		for _, p := range pairs {
			if bytes.Contains(line, p[0]) {
				line, changed = bytes.ReplaceAll(line, p[0], p[1]), true
			}
		}
		return line, changed
	}
}

// copyRewriting copies a file (0600), through rw line by line when it is
// a transcript (isTranscript), fsyncs it, and counts the lines rw changed.
func copyRewriting(from, to string, isTranscript bool, rw func([]byte) ([]byte, bool)) (int, error) {
	in, err := os.Open(from)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(to), layout.DirMode); err != nil {
		return 0, err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FileMode)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(out, 1<<20)
	n := 0
	if isTranscript {
		err = transcript.EachLine(in, func(line []byte, terminated bool) {
			nl, changed := rw(line)
			if changed {
				n++
			}
			w.Write(nl)
			if terminated {
				w.WriteByte('\n')
			}
		})
	} else {
		_, err = io.Copy(w, in)
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("copy %s: %w", from, err)
	}
	return n, nil
}

// restoreItem moves a verified trash item's names back into their project
// folder (made when missing) and removes the emptied item; the caller
// holds the session's lock.
func (l Layout) restoreItem(it sessions.TrashItem) (sessions.TrashItem, error) {
	if err := l.verifyTrash(it); err != nil {
		return it, err
	}
	projectDir := l.ProjectFolder(it.Project)
	if err := os.MkdirAll(projectDir, layout.DirMode); err != nil {
		return it, err
	}
	itemDir := filepath.Join(l.TrashDir(), it.ID)
	for _, n := range it.Entries {
		if err := os.Rename(filepath.Join(itemDir, "data", it.Project, n), filepath.Join(projectDir, n)); err != nil {
			return it, fmt.Errorf("move %s back: %w", n, err)
		}
	}
	if err := durable.SyncDir(projectDir); err != nil {
		return it, err
	}
	if err := os.RemoveAll(itemDir); err != nil {
		return it, fmt.Errorf("remove the emptied trash item: %w", err)
	}
	return it, durable.SyncDir(l.TrashDir())
}
