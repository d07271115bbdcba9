package jsonl

// The lite listing: what the Claude Agent SDK's listSessions and
// getSessionInfo report for the sessions of a config folder, computed the
// way the SDK computes it (0.3.332): from a 64 KiB head window and a 64 KiB
// tail window of each transcript, never the whole file.
//
// The SDK works on the two windows as JavaScript strings. Most fields are
// found by looking for a substring such as `"customTitle":` line by line
// (backwards in the tail, forwards in the head) and JSON.parse-ing only the
// lines that contain it; a few (timestamp, gitBranch, cwd, entrypoint,
// sessionKind) are cut straight out of the window text without parsing.
// Every helper below names the rule it reproduces. The windows are bytes
// here; the patterns are ASCII, so byte offsets and UTF-16 offsets give the
// same matches, and the one place where the SDK counts characters from the
// end of a window converts the count.
//
// Speed: the listing stats nothing it does not need, reads the two windows
// with pread into per-worker buffers, and runs the files through a pool of
// 2×GOMAXPROCS goroutines. With a Limit it stats every file, sorts by mtime
// and reads only until the page is full, as the SDK does.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/transcript"
)

// liteWindow is the size of the head and tail windows (the SDK's 65536).
const liteWindow = 64 << 10

// SessionInfo is one session as the SDK's listSessions reports it
// (SDKSessionInfo): same JSON field names, same omission rules, so that
// json.Marshal of a []SessionInfo equals the SDK's JSON.stringify output
// after key sorting. The fields after Archived are scribe's own and never
// appear in the JSON.
type SessionInfo struct {
	SessionID    string `json:"sessionId"`
	Summary      string `json:"summary"`
	LastModified int64  `json:"lastModified"` // file mtime, integer ms (rounded as Node's Date does)
	FileSize     int64  `json:"fileSize"`
	CustomTitle  string `json:"customTitle,omitempty"`
	FirstPrompt  string `json:"firstPrompt,omitempty"`
	GitBranch    string `json:"gitBranch,omitempty"`
	Cwd          string `json:"cwd,omitempty"`
	Tag          string `json:"tag,omitempty"`
	// CreatedAt is Date.parse of the first "timestamp" string in the head,
	// in ms since the epoch (a number, as in the SDK); nil when absent or
	// unparseable. It can legitimately be 0.
	CreatedAt *int64 `json:"createdAt,omitempty"`
	// Archived is nil when the session has no valid <id>/archived.json,
	// false when it says archived:false or a prompt was sent after its "at",
	// true otherwise. The SDK reports false too, so this is a pointer.
	Archived *bool `json:"archived,omitempty"`

	// Path is the transcript file.
	Path string `json:"-"`
	// ProjectDir is the project folder holding it.
	ProjectDir string `json:"-"`
	// ProjectPath is the working directory the folder was matched for when
	// listing one project (the resolved Dir or one of its worktrees); "" when
	// listing every project.
	ProjectPath string `json:"-"`
	// Entrypoint and SessionKind are what the programmatic filter looked at:
	// the first "entrypoint" value in the head (else the last one in the
	// tail) and the "sessionKind" of the first head line holding
	// "parentUuid":.
	Entrypoint  string `json:"-"`
	SessionKind string `json:"-"`
	// LastEntryTail is the last complete line of the tail window that is a
	// conversation row (valid JSON whose top-level "type" is "user",
	// "assistant" or "attachment"; system and progress rows are skipped, as
	// the resume logic skips them), unparsed and copied; nil when the tail
	// holds none. Callers use it to tell whether the last turn was
	// interrupted without reading the file again.
	LastEntryTail []byte `json:"-"`
}

// IsProgrammatic reports whether includeProgrammatic:false would hide the
// session (entrypoint sdk-cli/sdk-ts/sdk-py, or sessionKind daemon or
// daemon-worker).
func (s *SessionInfo) IsProgrammatic() bool {
	return liteProgrammatic(s.Entrypoint, s.SessionKind)
}

// ListOptions selects what List returns. The SDK's defaults for the two
// booleans are true; the zero value here means false, so callers wanting the
// SDK's default behaviour set both.
type ListOptions struct {
	Dir                 string // project path (cwd) to list; "" = all projects
	Limit, Offset       int    // 0 = no limit / no offset
	IncludeWorktrees    bool   // SDK default true: add the folders of the repo's other git worktrees
	IncludeProgrammatic bool   // SDK default true: keep SDK-started and daemon sessions
	// SkipLastEntryTail leaves SessionInfo.LastEntryTail nil, for callers
	// that only print the SDK's fields.
	SkipLastEntryTail bool
}

// ---------------------------------------------------------------------------
// Listing

// liteCand is one transcript file to read (the SDK's per-file entry).
type liteCand struct {
	id          string
	path        string
	projectDir  string
	projectPath string   // "" when listing every project
	own         []string // the project path and its worktrees (worktree mode only)
	hasSideDir  bool     // <projectDir>/<id> exists (maybe): sidecars worth trying
	mtime       int64    // from stat, paginated mode only
}

// List returns the sessions the SDK's listSessions would return for opt,
// newest first. Files that cannot be read are skipped, as the SDK skips
// them; the error is only for a cancelled context.
func (l Layout) List(ctx context.Context, opt ListOptions) ([]SessionInfo, error) {
	limit, offset := opt.Limit, opt.Offset
	if limit < 0 {
		limit = 0
	}
	if offset < 0 {
		offset = 0
	}
	paginated := limit > 0 || offset > 0
	var cands []liteCand
	if opt.Dir != "" {
		cands = l.liteDirCands(ctx, opt.Dir, opt.IncludeWorktrees)
	} else {
		cands = l.liteAllCands()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var cw liteCollision
	if !paginated {
		res := make([]SessionInfo, len(cands))
		ok := make([]bool, len(cands))
		liteParallel(ctx, len(cands), func(w *liteWorker, i int) {
			w.noTail = opt.SkipLastEntryTail
			res[i], ok[i] = w.process(&cands[i], opt.IncludeProgrammatic, &cw)
			w.noTail = false
		})
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Same id in several folders: the newest copy wins, the first one
		// seen on a tie.
		idx := make(map[string]int, len(cands))
		out := make([]SessionInfo, 0, len(cands))
		for i := range res {
			if !ok[i] {
				continue
			}
			if j, seen := idx[res[i].SessionID]; seen {
				if res[i].LastModified > out[j].LastModified {
					out[j] = res[i]
				}
				continue
			}
			idx[res[i].SessionID] = len(out)
			out = append(out, res[i])
		}
		sort.Slice(out, func(a, b int) bool {
			if out[a].LastModified != out[b].LastModified {
				return out[a].LastModified > out[b].LastModified
			}
			return out[a].SessionID > out[b].SessionID
		})
		return out, nil
	}

	// Paginated: stat everything, sort by mtime, read in order until the
	// page is full.
	keep := make([]bool, len(cands))
	liteParallel(ctx, len(cands), func(_ *liteWorker, i int) {
		var st unix.Stat_t
		if unix.Stat(cands[i].path, &st) == nil {
			cands[i].mtime = liteMillis(st.Mtim.Sec, st.Mtim.Nsec)
			keep[i] = true
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	live := cands[:0]
	for i := range cands {
		if keep[i] {
			live = append(live, cands[i])
		}
	}
	sort.SliceStable(live, func(a, b int) bool {
		if live[a].mtime != live[b].mtime {
			return live[a].mtime > live[b].mtime
		}
		return live[a].id > live[b].id
	})
	want := math.MaxInt
	if limit > 0 {
		want = limit
	}
	batch := 4 * liteWorkers()
	if batch < 32 {
		batch = 32
	}
	var out []SessionInfo
	seen := make(map[string]bool)
	skipped := 0
	for start := 0; start < len(live) && len(out) < want; start += batch {
		end := min(start+batch, len(live))
		res := make([]SessionInfo, end-start)
		ok := make([]bool, end-start)
		liteParallel(ctx, end-start, func(w *liteWorker, i int) {
			w.noTail = opt.SkipLastEntryTail
			res[i], ok[i] = w.process(&live[start+i], opt.IncludeProgrammatic, &cw)
			w.noTail = false
		})
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i := range res {
			if len(out) >= want {
				break
			}
			if !ok[i] || seen[res[i].SessionID] {
				continue
			}
			seen[res[i].SessionID] = true
			if skipped < offset {
				skipped++
				continue
			}
			out = append(out, res[i])
		}
	}
	if out == nil {
		out = []SessionInfo{}
	}
	return out, nil
}

// Info is getSessionInfo: the session's SessionInfo, or nil where the SDK
// returns undefined (not a UUID, no non-empty file, a sidechain-first file,
// nothing to title it with). It applies none of the listing's filters.
func (l Layout) Info(ctx context.Context, sessionID, dir string) (*SessionInfo, error) {
	if !IsSessionID(sessionID) {
		return nil, nil
	}
	path, projectPath := l.liteFind(ctx, sessionID, dir)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, nil
	}
	w := liteNewWorker()
	info, ok, err := w.readLite(path, sessionID, projectPath, true)
	if err != nil || !ok {
		return nil, nil
	}
	return &info, nil
}

// ReadLite reads one transcript's head and tail windows (and its sidecars)
// and derives its SessionInfo as getSessionInfo does. projectPath is the
// cwd fallback ("" for none). ok is false when the SDK would skip the file:
// a name that is not a UUID, not a regular file (symlinks are not
// followed), empty, sidechain-first, or nothing to title it with.
func ReadLite(path string, projectPath string) (SessionInfo, bool, error) {
	base := filepath.Base(path)
	if !strings.HasSuffix(base, ".jsonl") || !IsSessionID(strings.TrimSuffix(base, ".jsonl")) {
		return SessionInfo{}, false, nil
	}
	w := liteNewWorker()
	return w.readLite(path, strings.TrimSuffix(base, ".jsonl"), projectPath, true)
}

// liteAllCands lists the files of every project folder (directories
// directly under projects/, symlinks not followed).
func (l Layout) liteAllCands() []liteCand {
	ents, err := os.ReadDir(l.ProjectsDir())
	if err != nil {
		return nil
	}
	var out []liteCand
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(l.ProjectsDir(), e.Name())
		sub, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		out = liteFolderCands(out, dir, sub, "", nil)
	}
	return out
}

// liteFolderCands adds the *.jsonl files of one folder whose base name is a
// UUID (any case, as the SDK's check is case-insensitive).
func liteFolderCands(out []liteCand, dir string, ents []os.DirEntry, projectPath string, own []string) []liteCand {
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
		if !liteIsUUID(id) {
			continue
		}
		out = append(out, liteCand{
			id: id, path: filepath.Join(dir, name), projectDir: dir,
			projectPath: projectPath, own: own, hasSideDir: sideDirs[id],
		})
	}
	return out
}

// liteIsUUID is IsSessionID without the regexp (8-4-4-4-12 hex digits,
// any case).
func liteIsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !liteIsHex(c) {
				return false
			}
		}
	}
	return true
}

// liteDir is a project folder with its entries, read once.
type liteDir struct {
	path string
	ents []os.DirEntry
}

// liteDirCands is the SDK's per-project gathering: the folder of the
// resolved path (plus, for names over 200 characters, folders with the same
// prefix that hold a session recorded there), and with worktrees the
// folders of the repository's other worktrees.
func (l Layout) liteDirCands(ctx context.Context, dir string, worktrees bool) []liteCand {
	projectPath := liteRealpath(dir)
	projects := l.ProjectsDir()
	var trees []string
	if worktrees {
		trees = liteGitWorktrees(ctx, projectPath)
	}
	var out []liteCand
	if len(trees) <= 1 {
		for _, d := range liteProjectDirs(projects, projectPath) {
			out = liteFolderCands(out, d.path, d.ents, projectPath, nil)
		}
		return out
	}
	type tree struct {
		path, exact, prefix string
	}
	ts := make([]tree, len(trees))
	for i, t := range trees {
		ts[i] = tree{path: t, exact: SanitizePath(t)}
		if len(ts[i].exact) > maxProjectName {
			ts[i].prefix = ts[i].exact[:maxProjectName]
		}
	}
	sort.SliceStable(ts, func(a, b int) bool { return len(ts[a].exact) > len(ts[b].exact) })
	own := append([]string{projectPath}, trees...)
	ents, err := os.ReadDir(projects)
	if err != nil {
		return nil
	}
	done := map[string]bool{}
	for _, d := range liteProjectDirs(projects, projectPath) {
		name := filepath.Base(d.path)
		if done[name] {
			continue
		}
		done[name] = true
		out = liteFolderCands(out, d.path, d.ents, projectPath, own)
	}
	for _, e := range ents {
		if !e.IsDir() || done[e.Name()] {
			continue
		}
		name := e.Name()
		full := filepath.Join(projects, name)
		for _, t := range ts {
			if name == t.exact || (t.prefix != "" && strings.HasPrefix(name, t.prefix+"-") && liteFolderHasCwd(full, t.path)) {
				done[name] = true
				if sub, err := os.ReadDir(full); err == nil {
					out = liteFolderCands(out, full, sub, t.path, own)
				}
				break
			}
		}
	}
	return out
}

// liteProjectDirs is the SDK's folder lookup for one project path: the
// exact sanitized folder if it can be read, and for a sanitized name over
// 200 characters every other folder starting with its first 200 characters
// and '-' that holds a session recorded in that path.
func liteProjectDirs(projects, projectPath string) []liteDir {
	var out []liteDir
	exact := filepath.Join(projects, SanitizePath(projectPath))
	if ents, err := os.ReadDir(exact); err == nil {
		out = append(out, liteDir{exact, ents})
	}
	full := liteSanitizeFull(projectPath)
	if len(full) <= maxProjectName {
		return out
	}
	prefix := full[:maxProjectName] + "-"
	ents, err := os.ReadDir(projects)
	if err != nil {
		return out
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		p := filepath.Join(projects, e.Name())
		if p == exact || !liteFolderHasCwd(p, projectPath) {
			continue
		}
		if sub, err := os.ReadDir(p); err == nil {
			out = append(out, liteDir{p, sub})
		}
	}
	return out
}

// liteFolderHasCwd reports whether any *.jsonl file in dir records
// projectPath (its tail "relocated" entry, else the first head "cwd"),
// compared by full sanitized name.
func liteFolderHasCwd(dir, projectPath string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	want := liteSanitizeFull(projectPath)
	w := liteNewWorker()
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		win, ok, _ := w.read(filepath.Join(dir, e.Name()))
		if !ok {
			continue
		}
		w.index(&win)
		cwd, found := w.tix.lastKeyed(lkRelocatedCwd, liteTypeRelocated, false)
		if !found {
			cwd, found = liteFirstParsed(win.head, "cwd")
		}
		if found && liteSanitizeFull(cwd) == want {
			return true
		}
	}
	return false
}

// liteFind is the SDK's file lookup for getSessionInfo: the first non-empty
// <id>.jsonl in the project's folders (then its worktrees' folders), or
// without dir in the project folders in name order.
func (l Layout) liteFind(ctx context.Context, id, dir string) (path, projectPath string) {
	name := id + ".jsonl"
	nonEmpty := func(p string) bool {
		var st unix.Stat_t
		return unix.Stat(p, &st) == nil && st.Size > 0
	}
	projects := l.ProjectsDir()
	if dir != "" {
		real := liteRealpath(dir)
		for _, d := range liteProjectDirs(projects, real) {
			if p := filepath.Join(d.path, name); nonEmpty(p) {
				return p, real
			}
		}
		for _, t := range liteGitWorktrees(ctx, real) {
			if t == real {
				continue
			}
			for _, d := range liteProjectDirs(projects, t) {
				if p := filepath.Join(d.path, name); nonEmpty(p) {
					return p, t
				}
			}
		}
		return "", ""
	}
	ents, err := os.ReadDir(projects)
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

// liteRealpath resolves a path as fs.realpath does, falling back to the
// path as given.
func liteRealpath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	r, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return p
	}
	return r
}

// liteGitWorktrees runs `git worktree list --porcelain` in dir as the SDK
// does (hooks and fsmonitor off, 5 s timeout) and returns the worktree
// paths; nil without git or outside a repository.
func liteGitWorktrees(ctx context.Context, dir string) []string {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, git, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=",
		"worktree", "list", "--porcelain")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_REFERENCE_BACKEND=files")
	out, err := cmd.Output()
	if err != nil || len(out) == 0 {
		return nil
	}
	var trees []string
	for _, line := range strings.Split(string(out), "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			trees = append(trees, p)
		}
	}
	return trees
}

// liteWorkers is the size of the read pool.
func liteWorkers() int { return 2 * runtime.GOMAXPROCS(0) }

var liteWorkerPool = sync.Pool{New: func() any { return liteNewWorker() }}

// liteParallel runs fn(i) for i in [0,n) on the worker pool.
func liteParallel(ctx context.Context, n int, fn func(w *liteWorker, i int)) {
	if n == 0 {
		return
	}
	workers := min(liteWorkers(), n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := liteWorkerPool.Get().(*liteWorker)
			defer liteWorkerPool.Put(w)
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

// ---------------------------------------------------------------------------
// Reading one file

// liteWin is a file's two windows. tail aliases head for files of 64 KiB
// or less.
type liteWin struct {
	head, tail []byte
	size       int64
	mtime      int64
}

// liteWorker holds one goroutine's buffers.
type liteWorker struct {
	noTail bool   // leave SessionInfo.LastEntryTail nil
	buf    []byte // head window, then tail window
	side   []byte
	tix    liteIdx // the tail window's keys
	hix    liteIdx // the head window's title keys
	// The tail's relocatedCwd as the last derive found it, reused by the
	// collision filter.
	recCwd   string
	recFound bool
}

// index prepares the key indexes of a freshly read window pair.
func (w *liteWorker) index(win *liteWin) {
	w.tix.reset(win.tail)
	w.tix.buildAll()
	w.hix.reset(win.head)
}

// headTitles returns the index to look up titles in the head with.
func (w *liteWorker) headTitles(win *liteWin) *liteIdx {
	if len(win.head) == len(win.tail) && (len(win.head) == 0 || &win.head[0] == &win.tail[0]) {
		return &w.tix
	}
	if !w.hix.titles {
		w.hix.buildTitles()
	}
	return &w.hix
}

func liteNewWorker() *liteWorker { return &liteWorker{buf: make([]byte, 2*liteWindow)} }

// read opens path as the SDK does (O_NOFOLLOW|O_NONBLOCK: a symlink is an
// error), requires a regular non-empty file and reads the windows.
func (w *liteWorker) read(path string) (liteWin, bool, error) {
	fd, err := liteOpen(path)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return liteWin{}, false, nil
		}
		return liteWin{}, false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return liteWin{}, false, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return liteWin{}, false, nil
	}
	n, err := litePreadFull(fd, w.buf[:liteWindow], 0)
	if err != nil {
		return liteWin{}, false, &os.PathError{Op: "read", Path: path, Err: err}
	}
	if n == 0 {
		return liteWin{}, false, nil
	}
	win := liteWin{head: w.buf[:n], size: st.Size, mtime: liteMillis(st.Mtim.Sec, st.Mtim.Nsec)}
	win.tail = win.head
	if off := st.Size - liteWindow; off > 0 {
		m, err := litePreadFull(fd, w.buf[liteWindow:], off)
		if err != nil {
			return liteWin{}, false, &os.PathError{Op: "read", Path: path, Err: err}
		}
		win.tail = w.buf[liteWindow : liteWindow+m]
	}
	return win, true, nil
}

func liteOpen(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

func litePreadFull(fd int, b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Pread(fd, b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m <= 0 {
			break
		}
		n += m
	}
	return n, nil
}

// liteMillis is Node's Stats.mtime.getTime(): sec*1e3 + nsec/1e6 in
// float64, rounded to an integer as Math.round does.
func liteMillis(sec, nsec int64) int64 {
	ms := float64(float64(sec)*1000) + float64(nsec)/1e6
	r := math.Floor(ms)
	if ms-r >= 0.5 {
		r++
	}
	return int64(r)
}

// readLite is getSessionInfo on one known file (no listing filters).
func (w *liteWorker) readLite(path, id, projectPath string, trySide bool) (SessionInfo, bool, error) {
	win, ok, err := w.read(path)
	if err != nil || !ok {
		return SessionInfo{}, false, err
	}
	w.index(&win)
	info, ok := w.derive(id, path, &win, projectPath, trySide)
	return info, ok, nil
}

// process is the SDK's per-file step of listSessions: read, the
// programmatic filter, continued-in hiding, the sidecars, the fields, the
// collision filter.
func (w *liteWorker) process(c *liteCand, includeProgrammatic bool, cw *liteCollision) (SessionInfo, bool) {
	win, ok, err := w.read(c.path)
	if err != nil || !ok {
		return SessionInfo{}, false
	}
	w.index(&win)
	if !includeProgrammatic {
		ep, sk := w.programmaticFields(&win)
		if liteProgrammatic(ep, sk) {
			return SessionInfo{}, false
		}
	}
	if target, ok := w.tix.continuedIn(); ok && w.continuedTargetLive(filepath.Join(c.projectDir, target+".jsonl")) {
		return SessionInfo{}, false
	}
	info, ok := w.derive(c.id, c.path, &win, c.projectPath, c.hasSideDir)
	if !ok {
		return SessionInfo{}, false
	}
	info.ProjectDir = c.projectDir
	if c.projectPath != "" {
		rec, found := w.recCwd, w.recFound
		if !found {
			rec, found = liteFirstParsed(win.head, "cwd")
		}
		if found && !liteUnderOwn(rec, c.own) && cw.collides(rec, c.projectPath) {
			return SessionInfo{}, false
		}
	}
	if c.mtime != 0 {
		info.LastModified = c.mtime
	}
	return info, true
}

// derive computes the SDK's SessionInfo from the windows (its Ca function)
// plus the two sidecars. ok is false for a sidechain-first file and for a
// file with nothing to show as a summary.
func (w *liteWorker) derive(id, path string, win *liteWin, projectPath string, trySide bool) (SessionInfo, bool) {
	head := win.head
	first := head
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		first = head[:i]
	}
	if bytes.Contains(first, []byte(`"isSidechain":true`)) || bytes.Contains(first, []byte(`"isSidechain": true`)) {
		return SessionInfo{}, false
	}
	dir := filepath.Dir(path)
	info := SessionInfo{SessionID: id, LastModified: win.mtime, FileSize: win.size, Path: path, ProjectDir: dir, ProjectPath: projectPath}

	// customTitle = tail custom-title ‖ sidecar ‖ head custom-title ‖ tail ai-title ‖ head ai-title
	tix := &w.tix
	tailTitle, tailTitleFound := tix.lastKeyed(lkCustomTitle, liteTypeCustomTitle, true)
	title := tailTitle
	if title == "" && !tailTitleFound && trySide {
		title = w.sidecarTitle(filepath.Join(dir, id, "custom-title.json"))
	}
	if title == "" {
		title, _ = w.headTitles(win).lastKeyed(lkCustomTitle, liteTypeCustomTitle, true)
	}
	if title == "" {
		title, _ = tix.lastKeyed(lkAITitle, liteTypeAITitle, true)
	}
	if title == "" {
		title, _ = w.headTitles(win).lastKeyed(lkAITitle, liteTypeAITitle, true)
	}
	info.CustomTitle = title
	info.FirstPrompt = liteFirstPrompt(head)
	if ts, ok := liteFirstValue(head, &liteKeyTimestamp); ok && ts != "" {
		if ms, ok := liteDateParse(ts); ok {
			info.CreatedAt = &ms
		}
	}
	summary := title
	if summary == "" {
		summary, _ = tix.lastKeyed(lkLastPrompt, "", false)
	}
	if summary == "" {
		summary, _ = tix.lastKeyed(lkSummary, "", false)
	}
	if summary == "" {
		summary = info.FirstPrompt
	}
	if summary == "" {
		summary = liteMediaPlaceholder(head)
	}
	if summary == "" {
		return SessionInfo{}, false
	}
	info.Summary = summary
	if b, _ := tix.lastValue(lkGitBranch); b != "" {
		info.GitBranch = b
	} else if b, _ := liteFirstValue(head, &liteKeyGitBranch); b != "" {
		info.GitBranch = b
	}
	w.recCwd, w.recFound = tix.lastKeyed(lkRelocatedCwd, liteTypeRelocated, false)
	if c := w.recCwd; c != "" {
		info.Cwd = c
	} else if c, _ := liteFirstValue(head, &liteKeyCwd); c != "" {
		info.Cwd = c
	} else {
		info.Cwd = projectPath
	}
	info.Tag, _ = tix.lastKeyed(lkTag, liteTypeTag, true)
	if trySide {
		info.Archived = w.archived(filepath.Join(dir, id, "archived.json"), win)
	}
	info.Entrypoint, info.SessionKind = w.programmaticFields(win)
	if !w.noTail {
		info.LastEntryTail = tix.lastEntry()
	}
	return info, true
}

// ---------------------------------------------------------------------------
// Substring search

// liteFinder searches for one pattern by first looking for its rarest byte
// (bytes.IndexByte is vectorized; the patterns all start with '"', the
// commonest byte of a JSON line).
type liteFinder struct {
	pat    []byte
	anchor int
}

func newLiteFinder(p string) liteFinder {
	best, at := 1<<30, 0
	for i := 0; i < len(p); i++ {
		if s := liteByteScore(p[i]); s <= best {
			best, at = s, i
		}
	}
	return liteFinder{pat: []byte(p), anchor: at}
}

// liteByteFreq is how often each byte occurs in the tail windows of the
// real transcripts in testdata/corpus (per 64 KiB, measured once). Bytes
// not listed are rarer than all of these.
var liteByteFreq = map[byte]int{
	'"': 3333, ' ': 4663, ':': 1272, ',': 981, '-': 899, '_': 945, '{': 240, '}': 240, '[': 125, ']': 125,
	'0': 677, '1': 714, '2': 646, '3': 445, '4': 538, '5': 466, '6': 411, '7': 375, '8': 404, '9': 391,
	'A': 246, 'B': 159, 'C': 260, 'D': 192, 'E': 252, 'F': 154, 'G': 121, 'H': 108, 'I': 258, 'J': 93,
	'K': 115, 'L': 146, 'M': 144, 'N': 125, 'O': 108, 'P': 150, 'Q': 124, 'R': 193, 'S': 237, 'T': 327,
	'U': 219, 'V': 116, 'W': 111, 'X': 86, 'Y': 110, 'Z': 115,
	'a': 2603, 'b': 564, 'c': 1581, 'd': 1551, 'e': 4663, 'f': 755, 'g': 699, 'h': 870, 'i': 2310, 'j': 145,
	'k': 437, 'l': 1474, 'm': 1075, 'n': 3096, 'o': 2366, 'p': 1279, 'q': 167, 'r': 2099, 's': 2761, 't': 3520,
	'u': 1196, 'v': 344, 'w': 418, 'x': 299, 'y': 561, 'z': 95,
}

func liteByteScore(c byte) int {
	if n, ok := liteByteFreq[c]; ok {
		return n
	}
	return 50
}

// index returns the first match at or after from, or -1.
func (f *liteFinder) index(b []byte, from int) int {
	n, a := len(f.pat), f.anchor
	c := f.pat[a]
	if from < 0 {
		from = 0
	}
	i := from + a
	for i < len(b) {
		j := bytes.IndexByte(b[i:], c)
		if j < 0 {
			return -1
		}
		i += j
		st := i - a
		if st+n > len(b) {
			return -1
		}
		if bytes.Equal(b[st:st+n], f.pat) {
			return st
		}
		i++
	}
	return -1
}

// liteKey is a key the SDK looks for with its head-window patterns.
type liteKey struct {
	val   liteFinder // `"name":"`
	valSp liteFinder // `"name": "`
}

func newLiteKey(name string) liteKey {
	return liteKey{val: newLiteFinder(`"` + name + `":"`), valSp: newLiteFinder(`"` + name + `": "`)}
}

var (
	liteKeyTimestamp   = newLiteKey("timestamp")
	liteKeyGitBranch   = newLiteKey("gitBranch")
	liteKeyCwd         = newLiteKey("cwd")
	liteKeyEntrypoint  = newLiteKey("entrypoint")
	liteKeySessionKind = newLiteKey("sessionKind")

	liteParentUUID = newLiteFinder(`"parentUuid":`)
)

const (
	liteTypeCustomTitle = "custom-title"
	liteTypeAITitle     = "ai-title"
	liteTypeTag         = "tag"
	liteTypeRelocated   = "relocated"
)

// The keys a window index records.
const (
	lkCustomTitle = iota
	lkAITitle
	lkLastPrompt
	lkSummary
	lkTag
	lkRelocatedCwd
	lkGitBranch
	lkEntrypoint
	lkType
	lkParentUUID
	lkCount
)

var liteKeyNames = [lkCount]string{"customTitle", "aiTitle", "lastPrompt", "summary", "tag", "relocatedCwd",
	"gitBranch", "entrypoint", "type", "parentUuid"}

// liteIdx records where each `"key":` of the keys above starts in one
// window. Every such pattern ends with `":`, so one pass over the window's
// colons (bytes.IndexByte) finds them all; that is several times cheaper
// than one substring search per key, as JSON is dense in '"' and letters.
type liteIdx struct {
	win    []byte
	titles bool // customTitle and aiTitle recorded
	pos    [lkCount][]int
}

func (x *liteIdx) reset(win []byte) {
	x.win, x.titles = win, false
	for i := range x.pos {
		x.pos[i] = x.pos[i][:0]
	}
}

// buildAll records every key.
func (x *liteIdx) buildAll() {
	win := x.win
	for i := 0; i < len(win); {
		j := bytes.IndexByte(win[i:], ':')
		if j < 0 {
			break
		}
		c := i + j
		i = c + 1
		if c < 3 || win[c-1] != '"' {
			continue
		}
		switch win[c-2] {
		case 'e':
			_ = x.try(c, lkCustomTitle) || x.try(c, lkAITitle) || x.try(c, lkType)
		case 't':
			_ = x.try(c, lkLastPrompt) || x.try(c, lkEntrypoint)
		case 'y':
			x.try(c, lkSummary)
		case 'g':
			x.try(c, lkTag)
		case 'd':
			_ = x.try(c, lkRelocatedCwd) || x.try(c, lkParentUUID)
		case 'h':
			x.try(c, lkGitBranch)
		}
	}
	x.titles = true
}

// try records key k if its pattern ends at the colon c.
func (x *liteIdx) try(c, k int) bool {
	name := liteKeyNames[k]
	st := c - 2 - len(name)
	if st < 0 || x.win[st] != '"' || string(x.win[st+1:c-1]) != name {
		return false
	}
	x.pos[k] = append(x.pos[k], st)
	return true
}

// buildTitles records only `"customTitle":` and `"aiTitle":`, by their
// 'T' (rarer than ':').
func (x *liteIdx) buildTitles() {
	win := x.win
	for i := 0; i < len(win); {
		j := bytes.IndexByte(win[i:], 'T')
		if j < 0 {
			break
		}
		t := i + j
		i = t + 1
		if t >= 7 && t+7 <= len(win) && string(win[t-7:t+7]) == `"customTitle":` {
			x.pos[lkCustomTitle] = append(x.pos[lkCustomTitle], t-7)
		} else if t >= 3 && t+7 <= len(win) && string(win[t-3:t+7]) == `"aiTitle":` {
			x.pos[lkAITitle] = append(x.pos[lkAITitle], t-3)
		}
	}
	x.titles = true
}

// lastKeyed is the SDK's backward line scan: going from the last line of
// the window to the first, the first line that contains `"key":` (and,
// when typ is set, `"type":"typ"`, or with older also `"type": "typ"`) and
// parses as JSON with a string key (and type == typ) gives the value. With
// older, a line that does not parse is retried from its last
// `{"type":"typ"` when the byte before that is not one of `:,[` (two
// entries glued together by a torn write). found is false when no line
// gave a string.
func (x *liteIdx) lastKeyed(k int, typ string, older bool) (string, bool) {
	occ, win := x.pos[k], x.win
	if len(occ) == 0 {
		return "", false
	}
	var typePats [2]string
	nt := 0
	if typ != "" {
		typePats[0] = `"type":"` + typ + `"`
		nt = 1
		if older {
			typePats[1] = `"type": "` + typ + `"`
			nt = 2
		}
	}
	limit := len(win) + 1
	for j := len(occ) - 1; j >= 0; j-- {
		p := occ[j]
		if p >= limit {
			continue
		}
		ls := bytes.LastIndexByte(win[:p], '\n') + 1
		le := len(win)
		if e := bytes.IndexByte(win[p:], '\n'); e >= 0 {
			le = p + e
		}
		limit = ls
		line := win[ls:le]
		if nt > 0 {
			has := false
			for _, tp := range typePats[:nt] {
				if bytes.Contains(line, []byte(tp)) {
					has = true
					break
				}
			}
			if !has {
				continue
			}
		}
		v, kind := liteFieldOf(line, liteKeyNames[k], typ)
		if kind == liteParseErr && older {
			u := bytes.LastIndex(line, []byte("{"+typePats[0]))
			if u > 0 && !strings.ContainsRune(":,[", rune(line[u-1])) {
				v, kind = liteFieldOf(line[u:], liteKeyNames[k], typ)
			}
		}
		if kind == liteFound {
			return v, true
		}
	}
	return "", false
}

const (
	liteParseErr = -1
	liteAbsent   = 0
	liteFound    = 1
)

// liteFieldOf is JSON.parse(line) then line[key] when it is a string (and
// line.type === typ when typ is set).
func liteFieldOf(line []byte, key, typ string) (string, int) {
	obj, kind := liteParse(line)
	if kind == liteJSONErr {
		return "", liteParseErr
	}
	if kind != liteJSONObject {
		return "", liteAbsent
	}
	if typ != "" {
		t, ok := liteGetString(obj, "type")
		if !ok || t != typ {
			return "", liteAbsent
		}
	}
	v, ok := liteGetString(obj, key)
	if !ok {
		return "", liteAbsent
	}
	return v, liteFound
}

// liteFirstValue is the SDK's raw extraction of the first `"key":"…"`
// (then, only if that finds nothing closed, `"key": "…"`) in win, without
// parsing the line. The value is JSON-unescaped when it holds a backslash
// and unescaping succeeds.
func liteFirstValue(win []byte, k *liteKey) (string, bool) {
	for _, f := range [2]*liteFinder{&k.val, &k.valSp} {
		o := f.index(win, 0)
		if o < 0 {
			continue
		}
		s := o + len(f.pat)
		for i := s; i < len(win); {
			if win[i] == '\\' {
				i += 2
				continue
			}
			if win[i] == '"' {
				return liteUnescapeLoose(win[s:i]), true
			}
			i++
		}
	}
	return "", false
}

// lastValueFrom is the SDK's raw extraction of the last `"key":"…"` or
// `"key": "…"` whose value closes, scanning from start and stepping past
// each value (each form on its own).
func (x *liteIdx) lastValueFrom(k, start int) (string, bool) {
	win, occ := x.win, x.pos[k]
	l0 := len(liteKeyNames[k]) + 3 // len(`"key":`)
	best := -1
	var val []byte
	for _, spaced := range [2]bool{false, true} {
		i := start
		for _, a := range occ {
			if a < i {
				continue
			}
			l := a + l0
			if spaced {
				if l+1 >= len(win) || win[l] != ' ' || win[l+1] != '"' {
					continue
				}
				l += 2
			} else {
				if l >= len(win) || win[l] != '"' {
					continue
				}
				l++
			}
			c := l
			for c < len(win) {
				if win[c] == '\\' {
					c += 2
					continue
				}
				if win[c] == '"' {
					if a > best {
						val, best = win[l:c], a
					}
					break
				}
				c++
			}
			i = c + 1
		}
	}
	if best < 0 {
		return "", false
	}
	return liteUnescapeLoose(val), true
}

// lastValue is the SDK's tail extraction (gitBranch, entrypoint): look for
// `","key":"` in the last 8192 characters first and scan from there, else
// scan the whole window.
func (x *liteIdx) lastValue(k int) (string, bool) {
	win := x.win
	from := liteOffsetFromEnd(win, 8192)
	n := len(liteKeyNames[k]) + 4 // len(`"key":"`)
	for _, p := range x.pos[k] {
		o := p - 2
		if o < from || p+n > len(win) || win[p+n-1] != '"' || win[o] != '"' || win[o+1] != ',' {
			continue
		}
		// The first `","key":"` at or after from.
		if o > 0 && win[o-1] != '\\' && !(o+1 >= n && string(win[o+1-n:o+1]) == string(win[p:p+n])) {
			if v, ok := x.lastValueFrom(k, o+2); ok {
				return v, true
			}
		}
		break
	}
	return x.lastValueFrom(k, 0)
}

// liteOffsetFromEnd returns the byte offset of the character that starts
// n UTF-16 units before the end of win (0 when win is shorter), as
// e.length - n indexes the decoded string.
func liteOffsetFromEnd(win []byte, n int) int {
	if len(win) <= n {
		// Bytes >= UTF-16 units, so the string is at most n units long.
		return 0
	}
	start := len(win) - n
	ascii := true
	tail := win[start:]
	for len(tail) >= 8 {
		if binary.LittleEndian.Uint64(tail)&0x8080808080808080 != 0 {
			ascii = false
			break
		}
		tail = tail[8:]
	}
	for _, c := range tail {
		if c >= 0x80 {
			ascii = false
		}
	}
	if ascii {
		return start
	}
	units := 0
	i := len(win)
	for i > 0 {
		r, size := utf8.DecodeLastRune(win[:i])
		u := 1
		if r >= 0x10000 {
			u = 2
		}
		if units+u > n {
			// e.length-n falls on the low half of a surrogate pair: the
			// search effectively starts after the pair.
			return i
		}
		units += u
		i -= size
		if units == n {
			return i
		}
	}
	return 0
}

// liteUnescapeLoose is the SDK's value decoding for raw extractions: as is
// without a backslash, else JSON.parse of the quoted value, falling back
// to the raw text when that fails.
func liteUnescapeLoose(v []byte) string {
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v)
	}
	if end := liteSkipString(v, -1); end == len(v) {
		if s, ok := liteDecodeString(v, true); ok {
			return s
		}
	}
	return string(v)
}

// liteFirstParsed is the SDK's forward scan for a parsed field (used for
// the recorded cwd): the first line containing `"key":` that parses and
// has a string key.
func liteFirstParsed(win []byte, key string) (string, bool) {
	pat := []byte(`"` + key + `":`)
	for len(win) > 0 {
		line := win
		if i := bytes.IndexByte(win, '\n'); i >= 0 {
			line, win = win[:i], win[i+1:]
		} else {
			win = nil
		}
		if !bytes.Contains(line, pat) {
			continue
		}
		obj, kind := liteParse(line)
		if kind != liteJSONObject {
			continue
		}
		if v, ok := liteGetString(obj, key); ok {
			return v, true
		}
	}
	return "", false
}

// ---------------------------------------------------------------------------
// First prompt

// liteFirstPrompt is the SDK's first-prompt rule over the head: the first
// line holding "type":"user" without "tool_result", "isMeta":true or
// "isCompactSummary":true that parses and yields a prompt text; else the
// first <command-name> seen on the way.
func liteFirstPrompt(head []byte) string {
	var fallback string
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		if liteUserType.index(line, 0) < 0 && liteUserTypeSp.index(line, 0) < 0 {
			continue
		}
		if liteToolResult.index(line, 0) >= 0 ||
			liteIsMetaTrue.index(line, 0) >= 0 || liteIsMetaTrueSp.index(line, 0) >= 0 ||
			liteCompactTrue.index(line, 0) >= 0 || liteCompactTrueSp.index(line, 0) >= 0 {
			continue
		}
		obj, kind := liteParse(line)
		if kind != liteJSONObject {
			continue
		}
		if p, ok := litePromptOfEntry(obj, &fallback); ok {
			return p
		}
	}
	return fallback
}

// litePromptOfEntry is the SDK's prompt extraction from one parsed entry:
// a user entry that is not meta or a compact summary, whose content is a
// string or blocks without a tool_result.
func litePromptOfEntry(obj []byte, fallback *string) (string, bool) {
	var vals [4][]byte
	liteMembers(obj, litePromptKeys[:], vals[:])
	typ, isMeta, compact, msg := vals[0], vals[1], vals[2], vals[3]
	if t, ok := liteStringValue(typ); !ok || t != "user" {
		return "", false
	}
	if string(isMeta) == "true" || string(compact) == "true" {
		return "", false
	}
	if msg == nil || !liteTruthy(msg) {
		return "", false
	}
	var content []byte
	if msg[0] == '{' {
		content, _ = liteGet(msg, "content")
	}
	return litePromptOfContent(content, fallback)
}

var (
	litePromptKeys    = [4]string{"type", "isMeta", "isCompactSummary", "message"}
	liteUserType      = newLiteFinder(`"type":"user"`)
	liteUserTypeSp    = newLiteFinder(`"type": "user"`)
	liteToolResult    = newLiteFinder(`"tool_result"`)
	liteIsMetaTrue    = newLiteFinder(`"isMeta":true`)
	liteIsMetaTrueSp  = newLiteFinder(`"isMeta": true`)
	liteCompactTrue   = newLiteFinder(`"isCompactSummary":true`)
	liteCompactTrueSp = newLiteFinder(`"isCompactSummary": true`)
)

// litePromptOfContent runs the SDK's text rules over a message content.
func litePromptOfContent(content []byte, fallback *string) (string, bool) {
	var texts []string
	switch {
	case len(content) == 0:
	case content[0] == '"':
		s, _ := liteDecodeString(content, false)
		texts = append(texts, s)
	case content[0] == '[':
		stop := false
		liteEachElem(content, func(el []byte) bool {
			if el[0] != '{' && el[0] != '[' {
				return true
			}
			if el[0] == '[' {
				return true
			}
			t, tok := liteGetString(el, "type")
			if tok && t == "tool_result" {
				stop = true
				return false
			}
			if tok && t == "text" {
				if s, ok := liteGetString(el, "text"); ok {
					texts = append(texts, s)
				}
			}
			return true
		})
		if stop {
			return "", false
		}
	}
	for _, l := range texts {
		c := transcript.JSTrim(strings.ReplaceAll(transcript.UnwrapPastedContent(l), "\n", " "))
		if c == "" {
			continue
		}
		if name, ok := liteCommandName(c); ok {
			if *fallback == "" {
				*fallback = name
			}
			continue
		}
		if in, ok := liteBashInput(c); ok {
			return "! " + transcript.JSTrim(in), true
		}
		if liteLooksLikeTag(c) {
			continue
		}
		if transcript.UTF16Len(c) > 200 {
			c = transcript.JSTrim(transcript.TruncateUTF16(c, 200)) + "…"
		}
		return c, true
	}
	return "", false
}

func liteIndexFrom(s, sub string, from int) int {
	if from < 0 {
		from = 0
	}
	if from > len(s) {
		return -1
	}
	i := strings.Index(s[from:], sub)
	if i < 0 {
		return -1
	}
	return from + i
}

// liteCommandName is /<command-name>(.*?)<\/command-name>/: '.' stops at
// JS line terminators.
func liteCommandName(c string) (string, bool) {
	const open, end = "<command-name>", "</command-name>"
	from := 0
	for {
		o := liteIndexFrom(c, open, from)
		if o < 0 {
			return "", false
		}
		st := o + len(open)
		cl := strings.Index(c[st:], end)
		if cl < 0 {
			return "", false
		}
		seg := c[st : st+cl]
		if !strings.ContainsAny(seg, "\n\r\u2028\u2029") {
			return seg, true
		}
		from = o + 1
	}
}

// liteBashInput is /<bash-input>([\s\S]*?)<\/bash-input>/.
func liteBashInput(c string) (string, bool) {
	o := strings.Index(c, "<bash-input>")
	if o < 0 {
		return "", false
	}
	st := o + len("<bash-input>")
	cl := strings.Index(c[st:], "</bash-input>")
	if cl < 0 {
		return "", false
	}
	return c[st : st+cl], true
}

// liteLooksLikeTag is the SDK's skip test
// /^(?:\s*<[a-z][\w-]*[\s>]|\[Request interrupted by user[^\]]*\])/.
func liteLooksLikeTag(c string) bool {
	i := 0
	for i < len(c) {
		r, size := utf8.DecodeRuneInString(c[i:])
		if !transcript.IsJSSpace(r) {
			break
		}
		i += size
	}
	if i+1 < len(c) && c[i] == '<' && c[i+1] >= 'a' && c[i+1] <= 'z' {
		j := i + 2
		for j < len(c) && (c[j] == '-' || c[j] == '_' || c[j] >= 'a' && c[j] <= 'z' || c[j] >= 'A' && c[j] <= 'Z' || c[j] >= '0' && c[j] <= '9') {
			j++
		}
		if j < len(c) {
			r, _ := utf8.DecodeRuneInString(c[j:])
			if r == '>' || transcript.IsJSSpace(r) {
				return true
			}
		}
	}
	const intr = "[Request interrupted by user"
	if strings.HasPrefix(c, intr) && strings.IndexByte(c[len(intr):], ']') >= 0 {
		return true
	}
	return false
}

// liteMediaPlaceholder is the SDK's last resort title: "Image" or
// "Document" for the first head line holding "type":"user" (not a
// tool_result, not meta) with an image or document block.
func liteMediaPlaceholder(head []byte) string {
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		if !bytes.Contains(line, []byte(`"type":"user"`)) && !bytes.Contains(line, []byte(`"type": "user"`)) {
			continue
		}
		if bytes.Contains(line, []byte(`"tool_result"`)) ||
			bytes.Contains(line, []byte(`"isMeta":true`)) || bytes.Contains(line, []byte(`"isMeta": true`)) {
			continue
		}
		if bytes.Contains(line, []byte(`"type":"image"`)) || bytes.Contains(line, []byte(`"type": "image"`)) {
			return "Image"
		}
		if bytes.Contains(line, []byte(`"type":"document"`)) || bytes.Contains(line, []byte(`"type": "document"`)) {
			return "Document"
		}
	}
	return ""
}

// ---------------------------------------------------------------------------
// Filters

// programmaticFields returns the entrypoint (first in the head, else last
// in the tail) and the sessionKind of the first head line holding
// "parentUuid": (the whole head when none does).
func (w *liteWorker) programmaticFields(win *liteWin) (entrypoint, kind string) {
	ep, ok := liteFirstValue(win.head, &liteKeyEntrypoint)
	if !ok {
		ep, _ = w.tix.lastValue(lkEntrypoint)
	}
	scope := win.head
	if p := liteParentUUID.index(win.head, 0); p >= 0 {
		ls := bytes.LastIndexByte(win.head[:p], '\n') + 1
		le := len(win.head)
		if e := bytes.IndexByte(win.head[p:], '\n'); e >= 0 {
			le = p + e
		}
		scope = win.head[ls:le]
	}
	kind, _ = liteFirstValue(scope, &liteKeySessionKind)
	return ep, kind
}

func liteProgrammatic(entrypoint, kind string) bool {
	switch entrypoint {
	case "sdk-cli", "sdk-ts", "sdk-py":
		return true
	}
	return kind == "daemon" || kind == "daemon-worker"
}

// continuedIn is the SDK's continued-in check: the newest
// {"type":"continued-in","continuedInSessionId":<uuid>} line of the tail,
// unless a finished assistant reply or a real user prompt comes after it.
func (x *liteIdx) continuedIn() (string, bool) {
	tail := x.win
	found := false
	for _, p := range x.pos[lkType] {
		if bytes.HasPrefix(tail[p+len(`"type":`):], []byte(`"continued-in"`)) {
			found = true
			break
		}
	}
	if !found {
		return "", false
	}
	end := len(tail)
	for end > 0 {
		ls := bytes.LastIndexByte(tail[:end], '\n')
		line := tail[ls+1 : end]
		end = ls
		isCont := bytes.Contains(line, []byte(`"type":"continued-in"`))
		isChat := bytes.Contains(line, []byte(`"type":"user"`)) || bytes.Contains(line, []byte(`"type":"assistant"`))
		if isCont || isChat {
			obj, kind := liteParse(line)
			if kind == liteJSONObject {
				if isCont {
					if t, ok := liteGetString(obj, "type"); ok && t == "continued-in" {
						if id, ok := liteGetString(obj, "continuedInSessionId"); ok {
							if IsSessionID(id) {
								return id, true
							}
							return "", false
						}
					}
				}
				if isChat && liteFinishedTurn(obj) {
					return "", false
				}
			}
		}
		if ls < 0 {
			break
		}
	}
	return "", false
}

// liteFinishedTurn: an assistant row that is not an API error and has a
// string stop_reason, or a user row that yields a prompt.
func liteFinishedTurn(obj []byte) bool {
	if t, ok := liteGetString(obj, "type"); ok && t == "assistant" {
		valid := true
		apiErr := false
		if v, ok := liteGet(obj, "isApiErrorMessage"); ok {
			switch string(v) {
			case "true":
				apiErr = true
			case "false":
			default:
				valid = false
			}
		}
		stop := false
		if m, ok := liteGet(obj, "message"); ok {
			if m[0] != '{' {
				valid = false
			} else if sr, ok := liteGet(m, "stop_reason"); ok {
				switch {
				case sr[0] == '"':
					stop = true
				case string(sr) == "null":
				default:
					valid = false
				}
			}
		}
		if valid {
			return !apiErr && stop
		}
	}
	var fb string
	_, ok := litePromptOfEntry(obj, &fb)
	return ok
}

// continuedTargetLive is the SDK's test that the continuation exists: its
// windows hold "parentUuid":, or (for a file over 64 KiB) the first 16 MiB
// do, or the file is longer than that.
func (w *liteWorker) continuedTargetLive(path string) bool {
	w2 := liteNewWorker()
	win, ok, _ := w2.read(path)
	if !ok {
		return false
	}
	if liteParentUUID.index(win.head, 0) >= 0 || liteParentUUID.index(win.tail, 0) >= 0 {
		return true
	}
	if win.size <= liteWindow {
		return false
	}
	fd, err := liteOpen(path)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	const chunk, maxScan = 1 << 20, 16 << 20
	pat := liteParentUUID.pat
	buf := make([]byte, chunk+len(pat))
	carry := 0
	for off := int64(0); off < maxScan; {
		n, err := litePreadFull(fd, buf[carry:carry+chunk], off)
		if err != nil || n == 0 {
			return false
		}
		end := carry + n
		if bytes.Contains(buf[:end], pat) {
			return true
		}
		carry = min(len(pat), end)
		copy(buf, buf[end-carry:end])
		off += int64(n)
	}
	return true
}

// liteUnderOwn: the recorded cwd is one of the project's own worktrees or
// under one.
func liteUnderOwn(cwd string, own []string) bool {
	if own == nil {
		return false
	}
	r := strings.ReplaceAll(cwd, `\`, "/")
	for _, o := range own {
		s := strings.ReplaceAll(o, `\`, "/")
		if r == s {
			return true
		}
		if !strings.HasSuffix(s, "/") {
			s += "/"
		}
		if strings.HasPrefix(r, s) {
			return true
		}
	}
	return false
}

// liteCollision is the SDK's collision filter: a session whose recorded
// cwd is a different, existing directory with the same sanitized name as
// the project path belongs to that other directory.
type liteCollision struct{}

func (liteCollision) collides(recorded, projectPath string) bool {
	if !liteSameNameOtherPath(recorded, projectPath) {
		return false
	}
	if liteNetworkPath(recorded) || liteNetworkPath(projectPath) {
		return false
	}
	abs, err := filepath.Abs(recorded)
	if err != nil {
		return false
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return false
	}
	return liteSameNameOtherPath(real, liteRealpath(projectPath))
}

func liteSameNameOtherPath(a, b string) bool {
	if liteSanitizeFull(a) != liteSanitizeFull(b) {
		return false
	}
	return strings.ReplaceAll(a, `\`, "/") != strings.ReplaceAll(b, `\`, "/")
}

var liteDotDot = regexp.MustCompile(`(^|[\\/])\.\.([\\/]|$)`)

// liteNetworkPath approximates the SDK's network-path guards: UNC-style
// paths, a ".." segment, /net, /Network and macOS special roots.
func liteNetworkPath(p string) bool {
	if len(p) >= 2 && (p[0] == '/' || p[0] == '\\') && (p[1] == '/' || p[1] == '\\') {
		return true
	}
	if liteDotDot.MatchString(p) {
		return true
	}
	if !strings.HasPrefix(p, "/") {
		return false
	}
	var segs []string
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, s)
		}
	}
	if len(segs) == 0 {
		return false
	}
	switch strings.ToLower(segs[0]) {
	case "net", "network", ".vol", ".file", ".nofollow", ".resolve":
		return true
	}
	return false
}

// liteSanitizeFull is the project-name rule without the 200-character cut:
// every UTF-16 unit outside [A-Za-z0-9] becomes '-'.
func liteSanitizeFull(p string) string {
	b := make([]byte, 0, len(p))
	for _, r := range p {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b = append(b, byte(r))
		case r >= 0x10000:
			b = append(b, '-', '-')
		default:
			b = append(b, '-')
		}
	}
	return string(b)
}

// ---------------------------------------------------------------------------
// Sidecars

// sidecarTitle is <id>/custom-title.json's customTitle, cleaned as the SDK
// cleans it ("" when absent or invalid).
func (w *liteWorker) sidecarTitle(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	obj, kind := liteParse(raw)
	if kind != liteJSONObject {
		return ""
	}
	t, ok := liteGetString(obj, "customTitle")
	if !ok {
		return ""
	}
	return liteCleanTitle(t)
}

// liteCleanTitle: trim, runs of control/format characters and U+2028/2029
// to one space, drop C0/C1 controls, keep 200 code points, trim.
func liteCleanTitle(s string) string {
	s = transcript.JSTrim(s)
	var b strings.Builder
	inRun := false
	for _, r := range s {
		if unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || r == 0x2028 || r == 0x2029 {
			if !inRun {
				b.WriteByte(' ')
				inRun = true
			}
			continue
		}
		inRun = false
		b.WriteRune(r)
	}
	out := make([]rune, 0, 200)
	for _, r := range b.String() {
		if r <= 0x1f || r >= 0x7f && r <= 0x9f {
			continue
		}
		if len(out) == 200 {
			break
		}
		out = append(out, r)
	}
	return transcript.JSTrim(string(out))
}

var liteISODateTime = regexp.MustCompile(`^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-(?:0[1-9]|1\d|2[0-8])))T(?:(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|([+-](?:[01]\d|2[0-3]):[0-5]\d)))$`)

// archived reads <id>/archived.json ({archived: bool, at: ISO datetime},
// at most 4096 bytes, not a symlink) and applies the SDK's rule: archived
// stays true unless a prompt in either window is newer than "at".
func (w *liteWorker) archived(path string, win *liteWin) *bool {
	fd, err := liteOpen(path)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > 4096 {
		return nil
	}
	if cap(w.side) < int(st.Size) {
		w.side = make([]byte, 4096)
	}
	n, err := litePreadFull(fd, w.side[:st.Size], 0)
	if err != nil {
		return nil
	}
	obj, kind := liteParse(w.side[:n])
	if kind != liteJSONObject {
		return nil
	}
	a, ok := liteGet(obj, "archived")
	if !ok || (string(a) != "true" && string(a) != "false") {
		return nil
	}
	at, ok := liteGetString(obj, "at")
	if !ok || !liteISODateTime.MatchString(at) {
		return nil
	}
	atMs, ok := liteDateParse(at)
	if !ok {
		return nil
	}
	res := string(a) == "true"
	if res {
		newer := litePromptAfter(win.tail, atMs) || (!bytes.Equal(win.head, win.tail) && litePromptAfter(win.head, atMs))
		res = !newer
	}
	return &res
}

// litePromptAfter: some line of win is a prompt (a user row or a
// queued_command attachment, as the SDK's schema accepts them) sent after
// atMs.
func litePromptAfter(win []byte, atMs int64) bool {
	for len(win) > 0 {
		line := win
		if i := bytes.IndexByte(win, '\n'); i >= 0 {
			line, win = win[:i], win[i+1:]
		} else {
			win = nil
		}
		if !bytes.Contains(line, []byte(`"user"`)) && !bytes.Contains(line, []byte(`"queued_command"`)) {
			continue
		}
		if bytes.Contains(line, []byte(`"tool_result"`)) {
			continue
		}
		obj, kind := liteParse(line)
		if kind != liteJSONObject {
			continue
		}
		if t, ok := litePromptTime(obj); ok && t > atMs {
			return true
		}
	}
	return false
}

// litePromptTime is the SDK's "when was this prompt sent": the timestamp of
// a human prompt row, validated against its schema.
func litePromptTime(obj []byte) (int64, bool) {
	typ, ok := liteGetString(obj, "type")
	if !ok {
		return 0, false
	}
	ts, ok := liteGetString(obj, "timestamp")
	if !ok {
		return 0, false
	}
	falseOnly := func(o []byte, keys ...string) bool {
		for _, k := range keys {
			if v, ok := liteGet(o, k); ok && string(v) != "false" {
				return false
			}
		}
		return true
	}
	validOrigin := func(v []byte) bool {
		if v[0] != '{' {
			return false
		}
		_, ok := liteGetString(v, "kind")
		return ok
	}
	var content, origin []byte
	var hasContent bool
	switch typ {
	case "user":
		msg, ok := liteGet(obj, "message")
		if !ok || msg[0] != '{' {
			return 0, false
		}
		content, hasContent = liteGet(msg, "content")
		if o, ok := liteGet(obj, "origin"); ok {
			if !validOrigin(o) {
				return 0, false
			}
			origin = o
		}
		if v, ok := liteGet(obj, "promptSource"); ok && v[0] != '"' {
			return 0, false
		}
		for _, k := range []string{"persist", "wakeupSource", "scheduledTaskId"} {
			if _, ok := liteGet(obj, k); ok {
				return 0, false
			}
		}
		if _, ok := liteGet(obj, "turnOrigin"); ok {
			s, ok := liteGetString(obj, "turnOrigin")
			if !ok || (s != "human" && s != "sdk" && s != "unknown") {
				return 0, false
			}
		}
		if v, ok := liteGet(obj, "toolUseResult"); ok && string(v) != "null" {
			return 0, false
		}
		if !falseOnly(obj, "isCompactSummary", "isSidechain", "isVirtual", "isVisibleInTranscriptOnly",
			"isMeta", "textNotTyped", "handedOff", "queueSkipAttachments") {
			return 0, false
		}
	case "attachment":
		if !falseOnly(obj, "isSidechain") {
			return 0, false
		}
		att, ok := liteGet(obj, "attachment")
		if !ok || att[0] != '{' {
			return 0, false
		}
		if t, ok := liteGetString(att, "type"); !ok || t != "queued_command" {
			return 0, false
		}
		content, hasContent = liteGet(att, "prompt")
		if o, ok := liteGet(att, "origin"); ok {
			if !validOrigin(o) {
				return 0, false
			}
			origin = o
		}
		if _, ok := liteGet(att, "commandMode"); ok {
			s, ok := liteGetString(att, "commandMode")
			if !ok || (s != "prompt" && s != "bash") {
				return 0, false
			}
		}
		if !falseOnly(att, "isMeta") {
			return 0, false
		}
	default:
		return 0, false
	}
	if origin != nil {
		if k, _ := liteGetString(origin, "kind"); k != "human" {
			return 0, false
		}
	}
	// The blocks: a string is one text block; otherwise an array of
	// objects with a string type, else none.
	type block struct {
		typ, text string
		hasText   bool
	}
	var blocks []block
	if hasContent && content[0] == '"' {
		s, _ := liteDecodeString(content, false)
		blocks = []block{{typ: "text", text: s, hasText: true}}
	} else if hasContent && content[0] == '[' {
		valid := true
		liteEachElem(content, func(el []byte) bool {
			if el[0] != '{' {
				valid = false
				return false
			}
			t, ok := liteGetString(el, "type")
			if !ok {
				valid = false
				return false
			}
			b := block{typ: t}
			b.text, b.hasText = liteGetString(el, "text")
			blocks = append(blocks, b)
			return true
		})
		if !valid {
			blocks = nil
		}
	}
	texts := make([]string, len(blocks))
	for i, b := range blocks {
		if b.typ == "tool_result" {
			return 0, false
		}
		if b.hasText {
			texts[i] = strings.TrimLeftFunc(b.text, transcript.IsJSSpace)
		}
	}
	var prompt bool
	if origin != nil {
		some, cmd := false, false
		for _, t := range texts {
			some = some || t != ""
			cmd = cmd || strings.HasPrefix(t, "<command-name>")
		}
		prompt = some && !cmd
	} else {
		var fb string
		if hasContent {
			_, prompt = litePromptOfContent(content, &fb)
		}
		for _, t := range texts {
			prompt = prompt || strings.HasPrefix(t, "<command-message>")
		}
	}
	for _, b := range blocks {
		prompt = prompt || b.typ == "image" || b.typ == "document"
	}
	if !prompt {
		return 0, false
	}
	return liteDateParse(ts)
}

// lastEntry returns a copy of the last complete conversation row of the
// tail window (see SessionInfo.LastEntryTail).
func (x *liteIdx) lastEntry() []byte {
	win, occ := x.win, x.pos[lkParentUUID]
	limit := len(win) + 1
	for j := len(occ) - 1; j >= 0; j-- {
		p := occ[j]
		if p >= limit {
			continue
		}
		ls := bytes.LastIndexByte(win[:p], '\n') + 1
		le := len(win)
		if e := bytes.IndexByte(win[p:], '\n'); e >= 0 {
			le = p + e
		}
		limit = ls
		// (The first line of a tail window may be cut; it does not parse.)
		line := win[ls:le]
		if obj, kind := liteParse(line); kind == liteJSONObject {
			switch t, _ := liteGetString(obj, "type"); t {
			case "user", "assistant", "attachment":
				return bytes.Clone(bytes.TrimRight(line, "\r"))
			}
		}
	}
	return nil
}

// ---------------------------------------------------------------------------
// Minimal JSON: validation as strict as JSON.parse, and lookups on
// validated text without building values.

const (
	liteJSONErr = iota
	liteJSONObject
	liteJSONOther // valid, but an array, string, number, literal
)

// liteParse validates line as JSON.parse would and returns the object's
// text when it is an object.
func liteParse(line []byte) ([]byte, int) {
	i := liteWS(line, 0)
	start := i
	end := liteSkipValue(line, i)
	if end < 0 || liteWS(line, end) != len(line) {
		return nil, liteJSONErr
	}
	if line[start] == '{' {
		return line[start:end], liteJSONObject
	}
	return nil, liteJSONOther
}

func liteWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// liteSkipValue returns the end of the value starting at b[i], or -1.
func liteSkipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return liteSkipString(b, i)
	case '{':
		i = liteWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return -1
			}
			if i = liteSkipString(b, i); i < 0 {
				return -1
			}
			if i = liteWS(b, i); i >= len(b) || b[i] != ':' {
				return -1
			}
			if i = liteSkipValue(b, liteWS(b, i+1)); i < 0 {
				return -1
			}
			if i = liteWS(b, i); i >= len(b) {
				return -1
			}
			switch b[i] {
			case ',':
				i = liteWS(b, i+1)
			case '}':
				return i + 1
			default:
				return -1
			}
		}
	case '[':
		i = liteWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1
		}
		for {
			if i = liteSkipValue(b, i); i < 0 {
				return -1
			}
			if i = liteWS(b, i); i >= len(b) {
				return -1
			}
			switch b[i] {
			case ',':
				i = liteWS(b, i+1)
			case ']':
				return i + 1
			default:
				return -1
			}
		}
	case 't':
		return liteLiteral(b, i, "true")
	case 'f':
		return liteLiteral(b, i, "false")
	case 'n':
		return liteLiteral(b, i, "null")
	default:
		return liteSkipNumber(b, i)
	}
}

func liteLiteral(b []byte, i int, lit string) int {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit)
	}
	return -1
}

func liteSkipNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return -1
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		st := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == st {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		st := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == st {
			return -1
		}
	}
	return i
}

// liteSkipString returns the end of the string starting at b[i] (i = -1
// means b is a string's inside without quotes: the end is len(b) when it
// is valid), or -1.
func liteSkipString(b []byte, i int) int {
	inner := i < 0
	i++
	for i < len(b) {
		// Eight bytes at a time while none is '"', '\\' or a control.
		for i+8 <= len(b) && liteSpecialBytes(binary.LittleEndian.Uint64(b[i:])) == 0 {
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			if inner {
				return -1
			}
			return i + 1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !liteIsHex(b[i+2]) || !liteIsHex(b[i+3]) || !liteIsHex(b[i+4]) || !liteIsHex(b[i+5]) {
					return -1
				}
				i += 6
			default:
				return -1
			}
		case c < 0x20:
			return -1
		default:
			i++
		}
	}
	if inner {
		return len(b)
	}
	return -1
}

// liteSpecialBytes has the high bit set in each byte of v that is '"',
// '\\' or below 0x20 (exact, no false positives).
func liteSpecialBytes(v uint64) uint64 {
	const lo7, hi = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	zero := func(x uint64) uint64 { return ^(((x & lo7) + lo7) | x | lo7) }
	ctl := ^(((v & lo7) + 0x6060606060606060) | v) & hi
	return zero(v^0x2222222222222222) | zero(v^0x5c5c5c5c5c5c5c5c) | ctl
}

func liteIsHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// liteEachMember calls fn for the members of a validated object.
func liteEachMember(obj []byte, fn func(key, val []byte) bool) {
	i := liteWS(obj, 1)
	for i < len(obj) && obj[i] == '"' {
		ke := liteSkipString(obj, i)
		key := obj[i:ke]
		vs := liteWS(obj, liteWS(obj, ke)+1)
		ve := liteSkipValue(obj, vs)
		if ve < 0 {
			return
		}
		if !fn(key, obj[vs:ve]) {
			return
		}
		i = liteWS(obj, ve)
		if i < len(obj) && obj[i] == ',' {
			i = liteWS(obj, i+1)
		}
	}
}

// liteEachElem calls fn for the elements of a validated array.
func liteEachElem(arr []byte, fn func(el []byte) bool) {
	i := liteWS(arr, 1)
	for i < len(arr) && arr[i] != ']' {
		e := liteSkipValue(arr, i)
		if e < 0 {
			return
		}
		if !fn(arr[i:e]) {
			return
		}
		i = liteWS(arr, e)
		if i < len(arr) && arr[i] == ',' {
			i = liteWS(arr, i+1)
		}
	}
}

// liteGet returns the value of key in a validated object (the last one
// when repeated, as JSON.parse keeps the last).
func liteGet(obj []byte, key string) ([]byte, bool) {
	var val []byte
	found := false
	liteEachMember(obj, func(k, v []byte) bool {
		if liteKeyIs(k, key) {
			val, found = v, true
		}
		return true
	})
	return val, found
}

func liteKeyIs(raw []byte, key string) bool {
	in := raw[1 : len(raw)-1]
	if bytes.IndexByte(in, '\\') < 0 {
		return string(in) == key
	}
	s, ok := liteDecodeString(raw, false)
	return ok && s == key
}

// liteMembers sets vals[i] to the value of keys[i] in a validated object
// (the last one when repeated; nil when absent), in one pass.
func liteMembers(obj []byte, keys []string, vals [][]byte) {
	for i := range vals {
		vals[i] = nil
	}
	liteEachMember(obj, func(k, v []byte) bool {
		for i, key := range keys {
			if liteKeyIs(k, key) {
				vals[i] = v
			}
		}
		return true
	})
}

// liteStringValue decodes v when it is a string.
func liteStringValue(v []byte) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	return liteDecodeString(v, false)
}

// liteGetString returns key's value when it is a string.
func liteGetString(obj []byte, key string) (string, bool) {
	v, ok := liteGet(obj, key)
	if !ok || v[0] != '"' {
		return "", false
	}
	return liteDecodeString(v, false)
}

// liteTruthy is JavaScript truthiness of a JSON value.
func liteTruthy(v []byte) bool {
	switch {
	case string(v) == "null" || string(v) == "false" || string(v) == `""`:
		return false
	case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
		for _, c := range v {
			if c == 'e' || c == 'E' {
				break
			}
			if c >= '1' && c <= '9' {
				return true
			}
		}
		return false
	}
	return true
}

// liteDecodeString decodes a JSON string (with its quotes, or without when
// bare). Unpaired surrogate escapes become U+FFFD.
func liteDecodeString(v []byte, bare bool) (string, bool) {
	in := v
	if !bare {
		in = v[1 : len(v)-1]
	}
	if bytes.IndexByte(in, '\\') < 0 {
		return string(in), true
	}
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); {
		c := in[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(in) {
			return "", false
		}
		switch in[i+1] {
		case '"', '\\', '/':
			out = append(out, in[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := liteHexRune(in, i+2)
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r < 0xdc00 && i+6 <= len(in) && in[i] == '\\' && in[i+1] == 'u' {
					if r2, ok := liteHexRune(in, i+2); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
						out = utf8.AppendRune(out, utf16.DecodeRune(r, r2))
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", false
		}
		i += 2
	}
	return string(out), true
}

func liteHexRune(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

// ---------------------------------------------------------------------------
// JavaScript string semantics

// liteDateParse is Date.parse for the ISO-8601 forms V8 accepts
// (YYYY[-MM[-DD]][THH:mm[:ss[.f…]]][Z|±HH:mm|±HHmm], also ±YYYYYY years,
// lowercase t/z and a space for T). A date alone is UTC, a date-time
// without an offset local time. Other text gives false (V8's fallback
// parser for free-form dates is not reproduced).
func liteDateParse(s string) (int64, bool) {
	i := 0
	num := func(n int) (int, bool) {
		if i+n > len(s) {
			return 0, false
		}
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		i += n
		return v, true
	}
	var year int
	var ok bool
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg := s[0] == '-'
		i++
		if year, ok = num(6); !ok {
			return 0, false
		}
		if neg {
			if year == 0 {
				return 0, false
			}
			year = -year
		}
	} else if year, ok = num(4); !ok {
		return 0, false
	}
	month, day := 1, 1
	if i < len(s) && s[i] == '-' {
		i++
		if month, ok = num(2); !ok {
			return 0, false
		}
		if i < len(s) && s[i] == '-' {
			i++
			if day, ok = num(2); !ok {
				return 0, false
			}
		}
	}
	hour, minute, sec, ms := 0, 0, 0, 0
	hasTime, utc := false, true
	offset := 0
	if i < len(s) && (s[i] == 'T' || s[i] == 't' || s[i] == ' ') {
		i++
		hasTime = true
		if hour, ok = num(2); !ok {
			return 0, false
		}
		if i >= len(s) || s[i] != ':' {
			return 0, false
		}
		i++
		if minute, ok = num(2); !ok {
			return 0, false
		}
		if i < len(s) && s[i] == ':' {
			i++
			if sec, ok = num(2); !ok {
				return 0, false
			}
			if i < len(s) && s[i] == '.' {
				i++
				st := i
				for i < len(s) && s[i] >= '0' && s[i] <= '9' {
					if i-st < 3 {
						ms = ms*10 + int(s[i]-'0')
					}
					i++
				}
				if i == st {
					return 0, false
				}
				for d := i - st; d < 3; d++ {
					ms *= 10
				}
			}
		}
		utc = false
	}
	if i < len(s) {
		switch s[i] {
		case 'Z', 'z':
			i++
			utc = true
		case '+', '-':
			if !hasTime {
				return 0, false
			}
			sign := 1
			if s[i] == '-' {
				sign = -1
			}
			i++
			oh, ok := num(2)
			if !ok {
				return 0, false
			}
			if i < len(s) && s[i] == ':' {
				i++
			}
			om, ok := num(2)
			if !ok || oh > 23 || om > 59 {
				return 0, false
			}
			offset = sign * (oh*60 + om)
			utc = true
		}
	}
	if i != len(s) {
		return 0, false
	}
	if month < 1 || month > 12 || day < 1 || day > 31 || minute > 59 || sec > 59 {
		return 0, false
	}
	if hour > 24 || hour == 24 && (minute != 0 || sec != 0 || ms != 0) {
		return 0, false
	}
	loc := time.UTC
	if !utc {
		loc = time.Local
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, ms*1e6, loc).UnixMilli() - int64(offset)*60000
	if t > 8.64e15 || t < -8.64e15 {
		return 0, false
	}
	return t, true
}
