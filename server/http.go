package server

// The HTTP API. Every route but /healthz, /readyz and /metrics needs
// `Authorization: Bearer <token>`; the token's tenant owns every session the
// request names, and a session of another tenant does not exist for it.
//
//   PUT  /v1/session_ingress/session/{id}            write
//        body: one entry (a JSON object). Headers: Last-Uuid (absent = "");
//        Idempotency-Key (optional, for an entry without a uuid).
//        201 {"stored":true,"uuid":"…","last_uuid":"…"}         stored
//        409 x-last-uuid: <the entry's own uuid>                already stored
//        409 x-last-uuid: <the server's last uuid>              Last-Uuid is stale
//            (checked only for an entry with a uuid, and only once the
//            session has a last uuid)
//        200 {"stored":false,"duplicate":true,"last_uuid":"…"}  a uuid-less
//            entry already stored
//   GET  /v1/session_ingress/session/{id}            read
//        ?after_last_compact=true: from the last compact_boundary on;
//        ?subagents=true: the subagents' entries too (stream order).
//        200 {"loglines":[<entry>, …]}                           404 unknown
//   POST /v1/code/sessions/{id}/events               write
//        body: {"events":[<event>, …]} or a bare JSON array of <event>, where
//        an event is one of
//          {"type":"<entry type>","payload":<entry>,"agent_id":"…"?,"event_id":"…"?}
//          {"type":"state","state":"idle|running|requires_action"}
//          <entry>                                   (a bare entry)
//        Entries are stored in order, each at most once; a state event sets
//        the session's state after the entries before it are stored
//        ("scribe-state" entries are stored and set the state too).
//        200 {"stored":n,"duplicates":n,"last_uuid":"…","state":"…"}
//   GET  /v1/code/sessions/{id}/teleport-events      read
//        ?limit=1..1000 (default and maximum 1000) &cursor=<next_cursor>
//        &subagents=true &session_agent_id=<agent> &from_first_event=…
//        200 {"data":[{"payload":<entry>,"session_agent_id":"…"?},…],
//             "next_cursor":"…"|null}                           404 unknown
//   GET  /v1/sessions                                read
//        ?tag= &state= &id_prefix=<start of an id> &limit=1..1000 (default 100)
//        title: the custom title, else the AI title, else the last
//        prompt, else the summary line (as the SDK's listSessions)
//        200 {"data":[{"id","title","tag","state","created_at",
//             "last_activity","entries","main_entries","subagents"}],
//             "has_more":bool}   newest activity first
//   /v1/session_store/…                             the Agent SDK's SessionStore
//        (sessionstore.go)
//   /v1/trash, /v1/trash/restore, /v1/trash/empty    the trash (trash.go)
//   GET  /healthz  /readyz  /metrics
//
// Errors: {"error":{"type":"…","message":"…"}} with 400
// invalid_request_error, 401 authentication_error, 403 permission_error,
// 404 not_found_error, 405 invalid_request_error, 409 conflict_error,
// 413 request_too_large, 503 unavailable_error (retry), 500 api_error.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/core"
)

// Route names, as they appear in metrics.
const (
	routePut      = "session_ingress_put"
	routeGetLog   = "session_ingress_get"
	routeEvents   = "events_post"
	routeTeleport = "teleport_events"
	routeSessions = "sessions_list"
	routeHealth   = "healthz"
	routeReady    = "readyz"
	routeMetrics  = "metrics"
	routeOther    = "other"
)

const (
	maxPageEntries = 1000
	// maxPageBytes bounds one History page; the page ends early (with a
	// next_cursor) when its entries reach it.
	maxPageBytes = 32 << 20
	// maxBatchEvents bounds the events of one POST.
	maxBatchEvents = 10000
)

// statusWriter remembers the status code.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (a mounted
// handler's server-sent events flush through it).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	route := routeOther
	defer func() {
		code := sw.status
		if code == 0 {
			code = http.StatusOK
		}
		d := time.Since(start)
		s.m.Observe(route, code, d)
		if s.log.IsDebug() {
			s.log.Debug("request", "method", r.Method, "route", route, "code", code, "duration", d)
		}
	}()
	route = s.dispatch(sw, r)
}

func (s *Server) dispatch(w http.ResponseWriter, r *http.Request) string {
	p := r.URL.EscapedPath()
	switch {
	case p == "/healthz":
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return routeHealth
	case p == "/readyz":
		s.ready(w, r)
		return routeReady
	case p == "/metrics":
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		s.m.Write(w)
		return routeMetrics
	case p == "/v1/sessions":
		if !allow(w, r, http.MethodGet) {
			return routeSessions
		}
		s.withSession(w, r, ScopeRead, "", s.listSessions)
		return routeSessions
	case strings.HasPrefix(p, "/v1/session_ingress/session/"):
		id := strings.TrimPrefix(p, "/v1/session_ingress/session/")
		switch r.Method {
		case http.MethodPut:
			s.withSession(w, r, ScopeWrite, id, s.putEntry)
			return routePut
		case http.MethodGet:
			s.withSession(w, r, ScopeRead, id, s.getLog)
			return routeGetLog
		}
		allow(w, r, http.MethodGet, http.MethodPut)
		return routeOther
	case p == "/v1/trash" || strings.HasPrefix(p, "/v1/trash/"):
		return s.dispatchTrash(w, r, strings.TrimPrefix(p, "/v1/trash"))
	case strings.HasPrefix(p, storePrefix):
		return s.dispatchStore(w, r, strings.TrimPrefix(p, storePrefix))
	case strings.HasPrefix(p, "/v1/code/sessions/"):
		rest := strings.TrimPrefix(p, "/v1/code/sessions/")
		if id, ok := strings.CutSuffix(rest, "/teleport-events"); ok {
			if allow(w, r, http.MethodGet) {
				s.withSession(w, r, ScopeRead, id, s.teleportEvents)
			}
			return routeTeleport
		}
		if id, ok := strings.CutSuffix(rest, "/events"); ok {
			if allow(w, r, http.MethodPost) {
				s.withSession(w, r, ScopeWrite, id, s.postEvents)
			}
			return routeEvents
		}
	}
	if route, ok := s.serveMount(w, r, p); ok {
		return route
	}
	writeError(w, http.StatusNotFound, "not_found_error", "no such route: %s %s", r.Method, truncate(r.URL.Path, 200))
	return routeOther
}

// allow answers 405 unless r uses one of methods.
func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method %s is not allowed here (allowed: %s)",
		r.Method, strings.Join(methods, ", "))
	return false
}

// request is an authenticated request about one session of a tenant.
type request struct {
	ctx     context.Context
	tenant  string
	session string // "" for routes without a session
}

// withSession authenticates r, checks scope, validates the escaped session
// id (when the route has one), and calls h.
func (s *Server) withSession(w http.ResponseWriter, r *http.Request, scope, escapedID string,
	h func(http.ResponseWriter, *http.Request, request)) {
	p, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	if (scope == ScopeWrite && !p.write) || (scope == ScopeRead && !p.read) {
		writeError(w, http.StatusForbidden, "permission_error", "this token does not have the %q scope this route needs", scope)
		return
	}
	req := request{tenant: p.tenant}
	if r.URL.Path != "/v1/sessions" && !strings.HasPrefix(r.URL.Path, storePrefix) && !strings.HasPrefix(r.URL.Path, "/v1/trash") {
		id, err := url.PathUnescape(escapedID)
		if err != nil || !core.IsUUID(id) {
			if err != nil {
				id = escapedID
			}
			writeError(w, http.StatusBadRequest, "invalid_request_error",
				"session id %q is not a UUID (want 8-4-4-4-12 hex digits)", truncate(id, 100))
			return
		}
		req.session = strings.ToLower(id)
	}
	if s.st == nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable_error", "the server is not started")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.requestTimeout)
	defer cancel()
	req.ctx = ctx
	h(w, r, req)
}

// authenticate checks the bearer token.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (principal, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, found := strings.Cut(strings.TrimSpace(h), " ")
	tok = strings.TrimSpace(tok)
	if !found || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="scribe"`)
		writeError(w, http.StatusUnauthorized, "authentication_error", "missing bearer token: send Authorization: Bearer <token>")
		return principal{}, false
	}
	p, ok := s.tokens[HashToken(tok)]
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="scribe", error="invalid_token"`)
		writeError(w, http.StatusUnauthorized, "authentication_error", "invalid bearer token")
		return principal{}, false
	}
	return p, true
}

// readBody reads the body within MaxBodyBytes; it answers 413 or 400 itself.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	limit := s.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		s.drainBody(w, r.Body)
		writeError(w, http.StatusRequestEntityTooLarge, "request_too_large",
			"request body of %d bytes is over the limit of %d bytes", r.ContentLength, limit)
		return nil, false
	}
	buf := bytes.NewBuffer(make([]byte, 0, max(min(r.ContentLength, limit), 0)+bytes.MinRead))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	b := buf.Bytes()
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.drainBody(w, r.Body)
			writeError(w, http.StatusRequestEntityTooLarge, "request_too_large",
				"request body is over the limit of %d bytes", limit)
			return nil, false
		}
		writeError(w, http.StatusBadRequest, "invalid_request_error", "read the request body: %v", err)
		return nil, false
	}
	return b, true
}

// maxDrainBytes bounds what drainBody reads of a refused body.
const maxDrainBytes = 64 << 20

// drainBody reads and discards what is left of a body refused as too
// large (at most maxDrainBytes), before the 413 is written: a client such
// as fetch sends the whole request before it reads the answer, and a
// connection closed with bytes of it unread is reset, which loses the
// answer. A body larger still is left unread: its connection is closed
// (and may be reset), which the log says.
func (s *Server) drainBody(w http.ResponseWriter, body io.Reader) {
	n, err := io.CopyN(io.Discard, body, maxDrainBytes)
	if err == nil {
		w.Header().Set("Connection", "close")
		s.log.Warn("a body over the limit is larger than what is read of it to answer 413; the client may see a reset instead",
			"drained_bytes", n)
	}
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	if s.st == nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable_error", "the server is not started")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if err := s.st.ready(ctx); err != nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable_error", "JetStream is not reachable: %v", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// storeError answers a store failure.
func (s *Server) storeError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, errNoSession):
		writeError(w, http.StatusNotFound, "not_found_error", "session not found")
	case errors.Is(err, errProjectMismatch):
		writeError(w, http.StatusConflict, "conflict_error", "%v: a session id belongs to the project key of its first append", err)
	case errors.Is(err, errBusy):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "unavailable_error", "%v; retry", err)
	default:
		s.log.Warn("storage request failed", "error", err)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "unavailable_error", "storage unavailable, retry: %v", err)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":{"type":"api_error","message":"encode the response"}}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// apiError is the body of every error response.
type apiError struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, code int, typ, format string, args ...any) {
	var e apiError
	e.Error.Type, e.Error.Message = typ, fmt.Sprintf(format, args...)
	writeJSON(w, code, e)
}

// truncate shortens s for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
