package admin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/reader"
)

// StoredSession is one session of the store, found by StoredSessions.
type StoredSession struct {
	ID         string // lower case
	ProjectDir string // the project folder that holds it
}

// StoredSessions lists every session of the store: each <uuid>.jsonl of a
// project folder, and each <uuid>/ folder (subagents or a sidecar without
// a main file). A session in two project folders is taken from the first
// in name order, as FindSession does. A store without projects/ has none.
func (l Layout) StoredSessions() ([]StoredSession, error) {
	listed, _, err := l.listSessions()
	out := make([]StoredSession, len(listed))
	for i := range listed {
		out[i] = listed[i].StoredSession
	}
	return out, err
}

// listedSession is a session StoredSessions lists, with what its project
// folder's listing held of it: a regular <id>.jsonl (main), an <id>/
// folder (dir), both spelled as the lower case id; odd when it held an
// entry of the session spelled otherwise.
type listedSession struct {
	StoredSession
	main, dir, odd bool
}

// listSessions lists the sessions, and the project folders it read.
func (l Layout) listSessions() ([]listedSession, []string, error) {
	projects, err := os.ReadDir(l.ProjectsDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	dirs, listed, err := l.readProjects(projects)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]int{} // by id, its place in out
	var out []listedSession
	for k, dir := range dirs {
		for _, e := range listed[k] {
			name, id := e.Name(), e.Name()
			if e.Type().IsRegular() {
				var ok bool
				if id, ok = strings.CutSuffix(id, ".jsonl"); !ok {
					continue
				}
			} else if !e.IsDir() {
				continue
			}
			if !claudedir.IsSessionID(id) {
				continue
			}
			id = strings.ToLower(id)
			i, ok := seen[id]
			if !ok {
				i = len(out)
				seen[id] = i
				out = append(out, listedSession{StoredSession: StoredSession{ID: id, ProjectDir: dir}})
			}
			if s := &out[i]; s.ProjectDir == dir {
				switch {
				case name == id+".jsonl":
					s.main = true
				case name == id:
					s.dir = true
				default:
					s.odd = true
				}
			}
		}
	}
	return out, dirs, nil
}

// readProjects reads the project folders among projects (entries of the
// projects folder), a few side by side: each folder and its entries, in
// the order of projects.
func (l Layout) readProjects(projects []os.DirEntry) (dirs []string, listed [][]os.DirEntry, err error) {
	for _, p := range projects {
		if p.IsDir() {
			dirs = append(dirs, l.ProjectFolder(p.Name()))
		}
	}
	listed = make([][]os.DirEntry, len(dirs))
	err = durable.Each(context.Background(), listWorkers, len(dirs), func(_ context.Context, i int) error {
		var err error
		listed[i], err = os.ReadDir(dirs[i])
		return err
	})
	return dirs, listed, err
}

// listWorkers is how many folders are read at a time: reading one waits
// on the kernel more than on a core.
const listWorkers = 4

// SessionTranscripts are one session's transcripts: its main file and its
// subagents', as TranscriptFiles lists them (without the sidecar).
type SessionTranscripts struct {
	StoredSession
	Paths []string
	// folders are the folders of the session read (or looked for) to find
	// its subagents' files, its own first; odd marks a session found by
	// looking for its files by name (spelled in other cases).
	folders []string
	odd     bool
}

// StoredTranscripts lists the transcripts of every session StoredSessions
// lists, from the listing it makes: a session's folder is walked only when
// the listing holds one, and no file is looked at again. folders are the
// folders whose entries the answer comes from (the projects folder, the
// project folders, the sessions' folders and the folders under them read
// for the subagents' files, or looked for): while none of them changes,
// the answer is the same. It is nil when the answer depends on more (a
// session spelled in other cases, whose files are looked for by name).
func (l Layout) StoredTranscripts() (out []SessionTranscripts, folders []string, err error) {
	listed, dirs, err := l.listSessions()
	if err != nil {
		return nil, nil, err
	}
	out = make([]SessionTranscripts, len(listed))
	// A session with a folder has it walked, a few side by side.
	err = durable.Each(context.Background(), listWorkers, len(listed), func(_ context.Context, i int) error {
		out[i] = listed[i].transcripts()
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	folders = append([]string{l.ProjectsDir()}, dirs...)
	for _, s := range out {
		if s.odd {
			return out, nil, nil
		}
		folders = append(folders, s.folders...)
	}
	return out, folders, nil
}

// transcripts are the session's transcripts, from what its project
// folder's listing held of it.
func (s listedSession) transcripts() SessionTranscripts {
	out := SessionTranscripts{StoredSession: s.StoredSession, odd: s.odd}
	if s.odd { // another spelling: as TranscriptFiles finds them
		files, _ := TranscriptFiles(s.ProjectDir, s.ID)
		for _, f := range files {
			if !f.Sidecar {
				out.Paths = append(out.Paths, f.Path)
			}
		}
		return out
	}
	main := claudedir.MainFile(s.ProjectDir, s.ID)
	if s.main {
		out.Paths = append(out.Paths, main)
	}
	if !s.dir {
		return out
	}
	out.folders = []string{claudedir.SessionDirOf(main)}
	agents, _ := reader.WalkAgentFolders(context.Background(), nil, main, "", func(dir string) { out.folders = append(out.folders, dir) })
	for _, a := range agents {
		if a.ID != "" {
			out.Paths = append(out.Paths, a.Path)
		}
	}
	return out
}

// TranscriptFile is one file of a session: its main transcript, a
// subagent's (AgentID), or the sidecar of scribe's lifecycle records and
// checkpoints (Sidecar).
type TranscriptFile struct {
	Path    string
	AgentID string
	Sidecar bool
	Size    int64
}

// TranscriptFiles lists a session's files in projectDir: the main file (if
// any), the subagents under <id>/subagents/, depth first in name order as
// the SDK lists them, then the sidecar (if any); and their total size.
func TranscriptFiles(projectDir, id string) ([]TranscriptFile, int64) {
	var files []TranscriptFile
	var size int64
	add := func(path string, f TranscriptFile) {
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
			f.Path, f.Size = path, fi.Size()
			files = append(files, f)
			size += fi.Size()
		}
	}
	main := claudedir.MainFile(projectDir, id)
	add(main, TranscriptFile{})
	agents, _ := reader.WalkAgents(context.Background(), nil, main, "")
	for _, a := range agents {
		if a.ID != "" {
			add(a.Path, TranscriptFile{AgentID: a.ID})
		}
	}
	add(claudedir.SidecarFile(projectDir, id), TranscriptFile{Sidecar: true})
	return files, size
}

// OpenTranscript opens a session's main transcript for reading, looking
// first in the project folder of cwd (when given). A session the store
// does not hold is core.ErrNotFound, worded as the summary loader says it.
func (l Layout) OpenTranscript(id, cwd string) (*os.File, error) {
	if !claudedir.IsSessionID(id) {
		return nil, fmt.Errorf("%q is not a session id: %w", id, core.ErrNotFound)
	}
	dir, err := l.FindSession(id, cwd)
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, fmt.Errorf("no transcript: %w", core.ErrNotFound)
	}
	path := claudedir.MainFile(dir, id)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is gone: %w", path, core.ErrNotFound)
	}
	return f, err
}

// Replace statuses.
const (
	ReplaceUnchanged = "unchanged"
	ReplaceCreated   = "created"
	ReplaceReplaced  = "replaced"
)

// ReplaceTranscript makes a file of the store (a path under ProjectsDir,
// as MainFile, AgentFile and SidecarFile give) hold data atomically, as
// durable.Replace does; folders made on the way are synced. It leaves a
// file that already holds data alone (ReplaceUnchanged); else what the
// file held is kept as <path>.bak-<stamp> (backup). The caller holds the
// session's lock (LockSession).
func (l Layout) ReplaceTranscript(path string, data []byte, stamp string) (status, backup string, err error) {
	if rel, rerr := filepath.Rel(l.ProjectsDir(), path); rerr != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", "", fmt.Errorf("replace %s: not a file of the store %s", path, l.ProjectsDir())
	}
	if err := durable.MkdirAll(filepath.Dir(path), layout.DirMode); err != nil {
		return "", "", err
	}
	old, err := os.ReadFile(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", "", err
	}
	if exists && bytes.Equal(old, data) {
		return ReplaceUnchanged, "", nil
	}
	backup, err = durable.Replace(path, durable.Options{Perm: layout.FileMode, DirPerm: layout.DirMode, Backup: stamp},
		func(w io.Writer) error { _, err := w.Write(data); return err })
	if err != nil {
		return "", "", err
	}
	if exists {
		return ReplaceReplaced, backup, nil
	}
	return ReplaceCreated, "", nil
}
