package index

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
	"context"
	"encoding/json"
	"io"
	"path/filepath"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/listing"
)

// IndexFile is where the sessions index lives.
func (l Layout) IndexFile() string {
	return filepath.Join(l.ConfigDir, "scribe", "index", "sessions.idx")
}

// ListIndexed is List answered through the index: the same sessions, with
// the same fields, filters and order, plus what the index did.
func (l Layout) ListIndexed(ctx context.Context, opt sessions.ListOptions) ([]sessions.Info, sessions.IndexStats, error) {
	return l.ListIndexedWith(ctx, opt, sessions.IndexOptions{})
}

// ListIndexedWith is ListIndexed with options.
func (l Layout) ListIndexedWith(ctx context.Context, opt sessions.ListOptions, iopt sessions.IndexOptions) ([]sessions.Info, sessions.IndexStats, error) {
	if !l.OnDisk() {
		// The index caches files on disk; a store read in memory is listed
		// as List lists it.
		opt.SkipLastEntryTail = iopt.SkipLastEntryTail
		infos, err := l.listing().List(ctx, opt)
		return infos, sessions.IndexStats{Files: len(infos), Misses: len(infos)}, err
	}
	infos, _, st, err := l.list(ctx, opt, !iopt.SkipLastEntryTail, false, iopt.Progress)
	return infos, st, err
}

// ListRecords is ListIndexed with each session's lifecycle record.
func (l Layout) ListRecords(ctx context.Context, opt sessions.ListOptions) ([]sessions.Record, sessions.IndexStats, error) {
	if !l.OnDisk() {
		infos, st, err := l.ListIndexed(ctx, opt)
		if err != nil {
			return nil, st, err
		}
		recs, err := l.Records(ctx, infos)
		return recs, st, err
	}
	infos, lives, st, err := l.list(ctx, opt, true, false, nil)
	if err != nil {
		return nil, st, err
	}
	act := l.ActiveProbe()
	out := make([]sessions.Record, len(infos))
	for i := range infos {
		out[i] = lives[i].record(infos[i], act)
	}
	return out, st, nil
}

// Sessions is the lifecycle record of every listed session of every
// project (List with no Dir, programmatic sessions included), newest
// first, through the index, with the whole session's model and tools
// (each main transcript is read once for them).
func (l Layout) Sessions(ctx context.Context) ([]sessions.Record, error) {
	recs, _, err := l.ListRecords(ctx, sessions.ListOptions{IncludeProgrammatic: true, IncludeWorktrees: true})
	if err != nil {
		return nil, err
	}
	if err := fillWhole(ctx, l.FS, recs); err != nil {
		return nil, err
	}
	return recs, nil
}

// Records derives the lifecycle records of sessions listed without the
// index (from List): it reads each transcript's tail window again.
func (l Layout) Records(ctx context.Context, infos []sessions.Info) ([]sessions.Record, error) {
	lives := make([]*lifecycle, len(infos))
	listing.Parallel(ctx, l.FS, len(infos), func(w *listing.Worker, i int) {
		win, ok, err := w.Read(infos[i].Path)
		if err != nil || !ok {
			lives[i] = &lifecycle{tail: infos[i].LastEntryTail, class: core.InterruptionNone, state: core.StateIdle}
			return
		}
		lives[i] = lifeOf(win.Tail, infos[i].LastEntryTail)
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	act := l.ActiveProbe()
	out := make([]sessions.Record, len(infos))
	for i := range infos {
		out[i] = lives[i].record(infos[i], act)
	}
	return out, nil
}

// RebuildIndex throws the index away and builds it again from every
// transcript of every project.
func (l Layout) RebuildIndex(ctx context.Context) (sessions.IndexStats, error) {
	return l.RebuildIndexWith(ctx, sessions.IndexOptions{})
}

// RebuildIndexWith is RebuildIndex with options (Progress).
func (l Layout) RebuildIndexWith(ctx context.Context, iopt sessions.IndexOptions) (sessions.IndexStats, error) {
	_, _, st, err := l.list(ctx, sessions.ListOptions{IncludeProgrammatic: true}, true, true, iopt.Progress)
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
		recs = []sessions.Record{}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(recs)
}
