package stores

import (
	"context"
	"time"

	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/transcript/fork"
)

// Local is a store of plain transcript files laid out as Claude Code lays
// them out: Claude's own folder, or a scribe archive. It can do everything
// the contract names: rename, tag, archive, the trash, fork.
type Local struct{ reader }

// NewLocal is the store of the config folder dir (its projects/ folder
// holds the transcripts), named name. onIndex, when set, hears what each
// listing through the sessions index did.
func NewLocal(name, dir string, onIndex func(jsonl.Layout, sessions.IndexStats)) *Local {
	l := jsonl.Layout{ConfigDir: dir, Walks: jsonl.NewWalkCache(), Reads: jsonl.NewReadCache()}
	return &Local{reader{l: l, name: name, where: l.ProjectsDir(), onIndex: onIndex}}
}

// The contract's capabilities, each the local store's own change.
var (
	_ sessions.Manager  = (*Local)(nil)
	_ sessions.Archiver = (*Local)(nil)
	_ sessions.Trasher  = (*Local)(nil)
	_ sessions.Forker   = (*Local)(nil)
)

func (s *Local) Rename(ctx context.Context, id, title string, opt sessions.ManageOptions) (sessions.ManageResult, error) {
	return s.l.RenameSession(ctx, id, title, opt)
}

func (s *Local) Tag(ctx context.Context, id, tag string, clear bool, opt sessions.ManageOptions) (sessions.ManageResult, error) {
	return s.l.TagSession(ctx, id, tag, clear, opt)
}

func (s *Local) SetArchived(ctx context.Context, id string, archived bool, opt sessions.ManageOptions) (sessions.ManageResult, error) {
	return s.l.SetArchived(ctx, id, archived, opt)
}

func (s *Local) Trash(ctx context.Context, id string, opt sessions.TrashOptions) ([]sessions.TrashItem, error) {
	return s.l.MoveToTrash(ctx, id, opt)
}

func (s *Local) TrashItems(context.Context) ([]sessions.TrashItem, []string, error) {
	return s.l.ListTrash()
}

func (s *Local) Restore(ctx context.Context, ref string, opt sessions.RestoreOptions) (sessions.TrashItem, error) {
	return s.l.RestoreTrashSealed(ctx, ref, opt.LockWait, opt.Open)
}

func (s *Local) EmptyTrash(_ context.Context, olderThan time.Duration, dryRun bool, now time.Time) ([]sessions.TrashItem, error) {
	return s.l.EmptyTrash(olderThan, dryRun, now)
}

func (s *Local) Fork(ctx context.Context, id string, opt fork.Options) (string, string, error) {
	return s.l.ForkSession(ctx, id, "", opt)
}

// TrashDir is where the store keeps its trash.
func (s *Local) TrashDir() string { return s.l.TrashDir() }

// Reader is a store that can only be read: the sessions of a layout (on
// disk, or in memory), named name, at where.
type Reader struct{ reader }

// NewReader is the read-only store of layout l.
func NewReader(name, where string, l jsonl.Layout) *Reader {
	return &Reader{reader{l: l, name: name, where: where}}
}
