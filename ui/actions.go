package ui

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/transcript/fork"
)

// Actions change a session: POST only, with the CSRF token, and only what
// the store can do (its capabilities); each answers with a redirect to
// the page that shows the change.

// maxForm bounds an action's form.
const maxForm = 64 << 10

// confirmPage asks before a session goes to the trash.
type confirmPage struct {
	ID, Store, Title, Action string
}

// changeForm reads a change's form (within maxForm) and checks that it
// came from the handler's own page; it answers a failure itself.
func (h *Handler) changeForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, &httpError{http.StatusBadRequest, "bad form: " + err.Error()})
		return false
	}
	if !h.checkCSRF(r) || !sameOrigin(r) {
		h.fail(w, r, &httpError{http.StatusForbidden, "this change did not come from scribe's own page (CSRF token missing or wrong)"})
		return false
	}
	return true
}

// action serves POST /sessions/{id}/{action}.
func (h *Handler) action(w http.ResponseWriter, r *http.Request) {
	if !h.changeForm(w, r) {
		return
	}
	st, name, id, err := h.sessionOf(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	back := h.opt.Base + "/sessions/" + url.PathEscape(id) + "?" + url.Values{"store": {name}}.Encode()
	switch r.PathValue("action") {
	case "rename":
		err = h.rename(r, st, id)
	case "tag":
		err = h.tag(r, st, id)
	case "archive":
		err = h.archive(r, st, id)
	case "trash":
		if r.PostFormValue("confirm") != "1" {
			title := id
			if info, err := st.Info(r.Context(), id); err == nil && info != nil {
				title = info.Summary
			}
			h.render(w, "confirm", h.frame("Move to the trash?", name, confirmPage{ID: id, Store: name, Title: title, Action: "trash"}))
			return
		}
		err = h.trash(r, st, id)
		back = h.opt.Base + "/?" + url.Values{"store": {name}}.Encode()
	case "fork":
		var newID string
		newID, err = h.fork(r, st, id)
		back = h.opt.Base + "/sessions/" + url.PathEscape(newID) + "?" + url.Values{"store": {name}}.Encode()
	default:
		err = &httpError{http.StatusNotFound, "no such action"}
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.forget(name)
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// sameOrigin reports whether a request's Origin, when it has one, is the
// page's own.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// capable is st as capability T, or an error naming what it cannot do.
func capable[T any](st sessions.Store, what string) (T, error) {
	c, ok := st.(T)
	if !ok {
		return c, sessions.Unsupported(st, what, "")
	}
	return c, nil
}

func (h *Handler) rename(r *http.Request, st sessions.Store, id string) error {
	m, err := capable[sessions.Manager](st, "rename")
	if err != nil {
		return err
	}
	title := strings.TrimSpace(r.PostFormValue("title"))
	if title == "" {
		return &httpError{http.StatusBadRequest, "a title is needed"}
	}
	_, err = m.Rename(r.Context(), id, title, sessions.ManageOptions{})
	return err
}

func (h *Handler) tag(r *http.Request, st sessions.Store, id string) error {
	m, err := capable[sessions.Manager](st, "tag")
	if err != nil {
		return err
	}
	tag := strings.TrimSpace(r.PostFormValue("tag"))
	_, err = m.Tag(r.Context(), id, tag, tag == "", sessions.ManageOptions{})
	return err
}

func (h *Handler) archive(r *http.Request, st sessions.Store, id string) error {
	a, err := capable[sessions.Archiver](st, "archive")
	if err != nil {
		return err
	}
	_, err = a.SetArchived(r.Context(), id, r.PostFormValue("archived") != "0", sessions.ManageOptions{})
	return err
}

func (h *Handler) trash(r *http.Request, st sessions.Store, id string) error {
	t, err := capable[sessions.Trasher](st, "move sessions to the trash")
	if err != nil {
		return err
	}
	_, err = t.Trash(r.Context(), id, sessions.TrashOptions{Reason: "rm", Markers: true})
	return err
}

func (h *Handler) fork(r *http.Request, st sessions.Store, id string) (string, error) {
	f, err := capable[sessions.Forker](st, "fork")
	if err != nil {
		return "", err
	}
	newID, _, err := f.Fork(r.Context(), id, fork.Options{UpTo: strings.TrimSpace(r.PostFormValue("up_to")),
		Title: strings.TrimSpace(r.PostFormValue("title"))})
	return newID, err
}
