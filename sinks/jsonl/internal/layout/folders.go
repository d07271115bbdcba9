package layout

// The project folders and the sessions in them, as the changes walk them.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
)

// SessionMains returns every non-empty <id>.jsonl in the project folders,
// in folder name order: the files the SDK's mutators look at.
func (l Layout) SessionMains(id string) ([]string, error) {
	if !claudedir.IsSessionID(id) {
		return nil, fmt.Errorf("%w: session %q (not a UUID)", ErrBadID, id)
	}
	folders, err := l.ProjectFolders()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, folder := range folders {
		p := claudedir.MainFile(l.ProjectFolder(folder), id)
		if fi, err := l.FSys().Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
			out = append(out, p)
		}
	}
	return out, nil
}

// ProjectFolders lists the project folders' names, sorted (none when
// there is no projects folder).
func (l Layout) ProjectFolders() ([]string, error) {
	ents, err := l.FSys().ReadDir(l.ProjectsDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", l.ProjectsDir(), err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// EachTranscript calls fn for every <uuid>.jsonl regular file of one
// project folder (a missing one is ErrNotFound) or, when project is "",
// of every project folder.
func (l Layout) EachTranscript(project string, fn func(folder, dir, id string, fi os.FileInfo) error) error {
	return l.EachTranscriptIn(project, func(folder, dir, id string, fi os.FileInfo, _ bool) error {
		return fn(folder, dir, id, fi)
	})
}

// EachTranscriptIn is eachTranscript that also says, from the same read
// of the folder, whether the session has a folder of its own (<id>/, where
// subagents and tool results live). A folder's transcripts come in name
// order; the folder is read once, unsorted, and only the transcripts are
// sorted (every search lists every transcript: this is its cost).
func (l Layout) EachTranscriptIn(project string, fn func(folder, dir, id string, fi os.FileInfo, hasFolder bool) error) error {
	folders := []string{project}
	if project == "" {
		var err error
		if folders, err = l.ProjectFolders(); err != nil {
			return err
		}
	}
	type transcript struct {
		id string
		e  os.DirEntry
	}
	for _, folder := range folders {
		dir := l.ProjectFolder(folder)
		ents, err := readDirUnsorted(dir)
		if errors.Is(err, os.ErrNotExist) && project != "" {
			return fmt.Errorf("%w: project folder %s", ErrNotFound, dir)
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", dir, err)
		}
		var trs []transcript
		subdirs := map[string]bool{}
		for _, e := range ents {
			if e.IsDir() {
				subdirs[e.Name()] = true
				continue
			}
			if id, ok := claudedir.MainFileID(e.Name()); ok && e.Type().IsRegular() {
				trs = append(trs, transcript{id, e})
			}
		}
		sort.Slice(trs, func(i, j int) bool { return trs[i].id < trs[j].id })
		for _, t := range trs {
			fi, err := t.e.Info()
			if err != nil {
				return fmt.Errorf("stat %s: %w", filepath.Join(dir, t.e.Name()), err)
			}
			if err := fn(folder, dir, t.id, fi, subdirs[t.id]); err != nil {
				return err
			}
		}
	}
	return nil
}

// readDirUnsorted is os.ReadDir without the sort.
func readDirUnsorted(dir string) ([]os.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// Lock takes the session's writer lock for a change.
func (l Layout) Lock(ctx context.Context, id string, wait time.Duration) (*SessionLock, error) {
	return AcquireLock(ctx, l.LockFile(id), wait)
}
