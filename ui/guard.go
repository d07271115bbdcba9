package ui

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// LocalGuard lets into a Handler only the person who started it, as
// Jupyter does: the address printed at start carries a random one-time
// token; the first request with it gets a cookie (HttpOnly,
// SameSite=Strict) and a redirect to the same address without the token;
// later requests need the cookie. A request whose Host is not the
// server's own address is refused whatever it carries, so that a web page
// whose name resolves to 127.0.0.1 (DNS rebinding) reaches nothing.
type LocalGuard struct {
	next       http.Handler
	hosts      []string
	cookieName string

	mu     sync.Mutex
	token  string // "" once exchanged
	cookie string
}

// NewLocalGuard guards next; hosts are the Host headers the server
// answers to ("127.0.0.1:PORT", "localhost:PORT"). Token is what the
// printed address carries.
func NewLocalGuard(next http.Handler, hosts []string) *LocalGuard {
	name := "scribe_ui"
	if len(hosts) > 0 {
		if i := strings.LastIndexByte(hosts[0], ':'); i >= 0 {
			name += "_" + hosts[0][i+1:]
		}
	}
	return &LocalGuard{next: next, hosts: hosts, cookieName: name, token: randomToken(), cookie: randomToken()}
}

// CookieName is the cookie the guard sets: scribe_ui_PORT, since a
// browser sends a host's cookies to all its ports, and two viewers on one
// machine must not sign each other out.
func (g *LocalGuard) CookieName() string { return g.cookieName }

// Token is the one-time token ("" once it was exchanged).
func (g *LocalGuard) Token() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.token
}

// ServeHTTP checks the Host, then the cookie or the token.
func (g *LocalGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", csp)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	if !slices.Contains(g.hosts, strings.ToLower(r.Host)) {
		http.Error(w, "this server answers only to its own address (Host "+strings.Join(g.hosts, " or ")+")", http.StatusForbidden)
		return
	}
	if tok := r.URL.Query().Get("token"); tok != "" {
		g.exchange(w, r, tok)
		return
	}
	if c, err := r.Cookie(g.cookieName); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(g.cookie)) == 1 {
		g.next.ServeHTTP(w, r)
		return
	}
	http.Error(w, "not signed in: open the address `scribe ui` printed (with its token) in this browser", http.StatusUnauthorized)
}

// exchange trades the token for the cookie, once.
func (g *LocalGuard) exchange(w http.ResponseWriter, r *http.Request, tok string) {
	g.mu.Lock()
	ok := g.token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(g.token)) == 1
	if ok {
		g.token = ""
	}
	g.mu.Unlock()
	if !ok {
		http.Error(w, "wrong or already used token: restart `scribe ui` for a new address", http.StatusForbidden)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: g.cookieName, Value: g.cookie, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	u := *r.URL
	q := u.Query()
	q.Del("token")
	u.RawQuery = q.Encode()
	dest := (&url.URL{Path: u.Path, RawQuery: u.RawQuery}).String()
	if !strings.HasPrefix(dest, "/") || strings.HasPrefix(dest, "//") || strings.HasPrefix(dest, "/\\") {
		dest = "/" // only ever a path of this server
	}
	http.Redirect(w, r, dest, http.StatusSeeOther)
}
