package listing

// The listing: what the Claude Agent SDK's listSessions and
// getSessionInfo report for the sessions of a config folder, computed the
// way the SDK computes it (0.3.337): from a 64 KiB head window and a 64 KiB
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
	"context"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// ---------------------------------------------------------------------------
// Listing

// Cand is one transcript file to read (the SDK's per-file entry).
type Cand struct {
	ID          string
	Path        string
	ProjectDir  string
	ProjectPath string   // "" when listing every project
	Own         []string // the project path and its worktrees (worktree mode only)
	HasSideDir  bool     // <projectDir>/<id> exists (maybe): sidecars worth trying
	mtime       int64    // from stat, paginated mode only
}

// List returns the sessions the SDK's listSessions would return for opt,
// newest first. Files that cannot be read are skipped, as the SDK skips
// them; the error is only for a cancelled context.
func (l Layout) List(ctx context.Context, opt sessions.ListOptions) ([]sessions.Info, error) {
	limit, offset := opt.Limit, opt.Offset
	if limit < 0 {
		limit = 0
	}
	if offset < 0 {
		offset = 0
	}
	paginated := limit > 0 || offset > 0
	var cands []Cand
	if opt.Dir != "" {
		cands = l.DirCands(ctx, opt.Dir, opt.IncludeWorktrees)
	} else {
		cands = l.AllCands()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !paginated {
		return listAll(ctx, l.FS, cands, opt)
	}
	return listPage(ctx, l.FS, cands, opt, limit, offset)
}

// listAll is List without a page: every file read, one copy per id,
// newest first.
func listAll(ctx context.Context, fsys layout.FS, cands []Cand, opt sessions.ListOptions) ([]sessions.Info, error) {
	var cw Collision
	res := make([]sessions.Info, len(cands))
	ok := make([]bool, len(cands))
	Parallel(ctx, fsys, len(cands), func(w *Worker, i int) {
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
	out := make([]sessions.Info, 0, len(cands))
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

// listPage is List with a page: stat everything, sort by mtime, read
// in order until the page is full.
func listPage(ctx context.Context, fsys layout.FS, cands []Cand, opt sessions.ListOptions, limit, offset int) ([]sessions.Info, error) {
	var cw Collision
	keep := make([]bool, len(cands))
	Parallel(ctx, fsys, len(cands), func(_ *Worker, i int) {
		if mt, ok := mtimeOf(fsys, cands[i].Path); ok {
			cands[i].mtime = mt
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
		return live[a].ID > live[b].ID
	})
	want := math.MaxInt
	if limit > 0 {
		want = limit
	}
	batch := 4 * workers()
	if batch < 32 {
		batch = 32
	}
	var out []sessions.Info
	seen := make(map[string]bool)
	skipped := 0
	for start := 0; start < len(live) && len(out) < want; start += batch {
		end := min(start+batch, len(live))
		res := make([]sessions.Info, end-start)
		ok := make([]bool, end-start)
		Parallel(ctx, fsys, end-start, func(w *Worker, i int) {
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
		out = []sessions.Info{}
	}
	return out, nil
}

// Info is getSessionInfo: the session's SessionInfo, or nil where the SDK
// returns undefined (not a UUID, no non-empty file, a sidechain-first file,
// nothing to title it with). It applies none of the listing's filters.
func (l Layout) Info(ctx context.Context, sessionID, dir string) (*sessions.Info, error) {
	if !claudedir.IsSessionID(sessionID) {
		return nil, nil
	}
	path, projectPath := l.find(ctx, sessionID, dir)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, nil
	}
	w := newWorker(l.FS)
	info, ok, err := w.readLite(path, sessionID, projectPath, true)
	if err != nil || !ok {
		return nil, nil
	}
	return &info, nil
}

// ReadInfo reads one transcript's head and tail windows (and its sidecars)
// and derives its SessionInfo as getSessionInfo does. projectPath is the
// cwd fallback ("" for none). ok is false when the SDK would skip the file:
// a name that is not a UUID, not a regular file (symlinks are not
// followed), empty, sidechain-first, or nothing to title it with.
func ReadInfo(path string, projectPath string) (sessions.Info, bool, error) {
	return ReadInfoFS(nil, path, projectPath)
}

// ReadInfoFS is ReadInfo on the files of fsys (nil: the disk).
func ReadInfoFS(fsys layout.FS, path string, projectPath string) (sessions.Info, bool, error) {
	base := filepath.Base(path)
	if !strings.HasSuffix(base, ".jsonl") || !claudedir.IsSessionID(strings.TrimSuffix(base, ".jsonl")) {
		return sessions.Info{}, false, nil
	}
	w := newWorker(fsys)
	return w.readLite(path, strings.TrimSuffix(base, ".jsonl"), projectPath, true)
}

// mtimeOf is a file's mtime in ms (stat, links followed), as the
// paginated listing sorts by it.
func mtimeOf(fsys layout.FS, path string) (int64, bool) {
	if fsys != nil {
		fi, err := fsys.Stat(path)
		if err != nil {
			return 0, false
		}
		mt := fi.ModTime()
		return millis(mt.Unix(), int64(mt.Nanosecond())), true
	}
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return 0, false
	}
	return millis(st.Mtim.Sec, st.Mtim.Nsec), true
}
