// Package layout is the local store's folder: where a config folder's
// project folders, sessions and locks are (Layout, by the rules of package
// claudedir), the FS its readers read, the session locks, the walks over
// the project folders, the SDK's deletion markers, and the one durable way
// to replace a file. Every other job of the store (writer, reader,
// listing, index, admin, sealed) stands on it.
//
// Files are 0600 and folders 0700, as Claude Code makes them.
package layout

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
)

const (
	FileMode = 0o600
	DirMode  = 0o700
)

// safeName reports whether s matches ^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$
// (by hand: it runs for every entry).
func safeName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '_' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// ErrBadID is returned for a session or agent id that cannot name a file.
var ErrBadID = errors.New("invalid id")

// CheckName is ErrBadID, naming kind, for an id s that cannot name a file.
func CheckName(kind, s string) error {
	if !safeName(s) || s == "." || s == ".." {
		return fmt.Errorf("%w: %s %q (want letters, digits, '-', '_', '.')", ErrBadID, kind, s)
	}
	return nil
}

// Layout computes paths under a config folder. Each job of the store
// embeds it in a Layout of its own that holds that job's methods.
type Layout struct {
	ConfigDir string
	// FS is what the readers read (see FS): nil for the files on disk.
	// Only the readers (List, Info, Messages, Subagents, SubagentMessages,
	// SidecarRecords, Lifecycle, Checkpoints, FindSession, ForkSession's
	// read) take it; everything that changes a session, the sessions index
	// and the locks work on disk only.
	FS FS
	// Walks, when set, keeps the walks of subagents folders on disk
	// between reads (see WalkCache).
	Walks *WalkCache
	// Reads, when set, keeps the conversations rebuilt from transcripts on
	// disk while their files are unchanged (see ReadCache).
	Reads *ReadCache
}

// ProjectsDir is <config dir>/projects.
func (l Layout) ProjectsDir() string { return filepath.Join(l.ConfigDir, "projects") }

// ProjectFolder is the project folder of that name (as listed under
// ProjectsDir, or a SessionFile's Project), not derived from a cwd.
func (l Layout) ProjectFolder(name string) string { return filepath.Join(l.ProjectsDir(), name) }

// ProjectDir is the folder for sessions started in cwd.
func (l Layout) ProjectDir(cwd string) string {
	return filepath.Join(l.ProjectsDir(), claudedir.SanitizePath(cwd))
}

// LockFile is where the writer of a session holds its lock.
func (l Layout) LockFile(sessionID string) string {
	return filepath.Join(l.ConfigDir, "scribe", "locks", sessionID+".lock")
}

// FindSession returns the project folder that holds the session, looking
// first in the folder of cwd (when given), then in every project folder in
// name order. A session "exists" if its main file or its per-session folder
// does. It returns "" when no folder has it.
func (l Layout) FindSession(sessionID, cwd string) (string, error) {
	has := func(dir string) bool {
		if _, err := l.FSys().Stat(claudedir.MainFile(dir, sessionID)); err == nil {
			return true
		}
		if _, err := l.FSys().Stat(claudedir.MainFile(dir, sessionID) + claudedir.SealedSuffix); err == nil {
			return true
		}
		if fi, err := l.FSys().Stat(claudedir.SessionDir(dir, sessionID)); err == nil && fi.IsDir() {
			return true
		}
		return false
	}
	if cwd != "" {
		if d := l.ProjectDir(cwd); has(d) {
			return d, nil
		}
	}
	ents, err := l.FSys().ReadDir(l.ProjectsDir())
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("find session %s: %w", sessionID, err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if d := l.ProjectFolder(n); has(d) {
			return d, nil
		}
	}
	return "", nil
}

// ISOTime is a time as the SDK writes one (JavaScript's toISOString).
func ISOTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// ErrNotFound is returned when a session or subagent transcript is not in
// the config folder. It wraps core.ErrNotFound.
var ErrNotFound = fmt.Errorf("jsonl: %w", core.ErrNotFound)
