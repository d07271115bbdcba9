// Package ui is scribe's web viewer of sessions: an http.Handler that
// reads every session through the session-store contract (package
// sessions) only, so it shows Claude Code's folder, an archive (sealed
// too), PostgreSQL and S3 alike. Pages are rendered on the server with
// html/template; one small script (static/ui.js) filters the list as you
// type, fetches more of a conversation, follows a live one over
// server-sent events and copies the resume command. The page allows no
// inline script or style (see csp).
//
// A transcript is hostile input: every string of it reaches the page
// through html/template's escaping, Markdown through goldmark with raw
// HTML shown as text and only safe link addresses kept (markdown.go).
//
// The Handler knows nothing of how a person got to it: `scribe ui` puts
// it behind a LocalGuard (a one-time token exchanged for a cookie, Host
// checked); a server would put its own sign-in in front.
package ui

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"sync"
	"time"

	"github.com/e0dc0000/scribe/sessions"
)

//go:embed templates/*.html static/*
var embedded embed.FS

// csp is the Content-Security-Policy of every answer: nothing inline,
// nothing from elsewhere, images also from data: addresses (a
// transcript's images), no frames, no plugins.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// Options configure a Handler.
type Options struct {
	// Open opens a store by name (stores.Env.Open's contract: "claude"
	// is Claude Code's folder, else a configuration block).
	Open func(ctx context.Context, name string) (sessions.Store, error)
	// Stores are the names offered, the first the default.
	Stores []string
	// Poll is how often a live page's store is asked for new messages
	// (default 1s).
	Poll time.Duration
	// Window is how many messages each "load more" adds (default 100),
	// and FirstWindow how many a session page shows at first (default 40,
	// at most Window): a few screens, enough to read while the page
	// fetches more as the reader scrolls, and little for the browser to
	// lay out before it shows the last message.
	Window, FirstWindow int
	// EagerAgents renders each subagent's messages under the call that
	// started it in the page itself (a self-contained export); else a
	// page fetches them when the call is opened, so a window of calls to
	// hundreds of subagents reads none of them before it is shown.
	EagerAgents bool
	// ListTTL is how old a store's listing may be before a page asks for
	// it to be read again, in the background (default 2s).
	ListTTL time.Duration
	// Base is the path the handler is served under: "" at the root, "/ui"
	// on scribe serve. Every address its pages hold starts with it; its
	// requests come with it cut off (http.StripPrefix).
	Base string
	// Search, when set, answers /search (search across the sessions);
	// nil: no search page.
	Search SearchFunc
	// NoLive turns the live stream off (a share link's page).
	NoLive bool
	// Account, when set, is who is signed in, shown in every page's
	// header with the links of the server's sign-in (Portal).
	Account *Account
	// Share makes the session page offer a share link (Portal's POST
	// Base/share).
	Share bool
	// Markdown, when set, writes a session as Markdown (export --format
	// md's document); the session page offers it as a download.
	Markdown ExportFunc
	// Bundle, when set, gives the writer of a store's session bundles
	// (export --format bundle), nil for a store that keeps no files; the
	// page offers it where there is one.
	Bundle func(st sessions.Store) ExportFunc
	// NoExport leaves the downloads out (a share link's page).
	NoExport bool
	// Usage, when set, gives a store's token usage and cost (scribe ui
	// passes the reports of scribe usage): the header links the usage page
	// (/usage) and a session's page shows its usage. nil: neither.
	Usage UsageFunc
}

// Account is who a page is shown to on scribe serve.
type Account struct {
	// Tenant is the tenant whose sessions the page shows; Write is set
	// when the token may change them; Shares when the server makes share
	// links.
	Tenant        string
	Write, Shares bool
}

// Handler serves the viewer. Close releases the stores it opened.
type Handler struct {
	*assets
	opt  Options
	mux  *http.ServeMux
	csrf string

	mu     sync.Mutex
	stores map[string]sessions.Store
	lists  map[string]*listing
	agents map[string]*agentIndex
	counts map[countKey]int // message counts of the list's sessions
}

// New makes a Handler.
func New(opt Options) (*Handler, error) {
	if opt.Open == nil || len(opt.Stores) == 0 {
		return nil, errors.New("ui: Open and at least one store name are needed")
	}
	if opt.Poll <= 0 {
		opt.Poll = time.Second
	}
	if opt.Window <= 0 {
		opt.Window = 100
	}
	if opt.FirstWindow <= 0 || opt.FirstWindow > opt.Window {
		opt.FirstWindow = min(opt.Window, 40)
	}
	if opt.ListTTL <= 0 {
		opt.ListTTL = 2 * time.Second
	}
	a, err := newAssets(opt.Base)
	if err != nil {
		return nil, err
	}
	h := &Handler{opt: opt, assets: a, csrf: randomToken(), stores: map[string]sessions.Store{},
		lists: map[string]*listing{}, agents: map[string]*agentIndex{}, counts: map[countKey]int{}}
	h.routes()
	return h, nil
}

// assets are what every page is made with: the templates (their
// addresses under base), the style sheet and the script.
type assets struct {
	tpl *template.Template
	md  *markdown
	css []byte
	js  []byte
	// version names the style sheet and script in their addresses, so a
	// browser keeps them for good and asks again only for new ones.
	version string
}

// newAssets parses the embedded templates for pages served under base.
func newAssets(base string) (*assets, error) {
	tpl, err := template.New("ui").Funcs(template.FuncMap{
		"bytes":     humanBytes,
		"deref":     func(b *bool) bool { return b != nil && *b },
		"base":      func() string { return base },
		"marks":     marked,
		"num":       num,
		"usd":       usd,
		"exact":     exact,
		"thousands": thousands,
	}).ParseFS(embedded, "templates/*.html")
	if err != nil {
		return nil, err
	}
	css, err := fs.ReadFile(embedded, "static/ui.css")
	if err != nil {
		return nil, err
	}
	js, err := fs.ReadFile(embedded, "static/ui.js")
	if err != nil {
		return nil, err
	}
	a := &assets{tpl: tpl, md: newMarkdown(), css: append(css, chromaCSS()...), js: js}
	sum := sha256.Sum256(append(append([]byte{}, a.css...), a.js...))
	a.version = hex.EncodeToString(sum[:6])
	return a, nil
}

func (h *Handler) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", h.list)
	m.HandleFunc("GET /counts", h.countsPart)
	h.assets.routes(m)
	if h.opt.Search != nil {
		m.HandleFunc("GET /search", h.search)
	}
	if h.opt.Usage != nil {
		m.HandleFunc("GET /usage", h.usage)
		m.HandleFunc("GET /sessions/{id}/usage", h.sessionUsagePart)
	}
	m.HandleFunc("GET /sessions/{id}", h.session)
	m.HandleFunc("GET /sessions/{id}/window", h.window)
	if !h.opt.NoExport {
		m.HandleFunc("GET /sessions/{id}/export", h.exportFile)
	}
	if !h.opt.NoLive {
		m.HandleFunc("GET /sessions/{id}/events", h.events)
	}
	m.HandleFunc("GET /sessions/{id}/agents/{agent}", h.agentPage)
	m.HandleFunc("GET /sessions/{id}/agents/{agent}/inline", h.agentInline)
	m.HandleFunc("POST /sessions/{id}/{action}", h.action)
	m.HandleFunc("GET /trash", h.trashList)
	m.HandleFunc("POST /trash/restore", h.trashRestore)
	h.mux = m
}

// routes serves the style sheet and the script.
func (a *assets) routes(m *http.ServeMux) {
	m.HandleFunc("GET /static/ui.css", a.static("text/css; charset=utf-8", a.css))
	m.HandleFunc("GET /static/ui.js", a.static("text/javascript; charset=utf-8", a.js))
}

// ServeHTTP serves a request with the security headers every answer
// carries.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	h.mux.ServeHTTP(w, r)
}

// CSRF is the token the handler's forms carry, which every POST to it
// (and to the Portal in front of it) must give back.
func (h *Handler) CSRF() string { return h.csrf }

// securityHeaders sets the headers every answer carries.
func securityHeaders(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: with no-referrer a browser sends a
	// form's POST with "Origin: null", which sameOrigin refuses; no
	// address of the viewer leaves for another site either way.
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// static serves the style sheet or the script; asked for by its version
// (?v=, as the pages do) it may be kept for a year.
func (a *assets) static(ctype string, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		if r.URL.Query().Get("v") == a.version {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		}
		_, _ = w.Write(body)
	}
}

// Close closes the stores the handler opened.
func (h *Handler) Close(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	for name, st := range h.stores {
		if err := st.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", name, err))
		}
		delete(h.stores, name)
	}
	return errors.Join(errs...)
}

// storeName is the store a request asks for (?store=), the default when
// none; ok is false for a name not offered.
func (h *Handler) storeName(r *http.Request) (string, bool) {
	name := r.FormValue("store")
	if name == "" {
		return h.opt.Stores[0], true
	}
	for _, s := range h.opt.Stores {
		if s == name {
			return name, true
		}
	}
	return "", false
}

// store opens (once) the store a request asks for.
func (h *Handler) store(r *http.Request) (sessions.Store, string, error) {
	name, ok := h.storeName(r)
	if !ok {
		return nil, "", &httpError{http.StatusNotFound, "no such store"}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if st, ok := h.stores[name]; ok {
		return st, name, nil
	}
	st, err := h.opt.Open(context.WithoutCancel(r.Context()), name)
	if err != nil {
		return nil, name, fmt.Errorf("open %s: %w", name, err)
	}
	h.stores[name] = st
	return st, name, nil
}

// httpError is an error with the status it answers.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

// fail answers err as a page (or plain text for a fragment).
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	var he *httpError
	switch {
	case errors.As(err, &he):
		code = he.code
	case errors.Is(err, sessions.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, sessions.ErrAmbiguous):
		code = http.StatusBadRequest
	case errors.Is(err, sessions.ErrUnsupported):
		code = http.StatusMethodNotAllowed
	case errors.Is(err, context.Canceled):
		return
	}
	w.WriteHeader(code)
	d := h.frame(http.StatusText(code), "", nil)
	d.Message = err.Error()
	h.render(w, "error", d)
}

// render runs a template into w. A template that fails is a bug, and is
// said (500, the error) instead of a page cut short where it failed: the
// page is drawn whole before its first byte is sent (a window, not the
// session: tens of kilobytes).
func (a *assets) render(w http.ResponseWriter, name string, data any) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
	}
	var buf bytes.Buffer
	if err := a.tpl.ExecuteTemplate(&buf, name, data); err != nil {
		http.Error(w, "scribe ui: the page could not be drawn: "+err.Error(), http.StatusInternalServerError)
		return
	}
	_, _ = buf.WriteTo(w)
}

// frame is what a page of the handler shows around body.
func (h *Handler) frame(title, store string, body any) pageData {
	return pageData{Title: title, Store: store, Stores: h.opt.Stores, CSRF: h.csrf, Version: h.version, Body: body,
		Search: h.opt.Search != nil, Usage: h.opt.Usage != nil, Account: h.opt.Account}
}

// checkCSRF reports whether a state-changing request carries the
// handler's CSRF token (the form field csrf, or the X-CSRF-Token header).
func (h *Handler) checkCSRF(r *http.Request) bool {
	got := r.Header.Get("X-CSRF-Token")
	if got == "" {
		got = r.PostFormValue("csrf")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(h.csrf)) == 1
}

// randomToken is 32 random bytes in hex.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// humanBytes is a size for people.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f kB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// pageData is what every page's frame shows.
type pageData struct {
	Title   string
	Store   string
	Stores  []string
	CSRF    string
	Message string
	// Inline puts the style sheet in the page (a self-contained export).
	Inline template.CSS
	// Version is the style sheet's and script's (their ?v=).
	Version string
	// Search: the header offers the search across sessions; Q is what
	// was searched.
	Search bool
	Q      string
	// Usage: the header links the usage page.
	Usage bool
	// Account is who is signed in on scribe serve (nil elsewhere).
	Account *Account
	Body    any
}
