package jsonl

// The sessions index: one cache for the listing (every field List derives
// from a transcript's two windows) and for the sessions' lifecycle (seed
// 002's SessionMetadata: status, timestamps, model, tools, last message).
//
// It is derived from the transcripts and can be thrown away at any time:
// nothing is ever taken from it without checking it against the file it
// describes, and a session on disk is never missing from a listing because
// of it. Every listing with the index reads the project folders (one
// ReadDir each, as List does) and lstats every transcript; an entry is used
// only when the file's size, mtime, ctime and inode are what the entry was
// made from (and, for a session with a <id>/ folder, those of its two
// sidecars too). Anything else is read again from the file. Entries for
// files that are gone are dropped. A missing, unreadable or corrupt index
// is rebuilt from the files.
//
// What depends on more than the file (the query's project path, the
// programmatic filter, the collision filter, whether a continued-in target
// exists, whether a live writer holds the session) is never cached: it is
// worked out on each listing from what the entry holds, exactly as List
// works it out from the windows.
//
// The file, <config dir>/scribe/index/sessions.idx, little-endian:
//
//	 0 ┌──────────────────────────────┐
//	   │ magic "SCRIBEIX"     8 bytes │
//	 8 │ format version       u32     │
//	12 │ entries              u32     │
//	16 │ len(A)               u64     │
//	24 │ len(B)               u64     │
//	32 │ crc32c(A)            u32     │
//	36 │ crc32c(B)            u32     │
//	40 │ code stamp           16 B    │  which build derived the entries
//	56 │ reserved             u32     │
//	60 │ crc32c(header[0:60]) u32     │
//	64 ├──────────────────────────────┤
//	   │ A: the listing               │  folders → files: stat keys, the
//	   │                              │  SessionInfo fields, filter inputs
//	   ├──────────────────────────────┤
//	   │ B: the lifecycle             │  per listed file, in A's order:
//	   │                              │  LastEntryTail, model, tools, ...
//	   └──────────────────────────────┘
//
// A listing that needs neither LastEntryTail nor the lifecycle fields
// (scribe ls --json) reads the header and A only. Strings are a uvarint
// length and the bytes; numbers are (u)varints. The code stamp changes
// with the build (VCS revision, else the executable's identity), so an
// index written by other derivation code is rebuilt, not trusted.
//
// Writers replace the file atomically (temporary file, fsync, rename,
// fsync of the folder); two processes listing at once both write whole
// indexes and the last rename wins, which loses nothing but cache.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/jsonv"
)

// IndexStats says what a listing with the index did.
type IndexStats struct {
	// Files is the number of transcript files looked at (each lstat-ed).
	Files int `json:"files"`
	// Hits were answered from the index, Misses read from the file (new,
	// changed, or changed too recently to be trusted).
	Hits   int `json:"hits"`
	Misses int `json:"misses"`
	// Dropped counts entries of files that are gone.
	Dropped int `json:"dropped"`
	// Rebuilt is true when no usable index was there (missing, unreadable,
	// corrupt, written by other code) or a rebuild was asked for: every
	// file was read.
	Rebuilt bool `json:"rebuilt"`
	// Discarded says why an existing index file was not used ("" when it
	// was, or when there was none): worth a log line.
	Discarded string `json:"discarded,omitempty"`
	// Saved is true when the index file was written.
	Saved bool `json:"saved"`
	// SaveError is why writing it failed; the listing is right anyway.
	SaveError string `json:"saveError,omitempty"`
}

// IndexOptions tune a listing with the index.
type IndexOptions struct {
	// SkipLastEntryTail leaves SessionInfo.LastEntryTail nil: the listing
	// then reads only the index's first section (what `scribe ls --json`
	// needs).
	SkipLastEntryTail bool
	// Progress, when set, is called as transcript files are read:
	// done of total. Calls come from one goroutine at a time.
	Progress func(done, total int)
}

// SessionStatus is a session's lifecycle status (seed 002).
type SessionStatus string

// The statuses.
const (
	// StatusActive: a live writer holds the session's lock.
	StatusActive SessionStatus = "active"
	// StatusInterrupted: the end of the conversation says the last turn
	// did not finish (core.ClassifyAndRepair).
	StatusInterrupted SessionStatus = "interrupted"
	// StatusCompleted: anything else.
	StatusCompleted SessionStatus = "completed"
)

// Valid reports whether s is one of the three statuses.
func (s SessionStatus) Valid() bool {
	return s == StatusActive || s == StatusInterrupted || s == StatusCompleted
}

// SessionRecord is one session as seed 002's sessions.json describes it
// (SessionMetadata), derived from its transcript. MarshalJSON writes that
// shape; Info and Interruption are scribe's own and stay out of it.
type SessionRecord struct {
	ID string
	// Name is the session's title: the listing's summary (custom title,
	// last prompt, summary or first prompt, as the SDK chooses it).
	Name   string
	Status SessionStatus
	// CreatedAt is the first timestamp of the head window (else
	// UpdatedAt); UpdatedAt the last timestamp of the tail window (else the
	// file's mtime). CompletedAt, only for a completed session, is the
	// timestamp of its last user or assistant row (else the mtime).
	CreatedAt, UpdatedAt, CompletedAt time.Time
	// ProjectPath is the session's working directory (the listing's cwd);
	// TranscriptPath its main transcript.
	ProjectPath, TranscriptPath string
	Metadata                    SessionRecordMetadata
	// Interruption is how the tail ends (core.ClassifyAndRepair's class),
	// also for an active session; State what that leaves the session
	// doing (core.StateFromTail), from the same rows.
	Interruption core.Interruption
	State        core.State
	// Info is the session's listing entry.
	Info SessionInfo
}

// SessionRecordMetadata is SessionMetadata.metadata. In the records of
// Sessions and ExportSessionsJSON, Model and Tools are the whole main
// transcript's: the model of most of its assistant turns (synthetic rows
// skipped; a tie goes to the one used last) and the sorted union of the
// names of its tool_use blocks. The records of a listing (ListRecords,
// Records), which reads only the transcript's 64 KiB tail window, give
// that window's: the message.model of its last assistant row and the tools
// of its assistant rows. LastMessageID is the uuid of the last user or
// assistant row.
type SessionRecordMetadata struct {
	Model         string   `json:"model,omitempty"`
	Tools         []string `json:"tools,omitempty"`
	LastMessageID string   `json:"lastMessageId,omitempty"`
}

// MarshalJSON writes the record as seed 002's SessionMetadata, dates as
// JavaScript's toISOString writes them.
func (r SessionRecord) MarshalJSON() ([]byte, error) {
	type metadata SessionRecordMetadata
	out := struct {
		ID             string        `json:"id"`
		Name           string        `json:"name"`
		Status         SessionStatus `json:"status"`
		CreatedAt      string        `json:"createdAt"`
		UpdatedAt      string        `json:"updatedAt"`
		CompletedAt    string        `json:"completedAt,omitempty"`
		ProjectPath    string        `json:"projectPath"`
		TranscriptPath string        `json:"transcriptPath"`
		Metadata       metadata      `json:"metadata"`
	}{
		ID: r.ID, Name: r.Name, Status: r.Status,
		CreatedAt: ixISO(r.CreatedAt), UpdatedAt: ixISO(r.UpdatedAt),
		ProjectPath: r.ProjectPath, TranscriptPath: r.TranscriptPath, Metadata: metadata(r.Metadata),
	}
	if !r.CompletedAt.IsZero() {
		out.CompletedAt = ixISO(r.CompletedAt)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func ixISO(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// IndexFile is where the sessions index lives.
func (l Layout) IndexFile() string {
	return filepath.Join(l.ConfigDir, "scribe", "index", "sessions.idx")
}

// ListIndexed is List answered through the index: the same sessions, with
// the same fields, filters and order, plus what the index did.
func (l Layout) ListIndexed(ctx context.Context, opt ListOptions) ([]SessionInfo, IndexStats, error) {
	return l.ListIndexedWith(ctx, opt, IndexOptions{})
}

// ListIndexedWith is ListIndexed with options.
func (l Layout) ListIndexedWith(ctx context.Context, opt ListOptions, iopt IndexOptions) ([]SessionInfo, IndexStats, error) {
	infos, _, st, err := l.ixList(ctx, opt, !iopt.SkipLastEntryTail, false, iopt.Progress)
	return infos, st, err
}

// ListRecords is ListIndexed with each session's lifecycle record.
func (l Layout) ListRecords(ctx context.Context, opt ListOptions) ([]SessionRecord, IndexStats, error) {
	infos, lives, st, err := l.ixList(ctx, opt, true, false, nil)
	if err != nil {
		return nil, st, err
	}
	act := l.activeProbe()
	out := make([]SessionRecord, len(infos))
	for i := range infos {
		out[i] = lives[i].record(infos[i], act)
	}
	return out, st, nil
}

// Sessions is the lifecycle record of every listed session of every
// project (List with no Dir, programmatic sessions included), newest
// first, through the index, with the whole session's model and tools
// (each main transcript is read once for them).
func (l Layout) Sessions(ctx context.Context) ([]SessionRecord, error) {
	recs, _, err := l.ListRecords(ctx, ListOptions{IncludeProgrammatic: true, IncludeWorktrees: true})
	if err != nil {
		return nil, err
	}
	if err := ixFillWhole(ctx, recs); err != nil {
		return nil, err
	}
	return recs, nil
}

// Records derives the lifecycle records of sessions listed without the
// index (from List): it reads each transcript's tail window again.
func (l Layout) Records(ctx context.Context, infos []SessionInfo) ([]SessionRecord, error) {
	lives := make([]*ixLife, len(infos))
	liteParallel(ctx, len(infos), func(w *liteWorker, i int) {
		win, ok, err := w.read(infos[i].Path)
		if err != nil || !ok {
			lives[i] = &ixLife{tail: infos[i].LastEntryTail, class: core.InterruptionNone, state: core.StateIdle}
			return
		}
		lives[i] = ixLifeOf(win.tail, infos[i].LastEntryTail)
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	act := l.activeProbe()
	out := make([]SessionRecord, len(infos))
	for i := range infos {
		out[i] = lives[i].record(infos[i], act)
	}
	return out, nil
}

// RebuildIndex throws the index away and builds it again from every
// transcript of every project.
func (l Layout) RebuildIndex(ctx context.Context) (IndexStats, error) {
	return l.RebuildIndexWith(ctx, IndexOptions{})
}

// RebuildIndexWith is RebuildIndex with options (Progress).
func (l Layout) RebuildIndexWith(ctx context.Context, iopt IndexOptions) (IndexStats, error) {
	_, _, st, err := l.ixList(ctx, ListOptions{IncludeProgrammatic: true}, true, true, iopt.Progress)
	return st, err
}

// ExportSessionsJSON writes every session's record as seed 002's
// sessions.json: a JSON array of SessionMetadata, newest first.
func (l Layout) ExportSessionsJSON(w io.Writer) error {
	recs, err := l.Sessions(context.Background())
	if err != nil {
		return err
	}
	if recs == nil {
		recs = []SessionRecord{}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(recs)
}

// ---------------------------------------------------------------------------
// Entries

// ixKey identifies one version of a file. ctime catches a rewrite whose
// mtime was set back; the inode a file replaced by another.
type ixKey struct {
	present            bool
	size, mtime, ctime int64 // ns
	ino                uint64
}

func ixKeyOf(st *unix.Stat_t) ixKey {
	return ixKey{present: true, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: st.Ino}
}

// ixEntry is what the index knows of one transcript file.
type ixEntry struct {
	key ixKey
	// sideDir is liteCand.hasSideDir when the entry was made; sideTitle
	// and sideArch identify <id>/custom-title.json and <id>/archived.json
	// then (only looked at with sideDir).
	sideDir             bool
	sideTitle, sideArch ixKey
	// listed is false for a file List never shows whatever the query (not
	// readable as a session, sidechain-first, nothing to title it with).
	listed bool
	// info is derive's result with no project path (Cwd "" when the file
	// records none) and without Path, ProjectDir, ProjectPath and
	// LastEntryTail (which is in life).
	info SessionInfo
	// recCwd is the cwd the collision filter compares (tail relocated,
	// else the first head cwd); contIn the continued-in target, if any.
	recCwd   string
	recFound bool
	contIn   string
	// life is the second section; nil until loaded.
	life *ixLife
	// racy: changed too recently for its key to be trusted; used once,
	// never saved.
	racy bool
	// mark: seen by the listing at hand.
	mark bool
}

// ixLife is the lifecycle part of an entry, from the tail window.
type ixLife struct {
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

// ixRacyWindow: a file whose ctime is this close to the moment it was
// looked at may change again within the same timestamp tick, without its
// key changing; such entries are used but not saved.
var ixRacyWindow = time.Second

// ixCodeStamp identifies the code that derives entries.
var ixCodeStamp = sync.OnceValue(func() [16]byte {
	var s string
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		modified := false
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				rev = kv.Value
			case "vcs.modified":
				modified = kv.Value == "true"
			}
		}
		v := bi.Main.Version
		// A build from a modified tree says so in neither the revision
		// nor (beyond "+dirty") the version: only the binary tells.
		switch {
		case modified || strings.Contains(v, "dirty"):
		case rev != "":
			s = "rev:" + rev
		case v != "" && v != "(devel)":
			s = "mod:" + v + bi.Main.Sum
		}
	}
	if s == "" {
		s = "exe:unknown"
		if exe, err := os.Executable(); err == nil {
			var st unix.Stat_t
			if unix.Stat(exe, &st) == nil {
				s = fmt.Sprintf("exe:%s:%d:%d:%d:%d", exe, st.Size, st.Mtim.Nano(), st.Ctim.Nano(), st.Ino)
			}
		}
	}
	h := sha256.Sum256([]byte("scribe sessions index\x00" + s))
	var out [16]byte
	copy(out[:], h[:])
	return out
})

// ixIndex is the index in memory: folder name (under projects/) → file
// name → entry.
type ixIndex struct {
	folders map[string]map[string]*ixEntry
	// src is the index file the entries came from, kept open to read the
	// second section from the same version of it; listed holds its listed
	// entries in file order.
	src    *os.File
	hdr    ixHeader
	listed []*ixEntry
	bTried bool
}

func (x *ixIndex) get(folder, name string) *ixEntry {
	if m := x.folders[folder]; m != nil {
		return m[name]
	}
	return nil
}

func (x *ixIndex) put(folder, name string, e *ixEntry) {
	m := x.folders[folder]
	if m == nil {
		m = make(map[string]*ixEntry)
		x.folders[folder] = m
	}
	m[name] = e
}

func (x *ixIndex) close() {
	if x.src != nil {
		x.src.Close()
		x.src = nil
	}
}

// ixList is the listing through the index. withLife loads (or derives)
// the second section; rebuild ignores the index file.
func (l Layout) ixList(ctx context.Context, opt ListOptions, withLife, rebuild bool, progress func(done, total int)) ([]SessionInfo, []*ixLife, IndexStats, error) {
	var st IndexStats
	limit, offset := max(opt.Limit, 0), max(opt.Offset, 0)
	var cands []liteCand
	if opt.Dir != "" {
		cands = l.liteDirCands(ctx, opt.Dir, opt.IncludeWorktrees)
	} else {
		cands = l.liteAllCands()
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, st, err
	}
	st.Files = len(cands)

	var x *ixIndex
	hadFile := false
	if rebuild {
		st.Rebuilt = true
	} else {
		var why string
		x, why = l.ixLoad()
		if x == nil {
			st.Rebuilt, st.Discarded = true, why
		}
		hadFile = x != nil || why != ""
	}
	if x == nil {
		x = &ixIndex{folders: map[string]map[string]*ixEntry{}, bTried: true}
	}
	defer x.close()
	if withLife {
		if why := x.loadLife(); why != "" {
			st.Discarded = why
		}
	}

	// Stat every candidate (and its sidecars), in parallel.
	now := time.Now()
	keys := make([]ixKey, len(cands))
	var sides [][2]ixKey // only when some session has a folder
	for i := range cands {
		if cands[i].hasSideDir {
			sides = make([][2]ixKey, len(cands))
			break
		}
	}
	side := func(i int) [2]ixKey {
		if sides == nil {
			return [2]ixKey{}
		}
		return sides[i]
	}
	ixParallel(ctx, len(cands), func(i int) {
		c := &cands[i]
		var s unix.Stat_t
		if unix.Lstat(c.path, &s) != nil {
			return
		}
		keys[i] = ixKeyOf(&s)
		if c.hasSideDir {
			sides[i] = ixSideKeys(c.projectDir, c.id)
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, nil, st, err
	}

	entries := make([]*ixEntry, len(cands))
	var miss []int
	for i := range cands {
		c := &cands[i]
		if !keys[i].present {
			continue // gone since the folder was read: List skips it too
		}
		e := x.get(filepath.Base(c.projectDir), filepath.Base(c.path))
		if e != nil && e.key == keys[i] && e.sideDir == c.hasSideDir &&
			(!c.hasSideDir || (e.sideTitle == sides[i][0] && e.sideArch == sides[i][1])) &&
			(!withLife || !e.listed || e.life != nil) {
			entries[i] = e
			st.Hits++
			continue
		}
		miss = append(miss, i)
	}
	st.Misses = len(miss)

	// Read what the index does not know.
	var done atomic.Int64
	var progMu sync.Mutex
	racyBefore := now.Add(-ixRacyWindow).UnixNano()
	liteParallel(ctx, len(miss), func(w *liteWorker, k int) {
		i := miss[k]
		e, err := ixDerive(w, &cands[i])
		if err == nil {
			e.key, e.sideDir = keys[i], cands[i].hasSideDir
			sk := side(i)
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
	if err := ctx.Err(); err != nil {
		return nil, nil, st, err
	}

	// Update the index: new and changed entries in, vanished ones out.
	changed := st.Rebuilt
	scanned := make(map[string]bool)
	for i := range cands {
		c := &cands[i]
		folder := filepath.Base(c.projectDir)
		scanned[folder] = true
		e := entries[i]
		if e == nil {
			continue
		}
		e.mark = true
		if name := filepath.Base(c.path); x.get(folder, name) != e {
			x.put(folder, name, e)
			changed = changed || !e.racy
		}
	}
	for folder, m := range x.folders {
		if !scanned[folder] {
			// A folder this listing did not read: with every project
			// listed, it is gone or holds no session any more.
			if opt.Dir == "" {
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
	changed = changed || st.Dropped > 0
	// An empty config folder gets no index folder unless asked for.
	if changed && (rebuild || hadFile || len(x.folders) > 0) {
		if why := x.loadLife(); why != "" && st.Discarded == "" {
			st.Discarded = why
		}
		if err := l.ixSave(x); err != nil {
			st.SaveError = err.Error()
		} else {
			st.Saved = true
		}
	}

	// The listing, as List would make it.
	type hit struct {
		e *ixEntry
		c *liteCand
	}
	hits := make([]hit, 0, len(cands))
	var cw liteCollision
	for i := range cands {
		e := entries[i]
		if e == nil || !e.listed {
			continue
		}
		c := &cands[i]
		if !opt.IncludeProgrammatic && liteProgrammatic(e.info.Entrypoint, e.info.SessionKind) {
			continue
		}
		if e.contIn != "" && new(liteWorker).continuedTargetLive(filepath.Join(c.projectDir, e.contIn+".jsonl")) {
			continue
		}
		if c.projectPath != "" && e.recFound && !liteUnderOwn(e.recCwd, c.own) && cw.collides(e.recCwd, c.projectPath) {
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
	out = out[min(offset, len(out)):]
	if limit > 0 && limit < len(out) {
		out = out[:limit]
	}
	infos := make([]SessionInfo, len(out))
	var lives []*ixLife
	if withLife {
		lives = make([]*ixLife, len(out))
	}
	for k, h := range out {
		e, c := h.e, h.c
		info := &infos[k]
		*info = e.info
		info.Path, info.ProjectDir, info.ProjectPath = c.path, c.projectDir, c.projectPath
		if info.Cwd == "" {
			info.Cwd = c.projectPath
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
	return infos, lives, st, nil
}

// ixSideKeys identifies a session's two sidecars, as derive opens them
// (custom-title.json following symlinks, archived.json not).
func ixSideKeys(projectDir, id string) [2]ixKey {
	var out [2]ixKey
	var s unix.Stat_t
	if unix.Stat(filepath.Join(projectDir, id, "custom-title.json"), &s) == nil {
		out[0] = ixKeyOf(&s)
	}
	if unix.Lstat(filepath.Join(projectDir, id, "archived.json"), &s) == nil {
		out[1] = ixKeyOf(&s)
	}
	return out
}

// ixDerive reads one transcript as List's process step does and keeps
// everything the step, and the lifecycle record, need. An error (the file
// could not be read) is not cached: List skips such a file, and so does
// the next listing until it can be read.
func ixDerive(w *liteWorker, c *liteCand) (*ixEntry, error) {
	win, ok, err := w.read(c.path)
	if err != nil {
		return nil, err
	}
	e := &ixEntry{}
	if !ok {
		return e, nil
	}
	w.index(&win)
	e.contIn, _ = w.tix.continuedIn()
	info, ok := w.derive(c.id, c.path, &win, "", c.hasSideDir)
	if !ok {
		return e, nil
	}
	e.listed = true
	e.recCwd, e.recFound = w.recCwd, w.recFound
	if !e.recFound {
		e.recCwd, e.recFound = liteFirstParsed(win.head, "cwd")
	}
	e.life = ixLifeOf(win.tail, info.LastEntryTail)
	info.Path, info.ProjectDir, info.ProjectPath, info.LastEntryTail = "", "", "", nil
	e.info = info
	return e, nil
}

// ixParallel runs fn(i) for i in [0,n) on GOMAXPROCS goroutines.
func ixParallel(ctx context.Context, n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n && ctx.Err() == nil; i++ {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// ---------------------------------------------------------------------------
// The lifecycle fields

// ixMaxClassRows bounds the rows handed to ClassifyAndRepair.
const ixMaxClassRows = 32

// ixLifeOf derives the lifecycle fields from a tail window: the last
// timestamp, the last user or assistant row (uuid, timestamp), the last
// assistant model, the tools used, and the class of the conversation's
// end. The class comes from core.ClassifyAndRepair on the window's last
// user, assistant and attachment rows, back to the start of the last
// assistant message (the rows it decides on; system and progress rows, which
// it skips, are left out).
func ixLifeOf(tail, lastEntry []byte) *ixLife {
	lf, rows := ixLifeRows(tail, lastEntry)
	lf.class, lf.state = ixClass(rows)
	return lf
}

// ixLifeRows is ixLifeOf without the class, and the rows to classify,
// newest first.
func ixLifeRows(tail, lastEntry []byte) (*ixLife, []core.Entry) {
	lf := &ixLife{tail: lastEntry, class: core.InterruptionNone, state: core.StateIdle}
	var rows []core.Entry // newest first
	classDone := false
	finalID, haveFinal := "", false
	keys := []string{"type", "timestamp", "uuid", "message", "isApiErrorMessage"}
	vals := make([][]byte, len(keys))
	end := len(tail)
	for end > 0 && !(classDone && lf.lastTSok && lf.model != "" && lf.lastMsg != "") {
		ls := bytes.LastIndexByte(tail[:end], '\n')
		line := bytes.TrimRight(tail[ls+1:end], "\r")
		end = max(ls, 0)
		if len(line) == 0 {
			continue
		}
		obj, ok := jsonv.Value(line)
		if !ok || obj[0] != '{' {
			continue
		}
		jsonv.Lookup(obj, keys, vals)
		typ, _ := jsonv.String(vals[0])
		if !lf.lastTSok {
			if ts, ok := jsonv.String(vals[1]); ok {
				lf.lastTS, lf.lastTSok = liteDateParse(ts)
			}
		}
		if typ != "user" && typ != "assistant" && typ != "attachment" {
			continue
		}
		var msg []byte
		if m := vals[3]; len(m) > 0 && m[0] == '{' {
			msg = m
		}
		apiErr := string(vals[4]) == "true"
		if typ != "attachment" && lf.lastMsg == "" {
			if u, ok := jsonv.String(vals[2]); ok && u != "" {
				lf.lastMsg = u
				if ts, ok := jsonv.String(vals[1]); ok {
					lf.convTS, lf.convTSok = liteDateParse(ts)
				}
			}
		}
		if typ == "assistant" && lf.model == "" && msg != nil {
			if m, ok := jsonv.GetString(msg, "model"); ok && m != "" && m != "<synthetic>" {
				lf.model = m
			}
		}
		if classDone {
			continue
		}
		if typ == "assistant" && !apiErr {
			id := ""
			if msg != nil {
				id, _ = jsonv.GetString(msg, "id")
			}
			if haveFinal && (finalID == "" || id != finalID) {
				classDone = true
				continue
			}
			haveFinal, finalID = true, id
		}
		if e, err := core.ParseEntry(line); err == nil {
			rows = append(rows, e)
		}
		if len(rows) >= ixMaxClassRows {
			classDone = true
		}
	}
	lf.tools = ixToolsOf(tail)
	return lf, rows
}

// ixClass classifies the rows (newest first) as core.ClassifyAndRepair
// and core.StateFromTail do, with a shortcut for the commonest end.
func ixClass(rows []core.Entry) (core.Interruption, core.State) {
	if len(rows) == 0 || ixPlainReply(rows) {
		return core.InterruptionNone, core.StateIdle
	}
	return ixClassify(rows)
}

// ixClassify is core.ClassifyAndRepair's class and core.StateFromTail's
// state of the rows (newest first).
func ixClassify(rows []core.Entry) (core.Interruption, core.State) {
	conv := slices.Clone(rows)
	slices.Reverse(conv)
	rec := core.ClassifyAndRepair(conv, core.RecoveryOptions{
		Now:     time.Unix(0, 0),
		NewUUID: func() string { return "00000000-0000-4000-8000-000000000000" },
	})
	return rec.Class, core.StateFromTail(conv)
}

var ixTypeMessage = []string{"type", "message"}

// ixPlainReply is a shortcut for the commonest end, a finished reply:
// the newest row is an assistant row that is not an API error, and no
// assistant row collected (the last message's rows) holds a tool_use.
// ClassifyAndRepair says none for it (the newest row decides and no tool
// call of the last message lacks a result) and StateFromTail idle;
// TestIndexPlainReplyShortcut checks that they still do. rows are newest
// first.
func ixPlainReply(rows []core.Entry) bool {
	if rows[0].Type != core.TypeAssistant {
		return false
	}
	for i := range rows {
		r := &rows[i]
		if r.Type != core.TypeAssistant {
			continue
		}
		if bytes.Contains(r.Raw, []byte(`"tool_use"`)) || bytes.Contains(r.Raw, []byte(`"isApiErrorMessage"`)) {
			return false
		}
	}
	return true
}

// ixToolsOf is the sorted names of the tool_use blocks of the window's
// assistant rows.
func ixToolsOf(win []byte) []string {
	var set map[string]bool
	vals := make([][]byte, len(ixTypeMessage))
	from := 0
	for {
		p := bytes.Index(win[from:], []byte(`"tool_use"`))
		if p < 0 {
			break
		}
		p += from
		ls := bytes.LastIndexByte(win[:p], '\n') + 1
		le := len(win)
		if e := bytes.IndexByte(win[p:], '\n'); e >= 0 {
			le = p + e
		}
		from = le
		line := bytes.TrimRight(win[ls:le], "\r")
		if !bytes.Contains(line, []byte(`"assistant"`)) {
			continue
		}
		obj, ok := jsonv.Value(line)
		if !ok || obj[0] != '{' {
			continue
		}
		jsonv.Lookup(obj, ixTypeMessage, vals)
		if t, _ := jsonv.String(vals[0]); t != "assistant" {
			continue
		}
		msg := vals[1]
		if len(msg) == 0 || msg[0] != '{' {
			continue
		}
		content, ok := jsonv.Get(msg, "content")
		if !ok || content[0] != '[' {
			continue
		}
		for el := range jsonv.Elems(content) {
			if el[0] != '{' {
				continue
			}
			if t, _ := jsonv.GetString(el, "type"); t == "tool_use" {
				if name, ok := jsonv.GetString(el, "name"); ok && name != "" {
					if set == nil {
						set = make(map[string]bool)
					}
					set[name] = true
				}
			}
		}
		if from >= len(win) {
			break
		}
	}
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// activeProbe tells whether a live writer holds a session's lock: a
// non-blocking shared flock on <config dir>/scribe/locks/<id>.lock fails
// while the writer's exclusive one is held. Only sessions with a lock
// file are probed (one ReadDir of the folder). The probe holds the lock
// for the time of two system calls; a writer starting at that very moment
// with no lock wait would report the session busy.
func (l Layout) activeProbe() func(id string) bool {
	dir := filepath.Dir(l.LockFile("x"))
	ents, err := os.ReadDir(dir)
	if err != nil {
		return func(string) bool { return false }
	}
	have := make(map[string]bool, len(ents))
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".lock"); ok {
			have[id] = true
		}
	}
	return func(id string) bool {
		if !have[id] {
			return false
		}
		return sessionLocked(filepath.Join(dir, id+".lock"))
	}
}

// sessionLocked probes one lock file.
func sessionLocked(path string) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	for {
		err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err == nil {
		_ = unix.Flock(fd, unix.LOCK_UN)
		return false
	}
	return errors.Is(err, unix.EWOULDBLOCK)
}

// record builds a session's record from its listing entry and lifecycle
// fields; lf may be nil (nothing known of the tail).
func (lf *ixLife) record(info SessionInfo, active func(string) bool) SessionRecord {
	if lf == nil {
		lf = &ixLife{class: core.InterruptionNone, state: core.StateIdle}
	}
	r := SessionRecord{
		ID: info.SessionID, Name: info.Summary, ProjectPath: info.Cwd, TranscriptPath: info.Path,
		Interruption: lf.class, State: lf.state, Info: info,
		Metadata: SessionRecordMetadata{Model: lf.model, Tools: slices.Clone(lf.tools), LastMessageID: lf.lastMsg},
	}
	mtime := time.UnixMilli(info.LastModified).UTC()
	r.UpdatedAt = mtime
	if lf.lastTSok {
		r.UpdatedAt = time.UnixMilli(lf.lastTS).UTC()
	}
	r.CreatedAt = r.UpdatedAt
	if info.CreatedAt != nil {
		r.CreatedAt = time.UnixMilli(*info.CreatedAt).UTC()
	}
	switch {
	case active != nil && active(info.SessionID):
		r.Status = StatusActive
	case lf.class != core.InterruptionNone:
		r.Status = StatusInterrupted
	default:
		r.Status = StatusCompleted
		r.CompletedAt = mtime
		if lf.convTSok {
			r.CompletedAt = time.UnixMilli(lf.convTS).UTC()
		}
	}
	return r
}

// ---------------------------------------------------------------------------
// The file

const (
	ixMagic      = "SCRIBEIX"
	ixVersion    = 2
	ixHeaderSize = 64
	// ixMaxSection bounds what a header may claim, so a damaged one cannot
	// make the reader allocate without limit.
	ixMaxSection = 1 << 32
)

var ixCRC = crc32.MakeTable(crc32.Castagnoli)

type ixHeader struct {
	count        uint32
	lenA, lenB   uint64
	crcA, crcB   uint32
	stamp        [16]byte
	sectionBBase int64
}

func (h *ixHeader) encode() []byte {
	b := make([]byte, ixHeaderSize)
	copy(b, ixMagic)
	binary.LittleEndian.PutUint32(b[8:], ixVersion)
	binary.LittleEndian.PutUint32(b[12:], h.count)
	binary.LittleEndian.PutUint64(b[16:], h.lenA)
	binary.LittleEndian.PutUint64(b[24:], h.lenB)
	binary.LittleEndian.PutUint32(b[32:], h.crcA)
	binary.LittleEndian.PutUint32(b[36:], h.crcB)
	copy(b[40:56], h.stamp[:])
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], ixCRC))
	return b
}

func ixDecodeHeader(b []byte) (ixHeader, string) {
	var h ixHeader
	if len(b) < ixHeaderSize {
		return h, "short header"
	}
	if string(b[:8]) != ixMagic {
		return h, "not a scribe index (bad magic)"
	}
	if crc32.Checksum(b[:60], ixCRC) != binary.LittleEndian.Uint32(b[60:]) {
		return h, "header checksum mismatch"
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != ixVersion {
		return h, fmt.Sprintf("format version %d, want %d", v, ixVersion)
	}
	h.count = binary.LittleEndian.Uint32(b[12:])
	h.lenA = binary.LittleEndian.Uint64(b[16:])
	h.lenB = binary.LittleEndian.Uint64(b[24:])
	h.crcA = binary.LittleEndian.Uint32(b[32:])
	h.crcB = binary.LittleEndian.Uint32(b[36:])
	copy(h.stamp[:], b[40:56])
	if h.lenA > ixMaxSection || h.lenB > ixMaxSection {
		return h, "section length out of range"
	}
	h.sectionBBase = ixHeaderSize + int64(h.lenA)
	return h, ""
}

// ixLoad opens and decodes the index's header and first section. It
// returns nil and why when there is no usable index ("" when there is no
// file at all).
func (l Layout) ixLoad() (*ixIndex, string) {
	f, err := os.Open(l.IndexFile())
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, ""
		}
		return nil, "unreadable: " + err.Error()
	}
	x, why := ixLoadFile(f)
	if x == nil {
		f.Close()
	}
	return x, why
}

func ixLoadFile(f *os.File) (*ixIndex, string) {
	hb := make([]byte, ixHeaderSize)
	if _, err := io.ReadFull(f, hb); err != nil {
		return nil, "corrupt: short header"
	}
	h, why := ixDecodeHeader(hb)
	if why != "" {
		return nil, "corrupt: " + why
	}
	if h.stamp != ixCodeStamp() {
		return nil, "written by another build of scribe"
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, "unreadable: " + err.Error()
	}
	if uint64(st.Size) != ixHeaderSize+h.lenA+h.lenB {
		return nil, fmt.Sprintf("corrupt: file is %d bytes, header says %d", st.Size, ixHeaderSize+h.lenA+h.lenB)
	}
	a, crc, err := ixReadString(f, ixHeaderSize, int64(h.lenA))
	if err != nil {
		return nil, "corrupt: short first section"
	}
	if crc != h.crcA {
		return nil, "corrupt: first section checksum mismatch"
	}
	x, err := ixDecodeA(a, h.count)
	if err != nil {
		return nil, "corrupt: " + err.Error()
	}
	x.src, x.hdr = f, h
	return x, ""
}

// ixReadString reads n bytes at off into a string, and their checksum,
// through a small buffer (the section is held once, not twice).
func ixReadString(f *os.File, off, n int64) (string, uint32, error) {
	var sb strings.Builder
	sb.Grow(int(n))
	buf := make([]byte, min(n, 64<<10))
	var crc uint32
	for done := int64(0); done < n; {
		k := min(int64(len(buf)), n-done)
		if _, err := f.ReadAt(buf[:k], off+done); err != nil {
			return "", 0, err
		}
		crc = crc32.Update(crc, ixCRC, buf[:k])
		sb.Write(buf[:k])
		done += k
	}
	return sb.String(), crc, nil
}

// loadLife reads the second section into the listed entries. On failure
// the entries stay without it (and are read again from their files);
// the reason is returned for the log.
func (x *ixIndex) loadLife() string {
	if x.bTried || x.src == nil {
		return ""
	}
	x.bTried = true
	b := make([]byte, x.hdr.lenB)
	if _, err := x.src.ReadAt(b, x.hdr.sectionBBase); err != nil {
		return "corrupt: short second section"
	}
	if crc32.Checksum(b, ixCRC) != x.hdr.crcB {
		return "corrupt: second section checksum mismatch"
	}
	lives, err := ixDecodeB(b, len(x.listed))
	if err != nil {
		return "corrupt: " + err.Error()
	}
	for i, e := range x.listed {
		e.life = lives[i]
	}
	return ""
}

// forgetIndexed drops the index entries of files moved out of a project
// folder (rm, gc, relocate) in the same step as the move, and reports how
// many it dropped. No index, or one that cannot be used, is left to the
// next listing to rebuild (it drops entries of missing files anyway).
func (l Layout) forgetIndexed(folder string, names ...string) (int, error) {
	x, _ := l.ixLoad()
	if x == nil {
		return 0, nil
	}
	defer x.close()
	n := 0
	for _, name := range names {
		if m := x.folders[folder]; m != nil && m[name] != nil {
			delete(m, name)
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	if err := l.ixSave(x); err != nil {
		return 0, fmt.Errorf("update the sessions index: %w", err)
	}
	return n, nil
}

// ixSave writes the index atomically. Entries without their lifecycle
// part (its section could not be read) are left out.
func (l Layout) ixSave(x *ixIndex) error {
	x.loadLife()
	a, b, n := ixEncode(x)
	h := ixHeader{count: uint32(n), lenA: uint64(len(a)), lenB: uint64(len(b)),
		crcA: crc32.Checksum(a, ixCRC), crcB: crc32.Checksum(b, ixCRC), stamp: ixCodeStamp()}
	path := l.IndexFile()
	ixSweepTemps(filepath.Dir(path))
	if err := replaceFile(path, h.encode(), a, b); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	return nil
}

// ixSweepTemps removes temporary files that a writer which died left
// behind (older than a minute: a live writer's is younger).
func ixSweepTemps(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.Contains(e.Name(), ".tmp-") {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Minute {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// Entry flags.
const (
	ixfSideDir = 1 << iota
	ixfListed
	ixfRecFound
	ixfCreatedAt
	ixfArchived
	ixfArchivedTrue
)

// Lifecycle flags.
const (
	ixlLastTS = 1 << iota
	ixlConvTS
	ixlTail
)

var (
	ixClasses = []core.Interruption{core.InterruptionNone, core.InterruptedPrompt, core.InterruptedTurn}
	ixStates  = []core.State{core.StateIdle, core.StateRunning, core.StateRequiresAction}
)

type ixEnc struct{ b []byte }

func (e *ixEnc) uv(v uint64)    { e.b = binary.AppendUvarint(e.b, v) }
func (e *ixEnc) v(v int64)      { e.b = binary.AppendVarint(e.b, v) }
func (e *ixEnc) str(s string)   { e.uv(uint64(len(s))); e.b = append(e.b, s...) }
func (e *ixEnc) bytes(b []byte) { e.uv(uint64(len(b))); e.b = append(e.b, b...) }
func (e *ixEnc) key(k ixKey) {
	e.v(k.size)
	e.v(k.mtime)
	e.v(k.ctime)
	e.uv(k.ino)
}

// ixEncode writes the two sections: folders and files in name order,
// racy entries and listed entries without a lifecycle part left out.
func ixEncode(x *ixIndex) (a, b []byte, n int) {
	var ea, eb ixEnc
	folders := make([]string, 0, len(x.folders))
	for f, m := range x.folders {
		if len(m) > 0 {
			folders = append(folders, f)
		}
	}
	sort.Strings(folders)
	ea.uv(uint64(len(folders)))
	for _, folder := range folders {
		m := x.folders[folder]
		names := make([]string, 0, len(m))
		for name, e := range m {
			if !e.racy && (!e.listed || e.life != nil) {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		ea.str(folder)
		ea.uv(uint64(len(names)))
		for _, name := range names {
			e := m[name]
			n++
			ea.str(name)
			ea.key(e.key)
			var fl uint64
			if e.sideDir {
				fl |= ixfSideDir
			}
			if e.listed {
				fl |= ixfListed
			}
			if e.recFound {
				fl |= ixfRecFound
			}
			if e.info.CreatedAt != nil {
				fl |= ixfCreatedAt
			}
			if e.info.Archived != nil {
				fl |= ixfArchived
				if *e.info.Archived {
					fl |= ixfArchivedTrue
				}
			}
			ea.uv(fl)
			if e.sideDir {
				for _, k := range []ixKey{e.sideTitle, e.sideArch} {
					if !k.present {
						ea.uv(0)
						continue
					}
					ea.uv(1)
					ea.key(k)
				}
			}
			if !e.listed {
				continue
			}
			in := &e.info
			for _, s := range []string{in.SessionID, in.Summary, in.CustomTitle, in.FirstPrompt, in.GitBranch,
				in.Cwd, in.Tag, in.Entrypoint, in.SessionKind, e.recCwd, e.contIn} {
				ea.str(s)
			}
			ea.v(in.LastModified)
			ea.v(in.FileSize)
			if in.CreatedAt != nil {
				ea.v(*in.CreatedAt)
			}

			lf := e.life
			var ll uint64
			if lf.lastTSok {
				ll |= ixlLastTS
			}
			if lf.convTSok {
				ll |= ixlConvTS
			}
			if lf.tail != nil {
				ll |= ixlTail
			}
			eb.uv(ll)
			eb.bytes(lf.tail)
			eb.str(lf.model)
			eb.str(lf.lastMsg)
			eb.uv(uint64(len(lf.tools)))
			for _, t := range lf.tools {
				eb.str(t)
			}
			if lf.lastTSok {
				eb.v(lf.lastTS)
			}
			if lf.convTSok {
				eb.v(lf.convTS)
			}
			eb.uv(uint64(max(slices.Index(ixClasses, lf.class), 0)))
			eb.uv(uint64(max(slices.Index(ixStates, lf.state), 0)))
		}
	}
	return ea.b, eb.b, n
}

// ixDec reads a section: the first from a string (its strings are cut out
// of it, no allocation each), the second from bytes (byte fields are
// slices of it).
type ixDec struct {
	s   string // the first section, or
	b   []byte // the second
	off int
	err error
}

func (d *ixDec) len() int {
	if d.b != nil {
		return len(d.b)
	}
	return len(d.s)
}

func (d *ixDec) at(i int) byte {
	if d.b != nil {
		return d.b[i]
	}
	return d.s[i]
}

func (d *ixDec) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%s at byte %d", what, d.off)
	}
}

// uv reads a uvarint (binary.Uvarint's encoding).
func (d *ixDec) uv() uint64 {
	if d.err != nil {
		return 0
	}
	var v uint64
	var shift uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if d.off >= d.len() {
			break
		}
		c := d.at(d.off)
		d.off++
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			return v | uint64(c)<<shift
		}
		v |= uint64(c&0x7f) << shift
		shift += 7
	}
	d.fail("bad number")
	return 0
}

// v reads a varint (zig-zag, as binary.Varint).
func (d *ixDec) v() int64 {
	ux := d.uv()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// span returns the bounds of the next length-prefixed field.
func (d *ixDec) span() (int, int) {
	n := d.uv()
	if d.err != nil {
		return 0, 0
	}
	if n > uint64(d.len()-d.off) {
		d.fail("length out of range")
		return 0, 0
	}
	s := d.off
	d.off += int(n)
	return s, d.off
}

func (d *ixDec) str() string {
	s, e := d.span()
	if d.b == nil {
		return d.s[s:e]
	}
	return string(d.b[s:e])
}

func (d *ixDec) bytes() []byte {
	s, e := d.span()
	if d.b == nil {
		return []byte(d.s[s:e])
	}
	return d.b[s:e:e]
}

func (d *ixDec) key() ixKey {
	return ixKey{present: true, size: d.v(), mtime: d.v(), ctime: d.v(), ino: d.uv()}
}

// count reads an element count, refusing one the rest of the section
// could not hold (each element takes at least one byte).
func (d *ixDec) count() int {
	n := d.uv()
	if n > uint64(d.len()-d.off) {
		d.fail("count out of range")
		return 0
	}
	return int(n)
}

func ixDecodeA(a string, count uint32) (*ixIndex, error) {
	d := &ixDec{s: a}
	x := &ixIndex{folders: make(map[string]map[string]*ixEntry)}
	total := 0
	nf := d.count()
	for range nf {
		folder := d.str()
		n := d.count()
		if d.err != nil {
			break
		}
		if _, dup := x.folders[folder]; dup {
			return nil, fmt.Errorf("folder %s twice", folder)
		}
		m := make(map[string]*ixEntry, n)
		x.folders[folder] = m
		for range n {
			name := d.str()
			e := &ixEntry{key: d.key()}
			fl := d.uv()
			e.sideDir = fl&ixfSideDir != 0
			if e.sideDir {
				for _, k := range []*ixKey{&e.sideTitle, &e.sideArch} {
					switch d.uv() {
					case 0:
					case 1:
						*k = d.key()
					default:
						d.fail("bad sidecar key")
					}
				}
			}
			if fl&ixfListed != 0 {
				e.listed = true
				in := &e.info
				for _, p := range []*string{&in.SessionID, &in.Summary, &in.CustomTitle, &in.FirstPrompt, &in.GitBranch,
					&in.Cwd, &in.Tag, &in.Entrypoint, &in.SessionKind, &e.recCwd, &e.contIn} {
					*p = d.str()
				}
				e.recFound = fl&ixfRecFound != 0
				in.LastModified = d.v()
				in.FileSize = d.v()
				if fl&ixfCreatedAt != 0 {
					v := d.v()
					in.CreatedAt = &v
				}
				if fl&ixfArchived != 0 {
					v := fl&ixfArchivedTrue != 0
					in.Archived = &v
				}
				x.listed = append(x.listed, e)
			}
			if d.err != nil {
				return nil, d.err
			}
			if _, dup := m[name]; dup {
				return nil, fmt.Errorf("file %s/%s twice", folder, name)
			}
			m[name] = e
			total++
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if d.off != len(a) {
		return nil, errors.New("trailing bytes in the first section")
	}
	if total != int(count) {
		return nil, fmt.Errorf("%d entries, header says %d", total, count)
	}
	return x, nil
}

func ixDecodeB(b []byte, n int) ([]*ixLife, error) {
	if n < 0 {
		return nil, fmt.Errorf("second section: negative entry count %d", n)
	}
	d := &ixDec{b: b}
	if b == nil {
		d.b = []byte{}
	}
	out := make([]*ixLife, 0, min(n, len(b)))
	for range n {
		lf := &ixLife{}
		ll := d.uv()
		lf.tail = d.bytes()
		if ll&ixlTail == 0 {
			lf.tail = nil
		}
		lf.model = d.str()
		lf.lastMsg = d.str()
		if nt := d.count(); nt > 0 {
			lf.tools = make([]string, nt)
			for i := range lf.tools {
				lf.tools[i] = d.str()
			}
		}
		if ll&ixlLastTS != 0 {
			lf.lastTS, lf.lastTSok = d.v(), true
		}
		if ll&ixlConvTS != 0 {
			lf.convTS, lf.convTSok = d.v(), true
		}
		c, st := d.uv(), d.uv()
		if c >= uint64(len(ixClasses)) || st >= uint64(len(ixStates)) {
			d.fail("bad class")
		}
		if d.err != nil {
			return nil, d.err
		}
		lf.class, lf.state = ixClasses[c], ixStates[st]
		out = append(out, lf)
	}
	if d.off != len(b) {
		return nil, errors.New("trailing bytes in the second section")
	}
	return out, nil
}

// String describes the stats for a log line.
func (s IndexStats) String() string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(s.Files) + " files, " + strconv.Itoa(s.Hits) + " hits, " +
		strconv.Itoa(s.Misses) + " read, " + strconv.Itoa(s.Dropped) + " dropped")
	if s.Rebuilt {
		b.WriteString(", rebuilt")
	}
	if s.Discarded != "" {
		b.WriteString(" (old index discarded: " + s.Discarded + ")")
	}
	if s.SaveError != "" {
		b.WriteString("; not saved: " + s.SaveError)
	}
	return b.String()
}
