package jsonl

// The lite listing: what the Claude Agent SDK's listSessions and
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
	// Nested is set for a child session (Claude Code 2.1.337 writes
	// "nestedSession":true into its entries): the first head line and the
	// last tail line holding "parentUuid": carry it after "userType":.
	Nested bool `json:"-"`
	// Forked: the first head line holding "parentUuid": carries
	// "forkedFrom" (the session is a fork). Scribe's own, for ls's table.
	Forked bool `json:"-"`
	// LastEntryTail is the last complete line of the tail window that is a
	// conversation row (valid JSON whose top-level "type" is "user",
	// "assistant" or "attachment"; system and progress rows are skipped, as
	// the resume logic skips them), unparsed and copied; nil when the tail
	// holds none. Callers use it to tell whether the last turn was
	// interrupted without reading the file again.
	LastEntryTail []byte `json:"-"`
}

// IsProgrammatic reports whether includeProgrammatic:false would hide the
// session (entrypoint sdk-cli/sdk-ts/sdk-py, sessionKind daemon or
// daemon-worker, or, since SDK 0.3.337, a nested session).
func (s *SessionInfo) IsProgrammatic() bool {
	return liteProgrammatic(s.Entrypoint, s.SessionKind, s.Nested)
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
	if !paginated {
		return liteListAll(ctx, cands, opt)
	}
	return liteListPage(ctx, cands, opt, limit, offset)
}

// liteListAll is List without a page: every file read, one copy per id,
// newest first.
func liteListAll(ctx context.Context, cands []liteCand, opt ListOptions) ([]SessionInfo, error) {
	var cw liteCollision
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

// liteListPage is List with a page: stat everything, sort by mtime, read
// in order until the page is full.
func liteListPage(ctx context.Context, cands []liteCand, opt ListOptions, limit, offset int) ([]SessionInfo, error) {
	var cw liteCollision
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
