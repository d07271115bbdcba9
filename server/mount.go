package server

import (
	"context"
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
