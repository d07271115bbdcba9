package sessions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/transcript/fork"
)

// ErrNotFound is returned for a session a store does not hold.
var ErrNotFound = core.ErrNotFound

// ErrAmbiguous is returned when an id prefix names several sessions.
var ErrAmbiguous = errors.New("ambiguous session id")

// ErrUnsupported is returned for what a store cannot do (see Unsupported).
var ErrUnsupported = errors.New("not something this store can do")

// Unsupported says that store cannot do what (a capability it lacks),
// wrapping ErrUnsupported, and why when why is not "".
func Unsupported(st Store, what, why string) error {
	if why != "" {
		return fmt.Errorf("%s cannot %s: %w (%s)", st.Name(), what, ErrUnsupported, why)
	}
	return fmt.Errorf("%s cannot %s: %w", st.Name(), what, ErrUnsupported)
}

// Store is a place sessions are kept, read as the Agent SDK reads Claude
// Code's folder: every store answers List, Info, Messages, Subagents and
// SubagentMessages exactly as the SDK's listSessions, getSessionInfo,
// getSessionMessages, listSubagents and getSubagentMessages answer for the
// same transcripts in a folder. What a store can do beyond reading is an
// optional interface (Manager, Archiver, Trasher, Forker); a command type-
// asserts for it and, when the store lacks it, says so with Unsupported.
//
// A Store is safe for concurrent use; Close releases it.
type Store interface {
	// Name is the store as --from names it: "claude" for Claude Code's
	// folder, else its configuration block (jsonl/archive, postgres/team).
	Name() string
	// Where says where the store is, for people: a folder, a database, a
	// bucket, a server.
	Where() string
	// List is the SDK's listSessions over the store (opt.Dir "" for every
	// project), newest first.
	List(ctx context.Context, opt ListOptions) ([]Info, error)
	// Records is List with each session's lifecycle record (status,
	// state, model, last activity).
	Records(ctx context.Context, opt ListOptions) ([]Record, error)
	// Resolve turns a session id, or a prefix of one naming a single
	// session, into the id. No match is ErrNotFound, several ErrAmbiguous
	// (the error lists them).
	Resolve(ctx context.Context, arg string) (string, error)
	// Info is getSessionInfo: nil where the SDK returns undefined.
	Info(ctx context.Context, id string) (*Info, error)
	// Messages is getSessionMessages.
	Messages(ctx context.Context, id string, opt MessagesOptions) ([]Message, *MessagesReport, error)
	// Subagents is listSubagents.
	Subagents(ctx context.Context, id string) ([]string, error)
	// SubagentMessages is getSubagentMessages.
	SubagentMessages(ctx context.Context, id, agent string, opt MessagesOptions) ([]Message, *MessagesReport, error)
	// Transcript is the session's main transcript as stored: every line
	// that parses, in file order (nothing skipped before a compaction),
	// with what reading it found and its size.
	Transcript(ctx context.Context, id string) (*Transcript, error)
	// AgentTranscript is one subagent's transcript as stored, as
	// Transcript is the main one's (AgentBytes unset).
	AgentTranscript(ctx context.Context, id, agent string) (*Transcript, error)
	// Lifecycle is scribe's own records of the session (lifecycle events
	// and checkpoints), kept beside its transcript; nil when none.
	Lifecycle(ctx context.Context, id string) ([]core.Entry, error)
	// Close releases what the store holds.
	Close(ctx context.Context) error
}

// Transcript is a session's main transcript as a store holds it.
type Transcript struct {
	// Path names it: the file, or the store's name for it.
	Path    string
	Entries []core.Entry
	Report  ReadReport
	// Bytes is its size, AgentBytes the size of its subagents' transcripts.
	Bytes, AgentBytes int64
}

// Manager is a store whose sessions can be renamed and tagged, as the
// SDK's renameSession and tagSession do: a metadata line appended.
type Manager interface {
	Rename(ctx context.Context, id, title string, opt ManageOptions) (ManageResult, error)
	// Tag sets the session's tag, or clears it with clear.
	Tag(ctx context.Context, id, tag string, clear bool, opt ManageOptions) (ManageResult, error)
}

// Archiver is a store whose sessions can be archived (the SDK's
// archiveSession: a mark beside a local transcript).
type Archiver interface {
	SetArchived(ctx context.Context, id string, archived bool, opt ManageOptions) (ManageResult, error)
}

// Trasher is a store whose sessions can be removed into a trash they can
// be restored from: nothing a store holds is deleted without one.
type Trasher interface {
	// Trash moves every copy of the session into the trash.
	Trash(ctx context.Context, id string, opt TrashOptions) ([]TrashItem, error)
	// TrashItems lists the trash, oldest first; damaged are the items
	// that could not be read.
	TrashItems(ctx context.Context) (items []TrashItem, damaged []string, err error)
	// Restore puts a trash item (its id or a unique prefix) back.
	Restore(ctx context.Context, ref string, opt RestoreOptions) (TrashItem, error)
	// EmptyTrash deletes the items trashed more than olderThan ago (all
	// with 0), or only lists them with dryRun.
	EmptyTrash(ctx context.Context, olderThan time.Duration, dryRun bool, now time.Time) ([]TrashItem, error)
}

// RestoreOptions tune a restore.
type RestoreOptions struct {
	// LockWait is how long to wait for a live writer of the session.
	LockWait time.Duration
	// Open, when set, decrypts the files of a sealed trash item (an age
	// identity's OpenBytes).
	Open func([]byte) ([]byte, error)
}

// Forker is a store a session can be forked in (the SDK's forkSession).
type Forker interface {
	// Fork writes a copy of the session (up to opt.UpToMessageID) as a new
	// session and returns its id and where it was written.
	Fork(ctx context.Context, id string, opt fork.Options) (newID, where string, err error)
}

// SubagentParents is a store that can say which tool call started each
// of a session's subagents without reading their transcripts: agent id to
// the ParentToolUseID SubagentMessages gives its messages, for each
// subagent with a non-empty transcript that has one (a transcript that is
// not empty but holds no message the SDK gives still names its call here).
type SubagentParents interface {
	SubagentParents(ctx context.Context, id string) (map[string]string, error)
}

// Capabilities names what a store can do beyond reading, for people and
// for --json: "rename", "tag", "archive", "trash", "fork".
func Capabilities(st Store) []string {
	var out []string
	if _, ok := st.(Manager); ok {
		out = append(out, "rename", "tag")
	}
	if _, ok := st.(Archiver); ok {
		out = append(out, "archive")
	}
	if _, ok := st.(Trasher); ok {
		out = append(out, "trash")
	}
	if _, ok := st.(Forker); ok {
		out = append(out, "fork")
	}
	return out
}
