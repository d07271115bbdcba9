package watch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/e0dc0000/scribe/claudedir"
)

// classify says what a path under a projects root is, in Claude Code's
// layout as claudedir.ClassifyPath reads it; ok is false for anything watch does not follow (memory/, a
// folder's own sidecars such as <id>.ccr-tip.json, temporary files).
func classify(root, path string) (kind, session, agent string, ok bool) {
	rel, err := filepath.Rel(root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", "", "", false
	}
	k, session, agent := claudedir.ClassifyPath(rel)
	switch k {
	case claudedir.PathMain:
		return KindMain, session, "", true
	case claudedir.PathAgent:
		return KindAgent, session, agent, true
	case claudedir.PathLifecycle:
		return KindLifecycle, session, "", true
	case claudedir.PathSidecar:
		return KindSidecar, session, "", true
	}
	return "", "", "", false
}

// sessionDirRel is the part of path below <project>/<sessionId>/, for a
// sidecar, and the project folder's name.
func sessionDirRel(root, path string) (project, rel string) {
	r, _ := filepath.Rel(root, path)
	parts := strings.SplitN(r, string(filepath.Separator), 3)
	if len(parts) < 3 {
		return "", ""
	}
	return parts[0], parts[2]
}

// walkDirs calls dir for every folder watch follows under root (root
// itself, project folders, session folders and everything below them),
// file for every file in them that classify accepts, and bad for what it
// cannot read where it would follow something: a folder it may not list,
// something that is not a folder or a regular file in a project folder's,
// a session folder's or a followed file's place.
func walkDirs(root string, dir func(path string), file func(path string, fi os.FileInfo), bad func(path string, err error)) {
	walkDirsFrom(root, root, dir, file, bad)
}

// errNotFollowable is what bad gets for something that is neither a
// folder nor a regular file where watch would follow one.
var errNotFollowable = errors.New("neither a folder nor a regular file (a symbolic link, a pipe, a socket or a device): not followed")

// walkDirsFrom is walkDirs from start, a folder at or below root.
func walkDirsFrom(root, start string, dir func(path string), file func(path string, fi os.FileInfo), bad func(path string, err error)) {
	depth := 0
	if rel, err := filepath.Rel(root, start); err == nil && rel != "." {
		depth = len(strings.Split(rel, string(filepath.Separator)))
	}
	if depth == 2 && !claudedir.IsSessionID(filepath.Base(start)) {
		return
	}
	var walk func(path string, depth int)
	walk = func(path string, depth int) {
		ents, err := os.ReadDir(path)
		if errors.Is(err, os.ErrNotExist) {
			return // gone since it was listed
		}
		if err != nil && len(ents) == 0 {
			bad(path, err)
			return
		}
		dir(path)
		if err != nil {
			bad(path, err) // listed in part
		}
		for _, e := range ents {
			p := filepath.Join(path, e.Name())
			if e.IsDir() {
				if depth == 1 && !claudedir.IsSessionID(e.Name()) {
					continue // memory/ and other folders that are not sessions
				}
				walk(p, depth+1)
				continue
			}
			_, _, _, followed := classify(root, p)
			if !e.Type().IsRegular() {
				if followed || depth == 0 || (depth == 1 && claudedir.IsSessionID(e.Name())) {
					bad(p, errNotFollowable)
				}
				continue
			}
			if !followed {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				if !errors.Is(err, os.ErrNotExist) {
					bad(p, err)
				}
				continue
			}
			file(p, fi)
		}
	}
	walk(start, depth)
}
