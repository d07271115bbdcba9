package listing

// The listing's candidates: which transcript files a listing reads (see listing.go).

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// AllCands lists the files of every project folder (directories
// directly under projects/, symlinks not followed).
func (l Layout) AllCands() []Cand {
	ents, err := l.FSys().ReadDir(l.ProjectsDir())
	if err != nil {
		return nil
	}
	var out []Cand
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := l.ProjectFolder(e.Name())
		sub, err := l.FSys().ReadDir(dir)
		if err != nil {
			continue
		}
		out = folderCands(out, dir, sub, "", nil)
	}
	return out
}

// folderCands adds the *.jsonl files of one folder whose base name is a
// UUID (any case, as the SDK's check is case-insensitive).
func folderCands(out []Cand, dir string, ents []os.DirEntry, projectPath string, own []string) []Cand {
	var sideDirs map[string]bool
	for _, e := range ents {
		if !e.Type().IsRegular() {
			if sideDirs == nil {
				sideDirs = make(map[string]bool)
			}
			sideDirs[e.Name()] = true
		}
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		id := name[:len(name)-len(".jsonl")]
		if !core.IsUUID(id) {
			continue
		}
		out = append(out, Cand{
			ID: id, Path: filepath.Join(dir, name), ProjectDir: dir,
			ProjectPath: projectPath, Own: own, HasSideDir: sideDirs[id],
		})
	}
	return out
}

// projectFolder is a project folder with its entries, read once.
type projectFolder struct {
	path string
	ents []os.DirEntry
}

// DirCands is the SDK's per-project gathering: the folder of the
// resolved path (plus, for names over 200 characters, folders with the same
// prefix that hold a session recorded there), and with worktrees the
// folders of the repository's other worktrees.
func (l Layout) DirCands(ctx context.Context, dir string, worktrees bool) []Cand {
	projectPath := layout.Realpath(dir)
	projects := l.ProjectsDir()
	var trees []string
	if worktrees {
		trees = layout.GitWorktrees(ctx, projectPath)
	}
	var out []Cand
	if len(trees) <= 1 {
		for _, d := range projectFolders(l.FS, projects, projectPath) {
			out = folderCands(out, d.path, d.ents, projectPath, nil)
		}
		return out
	}
	type tree struct {
		path, exact, prefix string
	}
	ts := make([]tree, len(trees))
	for i, t := range trees {
		ts[i] = tree{path: t, exact: claudedir.SanitizePath(t)}
		if len(ts[i].exact) > claudedir.MaxProjectName {
			ts[i].prefix = ts[i].exact[:claudedir.MaxProjectName]
		}
	}
	sort.SliceStable(ts, func(a, b int) bool { return len(ts[a].exact) > len(ts[b].exact) })
	own := append([]string{projectPath}, trees...)
	ents, err := l.FSys().ReadDir(projects)
	if err != nil {
		return nil
	}
	done := map[string]bool{}
	for _, d := range projectFolders(l.FS, projects, projectPath) {
		name := filepath.Base(d.path)
		if done[name] {
			continue
		}
		done[name] = true
		out = folderCands(out, d.path, d.ents, projectPath, own)
	}
	for _, e := range ents {
		if !e.IsDir() || done[e.Name()] {
			continue
		}
		name := e.Name()
		full := filepath.Join(projects, name)
		for _, t := range ts {
			if name == t.exact || (t.prefix != "" && strings.HasPrefix(name, t.prefix+"-") && folderHasCwd(l.FS, full, t.path)) {
				done[name] = true
				if sub, err := l.FSys().ReadDir(full); err == nil {
					out = folderCands(out, full, sub, t.path, own)
				}
				break
			}
		}
	}
	return out
}

// projectFolders is the SDK's folder lookup for one project path: the
// exact sanitized folder if it can be read, and for a sanitized name over
// 200 characters every other folder starting with its first 200 characters
// and '-' that holds a session recorded in that path.
func projectFolders(fsys layout.FS, projects, projectPath string) []projectFolder {
	var out []projectFolder
	exact := filepath.Join(projects, claudedir.SanitizePath(projectPath))
	if ents, err := layout.FSOf(fsys).ReadDir(exact); err == nil {
		out = append(out, projectFolder{exact, ents})
	}
	full := claudedir.SanitizeFull(projectPath)
	if len(full) <= claudedir.MaxProjectName {
		return out
	}
	prefix := full[:claudedir.MaxProjectName] + "-"
	ents, err := layout.FSOf(fsys).ReadDir(projects)
	if err != nil {
		return out
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		p := filepath.Join(projects, e.Name())
		if p == exact || !folderHasCwd(fsys, p, projectPath) {
			continue
		}
		if sub, err := layout.FSOf(fsys).ReadDir(p); err == nil {
			out = append(out, projectFolder{p, sub})
		}
	}
	return out
}

// folderHasCwd reports whether any *.jsonl file in dir records
// projectPath (its tail "relocated" entry, else the first head "cwd"),
// compared by full sanitized name.
func folderHasCwd(fsys layout.FS, dir, projectPath string) bool {
	ents, err := layout.FSOf(fsys).ReadDir(dir)
	if err != nil {
		return false
	}
	want := claudedir.SanitizeFull(projectPath)
	w := newWorker(fsys)
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		win, ok, _ := w.Read(filepath.Join(dir, e.Name()))
		if !ok {
			continue
		}
		w.Index(&win)
		cwd, found := w.tix.lastKeyed(lkRelocatedCwd, typeRelocated, false)
		if !found {
			cwd, found = FirstParsed(win.Head, "cwd")
		}
		if found && claudedir.SanitizeFull(cwd) == want {
			return true
		}
	}
	return false
}

// find is the SDK's file lookup for getSessionInfo: the first non-empty
// <id>.jsonl in the project's folders (then its worktrees' folders), or
// without dir in the project folders in name order.
func (l Layout) find(ctx context.Context, id, dir string) (path, projectPath string) {
	name := id + ".jsonl"
	nonEmpty := func(p string) bool {
		if l.FS != nil {
			fi, err := l.FS.Stat(p)
			return err == nil && fi.Size() > 0
		}
		var st unix.Stat_t
		return unix.Stat(p, &st) == nil && st.Size > 0
	}
	projects := l.ProjectsDir()
	if dir != "" {
		real := layout.Realpath(dir)
		for _, d := range projectFolders(l.FS, projects, real) {
			if p := filepath.Join(d.path, name); nonEmpty(p) {
				return p, real
			}
		}
		for _, t := range layout.GitWorktrees(ctx, real) {
			if t == real {
				continue
			}
			for _, d := range projectFolders(l.FS, projects, t) {
				if p := filepath.Join(d.path, name); nonEmpty(p) {
					return p, t
				}
			}
		}
		return "", ""
	}
	ents, err := l.FSys().ReadDir(projects)
	if err != nil {
		return "", ""
	}
	for _, e := range ents {
		if p := filepath.Join(projects, e.Name(), name); nonEmpty(p) {
			return p, ""
		}
	}
	return "", ""
}

// workers is the size of the read pool.
func workers() int { return 2 * runtime.GOMAXPROCS(0) }

var workerPool = sync.Pool{New: func() any { return newWorker(nil) }}

// Parallel runs fn(i) for i in [0,n) on the worker pool.
func Parallel(ctx context.Context, fsys layout.FS, n int, fn func(w *Worker, i int)) {
	if n == 0 {
		return
	}
	workers := min(workers(), n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := workerPool.Get().(*Worker)
			w.fsys = fsys
			defer func() { w.fsys = nil; workerPool.Put(w) }()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				fn(w, i)
			}
		}()
	}
	wg.Wait()
}
