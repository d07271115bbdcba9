package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/internal/testui"
	"github.com/e0dc0000/scribe/processors/redact"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/stores"
	"github.com/e0dc0000/scribe/ui"
)

// The portal tests: two tenants, each a Claude folder of its own, signed
// in with their tokens.

const (
	tokAlpha  = "alpha-token"
	tokBeta   = "beta-token"
	tokNoRead = "alpha-write-only"
	host      = "scribe.test:8787"
	secret    = "AKIAIOSFODNN7EXAMPLE"
)

// portalFixture is a portal over two tenants' folders.
type portalFixture struct {
	p           *ui.Portal
	alpha, beta *testui.Session // one session each
	alpha2      *testui.Session // another of alpha's
	alphaMsg    string          // the uuid of alpha's message holding the secret
	clock       *clock
	sharesFile  string
	dirA, dirB  string
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newPortal(t *testing.T) *portalFixture {
	t.Helper()
	f := &portalFixture{dirA: t.TempDir(), dirB: t.TempDir(), clock: &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}}
	f.alpha = testui.NewSession(t, f.dirA, cwd, sid(1))
	f.alpha.User(t, "alpha wants the flux capacitor")
	f.alphaMsg = f.alpha.Assistant(t, testui.Text("the key is "+secret+" for the flux capacitor"))
	f.alpha.User(t, "thanks, alpha out")
	f.alpha2 = testui.NewSession(t, f.dirA, cwd, sid(2))
	f.alpha2.User(t, "alpha's second session")
	f.beta = testui.NewSession(t, f.dirB, "/home/bob/bank", sid(3))
	f.beta.User(t, "beta's flux capacitor plans")
	dirOf := map[string]string{"alpha": f.dirA, "beta": f.dirB}
	tokens := map[string]ui.Principal{tokAlpha: {Tenant: "alpha", Read: true, Write: true}, tokBeta: {Tenant: "beta", Read: true},
		tokNoRead: {Tenant: "alpha", Write: true}}
	f.sharesFile = filepath.Join(t.TempDir(), "ui-shares.json")
	book, err := ui.OpenShareBook(f.sharesFile)
	if err != nil {
		t.Fatal(err)
	}
	open := func(tenant string) sessions.Store {
		return stores.NewReader("serve/"+tenant, dirOf[tenant], jsonlLayout(dirOf[tenant]))
	}
	p, err := ui.NewPortal(ui.PortalOptions{Base: "/ui", Hosts: func() []string { return []string{host} },
		Check: func(tok string) (ui.Principal, bool) { p, ok := tokens[tok]; return p, ok },
		Open: func(_ context.Context, tok string, p ui.Principal) (sessions.Store, error) {
			return open(p.Tenant), nil
		},
		Search: substringSearch, Shares: book,
		ShareStore: func(_ context.Context, tenant string) (sessions.Store, error) { return open(tenant), nil },
		Redactor: func(context.Context) (ui.Redact, error) {
			r, err := redact.NewRedactor(redact.DefaultConfig(), []byte("test key"))
			if err != nil {
				return nil, err
			}
			return func(b []byte) []byte { out, _ := r.Redact(b); return out }, nil
		},
		Now: f.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	f.p = p
	return f
}

// substringSearch finds the messages holding q in their raw JSON.
func substringSearch(ctx context.Context, st sessions.Store, q string, limit int) ([]ui.Hit, error) {
	infos, err := st.List(ctx, sessions.ListOptions{IncludeWorktrees: true, IncludeProgrammatic: true})
	if err != nil {
		return nil, err
	}
	var hits []ui.Hit
	for _, in := range infos {
		msgs, _, err := st.Messages(ctx, in.SessionID, sessions.MessagesOptions{})
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if i := strings.Index(string(m.Message), q); i >= 0 && len(hits) < limit {
				hits = append(hits, ui.Hit{SessionID: in.SessionID, UUID: m.UUID, Role: m.Type,
					Snippet: "…" + ui.MarkStart + q + ui.MarkEnd + " <b>x</b>"})
			}
		}
	}
	return hits, nil
}

// browser is a cookie-keeping client of a handler.
type browser struct {
	t       *testing.T
	h       http.Handler
	cookies map[string]*http.Cookie
	tls     bool
}

func newBrowser(t *testing.T, h http.Handler) *browser {
	return &browser{t: t, h: h, cookies: map[string]*http.Cookie{}}
}

// do sends a request (form: a POST's) and keeps the cookies set.
func (b *browser) do(method, path string, form url.Values, hdr ...string) *httptest.ResponseRecorder {
	b.t.Helper()
	scheme := "http"
	if b.tls {
		scheme = "https"
	}
	var req *http.Request
	if form != nil {
		req = httptest.NewRequest(method, scheme+"://"+host+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req = httptest.NewRequest(method, scheme+"://"+host+path, nil)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	for _, c := range b.cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		if c.MaxAge < 0 {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c
		}
	}
	return rec
}

var (
	csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	shareLink = regexp.MustCompile(`http://` + regexp.QuoteMeta(host) + `(/ui/s/[A-Za-z0-9_-]+)`)
)

// csrf is the CSRF token of the page at path.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	rec := b.do("GET", path, nil)
	m := csrfField.FindStringSubmatch(rec.Body.String())
	if m == nil {
		b.t.Fatalf("GET %s: %d, no CSRF token in\n%s", path, rec.Code, rec.Body)
	}
	return m[1]
}

// signIn signs in with tok through the form.
func (b *browser) signIn(tok string) *httptest.ResponseRecorder {
	b.t.Helper()
	return b.do("POST", "/ui/login", url.Values{"csrf": {b.csrf("/ui/login")}, "token": {tok}, "next": {"/ui/"}})
}

// A tenant signs in with its token through the form (a cookie holding a
// sign-in id, never the token) and sees its own sessions only, by list,
// by id and by search; a wrong token, a token without the read scope, a
// sign-in without the form's CSRF token and a foreign Host are refused.
func TestPortalSignIn(t *testing.T) {
	f := newPortal(t)
	b := newBrowser(t, f.p)
	if rec := b.do("GET", "/ui/", nil); rec.Code != http.StatusSeeOther || !strings.HasPrefix(rec.Header().Get("Location"), "/ui/login?next=") {
		t.Fatalf("GET /ui/ before signing in: %d %s", rec.Code, rec.Header().Get("Location"))
	}
	if rec := b.do("GET", "/ui/", nil, "Host", "evil.example:8787"); rec.Code != http.StatusForbidden {
		t.Errorf("a foreign Host: %d", rec.Code)
	}
	if rec := b.do("POST", "/ui/login", url.Values{"token": {tokAlpha}}); rec.Code != http.StatusForbidden {
		t.Errorf("a sign-in without the form's CSRF token: %d", rec.Code)
	}
	for _, tok := range []string{"wrong", tokNoRead} {
		if rec := b.signIn(tok); rec.Code < 400 || len(b.cookies) != 1 {
			t.Errorf("signing in with %q: %d, cookies %v", tok, rec.Code, b.cookies)
		}
	}
	rec := b.signIn(tokAlpha)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/" {
		t.Fatalf("signing in: %d %s", rec.Code, rec.Header().Get("Location"))
	}
	c := b.cookies["scribe_serve_8787"]
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || strings.Contains(c.Value, tokAlpha) {
		t.Fatalf("the sign-in cookie: %+v", c)
	}
	_, body := b.do("GET", "/ui/", nil).Code, b.do("GET", "/ui/", nil).Body.String()
	if !strings.Contains(body, sid(1)) || !strings.Contains(body, sid(2)) || strings.Contains(body, sid(3)) {
		t.Errorf("alpha's list:\n%s", body)
	}
	if !strings.Contains(body, `href="/ui/sessions/`+sid(1)) || !strings.Contains(body, `href="/ui/static/ui.css`) {
		t.Error("the list's addresses are not under /ui")
	}
	if rec := b.do("GET", "/ui/sessions/"+sid(3), nil); rec.Code != http.StatusNotFound || strings.Contains(rec.Body.String(), "beta") {
		t.Errorf("alpha opens beta's session: %d", rec.Code)
	}
	body = b.do("GET", "/ui/search?q=flux", nil).Body.String()
	if !strings.Contains(body, "/ui/sessions/"+sid(1)+"?at=") || strings.Contains(body, sid(3)) || !strings.Contains(body, "<mark>flux</mark> &lt;b&gt;x&lt;/b&gt;") {
		t.Errorf("alpha's search:\n%s", body)
	}
	// The Authorization header works too, without the form.
	other := newBrowser(t, f.p)
	body = other.do("GET", "/ui/", nil, "Authorization", "Bearer "+tokBeta).Body.String()
	if !strings.Contains(body, sid(3)) || strings.Contains(body, sid(1)) || !strings.Contains(body, "beta (read only)") {
		t.Errorf("beta's list by its header:\n%s", body)
	}
	if rec := other.do("GET", "/ui/", nil, "Authorization", "Bearer wrong"); rec.Code != http.StatusUnauthorized {
		t.Errorf("a wrong header: %d", rec.Code)
	}
	// Signing out needs the CSRF token, and ends the sign-in.
	if rec := b.do("POST", "/ui/logout", url.Values{}); rec.Code != http.StatusForbidden {
		t.Errorf("sign out without the CSRF token: %d", rec.Code)
	}
	cookie := *c
	if rec := b.do("POST", "/ui/logout", url.Values{"csrf": {b.csrf("/ui/")}}); rec.Code != http.StatusSeeOther {
		t.Errorf("sign out: %d", rec.Code)
	}
	b.cookies[cookie.Name] = &cookie // the old cookie, kept by an attacker
	if rec := b.do("GET", "/ui/", nil); rec.Code != http.StatusSeeOther {
		t.Errorf("the signed-out cookie still works: %d", rec.Code)
	}
	// Over TLS the cookie is Secure.
	s := newBrowser(t, f.p)
	s.tls = true
	s.signIn(tokAlpha)
	if c := s.cookies["scribe_serve_8787"]; c == nil || !c.Secure {
		t.Errorf("the cookie over TLS: %+v", c)
	}
	// A sign-in ends after loginTTL.
	f.clock.add(13 * time.Hour)
	if rec := s.do("GET", "/ui/", nil); rec.Code != http.StatusSeeOther {
		t.Errorf("a sign-in of 13 hours ago: %d", rec.Code)
	}
}

// The viewer on serve offers no action the store cannot do (a read-only
// store), and a share link.
func TestPortalHidesActions(t *testing.T) {
	f := newPortal(t)
	b := newBrowser(t, f.p)
	b.signIn(tokAlpha)
	body := b.do("GET", "/ui/sessions/"+sid(1), nil).Body.String()
	for _, action := range []string{"/rename", "/tag", "/archive", "/trash", "/fork"} {
		if strings.Contains(body, sid(1)+action) {
			t.Errorf("the page offers %s on a read-only store", action)
		}
	}
	if !strings.Contains(body, `action="/ui/share"`) {
		t.Error("the page offers no share link")
	}
}

// makeShare makes a share link of session id (and message) as b and
// returns its path.
func makeShare(t *testing.T, b *browser, id, message string) string {
	t.Helper()
	form := url.Values{"csrf": {b.csrf("/ui/sessions/" + id)}, "session": {id}, "message": {message}, "expires": {"24h"}}
	if rec := b.do("POST", "/ui/share", form); rec.Code != http.StatusSeeOther {
		t.Fatalf("share %s: %d %s", id, rec.Code, rec.Body)
	}
	links := shareLink.FindAllStringSubmatch(b.do("GET", "/ui/shares", nil).Body.String(), -1)
	if len(links) == 0 {
		t.Fatal("the share list holds no link")
	}
	return links[0][1] // newest first
}

// A share link opens without signing in: its session only, redacted,
// read only; it stops opening once revoked (by its tenant only) or
// expired; a share link of tenant A never reaches tenant B's sessions.
func TestPortalShareLinks(t *testing.T) {
	f := newPortal(t)
	alpha := newBrowser(t, f.p)
	alpha.signIn(tokAlpha)
	if rec := alpha.do("POST", "/ui/share", url.Values{"session": {sid(1)}, "expires": {"24h"}}); rec.Code != http.StatusForbidden {
		t.Errorf("a share without the CSRF token: %d", rec.Code)
	}
	csrf := alpha.csrf("/ui/")
	if rec := alpha.do("POST", "/ui/share", url.Values{"csrf": {csrf}, "session": {sid(3)}, "expires": {"24h"}}); rec.Code != http.StatusNotFound {
		t.Errorf("alpha shares beta's session: %d", rec.Code)
	}
	link := makeShare(t, alpha, sid(1), "")
	anon := newBrowser(t, f.p)
	rec := anon.do("GET", link, nil)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("GET %s: %d", link, rec.Code)
	}
	page := anon.do("GET", rec.Header().Get("Location"), nil)
	body := page.Body.String()
	if page.Code != http.StatusOK || !strings.Contains(body, "flux capacitor") || !strings.Contains(body, "thanks, alpha out") {
		t.Fatalf("the shared page: %d\n%s", page.Code, body)
	}
	if strings.Contains(body, secret) || !strings.Contains(body, "[REDACTED:") {
		t.Errorf("the shared page is not redacted:\n%s", body)
	}
	if strings.Contains(body, `name="title"`) || strings.Contains(body, "/share\"") || strings.Contains(body, "Sign out") {
		t.Error("the shared page offers actions")
	}
	checkInert(t, "share", strings.ReplaceAll(body, link+"/static/ui.js", "/static/ui.js"))
	for _, other := range []string{sid(2), sid(3)} {
		if rec := anon.do("GET", link+"/sessions/"+other+"?store=share", nil); rec.Code != http.StatusNotFound {
			t.Errorf("alpha's share link opens session %s: %d", other, rec.Code)
		}
	}
	if rec := anon.do("GET", link+"/search?q=flux", nil); rec.Code != http.StatusNotFound {
		t.Errorf("a share link searches: %d", rec.Code)
	}
	if rec := anon.do("GET", link+"/sessions/"+sid(1)+"/events?store=share", nil); rec.Code == http.StatusOK {
		t.Errorf("a share link streams: %d", rec.Code)
	}
	// One message alone.
	one := makeShare(t, alpha, sid(1), f.alphaMsg)
	body = anon.do("GET", one+"/sessions/"+sid(1)+"?store=share", nil).Body.String()
	if !strings.Contains(body, `id="m-`+f.alphaMsg+`"`) || strings.Contains(body, "thanks, alpha out") || strings.Contains(body, secret) {
		t.Errorf("a message's share link:\n%s", body)
	}
	// No downloads through a link: the whole session would be in them.
	if strings.Contains(body, "/export?") {
		t.Error("a share link's page offers downloads")
	}
	if rec := anon.do("GET", one+"/sessions/"+sid(1)+"/export?format=html&store=share", nil); rec.Code == http.StatusOK || strings.Contains(rec.Body.String(), "thanks, alpha out") {
		t.Errorf("a message's share link downloads the session: %d", rec.Code)
	}
	// Beta cannot revoke alpha's link; alpha can.
	beta := newBrowser(t, f.p)
	beta.signIn(tokBeta)
	id := strings.TrimPrefix(link, "/ui/s/")
	if rec := beta.do("POST", "/ui/shares/"+id+"/revoke", url.Values{"csrf": {beta.csrf("/ui/")}}); rec.Code != http.StatusNotFound {
		t.Errorf("beta revokes alpha's link: %d", rec.Code)
	}
	if strings.Contains(beta.do("GET", "/ui/shares", nil).Body.String(), id) {
		t.Error("beta's share list shows alpha's link")
	}
	if rec := anon.do("GET", link+"/sessions/"+sid(1)+"?store=share", nil); rec.Code != http.StatusOK {
		t.Fatalf("the link after beta's try: %d", rec.Code)
	}
	if rec := alpha.do("POST", "/ui/shares/"+id+"/revoke", url.Values{}); rec.Code != http.StatusForbidden {
		t.Errorf("a revoke without the CSRF token: %d", rec.Code)
	}
	if rec := alpha.do("POST", "/ui/shares/"+id+"/revoke", url.Values{"csrf": {csrf}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("alpha revokes: %d %s", rec.Code, rec.Body)
	}
	for _, p := range []string{link, link + "/sessions/" + sid(1) + "?store=share"} {
		if rec := anon.do("GET", p, nil); rec.Code != http.StatusNotFound || strings.Contains(rec.Body.String(), "flux") {
			t.Errorf("GET %s once revoked: %d", p, rec.Code)
		}
	}
	// The records outlive the portal: a new book reads them.
	book, err := ui.OpenShareBook(f.sharesFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := book.Active(strings.TrimPrefix(one, "/ui/s/"), f.clock.now()); !ok {
		t.Error("the message's link is not in the file")
	}
	if _, ok := book.Active(id, f.clock.now()); ok {
		t.Error("the revoked link is active in the file")
	}
	// Expiry.
	if rec := anon.do("GET", one+"/sessions/"+sid(1)+"?store=share", nil); rec.Code != http.StatusOK {
		t.Fatalf("the message's link before it expires: %d", rec.Code)
	}
	f.clock.add(25 * time.Hour)
	if rec := anon.do("GET", one+"/sessions/"+sid(1)+"?store=share", nil); rec.Code != http.StatusNotFound {
		t.Errorf("an expired link: %d", rec.Code)
	}
	alpha.signIn(tokAlpha) // the sign-in of 25 hours ago ended
	if body := alpha.do("GET", "/ui/shares", nil).Body.String(); strings.Count(body, "expired") < 1 || strings.Count(body, "revoked") < 1 {
		t.Errorf("the share list does not say which links ended:\n%s", body)
	}
}

// A share link whose redactor cannot be made shows nothing.
func TestShareNeedsRedactor(t *testing.T) {
	dir := t.TempDir()
	testui.NewSession(t, dir, cwd, sid(1)).User(t, "key "+secret)
	book, err := ui.OpenShareBook(filepath.Join(t.TempDir(), "shares.json"))
	if err != nil {
		t.Fatal(err)
	}
	sh, err := book.Create(context.Background(), "alpha", sid(1), "", time.Now(), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	open := func() sessions.Store { return stores.NewReader("x", dir, jsonlLayout(dir)) }
	p, err := ui.NewPortal(ui.PortalOptions{Base: "/ui", Hosts: func() []string { return []string{host} },
		Check:      func(string) (ui.Principal, bool) { return ui.Principal{}, false },
		Open:       func(context.Context, string, ui.Principal) (sessions.Store, error) { return open(), nil },
		Shares:     book,
		ShareStore: func(context.Context, string) (sessions.Store, error) { return open(), nil },
		Redactor:   func(context.Context) (ui.Redact, error) { return nil, fmt.Errorf("no rules") }})
	if err != nil {
		t.Fatal(err)
	}
	rec := newBrowser(t, p).do("GET", "/ui/s/"+sh.ID+"/sessions/"+sid(1)+"?store=share", nil)
	if rec.Code == http.StatusOK || strings.Contains(rec.Body.String(), secret) {
		t.Errorf("without a redactor: %d\n%s", rec.Code, rec.Body)
	}
}

func jsonlLayout(dir string) jsonl.Layout { return jsonl.Layout{ConfigDir: dir} }
