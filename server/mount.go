package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
)

// mount is a handler served under a prefix, behind the bearer tokens
// unless own is set.
type mount struct {
	prefix string
	h      http.Handler
	// own: the handler authenticates its requests itself.
	own bool
}

// MountOption changes how Mount serves a prefix.
type MountOption func(*mount)

// OwnAuthentication hands every request under the prefix to the handler
// as it came, no bearer token checked: the handler authenticates each
// request itself (with CheckToken), as a sign-in page must, which is
// reached before any token is known. Tenant and BearerToken are "" in its
// requests.
func OwnAuthentication() MountOption { return func(m *mount) { m.own = true } }

type ctxKey int

const (
	tenantKey ctxKey = iota
	tokenKey
)

// Mount serves h under prefix (such as "/mcp": the prefix itself and what
// is below it) behind the server's bearer tokens: a request without a
// valid token holding the read scope is refused as every route refuses it,
// and h sees the caller's tenant through Tenant and its token through
// BearerToken (unless OwnAuthentication). Mount is called before Start.
func (s *Server) Mount(prefix string, h http.Handler, opts ...MountOption) {
	m := mount{prefix: strings.TrimSuffix(prefix, "/"), h: h}
	for _, o := range opts {
		o(&m)
	}
	s.mounts = append(s.mounts, m)
}

// Tenant is the tenant of a request a mounted handler serves ("" outside
// one).
func Tenant(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey).(string)
	return t
}

// BearerToken is the bearer token of a request a mounted handler serves: a
// handler that calls the server's own routes for its caller passes it on,
// so the caller never sees more than its own token allows.
func BearerToken(ctx context.Context) string {
	t, _ := ctx.Value(tokenKey).(string)
	return t
}

// Principal is what a bearer token grants: the tenant whose sessions it
// reads and writes, and its scopes.
type Principal struct {
	Tenant      string
	Read, Write bool
}

// CheckToken says what a bearer token of the configuration grants; false
// for a token the server does not accept. A handler mounted with
// OwnAuthentication checks the token its caller gave with it.
func (s *Server) CheckToken(tok string) (Principal, bool) {
	if tok == "" {
		return Principal{}, false
	}
	p, ok := s.tokens[HashToken(tok)]
	return Principal{Tenant: p.tenant, Read: p.read, Write: p.write}, ok
}

// TenantReader is a bearer token that reads (scope read, never write) the
// sessions of tenant through the server's routes: made at New, kept in
// memory only, never written anywhere nor accepted by CheckToken. It is
// for a mounted handler that shows what a tenant chose to make readable
// without its token, such as a share link, and reads it as that tenant
// only. false for a tenant no configured token names.
func (s *Server) TenantReader(tenant string) (string, bool) {
	tok, ok := s.readers[tenant]
	return tok, ok
}

// makeReaders makes a TenantReader token for every tenant of the tokens.
func (s *Server) makeReaders() {
	s.readers, s.internal = map[string]string{}, map[string]principal{}
	for _, p := range s.tokens {
		if _, done := s.readers[p.tenant]; done {
			continue
		}
		b := make([]byte, 32)
		_, _ = rand.Read(b) // never fails (crypto/rand)
		tok := "scribe_internal_" + base64.RawURLEncoding.EncodeToString(b)
		s.readers[p.tenant] = tok
		s.internal[HashToken(tok)] = principal{tenant: p.tenant, read: true}
	}
}

// serveMount serves a mounted prefix p falls under; false when none does.
func (s *Server) serveMount(w http.ResponseWriter, r *http.Request, p string) (string, bool) {
	for _, m := range s.mounts {
		if p != m.prefix && !strings.HasPrefix(p, m.prefix+"/") {
			continue
		}
		if m.own {
			m.h.ServeHTTP(w, r)
			return m.prefix, true
		}
		pr, ok := s.authenticate(w, r)
		if !ok {
			return m.prefix, true
		}
		if !pr.read {
			writeError(w, http.StatusForbidden, "permission_error", "this token does not have the %q scope this route needs", ScopeRead)
			return m.prefix, true
		}
		_, tok, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		ctx := context.WithValue(context.WithValue(r.Context(), tenantKey, pr.tenant), tokenKey, strings.TrimSpace(tok))
		m.h.ServeHTTP(w, r.WithContext(ctx))
		return m.prefix, true
	}
	return "", false
}
