package ui

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/sessions"
)

// The share links' pages: POST Base/share makes one (from a session's
// page), Base/shares lists the tenant's with a revoke button each, and
// Base/s/<id>/… is a link's own viewer, reached without signing in.

// shareView is a share link's viewer.
type shareView struct {
	h     *Handler
	share Share
}

// sharesPage is the list of a tenant's share links.
type sharesPage struct {
	Shares []shareRow
}

// shareRow is one share link as the list shows it.
type shareRow struct {
	Share
	// Link is the link to hand out (while it opens), Session the
	// session's page.
	Link, Session string
	State         string
}

// share makes a share link.
func (p *Portal) share(w http.ResponseWriter, r *http.Request, c *caller) {
	if !p.checkPost(w, r, c) {
		return
	}
	st, _, err := c.view.store(r)
	if err != nil {
		c.view.fail(w, r, err)
		return
	}
	ctx := r.Context()
	id, err := resolve(ctx, st, strings.TrimSpace(r.PostFormValue("session")))
	if err != nil {
		c.view.fail(w, r, err)
		return
	}
	msg := strings.TrimSpace(r.PostFormValue("message"))
	if err := hasMessage(ctx, st, id, msg); err != nil {
		c.view.fail(w, r, err)
		return
	}
	ttl, err := time.ParseDuration(r.PostFormValue("expires"))
	if err != nil || ttl <= 0 || ttl > maxShareTTL {
		c.view.fail(w, r, &httpError{http.StatusBadRequest, "expires: want a duration up to 90 days, such as 24h"})
		return
	}
	now := p.opt.Now()
	if _, err := p.opt.Shares.Create(ctx, c.p.Tenant, id, msg, now, now.Add(ttl)); err != nil {
		c.view.fail(w, r, err)
		return
	}
	http.Redirect(w, r, p.opt.Base+"/shares", http.StatusSeeOther)
}

// hasMessage checks that session id of st exists and holds message uuid
// (when not "").
func hasMessage(ctx context.Context, st sessions.Store, id, uuid string) error {
	info, err := st.Info(ctx, id)
	if err != nil {
		return err
	}
	if info == nil {
		return &httpError{http.StatusNotFound, "no session " + id}
	}
	if uuid == "" {
		return nil
	}
	msgs, _, err := st.Messages(ctx, id, sessions.MessagesOptions{IncludeSystem: true})
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(msgs, func(m sessions.Message) bool { return m.UUID == uuid }) {
		return &httpError{http.StatusBadRequest, "the session has no message " + uuid + " in its conversation"}
	}
	return nil
}

// shareList lists the caller's tenant's share links.
func (p *Portal) shareList(w http.ResponseWriter, r *http.Request, c *caller) {
	list, err := p.opt.Shares.List(c.p.Tenant)
	if err != nil {
		c.view.fail(w, r, err)
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	now := p.opt.Now()
	page := sharesPage{}
	store := c.view.opt.Stores[0]
	for _, s := range list {
		row := shareRow{Share: s, State: "active",
			Session: p.opt.Base + "/sessions/" + url.PathEscape(s.Session) + "?" + url.Values{"store": {store}}.Encode()}
		switch {
		case s.Revoked != nil:
			row.State = "revoked"
		case !s.Active(now):
			row.State = "expired"
		default:
			row.Link = scheme + "://" + r.Host + p.opt.Base + "/s/" + s.ID
		}
		page.Shares = append(page.Shares, row)
	}
	c.view.render(w, "shares", c.view.frame("Share links", store, page))
}

// revoke ends one of the caller's tenant's share links.
func (p *Portal) revoke(w http.ResponseWriter, r *http.Request, c *caller) {
	if !p.checkPost(w, r, c) {
		return
	}
	id := r.PathValue("id")
	err := p.opt.Shares.Revoke(r.Context(), c.p.Tenant, id, p.opt.Now())
	if errors.Is(err, ErrNoShare) {
		err = &httpError{http.StatusNotFound, "no such share link"}
	}
	if err != nil {
		c.view.fail(w, r, err)
		return
	}
	p.dropShare(r.Context(), id)
	http.Redirect(w, r, p.opt.Base+"/shares", http.StatusSeeOther)
}

// shareView serves a share link's pages, without signing in: while the
// link opens, its session (or message), redacted, read only.
func (p *Portal) shareView(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("share")
	sh, ok := p.opt.Shares.Active(id, p.opt.Now())
	if !ok {
		p.dropShare(r.Context(), id)
		w.WriteHeader(http.StatusNotFound)
		p.assets.render(w, "error", pageData{Title: "No such share link", Version: p.assets.version,
			Message: "This share link does not exist, was revoked or has expired."})
		return
	}
	v, err := p.shareViewOf(sh)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	prefix := p.opt.Base + "/s/" + id
	if rest := strings.TrimPrefix(r.URL.Path, prefix); rest == "" || rest == "/" {
		dest := prefix + "/sessions/" + url.PathEscape(sh.Session) + "?store=share"
		if sh.Message != "" {
			dest += "&" + url.Values{"at": {sh.Message}}.Encode() + "#m-" + sh.Message
		}
		http.Redirect(w, r, dest, http.StatusSeeOther)
		return
	}
	w.Header().Set("X-Robots-Tag", "noindex")
	v.h.ServeHTTP(w, stripBase(r, prefix))
}

// shareViewOf is a share link's viewer (made once).
func (p *Portal) shareViewOf(sh Share) (*shareView, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v := p.shares[sh.ID]; v != nil {
		return v, nil
	}
	h, err := New(Options{Base: p.opt.Base + "/s/" + sh.ID, Stores: []string{"share"}, NoLive: true, NoExport: true,
		Poll: p.opt.Poll, ListTTL: p.opt.ListTTL,
		Open: func(ctx context.Context, _ string) (sessions.Store, error) {
			red, err := p.opt.Redactor(ctx)
			if err != nil {
				// Never raw text because the rules did not load.
				return nil, err
			}
			st, err := p.opt.ShareStore(ctx, sh.Tenant)
			if err != nil {
				return nil, err
			}
			return newShareStore(st, sh, red), nil
		}})
	if err != nil {
		return nil, err
	}
	v := &shareView{h: h, share: sh}
	p.shares[sh.ID] = v
	return v, nil
}

// dropShare forgets a share link's viewer (revoked, expired).
func (p *Portal) dropShare(ctx context.Context, id string) {
	p.mu.Lock()
	v := p.shares[id]
	delete(p.shares, id)
	p.mu.Unlock()
	if v != nil {
		_ = v.h.Close(ctx)
	}
}
