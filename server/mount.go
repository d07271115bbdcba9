package server

import (
	"context"
	"net/http"
	"strings"
)

// mount is a handler served under a prefix, behind the bearer tokens.
type mount struct {
	prefix string
	h      http.Handler
}

type ctxKey int

const (
	tenantKey ctxKey = iota
	tokenKey
)

// Mount serves h under prefix (such as "/mcp": the prefix itself and what
// is below it) behind the server's bearer tokens: a request without a
// valid token holding the read scope is refused as every route refuses it,
// and h sees the caller's tenant through Tenant and its token through
// BearerToken. Mount is called before Start.
func (s *Server) Mount(prefix string, h http.Handler) {
	s.mounts = append(s.mounts, mount{prefix: strings.TrimSuffix(prefix, "/"), h: h})
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
