package index

// The sessions index: its entries and the listing through them (see index.go).

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/buildid"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/listing"
)

// ---------------------------------------------------------------------------
// Entries

// fileKey identifies one version of a file. ctime catches a rewrite whose
// mtime was set back; the inode a file replaced by another.
type fileKey struct {
	present            bool
	size, mtime, ctime int64 // ns
	ino                uint64
}

func fileKeyOf(st *unix.Stat_t) fileKey {
	return fileKey{present: true, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: st.Ino}
}

// entry is what the index knows of one transcript file.
type entry struct {
	key fileKey
	// sideDir is Cand.HasSideDir when the entry was made; sideTitle
	// and sideArch identify <id>/custom-title.json and <id>/archived.json
	// then (only looked at with sideDir).
	sideDir             bool
	sideTitle, sideArch fileKey
	// listed is false for a file List never shows whatever the query (not
	// readable as a session, sidechain-first, nothing to title it with).
	listed bool
	// info is derive's result with no project path (Cwd "" when the file
	// records none) and without Path, ProjectDir, ProjectPath and
	// LastEntryTail (which is in life).
	info sessions.Info
	// recCwd is the cwd the collision filter compares (tail relocated,
	// else the first head cwd); contIn the continued-in target, if any.
	recCwd   string
	recFound bool
	contIn   string
	// life is the second section; nil until loaded.
	life *lifecycle
	// racy: changed too recently for its key to be trusted; used once,
	// never saved.
	racy bool
	// mark: seen by the listing at hand.
	mark bool
}

// lifecycle is the lifecycle part of an entry, from the tail window.
type lifecycle struct {
	tail    []byte // SessionInfo.LastEntryTail
	model   string
	tools   []string
	lastMsg string
	// lastTS is the last timestamp of the window, convTS that of the last
	// user or assistant row (ms; ok flags say whether there was one).
	lastTS, convTS     int64
	lastTSok, convTSok bool
	class              core.Interruption
	state              core.State
}

// racyWindow: a file whose ctime is this close to the moment it was
// looked at may change again within the same timestamp tick, without its
// key changing; such entries are used but not saved.
var racyWindow = time.Second

// codeStamp identifies the code that derives entries.
var codeStamp = sync.OnceValue(func() [16]byte { return buildid.Stamp("scribe sessions index") })

// memIndex is the index in memory: folder name (under projects/) → file
// name → entry.
type memIndex struct {
	folders map[string]map[string]*entry
	// src is the index file the entries came from, kept open to read the
	// second section from the same version of it; listed holds its listed
	// entries in file order.
	src    *os.File
	hdr    header
	listed []*entry
	bTried bool
}

func (x *memIndex) get(folder, name string) *entry {
	if m := x.folders[folder]; m != nil {
		return m[name]
	}
	return nil
}

func (x *memIndex) put(folder, name string, e *entry) {
	m := x.folders[folder]
	if m == nil {
		m = make(map[string]*entry)
		x.folders[folder] = m
	}
	m[name] = e
}

func (x *memIndex) close() {
	if x.src != nil {
		x.src.Close()
		x.src = nil
	}
}

// listChecked is the listing through the index. withLife loads (or derives)
// the second section; rebuild ignores the index file.
func (l Layout) list(ctx context.Context, opt sessions.ListOptions, withLife, rebuild bool, progress func(done, total int)) ([]sessions.Info, []*lifecycle, sessions.IndexStats, error) {
	var st sessions.IndexStats
	var cands []listing.Cand
	if opt.Dir != "" {
		cands = l.listing().DirCands(ctx, opt.Dir, opt.IncludeWorktrees)
	} else {
		cands = l.listing().AllCands()
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, st, err
	}
	st.Files = len(cands)
	x, hadFile := l.open(rebuild, withLife, &st)
	defer x.close()

	now := time.Now()
	keys, sides := statAll(ctx, cands)
	if err := ctx.Err(); err != nil {
		return nil, nil, st, err
	}
	entries, miss := x.lookup(cands, keys, sides, withLife, &st)
	deriveMisses(ctx, cands, keys, sides, miss, entries, now.Add(-racyWindow).UnixNano(), progress)
	if err := ctx.Err(); err != nil {
		return nil, nil, st, err
	}
	changed := x.update(cands, entries, opt.Dir == "", &st) || st.Rebuilt
	// An empty config folder gets no index folder unless asked for.
	if changed && (rebuild || hadFile || len(x.folders) > 0) {
		if why := x.loadLife(); why != "" && st.Discarded == "" {
			st.Discarded = why
		}
		if err := l.save(x); err != nil {
			st.SaveError = err.Error()
		} else {
			st.Saved = true
		}
	}
	infos, lives := infosOf(hits(cands, entries, opt), withLife)
	return infos, lives, st, nil
}

// open loads the index (unless rebuild), or starts an empty one, noting
// why in st; hadFile is whether an index file was there.
func (l Layout) open(rebuild, withLife bool, st *sessions.IndexStats) (x *memIndex, hadFile bool) {
	if rebuild {
		st.Rebuilt = true
	} else {
		var why string
		x, why = l.load()
		if x == nil {
			st.Rebuilt, st.Discarded = true, why
		}
		hadFile = x != nil || why != ""
	}
	if x == nil {
		x = &memIndex{folders: map[string]map[string]*entry{}, bTried: true}
	}
	if withLife {
		if why := x.loadLife(); why != "" {
			st.Discarded = why
		}
	}
	return x, hadFile
}

// statAll stats every candidate (and its sidecars, in sides, nil when no
// session has a folder), in parallel.
func statAll(ctx context.Context, cands []listing.Cand) (keys []fileKey, sides [][2]fileKey) {
	keys = make([]fileKey, len(cands))
	for i := range cands {
		if cands[i].HasSideDir {
			sides = make([][2]fileKey, len(cands))
			break
		}
	}
	parallel(ctx, len(cands), func(i int) {
		c := &cands[i]
		var s unix.Stat_t
		if unix.Lstat(c.Path, &s) != nil {
			return
		}
		keys[i] = fileKeyOf(&s)
		if c.HasSideDir {
			sides[i] = sideKeys(c.ProjectDir, c.ID)
		}
	})
	return keys, sides
}

// lookup returns the entries the index holds for the candidates as they
// are on disk, and the candidates it has no such entry for (miss),
// counted in st.
func (x *memIndex) lookup(cands []listing.Cand, keys []fileKey, sides [][2]fileKey, withLife bool, st *sessions.IndexStats) (entries []*entry, miss []int) {
	entries = make([]*entry, len(cands))
	for i := range cands {
		c := &cands[i]
		if !keys[i].present {
			continue // gone since the folder was read: List skips it too
		}
		e := x.get(filepath.Base(c.ProjectDir), filepath.Base(c.Path))
		if e != nil && e.key == keys[i] && e.sideDir == c.HasSideDir &&
			(!c.HasSideDir || (e.sideTitle == sides[i][0] && e.sideArch == sides[i][1])) &&
			(!withLife || !e.listed || e.life != nil) {
			entries[i] = e
			st.Hits++
			continue
		}
		miss = append(miss, i)
	}
	st.Misses = len(miss)
	return entries, miss
}

// deriveMisses reads the files of miss into entries; an entry whose file
// or sidecars changed after racyBefore is marked racy (not saved).
func deriveMisses(ctx context.Context, cands []listing.Cand, keys []fileKey, sides [][2]fileKey, miss []int, entries []*entry, racyBefore int64, progress func(done, total int)) {
	var done atomic.Int64
	var progMu sync.Mutex
	listing.Parallel(ctx, nil, len(miss), func(w *listing.Worker, k int) {
		i := miss[k]
		e, err := derive(w, &cands[i])
		if err == nil {
			e.key, e.sideDir = keys[i], cands[i].HasSideDir
			var sk [2]fileKey
			if sides != nil {
				sk = sides[i]
			}
			if e.sideDir {
				e.sideTitle, e.sideArch = sk[0], sk[1]
			}
			e.racy = keys[i].ctime > racyBefore || sk[0].ctime > racyBefore || sk[1].ctime > racyBefore
			entries[i] = e
		}
		if progress != nil {
			n := int(done.Add(1))
			progMu.Lock()
			progress(n, len(miss))
			progMu.Unlock()
		}
	})
}

// update puts new and changed entries in the index and takes vanished ones
// out (whole folders too when allProjects), counting them in st; changed
// is whether the file needs writing.
func (x *memIndex) update(cands []listing.Cand, entries []*entry, allProjects bool, st *sessions.IndexStats) (changed bool) {
	scanned := make(map[string]bool)
	for i := range cands {
		c := &cands[i]
		folder := filepath.Base(c.ProjectDir)
		scanned[folder] = true
		e := entries[i]
		if e == nil {
			continue
		}
		e.mark = true
		if name := filepath.Base(c.Path); x.get(folder, name) != e {
			x.put(folder, name, e)
			changed = changed || !e.racy
		}
	}
	for folder, m := range x.folders {
		if !scanned[folder] {
			// A folder this listing did not read: with every project
			// listed, it is gone or holds no session any more.
			if allProjects {
				st.Dropped += len(m)
				delete(x.folders, folder)
			}
			continue
		}
		for name, e := range m {
			if !e.mark {
				delete(m, name)
				st.Dropped++
			}
		}
	}
	return changed || st.Dropped > 0
}

// hit is a listed session: its entry and its candidate.
type hit struct {
	e *entry
	c *listing.Cand
}

// hits is the listing's page of entries, as List makes it: filtered,
// one copy per id, newest first.
func hits(cands []listing.Cand, entries []*entry, opt sessions.ListOptions) []hit {
	hits := make([]hit, 0, len(cands))
	var cw listing.Collision
	for i := range cands {
		e := entries[i]
		if e == nil || !e.listed {
			continue
		}
		c := &cands[i]
		if !opt.IncludeProgrammatic && e.info.IsProgrammatic() {
			continue
		}
		if e.contIn != "" && new(listing.Worker).ContinuedTargetLive(filepath.Join(c.ProjectDir, e.contIn+".jsonl")) {
			continue
		}
		if c.ProjectPath != "" && e.recFound && !listing.UnderOwn(e.recCwd, c.Own) && cw.Collides(e.recCwd, c.ProjectPath) {
			continue
		}
		hits = append(hits, hit{e, c})
	}
	// Same id in several folders: the newest copy wins, the first one seen
	// on a tie.
	idx := make(map[string]int, len(hits))
	out := hits[:0]
	for _, h := range hits {
		if j, dup := idx[h.e.info.SessionID]; dup {
			if h.e.info.LastModified > out[j].e.info.LastModified {
				out[j] = h
			}
			continue
		}
		idx[h.e.info.SessionID] = len(out)
		out = append(out, h)
	}
	sort.Slice(out, func(a, b int) bool {
		x, y := &out[a].e.info, &out[b].e.info
		if x.LastModified != y.LastModified {
			return x.LastModified > y.LastModified
		}
		return x.SessionID > y.SessionID
	})
	out = out[min(max(opt.Offset, 0), len(out)):]
	if limit := max(opt.Limit, 0); limit > 0 && limit < len(out) {
		out = out[:limit]
	}
	return out
}

// infosOf makes the SessionInfo of each hit (copies: the entries stay the
// index's), and their lifecycle records when withLife.
func infosOf(out []hit, withLife bool) ([]sessions.Info, []*lifecycle) {
	infos := make([]sessions.Info, len(out))
	var lives []*lifecycle
	if withLife {
		lives = make([]*lifecycle, len(out))
	}
	for k, h := range out {
		e, c := h.e, h.c
		info := &infos[k]
		*info = e.info
		info.Path, info.ProjectDir, info.ProjectPath = c.Path, c.ProjectDir, c.ProjectPath
		if info.Cwd == "" {
			info.Cwd = c.ProjectPath
		}
		if info.CreatedAt != nil {
			v := *info.CreatedAt
			info.CreatedAt = &v
		}
		if info.Archived != nil {
			v := *info.Archived
			info.Archived = &v
		}
		if withLife {
			lives[k] = e.life
			if e.life != nil {
				info.LastEntryTail = e.life.tail
			}
		}
	}
	return infos, lives
}

// sideKeys identifies a session's two sidecars, as derive opens them
// (custom-title.json following symlinks, archived.json not).
func sideKeys(projectDir, id string) [2]fileKey {
	var out [2]fileKey
	var s unix.Stat_t
	if unix.Stat(filepath.Join(projectDir, id, "custom-title.json"), &s) == nil {
		out[0] = fileKeyOf(&s)
	}
	if unix.Lstat(filepath.Join(projectDir, id, "archived.json"), &s) == nil {
		out[1] = fileKeyOf(&s)
	}
	return out
}

// derive reads one transcript as List's process step does and keeps
// everything the step, and the lifecycle record, need. An error (the file
// could not be read) is not cached: List skips such a file, and so does
// the next listing until it can be read.
func derive(w *listing.Worker, c *listing.Cand) (*entry, error) {
	win, ok, err := w.Read(c.Path)
	if err != nil {
		return nil, err
	}
	e := &entry{}
	if !ok {
		return e, nil
	}
	w.Index(&win)
	e.contIn, _ = w.ContinuedIn()
	info, ok := w.Derive(c.ID, c.Path, &win, "", c.HasSideDir)
	if !ok {
		return e, nil
	}
	e.listed = true
	e.recCwd, e.recFound = w.RelocatedCwd()
	if !e.recFound {
		e.recCwd, e.recFound = listing.FirstParsed(win.Head, "cwd")
	}
	e.life = lifeOf(win.Tail, info.LastEntryTail)
	info.Path, info.ProjectDir, info.ProjectPath, info.LastEntryTail = "", "", "", nil
	e.info = info
	return e, nil
}

// parallel runs fn(i) for i in [0,n) on GOMAXPROCS goroutines.
func parallel(ctx context.Context, n int, fn func(i int)) {
	_ = durable.Each(ctx, runtime.GOMAXPROCS(0), n, func(_ context.Context, i int) error { fn(i); return nil })
}
