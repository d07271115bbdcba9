package ui

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/sessions"
)

// The trash page (/trash) lists what a store that keeps a trash
// (sessions.Trasher) holds in it, each item with a Restore button (POST
// /trash/restore, with the CSRF token). The list page links to it when
// the store keeps one.

// trashPage is the trash of one store.
type trashPage struct {
	Store, Where string
	Items        []trashRow
	Problems     []string
}

// trashRow is one item as the page shows it.
type trashRow struct {
	ID, SessionID, Title, Project, Reason string
	TrashedAt                             time.Time
}

// trashList serves GET /trash.
func (h *Handler) trashList(w http.ResponseWriter, r *http.Request) {
	st, name, err := h.store(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	t, ok := st.(sessions.Trasher)
	if !ok {
		h.fail(w, r, &httpError{http.StatusNotFound, name + " keeps no trash"})
		return
	}
	items, problems, err := t.TrashItems(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := trashPage{Store: name, Where: st.Where(), Problems: problems}
	for i := len(items) - 1; i >= 0; i-- { // newest first
		it := items[i]
		title := it.Title
		if title == "" {
			title = it.SessionID
		}
		p.Items = append(p.Items, trashRow{ID: it.ID, SessionID: it.SessionID, Title: title, Project: it.Project,
			Reason: it.Reason, TrashedAt: it.TrashedAt})
	}
	h.render(w, "trash", h.frame("Trash", name, p))
}

// trashRestore serves POST /trash/restore: ref (a trash item) back into
// the store, then the list, where it is again.
func (h *Handler) trashRestore(w http.ResponseWriter, r *http.Request) {
	if !h.changeForm(w, r) {
		return
	}
	st, name, err := h.store(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	t, err := capable[sessions.Trasher](st, "restore from a trash")
	ref := strings.TrimSpace(r.PostFormValue("ref"))
	if err == nil && ref == "" {
		err = &httpError{http.StatusBadRequest, "which trash item? (ref)"}
	}
	if err == nil {
		_, err = t.Restore(r.Context(), ref, sessions.RestoreOptions{})
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.forget(name)
	http.Redirect(w, r, h.opt.Base+"/?"+url.Values{"store": {name}}.Encode(), http.StatusSeeOther)
}
