package server

// The store's side of the trash (trash.go has the routes): a session in
// the trash is a session whose metadata holds a trash mark.
//
//   KV SCRIBE_SESSIONS <tenant>.<session> → {…, "trash": {id, at, reason,
//                                            emptying?}}
//
// Moving a session to the trash, or restoring it, is one compare-and-set of
// its metadata: its entries, markers, subagents and summary stay where
// they are, so a restore gives the session back with the same entries in
// the same order (the same History pages, byte for byte), its title, tag
// and subagents, and a crash can leave it only in the trash or out of it,
// never half of each. Every read honours the mark: a session in the trash
// is not listed (GET /v1/sessions, the SessionStore's listSessions and
// summaries) and not found (the History API, the session log, the
// SessionStore's load, subkeys and summary), as if deleted; a SessionStore
// delete of it deletes nothing. An entry sent to a session in the trash is
// stored and stays in the trash with it (nothing sent is dropped); it is
// back with the rest when the session is restored.
//
// Emptying an item marks it emptying (a compare-and-set: a restore then
// refuses it), then purges the session as a SessionStore delete does: its
// subjects, its markers, its summary, its metadata last. A crash midway
// leaves the item in the trash, marked emptying; emptying it again
// finishes. Items are emptied on request (POST /v1/trash/empty) and, past
// the trash_retention setting, by the server itself (sweepTrash).
//
// Between processes sharing the NATS, a restore and an empty of the same
// item are kept apart by the compare-and-sets: whichever marks first wins,
// the other sees the mark changed.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/server/wire"
)

// trashMark is a session in the trash (sessionMeta.Trash).
type trashMark struct {
	ID     string    `json:"id"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
	// Emptying: the item is being deleted for good (see the top).
	Emptying bool `json:"emptying,omitempty"`
}

// Trash errors.
var (
	errTrashNotFound  = errors.New("no such item in the trash")
	errTrashAmbiguous = errors.New("the reference names several items in the trash")
	errTrashEmptying  = errors.New("the item is being emptied")
)

// trashID names the item of session trashed at at.
func trashID(session string, at time.Time) string {
	return at.UTC().Format("20060102T150405.000000000Z") + "-" + session
}

// mark sets (or, with nil, clears) the session's trash mark with a
// compare-and-set, when want says the current metadata allows it; it
// returns the metadata written.
func (st *store) mark(ctx context.Context, tenant, session string, want func(*sessionMeta) error, mark func(*sessionMeta) *trashMark) (*sessionMeta, error) {
	mu := st.lock(sessionKey(tenant, session))
	mu.Lock()
	defer mu.Unlock()
	for attempt := 0; ; attempt++ {
		meta, rev, err := st.reconcile(ctx, tenant, session)
		if err == nil && meta == nil {
			err = errNoSession
		}
		if err == nil {
			err = want(meta)
		}
		if err != nil {
			return nil, err
		}
		next := meta.clone()
		next.Trash = mark(meta)
		if _, err = st.putMeta(ctx, tenant, session, next, rev); err == nil {
			return next, nil
		}
		if !errors.Is(err, errMetaMismatch) || attempt >= maxFenceAttempts {
			return nil, err
		}
	}
}

// trashSession moves the session to the trash.
func (st *store) trashSession(ctx context.Context, tenant, session, reason string, now time.Time) (*sessionMeta, error) {
	return st.mark(ctx, tenant, session, func(m *sessionMeta) error {
		if m.Trash != nil {
			return errNoSession // in the trash already: not a session any more
		}
		return nil
	}, func(*sessionMeta) *trashMark {
		return &trashMark{ID: trashID(session, now), At: now.UTC(), Reason: reason}
	})
}

// trashItems lists the tenant's trash ("*": every tenant's), oldest first.
func (st *store) trashItems(ctx context.Context, tenant string) ([]*sessionMeta, error) {
	metas, err := st.listSessions(ctx, tenant)
	if err != nil {
		return nil, err
	}
	var out []*sessionMeta
	for _, m := range metas {
		if m.Trash != nil && (tenant == "*" || m.Tenant == tenant) {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Trash.ID < out[j].Trash.ID })
	return out, nil
}

// findTrash resolves ref (an item id, a session id, or a unique prefix of
// either) in the tenant's trash.
func (st *store) findTrash(ctx context.Context, tenant, ref string) (*sessionMeta, error) {
	items, err := st.trashItems(ctx, tenant)
	if err != nil {
		return nil, err
	}
	ref = strings.ToLower(ref)
	var hits []*sessionMeta
	for _, m := range items {
		if strings.ToLower(m.Trash.ID) == ref {
			return m, nil
		}
		if ref != "" && (strings.HasPrefix(strings.ToLower(m.Trash.ID), ref) || strings.HasPrefix(m.Session, ref)) {
			hits = append(hits, m)
		}
	}
	switch len(hits) {
	case 0:
		return nil, fmt.Errorf("%w: %q", errTrashNotFound, truncate(ref, 100))
	case 1:
		return hits[0], nil
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.Trash.ID
	}
	return nil, fmt.Errorf("%w: %q names %s", errTrashAmbiguous, truncate(ref, 100), strings.Join(ids, ", "))
}

// sameItem checks that the session still holds item id, not being emptied.
func sameItem(id string) func(*sessionMeta) error {
	return func(m *sessionMeta) error {
		switch {
		case m.Trash == nil || m.Trash.ID != id:
			return fmt.Errorf("%w: %s (restored or emptied meanwhile)", errTrashNotFound, id)
		case m.Trash.Emptying:
			return fmt.Errorf("%w: %s; empty it again to finish", errTrashEmptying, id)
		}
		return nil
	}
}

// restoreItem takes the session of ref out of the trash.
func (st *store) restoreItem(ctx context.Context, tenant, ref string) (*sessionMeta, error) {
	m, err := st.findTrash(ctx, tenant, ref)
	if err != nil {
		return nil, err
	}
	if _, err := st.mark(ctx, tenant, m.Session, sameItem(m.Trash.ID), func(*sessionMeta) *trashMark { return nil }); err != nil {
		return nil, err
	}
	return m, nil
}

// emptyItem deletes the session of item m for good and returns the
// number of entries removed.
func (st *store) emptyItem(ctx context.Context, m *sessionMeta) (uint64, error) {
	id := m.Trash.ID
	_, err := st.mark(ctx, m.Tenant, m.Session, func(cur *sessionMeta) error {
		if cur.Trash == nil || cur.Trash.ID != id {
			return fmt.Errorf("%w: %s (restored or emptied meanwhile)", errTrashNotFound, id)
		}
		return nil
	}, func(cur *sessionMeta) *trashMark {
		t := *cur.Trash
		t.Emptying = true
		return &t
	})
	if err != nil {
		return 0, err
	}
	mu := st.lock(sessionKey(m.Tenant, m.Session))
	mu.Lock()
	defer mu.Unlock()
	return st.purgeSession(ctx, m.Tenant, m.Session)
}

// trashItem is m as the trash's routes answer it.
func trashItem(m *sessionMeta) wire.TrashItem {
	agents := make([]string, 0, len(m.Agents))
	for a, am := range m.Agents {
		if am.Count > 0 {
			agents = append(agents, a)
		}
	}
	sort.Strings(agents)
	return wire.TrashItem{ID: m.Trash.ID, SessionID: m.Session, TrashedAt: m.Trash.At, Reason: m.Trash.Reason,
		Title: m.Title(), Tag: m.Tag, CreatedAt: m.CreatedAt, LastActivity: m.UpdatedAt, Entries: m.Count,
		MainEntries: m.MainCount, Subagents: agents, ProjectKey: m.ProjectKey, StoreSessionID: m.StoreSessionID}
}
