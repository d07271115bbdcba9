package watch

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// classify says what a path under a projects root is, in Claude Code's
// layout as jsonl.ClassifyPath reads it; ok is false for anything watch does not follow (memory/, a
// folder's own sidecars such as <id>.ccr-tip.json, temporary files).
func classify(root, path string) (kind, session, agent string, ok bool) {
	rel, err := filepath.Rel(root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", "", "", false
	}
	k, session, agent := jsonl.ClassifyPath(rel)
	switch k {
	case jsonl.PathMain:
		return KindMain, session, "", true
	case jsonl.PathAgent:
		return KindAgent, session, agent, true
	case jsonl.PathLifecycle:
		return KindLifecycle, session, "", true
	case jsonl.PathSidecar:
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

// walkDirs calls fn for every folder watch follows under root (root
// itself, project folders, session folders and everything below them) and
// file for every file in them that classify accepts.
func walkDirs(root string, dir func(path string), file func(path string, fi os.FileInfo)) {
	walkDirsFrom(root, root, dir, file)
}

// walkDirsFrom is walkDirs from start, a folder at or below root.
func walkDirsFrom(root, start string, dir func(path string), file func(path string, fi os.FileInfo)) {
	depth := 0
	if rel, err := filepath.Rel(root, start); err == nil && rel != "." {
		depth = len(strings.Split(rel, string(filepath.Separator)))
	}
	if depth == 2 && !jsonl.IsSessionID(filepath.Base(start)) {
		return
	}
	var walk func(path string, depth int)
	walk = func(path string, depth int) {
		ents, err := os.ReadDir(path)
		if err != nil {
			return
		}
		dir(path)
		for _, e := range ents {
			p := filepath.Join(path, e.Name())
			if e.IsDir() {
				if depth == 1 && !jsonl.IsSessionID(e.Name()) {
					continue // memory/ and other folders that are not sessions
				}
				walk(p, depth+1)
				continue
			}
			if !e.Type().IsRegular() {
				continue
			}
			if _, _, _, ok := classify(root, p); !ok {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue
			}
			file(p, fi)
		}
	}
	walk(start, depth)
}
