package server

// The trash's routes: nothing a tenant stores is deleted without a trash
// (storetrash.go keeps it). Tokens and tenants as every route: a tenant
// sees, restores and empties only its own items.
//
//   GET  /v1/trash                                     read
//        200 {"data":[<item>,…]}  oldest first, where an item is
//            {"id","session_id","trashed_at","reason","title","tag",
//             "created_at","last_activity","entries","main_entries",
//             "subagents":[…],"project_key"?,"store_session_id"?}
//   POST /v1/trash          {"session_id":"<uuid>","reason":"rm"}     write
//        200 <item>; 404 no such session (or in the trash already)
//   POST /v1/trash/restore  {"ref":"<item id, session id or a prefix>"} write
//        200 <item>; 404 no such item; 409 several items, or one being
//        emptied
//   POST /v1/trash/empty    {"ref":"…"} | {"older_than_seconds":n}, "dry_run"?
//        200 {"data":[<item>,…]} the items deleted for good (with dry_run,
//        that would be); without ref and older_than_seconds, every item
//
// Items are also emptied by the server once older than trash_retention
// (sweepTrash), each purge counted in /metrics and logged.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/server/wire"
)

// routeTrash names the trash's routes in metrics.
const routeTrash = "trash"

// dispatchTrash routes /v1/trash and /v1/trash/<rest>.
func (s *Server) dispatchTrash(w http.ResponseWriter, r *http.Request, rest string) string {
	switch {
	case rest == "" && r.Method == http.MethodGet:
		s.withSession(w, r, ScopeRead, "", s.trashList)
	case rest == "" && allow(w, r, http.MethodGet, http.MethodPost):
		s.withSession(w, r, ScopeWrite, "", s.trashMove)
	case rest == "/restore" && allow(w, r, http.MethodPost):
		s.withSession(w, r, ScopeWrite, "", s.trashRestore)
	case rest == "/empty" && allow(w, r, http.MethodPost):
		s.withSession(w, r, ScopeWrite, "", s.trashEmpty)
	case rest != "" && rest != "/restore" && rest != "/empty":
		writeError(w, http.StatusNotFound, "not_found_error", "no such route: %s %s", r.Method, truncate(r.URL.Path, 200))
	}
	return routeTrash
}

// trashBody reads a trash request; it answers 400 itself.
func (s *Server) trashBody(w http.ResponseWriter, r *http.Request) (wire.TrashRequest, bool) {
	var in wire.TrashRequest
	body, ok := s.readBody(w, r)
	if !ok {
		return in, false
	}
	if err := json.Unmarshal(body, &in); err != nil || in.OlderThanSeconds < 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "want a JSON object of session_id, reason, ref, older_than_seconds (0 or more), dry_run: %v", err)
		return in, false
	}
	return in, true
}

func (s *Server) trashList(w http.ResponseWriter, _ *http.Request, req request) {
	metas, err := s.st.trashItems(req.ctx, req.tenant)
	if err != nil {
		s.trashError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, trashList(metas))
}

func (s *Server) trashMove(w http.ResponseWriter, r *http.Request, req request) {
	in, ok := s.trashBody(w, r)
	if !ok {
		return
	}
	if !core.IsUUID(in.SessionID) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "session_id %q is not a UUID", truncate(in.SessionID, 100))
		return
	}
	reason := in.Reason
	if reason == "" {
		reason = "rm"
	}
	meta, err := s.st.trashSession(req.ctx, req.tenant, strings.ToLower(in.SessionID), truncate(reason, 64), time.Now())
	if err != nil {
		s.trashError(w, err)
		return
	}
	s.m.TrashMoved.Add(1)
	s.log.Info("moved a session to the trash", "tenant", req.tenant, "session", meta.Session, "item", meta.Trash.ID, "reason", reason)
	writeJSON(w, http.StatusOK, trashItem(meta))
}

func (s *Server) trashRestore(w http.ResponseWriter, r *http.Request, req request) {
	in, ok := s.trashBody(w, r)
	if !ok {
		return
	}
	meta, err := s.st.restoreItem(req.ctx, req.tenant, in.Ref)
	if err != nil {
		s.trashError(w, err)
		return
	}
	s.m.TrashRestored.Add(1)
	s.log.Info("restored a session from the trash", "tenant", req.tenant, "session", meta.Session, "item", meta.Trash.ID)
	writeJSON(w, http.StatusOK, trashItem(meta))
}

func (s *Server) trashEmpty(w http.ResponseWriter, r *http.Request, req request) {
	in, ok := s.trashBody(w, r)
	if !ok {
		return
	}
	var items []*sessionMeta
	var err error
	if in.Ref != "" {
		var m *sessionMeta
		if m, err = s.st.findTrash(req.ctx, req.tenant, in.Ref); err == nil {
			items = []*sessionMeta{m}
		}
	} else {
		items, err = s.st.trashItems(req.ctx, req.tenant)
		items = olderThan(items, time.Duration(in.OlderThanSeconds)*time.Second, time.Now())
	}
	if err == nil && !in.DryRun {
		items, err = s.emptyItems(req.ctx, items, "request")
	}
	if err != nil && len(items) == 0 {
		s.trashError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, trashList(items))
}

// trashList is items as the trash's routes answer them.
func trashList(items []*sessionMeta) wire.TrashList {
	out := wire.TrashList{Data: make([]wire.TrashItem, 0, len(items))}
	for _, m := range items {
		out.Data = append(out.Data, trashItem(m))
	}
	return out
}

// olderThan keeps the items trashed more than age before now (all with 0).
func olderThan(items []*sessionMeta, age time.Duration, now time.Time) []*sessionMeta {
	var out []*sessionMeta
	for _, m := range items {
		if age <= 0 || now.Sub(m.Trash.At) > age {
			out = append(out, m)
		}
	}
	return out
}

// emptyItems deletes items for good, each counted and logged, and returns
// those it deleted (up to the first failure).
func (s *Server) emptyItems(ctx context.Context, items []*sessionMeta, why string) ([]*sessionMeta, error) {
	for i, m := range items {
		n, err := s.st.emptyItem(ctx, m)
		if err != nil {
			s.log.Warn("could not empty a trash item", "tenant", m.Tenant, "item", m.Trash.ID, "error", err)
			return items[:i], err
		}
		s.m.TrashPurged.Add(1)
		s.m.TrashPurgedEntries.Add(int64(n))
		s.log.Info("emptied a trash item for good", "tenant", m.Tenant, "session", m.Session, "item", m.Trash.ID,
			"entries", n, "trashed_at", m.Trash.At, "why", why)
	}
	return items, nil
}

// sweepTrash empties every tenant's items trashed more than the retention
// before now; it returns how many.
func (s *Server) sweepTrash(ctx context.Context, retention time.Duration, now time.Time) (int, error) {
	items, err := s.st.trashItems(ctx, "*")
	if err != nil {
		return 0, err
	}
	done, err := s.emptyItems(ctx, olderThan(items, retention, now), "trash_retention")
	return len(done), err
}

// keepSweeping runs sweepTrash at start and every hour until ctx ends.
func (s *Server) keepSweeping(ctx context.Context, retention time.Duration) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if _, err := s.sweepTrash(ctx, retention, time.Now()); err != nil && ctx.Err() == nil {
			s.log.Warn("emptying the trash past its retention failed; retried within the hour", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// trashError answers a trash failure.
func (s *Server) trashError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, errTrashNotFound):
		writeError(w, http.StatusNotFound, "not_found_error", "%v", err)
	case errors.Is(err, errTrashAmbiguous), errors.Is(err, errTrashEmptying):
		writeError(w, http.StatusConflict, "conflict_error", "%v", err)
	default:
		s.storeError(w, err)
	}
}
