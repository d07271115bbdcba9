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
	"encoding/json"
	"io"
	"path/filepath"
	"time"

	"github.com/e0dc0000/scribe/core"
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
