package ui

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/e0dc0000/scribe/sessions"
)

// Portal is the web viewer on scribe serve, under Base (/ui): a tenant
// signs in with a bearer token of the server (a form; the
// Authorization header works too) and reads its own sessions only,
// through the store PortalOptions.Open gives for its token. Signing in
// sets a cookie (HttpOnly, SameSite=Strict, Secure over TLS) holding the
// id of a sign-in kept in the portal's memory, never the token. Every
// POST carries the CSRF token of the signed-in viewer (the sign-in form:
// that of a cookie set with the form), every answer a strict
// Content-Security-Policy, and a request whose Host is not one of
// PortalOptions.Hosts is refused (DNS rebinding).
//
// Share links (PortalOptions.Shares): a signed-in tenant makes a link to
// one of its sessions, or one message of it, that opens without signing
// in until it expires or is revoked, redacted, read only: /s/<id> reads
// the session through PortalOptions.ShareStore for the link's tenant,
// every string through PortalOptions.Redactor.
type Portal struct {
	opt    PortalOptions
	assets *assets
	mux    *http.ServeMux

	mu     sync.Mutex
	logins map[string]*login     // sign-in id → sign-in
	views  map[string]*Handler   // token's hash → its viewer
	shares map[string]*shareView // share id → its page
}

// Principal is what a token grants: its tenant and scopes.
type Principal struct {
	Tenant      string
	Read, Write bool
}

// PortalOptions configure a Portal.
type PortalOptions struct {
	// Base is the path served: "/ui".
	Base string
	// Hosts are the Host headers answered (asked at each request: the
	// server's address is known once it listens).
	Hosts func() []string
	// Check says what a bearer token grants; false for a wrong one.
	Check func(token string) (Principal, bool)
	// Open is the store a token reads: its tenant's sessions only.
	Open func(ctx context.Context, token string, p Principal) (sessions.Store, error)
	// Search answers /search in the viewer (nil: no search).
	Search SearchFunc
	// Usage answers /usage and each session's usage in the viewer (nil:
	// no usage page).
	Usage UsageFunc
	// Markdown, when set, offers a session's Markdown download
	// (Options.Markdown).
	Markdown ExportFunc
	// Bundle, when set, gives the writer of a tenant store's session
	// bundles (Options.Bundle).
	Bundle func(st sessions.Store) ExportFunc
	// Shares keeps the share links (nil: none are made). ShareStore is
	// the store of a tenant's sessions a link reads, Redactor what
	// redacts it (both needed with Shares).
	Shares     *ShareBook
	ShareStore func(ctx context.Context, tenant string) (sessions.Store, error)
	Redactor   func(ctx context.Context) (Redact, error)
	// Poll and ListTTL are the viewers' (Options).
	Poll, ListTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// login is one sign-in.
type login struct {
	token   string
	p       Principal
	expires time.Time
}

const (
	// loginTTL is how long a sign-in lasts.
	loginTTL = 12 * time.Hour
	// maxLogins bounds the sign-ins kept: past it the oldest goes.
	maxLogins = 10000
	// maxShareTTL is the longest a share link may last.
	maxShareTTL = 90 * 24 * time.Hour
)

// NewPortal makes a Portal.
func NewPortal(opt PortalOptions) (*Portal, error) {
	if opt.Check == nil || opt.Open == nil || opt.Hosts == nil {
		return nil, errors.New("ui: a portal needs Check, Open and Hosts")
	}
	if opt.Shares != nil && (opt.ShareStore == nil || opt.Redactor == nil) {
		return nil, errors.New("ui: share links need ShareStore and Redactor")
	}
	opt.Base = strings.TrimSuffix(opt.Base, "/")
	if opt.Now == nil {
		opt.Now = time.Now
	}
	a, err := newAssets(opt.Base)
	if err != nil {
		return nil, err
	}
	p := &Portal{opt: opt, assets: a, logins: map[string]*login{}, views: map[string]*Handler{}, shares: map[string]*shareView{}}
	p.routes()
	return p, nil
}

func (p *Portal) routes() {
	b := p.opt.Base
	m := http.NewServeMux()
	static := http.NewServeMux()
	p.assets.routes(static)
	m.Handle("GET "+b+"/static/", http.StripPrefix(b, static))
	m.HandleFunc("GET "+b+"/login", p.loginForm)
	m.HandleFunc("POST "+b+"/login", p.login)
	m.HandleFunc("POST "+b+"/logout", p.signedIn(p.logout))
	if p.opt.Shares != nil {
		m.HandleFunc(b+"/s/{share}", p.shareView)
		m.HandleFunc(b+"/s/{share}/", p.shareView)
		m.HandleFunc("POST "+b+"/share", p.signedIn(p.share))
		m.HandleFunc("GET "+b+"/shares", p.signedIn(p.shareList))
		m.HandleFunc("POST "+b+"/shares/{id}/revoke", p.signedIn(p.revoke))
	}
	m.HandleFunc(b+"/", p.signedIn(p.view))
	m.HandleFunc(b, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, b+"/", http.StatusSeeOther) })
	p.mux = m
}

// ServeHTTP checks the Host, then serves the request.
func (p *Portal) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	if !slices.Contains(p.opt.Hosts(), strings.ToLower(r.Host)) {
		http.Error(w, "this server's viewer answers only to its own names (see server { ui_hosts })", http.StatusForbidden)
		return
	}
	p.mux.ServeHTTP(w, r)
}

// Close closes the stores the viewers opened.
func (p *Portal) Close(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for k, h := range p.views {
		errs = append(errs, h.Close(ctx))
		delete(p.views, k)
	}
	for k, v := range p.shares {
		errs = append(errs, v.h.Close(ctx))
		delete(p.shares, k)
	}
	return errors.Join(errs...)
}

// caller is a signed-in request's token, grant and viewer.
type caller struct {
	token string
	p     Principal
	view  *Handler
	// login is the sign-in's id ("" with an Authorization header).
	login string
}

type callerKey struct{}

// signedIn serves next for a signed-in caller: the Authorization header's
// token, else the sign-in cookie's. Others get the sign-in form (a GET)
// or 401.
func (p *Portal) signedIn(next func(http.ResponseWriter, *http.Request, *caller)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := p.caller(r)
		if err != nil {
			p.refuse(w, r, err)
			return
		}
		next(w, r, c)
	}
}

// errSignIn is a request without a valid sign-in.
var errSignIn = errors.New("sign in with a token of this server")

// caller finds who a request is.
func (p *Portal) caller(r *http.Request) (*caller, error) {
	var c caller
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, _ := strings.Cut(strings.TrimSpace(h), " ")
		tok = strings.TrimSpace(tok)
		pr, ok := p.opt.Check(tok)
		if !strings.EqualFold(scheme, "Bearer") || !ok {
			return nil, errSignIn
		}
		c.token, c.p = tok, pr
	} else {
		ck, err := r.Cookie(p.cookieName(r))
		if err != nil {
			return nil, errSignIn
		}
		p.mu.Lock()
		l := p.logins[ck.Value]
		if l != nil && !p.opt.Now().Before(l.expires) {
			delete(p.logins, ck.Value)
			l = nil
		}
		p.mu.Unlock()
		if l == nil {
			return nil, errSignIn
		}
		c.token, c.p, c.login = l.token, l.p, ck.Value
	}
	if !c.p.Read {
		return nil, fmt.Errorf("this token does not have the %q scope the viewer needs", "read")
	}
	view, err := p.viewer(c.token, c.p)
	if err != nil {
		return nil, err
	}
	c.view = view
	return &c, nil
}

// refuse answers a request that is not signed in: a page is sent to the
// sign-in form, anything else gets 401.
func (p *Portal) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if r.Method == http.MethodGet && r.Header.Get("Authorization") == "" && errors.Is(err, errSignIn) {
		next := r.URL.Path
		if r.URL.RawQuery != "" {
			next += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, p.opt.Base+"/login?"+url.Values{"next": {next}}.Encode(), http.StatusSeeOther)
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="scribe"`)
	http.Error(w, err.Error(), http.StatusUnauthorized)
}

// viewer is the Handler of a token (made once).
func (p *Portal) viewer(token string, pr Principal) (*Handler, error) {
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	p.mu.Lock()
	defer p.mu.Unlock()
	if h := p.views[key]; h != nil {
		return h, nil
	}
	h, err := New(Options{Base: p.opt.Base, Stores: []string{"serve/" + pr.Tenant}, Search: p.opt.Search, Usage: p.opt.Usage, Markdown: p.opt.Markdown, Bundle: p.opt.Bundle,
		Poll: p.opt.Poll, ListTTL: p.opt.ListTTL, Account: &Account{Tenant: pr.Tenant, Write: pr.Write, Shares: p.opt.Shares != nil},
		Share: p.opt.Shares != nil,
		Open:  func(ctx context.Context, _ string) (sessions.Store, error) { return p.opt.Open(ctx, token, pr) }})
	if err != nil {
		return nil, err
	}
	p.views[key] = h
	return h, nil
}

// view serves the viewer's pages, Base cut off.
func (p *Portal) view(w http.ResponseWriter, r *http.Request, c *caller) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !c.p.Write {
		http.Error(w, fmt.Sprintf("this token does not have the %q scope a change needs", "write"), http.StatusForbidden)
		return
	}
	c.view.ServeHTTP(w, stripBase(r, p.opt.Base))
}

// stripBase is r with base cut off its path.
func stripBase(r *http.Request, base string) *http.Request {
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.Path = strings.TrimPrefix(r.URL.Path, base)
	u.RawPath = strings.TrimPrefix(r.URL.RawPath, base)
	if u.Path == "" {
		u.Path = "/"
	}
	r2.URL = &u
	return r2
}

// cookieName is the sign-in cookie's name: a browser sends a host's
// cookies to all its ports, so the port is in it (two servers on one
// machine do not sign each other out).
func (p *Portal) cookieName(r *http.Request) string {
	if _, port, err := net.SplitHostPort(r.Host); err == nil {
		return "scribe_serve_" + port
	}
	return "scribe_serve"
}

// formCSRF is the sign-in form's CSRF cookie.
const formCSRF = "scribe_login_csrf"

// loginPage is the sign-in form's body.
type loginPage struct {
	Next, Problem string
}

// loginForm serves the sign-in form, with a fresh CSRF cookie.
func (p *Portal) loginForm(w http.ResponseWriter, r *http.Request) {
	p.renderLogin(w, r, http.StatusOK, "")
}

func (p *Portal) renderLogin(w http.ResponseWriter, r *http.Request, code int, problem string) {
	tok := randomToken()
	http.SetCookie(w, &http.Cookie{Name: formCSRF, Value: tok, Path: p.opt.Base + "/login", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: 3600})
	d := pageData{Title: "Sign in", CSRF: tok, Version: p.assets.version, Body: loginPage{Next: p.next(r.FormValue("next")), Problem: problem}}
	w.WriteHeader(code)
	p.assets.render(w, "login", d)
}

// next is where a sign-in goes: a page of the viewer, else its list.
func (p *Portal) next(s string) string {
	b := p.opt.Base
	if !strings.HasPrefix(s, b+"/") || strings.HasPrefix(s, b+"//") || strings.Contains(s, "\\") ||
		strings.HasPrefix(s, b+"/s/") || strings.HasPrefix(s, b+"/login") {
		return b + "/"
	}
	return s
}

// login signs in with the form's token.
func (p *Portal) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
		return
	}
	ck, err := r.Cookie(formCSRF)
	if err != nil || !sameOrigin(r) || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(r.PostFormValue("csrf"))) != 1 {
		http.Error(w, "this sign-in did not come from the server's own form (CSRF token missing or wrong): open the form again", http.StatusForbidden)
		return
	}
	tok := strings.TrimSpace(r.PostFormValue("token"))
	pr, ok := p.opt.Check(tok)
	switch {
	case !ok:
		p.renderLogin(w, r, http.StatusUnauthorized, "That is not a token of this server.")
		return
	case !pr.Read:
		p.renderLogin(w, r, http.StatusForbidden, `That token does not have the "read" scope the viewer needs.`)
		return
	}
	id := randomToken()
	now := p.opt.Now()
	p.mu.Lock()
	p.pruneLogins(now)
	p.logins[id] = &login{token: tok, p: pr, expires: now.Add(loginTTL)}
	p.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: p.cookieName(r), Value: id, Path: p.opt.Base + "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(loginTTL / time.Second)})
	http.SetCookie(w, &http.Cookie{Name: formCSRF, Path: p.opt.Base + "/login", MaxAge: -1})
	http.Redirect(w, r, p.next(r.PostFormValue("next")), http.StatusSeeOther)
}

// pruneLogins drops the sign-ins that ended, and the oldest past
// maxLogins (p.mu held).
func (p *Portal) pruneLogins(now time.Time) {
	oldest, at := "", time.Time{}
	for id, l := range p.logins {
		if !now.Before(l.expires) {
			delete(p.logins, id)
		} else if oldest == "" || l.expires.Before(at) {
			oldest, at = id, l.expires
		}
	}
	if len(p.logins) >= maxLogins {
		delete(p.logins, oldest)
	}
}

// logout ends the sign-in.
func (p *Portal) logout(w http.ResponseWriter, r *http.Request, c *caller) {
	if !p.checkPost(w, r, c) {
		return
	}
	p.mu.Lock()
	delete(p.logins, c.login)
	p.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: p.cookieName(r), Path: p.opt.Base + "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, p.opt.Base+"/login", http.StatusSeeOther)
}

// checkPost parses a POST's form and checks its CSRF token (the
// caller's viewer's) and origin; false when it answered.
func (p *Portal) checkPost(w http.ResponseWriter, r *http.Request, c *caller) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		c.view.fail(w, r, &httpError{http.StatusBadRequest, "bad form: " + err.Error()})
		return false
	}
	if !c.view.checkCSRF(r) || !sameOrigin(r) {
		c.view.fail(w, r, &httpError{http.StatusForbidden, "this change did not come from scribe's own page (CSRF token missing or wrong)"})
		return false
	}
	return true
}
