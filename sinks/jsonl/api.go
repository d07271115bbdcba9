package jsonl

// The local store's API: each name is the internal package's of its job
// (see the package comment).

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/memfs"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/admin"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/reader"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/sealed"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/writer"
	"github.com/e0dc0000/scribe/transcript/fork"
)

// FS is the file system a Layout's readers read (nil: the disk's).
type FS = layout.FS

// WalkCache keeps the walks of subagents folders between reads (see
// Layout.Walks).
type WalkCache = layout.WalkCache

// ReadCache keeps conversations rebuilt from transcripts between reads
// (see Layout.Reads).
type ReadCache = layout.ReadCache

// RacyWindow is how recently a file or folder may have changed for a
// read of it to be kept by a ReadCache or WalkCache.
const RacyWindow = layout.RacyWindow

// NewReadCache returns an empty ReadCache.
func NewReadCache() *ReadCache { return layout.NewReadCache() }

// NewWalkCache returns an empty WalkCache.
func NewWalkCache() *WalkCache { return layout.NewWalkCache() }

// The folder's errors.
var (
	ErrBadID    = layout.ErrBadID
	ErrLocked   = layout.ErrLocked
	ErrNotFound = layout.ErrNotFound
)

// The write side: the sink and its configuration.
type (
	Config      = writer.Config
	FsyncPolicy = writer.FsyncPolicy
	Options     = writer.Options
	Sink        = writer.Sink
)

// The fsync policies.
const (
	FsyncAlways = writer.FsyncAlways
	FsyncBatch  = writer.FsyncBatch
	FsyncNever  = writer.FsyncNever
)

// The sealed archive.
type ViewReport = sealed.ViewReport

// ErrMixedArchive: sealed and plain transcripts in one folder.
var ErrMixedArchive = sealed.ErrMixedArchive

// The read side.
type (
	ReadOptions = reader.ReadOptions
	SessionFile = reader.SessionFile
)

// The administration of the sessions: their files, the trash, gc, du,
// bundles, relocate.
type (
	BundleManifest     = admin.BundleManifest
	CleanupSetting     = admin.CleanupSetting
	CleanupVictim      = admin.CleanupVictim
	DUProject          = admin.DUProject
	DUReport           = admin.DUReport
	DUSession          = admin.DUSession
	GCOptions          = admin.GCOptions
	GCReport           = admin.GCReport
	GCSession          = admin.GCSession
	ImportOptions      = admin.ImportOptions
	ImportResult       = admin.ImportResult
	RelocateOptions    = admin.RelocateOptions
	RelocatedSession   = admin.RelocatedSession
	SessionTranscripts = admin.SessionTranscripts
	StoredSession      = admin.StoredSession
	TranscriptFile     = admin.TranscriptFile
)

// TrashFormat is the version of a trash item's manifest.json.
const TrashFormat = admin.TrashFormat

// The administration's errors.
var (
	ErrEmptyValue     = admin.ErrEmptyValue
	ErrSessionExists  = admin.ErrSessionExists
	ErrTrashDamaged   = admin.ErrTrashDamaged
	ErrTrashNotFound  = admin.ErrTrashNotFound
	ErrUnsupportedTag = admin.ErrUnsupportedTag
)

// DecryptArchive is DecryptTo for the sealed archive in dir, opened with o,
// into the folder view.
func DecryptArchive(ctx context.Context, dir string, o seal.Options, environ []string, view string) (ViewReport, error) {
	return sealed.DecryptArchive(ctx, dir, o, environ, view)
}

// DecryptArchiveFS is DecryptFS for the sealed archive in dir, opened with o.
func DecryptArchiveFS(ctx context.Context, dir string, o seal.Options, environ []string) (FS, ViewReport, error) {
	return sealed.DecryptArchiveFS(ctx, dir, o, environ)
}

// DefaultConfig returns the defaults.
func DefaultConfig() *Config {
	return writer.DefaultConfig()
}

// Factory makes jsonl sinks.
func Factory() core.SinkFactory {
	return writer.Factory()
}

// MemFS is the FS of a tree of files in memory.
func MemFS(m *memfs.FS) FS {
	return layout.MemFS(m)
}

// New returns a sink with resolved options.
func New(opts Options) (*Sink, error) {
	return writer.New(opts)
}

// ReadFile reads a transcript into entries in the order the SDK's loader
// sees them. Unparseable lines are skipped and reported. A file over 5 MiB
// is loaded from its last plain compact_boundary line on (found by scanning
// from the end, without parsing what comes before), with attribution
// snapshots moved to the end, as the SDK's loader does.
func ReadFile(path string, opt ReadOptions) ([]core.Entry, ReadReport, error) {
	return reader.ReadFile(path, opt)
}

// RenameLine is the line renameSession appends to give session id its
// title (trimmed as JavaScript trims; an empty title is ErrEmptyValue).
func RenameLine(id string, title string) (string, error) {
	return admin.RenameLine(id, title)
}

// TagLine is the line tagSession appends to set session id's tag, or with
// clear to clear it.
func TagLine(id string, tag string, clear bool) (string, error) {
	return admin.TagLine(id, tag, clear)
}

// TranscriptFiles lists a session's files in projectDir: the main file (if
// any), the subagents under <id>/subagents/, depth first in name order as
// the SDK lists them, then the sidecar (if any); and their total size.
func TranscriptFiles(projectDir string, id string) ([]TranscriptFile, int64) {
	return admin.TranscriptFiles(projectDir, id)
}

// AppendCheckpoint takes a checkpoint of a session now, for a host without
// a pipeline: it takes the session's lock as a writer does (waiting up to
// lockWait for another writer), builds the checkpoint after the current
// leaf (CheckpointAtLeaf), appends it to the sidecar through a sink, syncs
// it and releases the lock.
func (l Layout) AppendCheckpoint(ctx context.Context, sessionID string, label string, lockWait time.Duration, commitOf core.CommitLookup) (cp core.Checkpoint, err error) {
	return l.writer().AppendCheckpoint(ctx, sessionID, label, lockWait, commitOf)
}

// CheckpointAtLeaf builds a checkpoint of a session as it stands: after the
// leaf of its conversation (as getSessionMessages rebuilds it), with the
// commit checked out in the session's cwd (the cwd of the conversation's
// last row that has one) as commitOf finds it (nil: no commit; hosts pass
// gitrev.Head). It writes nothing:
// submit the entry (or use AppendCheckpoint). A writer should hold the
// session's lock while it reads, so the leaf is still the leaf when the
// checkpoint is written.
func (l Layout) CheckpointAtLeaf(ctx context.Context, sessionID string, dir string, label string, at time.Time, commitOf core.CommitLookup) (core.Checkpoint, core.Entry, error) {
	return l.reader().CheckpointAtLeaf(ctx, sessionID, dir, label, at, commitOf)
}

// Checkpoints returns a session's checkpoints in the order they were taken
// (a checkpoint recorded twice counts once). Lines that do not parse are
// skipped.
func (l Layout) Checkpoints(ctx context.Context, sessionID string, dir string) ([]core.Checkpoint, error) {
	return l.reader().Checkpoints(ctx, sessionID, dir)
}

// CleanupForecast lists the sessions whose transcript mtime is older than
// days before now: what Claude Code's next start deletes.
func (l Layout) CleanupForecast(days int, now time.Time) ([]CleanupVictim, error) {
	return l.admin().CleanupForecast(days, now)
}

// CopySession copies everything a session has in this store (its
// transcript, its folder: subagents, tool results, sidecars) into the same
// project folder of dst, passing each line of every .jsonl file through
// line (nil copies them as they are). It is how a command works on a
// transformed copy (export --redact) without touching the session.
func (l Layout) CopySession(ctx context.Context, id string, dst Layout, line func(path string, b []byte) []byte) error {
	return l.admin().CopySession(ctx, id, dst.admin(), line)
}

// DeletedTranscriptsDir is <config dir>/state/deleted-transcripts.
func (l Layout) DeletedTranscriptsDir() string {
	return l.base().DeletedTranscriptsDir()
}

// DeletionMarkers returns the marker names for session id's transcript in
// project folder folder, as the SDK's deleteSession writes them.
func (l Layout) DeletionMarkers(folder string, id string) []string {
	return l.base().DeletionMarkers(folder, id)
}

// DiskUsage measures every session of every project folder (or of the
// one project folder named by project).
func (l Layout) DiskUsage(ctx context.Context, project string, progress func(done int, total int)) (DUReport, error) {
	return l.admin().DiskUsage(ctx, project, progress)
}

// EmptyTrash deletes the trash items trashed more than olderThan ago
// (every item when olderThan is 0) and returns them; with dryRun it only
// returns them. It is the one place scribe unlinks transcripts.
func (l Layout) EmptyTrash(olderThan time.Duration, dryRun bool, now time.Time) ([]TrashItem, error) {
	return l.admin().EmptyTrash(olderThan, dryRun, now)
}

// ExportBundle writes session id's bundle to w and returns its manifest.
func (l Layout) ExportBundle(ctx context.Context, id string, w io.Writer) (BundleManifest, error) {
	return l.admin().ExportBundle(ctx, id, w)
}

// ExportSessionsJSON writes every session's record as seed 002's
// sessions.json: a JSON array of SessionMetadata, newest first.
func (l Layout) ExportSessionsJSON(w io.Writer) error {
	return l.index().ExportSessionsJSON(w)
}

// FindSession returns the project folder that holds the session, looking
// first in the folder of cwd (when given), then in every project folder in
// name order. A session "exists" if its main file or its per-session folder
// does. It returns "" when no folder has it.
func (l Layout) FindSession(sessionID string, cwd string) (string, error) {
	return l.base().FindSession(sessionID, cwd)
}

// FindTrash resolves a trash id, a session id or a unique prefix of
// either to one trash item.
func (l Layout) FindTrash(ref string) (TrashItem, error) {
	return l.admin().FindTrash(ref)
}

// Fork is ForkSession without the write: the new session's entries, and
// the project folder its source is in. It reads through the layout's FS,
// so a store read in memory is forked by writing the entries through its
// sink.
func (l Layout) Fork(ctx context.Context, sessionID string, dir string, opt fork.Options) (res fork.Result, projectDir string, err error) {
	return l.admin().Fork(ctx, sessionID, dir, opt)
}

// ForkSession copies a session into a new one in the same project folder,
// as the Claude Agent SDK's forkSession(sessionID, {dir, upToMessageId,
// title}) does (see transcript.Fork for the rules), and returns the new id and
// file.
//
// The source is found as the SDK finds it: the first non-empty
// <sessionID>.jsonl in the project folder(s) of dir, or in any project
// folder when dir is "". It is read whole; lines that do not parse are
// skipped. Unless opt.SourceTitle is set, the source title comes from the
// file's first and last 64 KiB and its <sessionID>/custom-title.json.
//
// The new file is written with mode 0600 to a temporary file, synced,
// then linked into place, which fails rather than replace an existing
// file; a session id already present in any project folder is
// ErrSessionExists.
func (l Layout) ForkSession(ctx context.Context, sessionID string, dir string, opt fork.Options) (newID string, path string, err error) {
	return l.admin().ForkSession(ctx, sessionID, dir, opt)
}

// GC plans, and unless DryRun carries out, the collection of old sessions
// to the trash.
func (l Layout) GC(ctx context.Context, opt GCOptions) (GCReport, error) {
	return l.admin().GC(ctx, opt)
}

// ImportBundle verifies a bundle and places its session under the project
// of opt.Cwd (default the bundle's cwd). Staging folders left by imports
// that died are removed first (ImportResult.StaleStagingsRemoved).
func (l Layout) ImportBundle(ctx context.Context, r io.Reader, opt ImportOptions) (ImportResult, error) {
	return l.admin().ImportBundle(ctx, r, opt)
}

// IndexFile is where the sessions index lives.
func (l Layout) IndexFile() string {
	return l.index().IndexFile()
}

// Info is getSessionInfo: the session's SessionInfo, or nil where the SDK
// returns undefined (not a UUID, no non-empty file, a sidechain-first file,
// nothing to title it with). It applies none of the listing's filters.
func (l Layout) Info(ctx context.Context, sessionID string, dir string) (*SessionInfo, error) {
	return l.listing().Info(ctx, sessionID, dir)
}

// IsSealed reports whether the folder is a sealed archive (it has the
// archive's key), which only the readers that support one may read.
func (l Layout) IsSealed() bool {
	return l.sealed().IsSealed()
}

// Lifecycle returns a session's lifecycle events in the order they were
// recorded. Lines that do not parse are skipped.
func (l Layout) Lifecycle(ctx context.Context, sessionID string, dir string) ([]core.Lifecycle, error) {
	return l.reader().Lifecycle(ctx, sessionID, dir)
}

// List returns the sessions the SDK's listSessions would return for opt,
// newest first. Files that cannot be read are skipped, as the SDK skips
// them; the error is only for a cancelled context.
func (l Layout) List(ctx context.Context, opt ListOptions) ([]SessionInfo, error) {
	return l.listing().List(ctx, opt)
}

// ListIndexed is List answered through the index: the same sessions, with
// the same fields, filters and order, plus what the index did.
func (l Layout) ListIndexed(ctx context.Context, opt ListOptions) ([]SessionInfo, IndexStats, error) {
	return l.index().ListIndexed(ctx, opt)
}

// ListIndexedWith is ListIndexed with options.
func (l Layout) ListIndexedWith(ctx context.Context, opt ListOptions, iopt IndexOptions) ([]SessionInfo, IndexStats, error) {
	return l.index().ListIndexedWith(ctx, opt, iopt)
}

// ListRecords is ListIndexed with each session's lifecycle record.
func (l Layout) ListRecords(ctx context.Context, opt ListOptions) ([]SessionRecord, IndexStats, error) {
	return l.index().ListRecords(ctx, opt)
}

// ListTrash returns the trash items, oldest first, and a problem line for
// each folder in the trash whose manifest cannot be read.
func (l Layout) ListTrash() ([]TrashItem, []string, error) {
	return l.admin().ListTrash()
}

// LockFile is where the writer of a session holds its lock.
func (l Layout) LockFile(sessionID string) string {
	return l.base().LockFile(sessionID)
}

// LockSession takes a session's writer lock, the one the store itself
// holds while it writes the session, waiting up to wait; release gives it
// back. Commands that replace a session's files (pull) take it through
// here, so a contender always learns the holder's pid.
func (l Layout) LockSession(ctx context.Context, id string, wait time.Duration) (release func(), err error) {
	return l.base().LockSession(ctx, id, wait)
}

// MainIDs returns the session ids of the main transcripts of every project
// folder that start with prefix (lower case), each with the folders
// holding it.
func (l Layout) MainIDs(prefix string) (map[string][]string, error) {
	return l.reader().MainIDs(prefix)
}

// Messages is the SDK's getSessionMessages: the conversation of a session,
// found in the project folder of dir, or with dir "" in the first project
// folder (in name order) holding a non-empty <sessionID>.jsonl. A session
// that is not there (or a session id that is not a UUID) is ErrNotFound; a
// session whose only file is empty, or that has only subagent files (a
// <id>/subagents/ folder and no <id>.jsonl), gives no messages and no
// error, as in the SDK.
func (l Layout) Messages(ctx context.Context, sessionID string, dir string, opt MessagesOptions) ([]SessionMessage, *MessagesReport, error) {
	return l.reader().Messages(ctx, sessionID, dir, opt)
}

// MoveToTrash moves every copy of a session (one trash item per project
// folder holding it) to the trash, under its lock, and drops it from the
// sessions index. With DryRun it only says what it would move.
func (l Layout) MoveToTrash(ctx context.Context, id string, opt TrashOptions) ([]TrashItem, error) {
	return l.admin().MoveToTrash(ctx, id, opt)
}

// OpenTranscript opens a session's main transcript for reading, looking
// first in the project folder of cwd (when given). A session the store
// does not hold is core.ErrNotFound, worded as the summary loader says it.
func (l Layout) OpenTranscript(id string, cwd string) (*os.File, error) {
	return l.admin().OpenTranscript(id, cwd)
}

// ProjectDir is the folder for sessions started in cwd.
func (l Layout) ProjectDir(cwd string) string {
	return l.base().ProjectDir(cwd)
}

// ProjectFolder is the project folder of that name (as listed under
// ProjectsDir, or a SessionFile's Project), not derived from a cwd.
func (l Layout) ProjectFolder(name string) string {
	return l.base().ProjectFolder(name)
}

// ProjectFolders lists the project folders' names, sorted (none when
// there is no projects folder).
func (l Layout) ProjectFolders() ([]string, error) {
	return l.base().ProjectFolders()
}

// ProjectsDir is <config dir>/projects.
func (l Layout) ProjectsDir() string {
	return l.base().ProjectsDir()
}

// ReadCleanupSetting reads cleanupPeriodDays from <config dir>/settings.json.
// A missing file or key is the default; a value Claude Code rejects
// (below 1, not a number) is an error, as Claude Code then skips the sweep.
func (l Layout) ReadCleanupSetting() (CleanupSetting, error) {
	return l.admin().ReadCleanupSetting()
}

// ReadEntries is ReadFile through the layout's FS.
func (l Layout) ReadEntries(path string, opt ReadOptions) ([]core.Entry, ReadReport, error) {
	return l.reader().ReadEntries(path, opt)
}

// RebuildIndex throws the index away and builds it again from every
// transcript of every project.
func (l Layout) RebuildIndex(ctx context.Context) (IndexStats, error) {
	return l.index().RebuildIndex(ctx)
}

// RebuildIndexWith is RebuildIndex with options (Progress).
func (l Layout) RebuildIndexWith(ctx context.Context, iopt IndexOptions) (IndexStats, error) {
	return l.index().RebuildIndexWith(ctx, iopt)
}

// Records derives the lifecycle records of sessions listed without the
// index (from List): it reads each transcript's tail window again.
func (l Layout) Records(ctx context.Context, infos []SessionInfo) ([]SessionRecord, error) {
	return l.index().Records(ctx, infos)
}

// Relocate moves the sessions of the project at oldPath (and of the
// folders below it) to newPath. Both must be absolute.
func (l Layout) Relocate(ctx context.Context, oldPath string, newPath string, opt RelocateOptions) ([]RelocatedSession, error) {
	return l.admin().Relocate(ctx, oldPath, newPath, opt)
}

// RemoveStaleStagings removes the staging folders of imports that died
// and returns them (import and gc call it).
func (l Layout) RemoveStaleStagings() ([]admin.StaleStaging, error) {
	return l.admin().RemoveStaleStagings()
}

// RenameSession gives a session a custom title, as renameSession does.
func (l Layout) RenameSession(ctx context.Context, id string, title string, opt ManageOptions) (ManageResult, error) {
	return l.admin().RenameSession(ctx, id, title, opt)
}

// ReplaceTranscript makes a file of the store (a path under ProjectsDir,
// as MainFile, AgentFile and SidecarFile give) hold data atomically, as
// durable.Replace does; folders made on the way are synced. It leaves a
// file that already holds data alone (ReplaceUnchanged); else what the
// file held is kept as <path>.bak-<stamp> (backup). The caller holds the
// session's lock (LockSession).
func (l Layout) ReplaceTranscript(path string, data []byte, stamp string) (status string, backup string, err error) {
	return l.admin().ReplaceTranscript(path, data, stamp)
}

// RestoreTrash moves a trash item back where it came from: every hash is
// checked first, and nothing is overwritten (ErrSessionExists when a name
// is taken). The item leaves the trash.
func (l Layout) RestoreTrash(ctx context.Context, ref string, lockWait time.Duration) (TrashItem, error) {
	return l.admin().RestoreTrash(ctx, ref, lockWait)
}

// RestoreTrashSealed is RestoreTrash for an item that may be sealed: open
// decrypts what Seal encrypted (nil when no key was given).
func (l Layout) RestoreTrashSealed(ctx context.Context, ref string, lockWait time.Duration, open func([]byte) ([]byte, error)) (TrashItem, error) {
	return l.admin().RestoreTrashSealed(ctx, ref, lockWait, open)
}

// SearchIndexFile is where scribe's full-text index of the sessions lives
// (a cache, rebuilt from the transcripts whenever in doubt).
func (l Layout) SearchIndexFile() string {
	return l.reader().SearchIndexFile()
}

// SessionFiles lists every transcript of every project folder (or of the
// one named by project): each session's main file and its subagents'.
func (l Layout) SessionFiles(ctx context.Context, project string) ([]SessionFile, error) {
	return l.reader().SessionFiles(ctx, project)
}

// Sessions is the lifecycle record of every listed session of every
// project (List with no Dir, programmatic sessions included), newest
// first, through the index, with the whole session's model and tools
// (each main transcript is read once for them).
func (l Layout) Sessions(ctx context.Context) ([]SessionRecord, error) {
	return l.index().Sessions(ctx)
}

// SetArchived writes <id>/archived.json beside every copy of the session,
// as archiveSession (archived true) and unarchiveSession (false) do.
func (l Layout) SetArchived(ctx context.Context, id string, archived bool, opt ManageOptions) (ManageResult, error) {
	return l.admin().SetArchived(ctx, id, archived, opt)
}

// SidecarRecords returns the lines of a session's sidecar (lifecycle events and
// checkpoints) in file order, with what was skipped. The session is found
// as Messages finds it (dir "" searches every project folder); a session
// without a sidecar has no records.
func (l Layout) SidecarRecords(ctx context.Context, sessionID string, dir string) ([]core.Entry, ReadReport, error) {
	return l.reader().SidecarRecords(ctx, sessionID, dir)
}

// StaleStagings lists the staging folders whose import (or relocate) died: their lock
// names a holder (the import wrote its record) and nobody holds it. A
// folder without that record is an import just starting, or one of a
// build that did not lock its staging: it is left alone for a minute.
func (l Layout) StaleStagings(now time.Time) ([]admin.StaleStaging, error) {
	return l.admin().StaleStagings(now)
}

// StoredSessions lists every session of the store: each <uuid>.jsonl of a
// project folder, and each <uuid>/ folder (subagents or a sidecar without
// a main file). A session in two project folders is taken from the first
// in name order, as FindSession does. A store without projects/ has none.
func (l Layout) StoredSessions() ([]StoredSession, error) {
	return l.admin().StoredSessions()
}

// StoredTranscripts lists the transcripts of every session StoredSessions
// lists, from the listing it makes: a session's folder is walked only when
// the listing holds one, and no file is looked at again. folders are the
// folders the answer comes from: while none of them changes, it is the
// same (nil when it depends on more).
func (l Layout) StoredTranscripts() (sessions []SessionTranscripts, folders []string, err error) {
	return l.admin().StoredTranscripts()
}

// SubagentMessages is the SDK's getSubagentMessages: the chain of one
// subagent's transcript, ending at its last user or assistant row, with
// parent_tool_use_id and parent_agent_id from agent-<id>.meta.json.
func (l Layout) SubagentMessages(ctx context.Context, sessionID string, agentID string, dir string, opt MessagesOptions) ([]SessionMessage, *MessagesReport, error) {
	return l.reader().SubagentMessages(ctx, sessionID, agentID, dir, opt)
}

// SubagentParents maps each subagent with a non-empty transcript to the
// tool call that started it (its meta file's toolUseId, the
// parent_tool_use_id of its messages), reading only the meta files.
func (l Layout) SubagentParents(ctx context.Context, sessionID string, dir string) (map[string]string, error) {
	return l.reader().SubagentParents(ctx, sessionID, dir)
}

// Subagents is the SDK's listSubagents: the agent ids of the
// agent-<id>.jsonl files under <sessionID>/subagents/, searched depth first
// in name order (so an id may repeat).
func (l Layout) Subagents(ctx context.Context, sessionID string, dir string) ([]string, error) {
	return l.reader().Subagents(ctx, sessionID, dir)
}

// TagSession sets a session's tag, as tagSession does; clear appends the
// empty tag, as tagSession(id, null) does.
func (l Layout) TagSession(ctx context.Context, id string, tag string, clear bool, opt ManageOptions) (ManageResult, error) {
	return l.admin().TagSession(ctx, id, tag, clear, opt)
}

// Transcript reads a session's main transcript whole (every line that
// parses, nothing skipped before a compaction), as the SDK finds it, with
// its size and the size of its subagents' transcripts.
func (l Layout) Transcript(ctx context.Context, sessionID string, dir string) (*sessions.Transcript, error) {
	return l.reader().Transcript(ctx, sessionID, dir)
}

// AgentTranscript reads one subagent's transcript whole, as Transcript
// reads the main one.
func (l Layout) AgentTranscript(ctx context.Context, sessionID, agentID, dir string) (*sessions.Transcript, error) {
	return l.reader().AgentTranscript(ctx, sessionID, agentID, dir)
}

// TrashDir is <config dir>/scribe/trash.
func (l Layout) TrashDir() string {
	return l.admin().TrashDir()
}

// VerifyBundle checks a bundle against its manifest without importing it:
// it reads the bundle through and writes nothing.
func (l Layout) VerifyBundle(r io.Reader) (BundleManifest, error) {
	return l.admin().VerifyBundle(r)
}
