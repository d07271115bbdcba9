package stores

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/events"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/sinks/sinkhelper"
)

// The team server keeps its own trash, per tenant (server/trash.go): rm
// moves a session there, restore puts it back with the same entries, and
// the server empties what is older than its trash_retention. A token
// without the write scope lists the trash but is refused the rest (403).

var _ sessions.Trasher = (*Remote)(nil)

// Trash moves session id to the server's trash. A dry run only says what
// would move, from the server's listing.
func (r *Remote) Trash(ctx context.Context, id string, opt sessions.TrashOptions) ([]sessions.TrashItem, error) {
	if opt.Seal != nil {
		return nil, sessions.Unsupported(r, "seal a trash item", "the server keeps its own trash")
	}
	if opt.DryRun {
		list, err := r.listing(ctx)
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			if strings.EqualFold(s.ID, id) {
				return []sessions.TrashItem{r.trashItemOf(events.TrashItem{SessionID: s.ID, ProjectKey: s.ProjectKey,
					Title: s.Title, Reason: opt.Reason})}, nil
			}
		}
		return nil, fmt.Errorf("%w: session %s on %s", sessions.ErrNotFound, id, r.where)
	}
	it, err := r.client.Trash(ctx, id, opt.Reason)
	if err != nil {
		var se *sinkhelper.StatusError
		if errors.As(err, &se) && se.Code == http.StatusNotFound {
			err = fmt.Errorf("%w: %w", sessions.ErrNotFound, err)
		}
		return nil, err
	}
	r.forget()
	return []sessions.TrashItem{r.trashItemOf(it)}, nil
}

// TrashItems lists the server's trash, oldest first.
func (r *Remote) TrashItems(ctx context.Context) ([]sessions.TrashItem, []string, error) {
	list, err := r.client.TrashItems(ctx)
	if err != nil {
		return nil, nil, err
	}
	out := make([]sessions.TrashItem, len(list))
	for i, it := range list {
		out[i] = r.trashItemOf(it)
	}
	return out, nil, nil
}

// Restore puts a trash item (its id, its session id or a unique prefix)
// back on the server.
func (r *Remote) Restore(ctx context.Context, ref string, _ sessions.RestoreOptions) (sessions.TrashItem, error) {
	it, err := r.client.Restore(ctx, ref)
	if err != nil {
		var se *sinkhelper.StatusError
		if errors.As(err, &se) && se.Code == http.StatusNotFound {
			err = fmt.Errorf("%w: %w", jsonl.ErrTrashNotFound, err)
		}
		return sessions.TrashItem{}, err
	}
	r.forget()
	return r.trashItemOf(it), nil
}

// EmptyTrash deletes the items trashed more than olderThan ago (all with
// 0) on the server, or only lists them with dryRun. The server's clock
// decides what is older, not now.
func (r *Remote) EmptyTrash(ctx context.Context, olderThan time.Duration, dryRun bool, _ time.Time) ([]sessions.TrashItem, error) {
	list, err := r.client.EmptyTrash(ctx, "", olderThan, dryRun)
	out := make([]sessions.TrashItem, len(list))
	for i, it := range list {
		out[i] = r.trashItemOf(it)
	}
	return out, err
}

// forget makes the next listing ask the server again, after its sessions
// changed (what was fetched stays: a viewer reads through a new Remote).
func (r *Remote) forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listed = nil
}

// trashItemOf is a server's trash item as the other stores list theirs:
// Project is the SessionStore project key, else the store's name (the
// server keeps no project folder); Entries the main transcript ("") and
// each subagent.
func (r *Remote) trashItemOf(it events.TrashItem) sessions.TrashItem {
	project := it.ProjectKey
	if project == "" {
		project = r.name
	}
	out := sessions.TrashItem{Format: jsonl.TrashFormat, ID: it.ID, SessionID: it.SessionID, Project: project,
		Title: it.Title, Reason: it.Reason, TrashedAt: it.TrashedAt, Entries: []string{""}, Complete: true}
	for _, a := range it.Subagents {
		out.Entries = append(out.Entries, "subagents/agent-"+a)
	}
	return out
}
