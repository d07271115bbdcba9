// Package sessions is the contract every session store keeps, and every
// front end (the command line, the MCP server, the web UI, usage reports)
// stands on: the Store interface, the optional capabilities a store may
// add, and the types they speak in. A store is Claude Code's own folder, a
// scribe archive (plain or sealed), PostgreSQL, S3 or the team server; the
// commands reach each one only through this package. RunStoreContract in
// sessionstest is the behaviour every implementation must show.
package sessions

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/transcript"
)

// Message is one message of a conversation as the SDK's
// getSessionMessages returns it.
type Message = transcript.SessionMessage

// Info is one session as the SDK's listSessions reports it
// (SDKSessionInfo): same JSON field names, same omission rules, so that
// json.Marshal of a []Info equals the SDK's JSON.stringify output
// after key sorting. The fields after Archived are scribe's own and never
// appear in the JSON.
type Info struct {
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
func (s *Info) IsProgrammatic() bool {
	return Programmatic(s.Entrypoint, s.SessionKind, s.Nested)
}

// Programmatic is the SDK's test for a session includeProgrammatic:false
// hides: entrypoint sdk-cli/sdk-ts/sdk-py, sessionKind daemon or
// daemon-worker, or a nested session.
func Programmatic(entrypoint, kind string, nested bool) bool {
	switch entrypoint {
	case "sdk-cli", "sdk-ts", "sdk-py":
		return true
	}
	return nested || kind == "daemon" || kind == "daemon-worker"
}

// ListOptions selects what List returns. The SDK's defaults for the two
// booleans are true; the zero value here means false, so callers wanting the
// SDK's default behaviour set both.
type ListOptions struct {
	Dir                 string // project path (cwd) to list; "" = all projects
	Limit, Offset       int    // 0 = no limit / no offset
	IncludeWorktrees    bool   // SDK default true: add the folders of the repo's other git worktrees
	IncludeProgrammatic bool   // SDK default true: keep SDK-started and daemon sessions
	// SkipLastEntryTail leaves Info.LastEntryTail nil, for callers
	// that only print the SDK's fields.
	SkipLastEntryTail bool
	// NoIndex reads every transcript instead of answering through the
	// sessions index (a store that has one).
	NoIndex bool
}

// MessagesOptions are getSessionMessages' options.
type MessagesOptions struct {
	// IncludeSystem keeps system rows (includeSystemMessages); main
	// sessions only.
	IncludeSystem bool
	// Limit (when > 0) and Offset slice the result as the SDK does.
	Limit, Offset int
}

// MessagesReport tells what was read to answer, and what was wrong with it.
type MessagesReport struct {
	// Path is the transcript read ("" when nothing was found).
	Path string
	ReadReport
	// Cycle and Gaps come from the chain rebuild (see transcript.Chain).
	Cycle *transcript.ChainBreak
	Gaps  []transcript.ChainBreak
}

// MalformedLine is a line that was skipped because it is not a JSON object.
type MalformedLine struct {
	Line int // 1-based line number in the file
	Err  string
}

// ReadReport says what ReadFile read and what it skipped.
type ReadReport struct {
	// Lines is the number of lines read (after SkippedBytes), blank ones
	// included; Entries the number of entries returned.
	Lines, Entries int
	// Malformed lists the lines skipped as unparseable.
	Malformed []MalformedLine
	// Torn is true when the last line had no newline.
	Torn bool
	// SkippedBytes is the size of the part before the last plain compact
	// boundary of a large file, which was neither read into memory nor
	// parsed.
	SkippedBytes int64
	// Compactions counts the compact_boundary rows among the entries read.
	Compactions int
}

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
	// SkipLastEntryTail leaves Info.LastEntryTail nil: the listing
	// then reads only the index's first section (what `scribe ls --json`
	// needs).
	SkipLastEntryTail bool
	// Progress, when set, is called as transcript files are read:
	// done of total. Calls come from one goroutine at a time.
	Progress func(done, total int)
}

// Status is a session's lifecycle status (seed 002).
type Status string

// The statuses.
const (
	// StatusActive: a live writer holds the session's lock.
	StatusActive Status = "active"
	// StatusInterrupted: the end of the conversation says the last turn
	// did not finish (transcript.ClassifyAndRepair).
	StatusInterrupted Status = "interrupted"
	// StatusCompleted: anything else.
	StatusCompleted Status = "completed"
)

// Valid reports whether s is one of the three statuses.
func (s Status) Valid() bool {
	return s == StatusActive || s == StatusInterrupted || s == StatusCompleted
}

// Record is one session as seed 002's sessions.json describes it
// (SessionMetadata), derived from its transcript. MarshalJSON writes that
// shape; Info and Interruption are scribe's own and stay out of it.
type Record struct {
	ID string
	// Name is the session's title: the listing's summary (custom title,
	// last prompt, summary or first prompt, as the SDK chooses it).
	Name   string
	Status Status
	// CreatedAt is the first timestamp of the head window (else
	// UpdatedAt); UpdatedAt the last timestamp of the tail window (else the
	// file's mtime). CompletedAt, only for a completed session, is the
	// timestamp of its last user or assistant row (else the mtime).
	CreatedAt, UpdatedAt, CompletedAt time.Time
	// ProjectPath is the session's working directory (the listing's cwd);
	// TranscriptPath its main transcript.
	ProjectPath, TranscriptPath string
	Metadata                    RecordMetadata
	// Interruption is how the tail ends (transcript.ClassifyAndRepair's class),
	// also for an active session; State what that leaves the session
	// doing (transcript.StateFromTail), from the same rows.
	Interruption core.Interruption
	State        core.State
	// Info is the session's listing entry.
	Info Info
}

// RecordMetadata is SessionMetadata.metadata. In the records of
// Sessions and ExportSessionsJSON, Model and Tools are the whole main
// transcript's: the model of most of its assistant turns (synthetic rows
// skipped; a tie goes to the one used last) and the sorted union of the
// names of its tool_use blocks. The records of a listing (ListRecords,
// Records), which reads only the transcript's 64 KiB tail window, give
// that window's: the message.model of its last assistant row and the tools
// of its assistant rows. LastMessageID is the uuid of the last user or
// assistant row.
type RecordMetadata struct {
	Model         string   `json:"model,omitempty"`
	Tools         []string `json:"tools,omitempty"`
	LastMessageID string   `json:"lastMessageId,omitempty"`
}

// MarshalJSON writes the record as seed 002's SessionMetadata, dates as
// JavaScript's toISOString writes them.
func (r Record) MarshalJSON() ([]byte, error) {
	type metadata RecordMetadata
	out := struct {
		ID             string   `json:"id"`
		Name           string   `json:"name"`
		Status         Status   `json:"status"`
		CreatedAt      string   `json:"createdAt"`
		UpdatedAt      string   `json:"updatedAt"`
		CompletedAt    string   `json:"completedAt,omitempty"`
		ProjectPath    string   `json:"projectPath"`
		TranscriptPath string   `json:"transcriptPath"`
		Metadata       metadata `json:"metadata"`
	}{
		ID: r.ID, Name: r.Name, Status: r.Status,
		CreatedAt: isoTime(r.CreatedAt), UpdatedAt: isoTime(r.UpdatedAt),
		ProjectPath: r.ProjectPath, TranscriptPath: r.TranscriptPath, Metadata: metadata(r.Metadata),
	}
	if !r.CompletedAt.IsZero() {
		out.CompletedAt = isoTime(r.CompletedAt)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// ManageOptions tune a change to a session.
type ManageOptions struct {
	// LockWait is how long to wait for a live writer to release the
	// session (0: fail at once with ErrLocked).
	LockWait time.Duration
	// Now is the time written into archived.json (default time.Now).
	Now func() time.Time
}

// ManageResult says what a change wrote.
type ManageResult struct {
	SessionID string   `json:"sessionId"`
	Files     []string `json:"files"`
	// Line is the metadata line appended (rename, tag); "" otherwise.
	Line string `json:"line,omitempty"`
	// SealedTornTail counts transcripts whose torn last line was sealed
	// with a newline before the append.
	SealedTornTail int `json:"sealedTornTail,omitempty"`
}

// TrashFile is one file (or folder, or symlink) of a trash item.
type TrashFile struct {
	// Path is where it was, relative to the config dir, '/'-separated.
	Path    string    `json:"path"`
	Dir     bool      `json:"dir,omitempty"`
	Link    string    `json:"link,omitempty"`
	Size    int64     `json:"size"`
	SHA256  string    `json:"sha256,omitempty"`
	Mode    uint32    `json:"mode"`
	ModTime time.Time `json:"mtime"`
}

// TrashItem is one session's copy in one project folder, moved to the trash.
type TrashItem struct {
	Format    int    `json:"format"`
	ID        string `json:"id"`
	SessionID string `json:"sessionId"`
	// Project is the project folder's name under projects/.
	Project string `json:"project"`
	Cwd     string `json:"cwd,omitempty"`
	Title   string `json:"title,omitempty"`
	// Reason is the command that moved it: rm, gc, relocate.
	Reason    string    `json:"reason"`
	TrashedAt time.Time `json:"trashedAt"`
	// Entries are the names moved out of the project folder.
	Entries []string    `json:"entries"`
	Files   []TrashFile `json:"files"`
	Bytes   int64       `json:"bytes"`
	// Complete is false while (or if a crash stopped) the move.
	Complete bool `json:"complete"`
	// Sealed: the item's files are encrypted (trashseal.go).
	Sealed bool `json:"sealed,omitempty"`
	// DeletionMarkers are the SDK's deletion markers rm wrote for it
	// (deletemarkers.go); restore removes them.
	DeletionMarkers []string `json:"deletionMarkers,omitempty"`
	// MarkersRemoved, in what restore returns, counts the deletion
	// markers it removed.
	MarkersRemoved int `json:"markersRemoved,omitempty"`
}

// TrashOptions tune a move to the trash.
type TrashOptions struct {
	Reason   string
	LockWait time.Duration
	DryRun   bool
	Now      func() time.Time
	// Seal, when set, encrypts the item's files once the move is durable
	// (an age sealer's SealBytes).
	Seal func([]byte) ([]byte, error)
	// Markers writes the SDK's deletion markers before the move, as its
	// deleteSession does (rm).
	Markers bool
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
