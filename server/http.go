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
//   GET  /healthz  /readyz  /metrics
//
// Errors: {"error":{"type":"…","message":"…"}} with 400
// invalid_request_error, 401 authentication_error, 403 permission_error,
// 404 not_found_error, 405 invalid_request_error, 409 conflict_error,
// 413 request_too_large, 503 unavailable_error (retry), 500 api_error.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
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
		s.m.observe(route, code, d)
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
		s.m.write(w)
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
	if r.URL.Path != "/v1/sessions" {
		id, err := url.PathUnescape(escapedID)
		if err != nil || !validSession(id) {
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
			writeError(w, http.StatusRequestEntityTooLarge, "request_too_large",
				"request body is over the limit of %d bytes", limit)
			return nil, false
		}
		writeError(w, http.StatusBadRequest, "invalid_request_error", "read the request body: %v", err)
		return nil, false
	}
	return b, true
}

// isToken reports whether s is 1 to max of letters, digits, '-' and '_'
// (reAgent with max 64, reEntryID with 128, without a regexp: this runs
// for every entry).
func isToken(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// parseEntry checks one entry of session and returns its item. agent is a
// subagent named by the request (an event's agent_id), "" if none.
func parseEntry(raw []byte, session, agent, key string) (item, error) {
	raw = bytes.TrimSpace(raw)
	if bytes.IndexByte(raw, '\n') >= 0 || bytes.IndexByte(raw, '\r') >= 0 {
		// Pretty-printed: a stored entry is one line.
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return item{}, fmt.Errorf("the entry is not valid JSON: %v", err)
		}
		raw = buf.Bytes()
	}
	// raw is the request's (or a copy of it), not reused: the entry may
	// keep it.
	e, err := core.ParseEntryOwned(raw)
	if err != nil {
		return item{}, fmt.Errorf("the entry is not a JSON object: %v", err)
	}
	if e.UUID != "" && !isToken(e.UUID, 128) {
		return item{}, fmt.Errorf("entry uuid %q: want 1 to 128 of letters, digits, '-' and '_'", truncate(e.UUID, 100))
	}
	if e.SessionID != "" && !strings.EqualFold(e.SessionID, session) {
		return item{}, fmt.Errorf("entry sessionId %q is not the session %s of the URL", truncate(e.SessionID, 100), session)
	}
	own := e.Ref().AgentID
	switch {
	case agent != "" && own != "" && own != agent:
		return item{}, fmt.Errorf("agent_id %q differs from the entry's agentId %q", agent, own)
	case agent == "":
		agent = own
	}
	if agent != "" && !isToken(agent, 64) {
		return item{}, fmt.Errorf("agent id %q: want 1 to 64 of letters, digits, '-' and '_'", truncate(agent, 100))
	}
	if key != "" && e.UUID == "" && !isToken(key, 128) {
		return item{}, fmt.Errorf("idempotency key %q: want 1 to 128 of letters, digits, '-' and '_'", truncate(key, 100))
	}
	if e.UUID != "" {
		key = ""
	}
	return newItem(e, agent, key), nil
}

func (s *Server) putEntry(w http.ResponseWriter, r *http.Request, req request) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	it, err := parseEntry(body, req.session, "", r.Header.Get("Idempotency-Key"))
	if err == nil {
		it, err = s.process(req.ctx, it)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "%v", err)
		return
	}
	last := r.Header.Get("Last-Uuid")
	res, err := s.st.append(req.ctx, req.tenant, req.session, []item{it}, &last)
	var ce *conflictError
	switch {
	case errors.As(err, &ce):
		s.m.conflicts.Add(1)
		w.Header().Set("x-last-uuid", ce.last)
		writeError(w, http.StatusConflict, "conflict_error",
			"Last-Uuid %q is not the session's last uuid %q: adopt x-last-uuid and retry", truncate(last, 100), ce.last)
		return
	case err != nil:
		s.storeError(w, err)
		return
	}
	lastUUID := ""
	if res.meta != nil {
		lastUUID = res.meta.LastUUID
	}
	if res.duplicate[0] {
		s.m.duplicates.Add(1)
		if it.e.UUID != "" {
			w.Header().Set("x-last-uuid", it.e.UUID)
			writeError(w, http.StatusConflict, "conflict_error", "entry %s is already stored", it.e.UUID)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"stored": false, "duplicate": true, "last_uuid": lastUUID})
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"stored": true, "uuid": it.e.UUID, "last_uuid": lastUUID})
}

// queryBool parses a boolean query parameter ("" is false).
func queryBool(q url.Values, name string) (bool, error) {
	v := q.Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q: want true or false", name, truncate(v, 50))
	}
	return b, nil
}

func (s *Server) getLog(w http.ResponseWriter, r *http.Request, req request) {
	q := r.URL.Query()
	afterCompact, err := queryBool(q, "after_last_compact")
	if err == nil {
		var subagents bool
		subagents, err = queryBool(q, "subagents")
		if err == nil {
			s.streamLog(w, req, afterCompact, subagents)
			return
		}
	}
	writeError(w, http.StatusBadRequest, "invalid_request_error", "%v", err)
}

func (s *Server) streamLog(w http.ResponseWriter, req request, afterCompact, subagents bool) {
	meta, err := s.st.open(req.ctx, req.tenant, req.session)
	if err != nil {
		s.storeError(w, err)
		return
	}
	o := readOpts{filters: []string{mainSubject(req.tenant, req.session)}, start: 1, end: meta.MainLastSeq,
		limit: math.MaxInt, maxBytes: math.MaxInt}
	if subagents {
		o.filters, o.end = []string{sessionFilter(req.tenant, req.session)}, meta.LastSeq
	}
	if afterCompact && meta.LastCompactSeq > 0 {
		o.start = meta.LastCompactSeq
	}
	// The log can be long: it is streamed, a chunk at a time. A failure
	// after the first byte aborts the response, so that a client never
	// takes a cut log for a whole one.
	var buf bytes.Buffer
	buf.WriteString(`{"loglines":[`)
	first, wrote := true, false
	send := func() error {
		if !wrote {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			wrote = true
		}
		_, err := w.Write(buf.Bytes())
		buf.Reset()
		return err
	}
	_, _, err = s.st.read(req.ctx, o, func(_ uint64, _ string, data []byte) error {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		buf.Write(data)
		if buf.Len() >= 1<<20 {
			return send()
		}
		return nil
	})
	if err != nil {
		if !wrote {
			s.storeError(w, err)
			return
		}
		s.log.Warn("session log read failed mid-response; aborting it", "session", req.session, "error", err)
		panic(http.ErrAbortHandler)
	}
	buf.WriteString("]}\n")
	_ = send()
}

// Cursors are opaque to clients: the stream sequence to continue from.
const cursorPrefix = "scribe1:"

func encodeCursor(seq uint64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatUint(seq, 10)))
}

func decodeCursor(c string) (uint64, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		if rest, ok := strings.CutPrefix(string(b), cursorPrefix); ok {
			if seq, err := strconv.ParseUint(rest, 10, 64); err == nil && seq > 0 {
				return seq, nil
			}
		}
	}
	return 0, fmt.Errorf("cursor %q is not a next_cursor this server issued", truncate(c, 100))
}

func (s *Server) teleportEvents(w http.ResponseWriter, r *http.Request, req request) {
	q := r.URL.Query()
	bad := func(format string, args ...any) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", format, args...)
	}
	limit := maxPageEntries
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			bad("limit=%q: want a whole number from 1 to %d", truncate(v, 50), maxPageEntries)
			return
		}
		limit = min(max(n, 1), maxPageEntries)
	}
	var start uint64 = 1
	if c := q.Get("cursor"); c != "" {
		seq, err := decodeCursor(c)
		if err != nil {
			bad("%v", err)
			return
		}
		start = seq
	}
	subagents, err := queryBool(q, "subagents")
	if err != nil {
		bad("%v", err)
		return
	}
	// from_first_event: pages always run forward from the first event (or
	// the cursor); the parameter is accepted and changes nothing.
	agent := q.Get("session_agent_id")
	if agent != "" && !reAgent.MatchString(agent) {
		bad("session_agent_id %q: want 1 to 64 of letters, digits, '-' and '_'", truncate(agent, 100))
		return
	}
	meta, err := s.st.open(req.ctx, req.tenant, req.session)
	if err != nil {
		s.storeError(w, err)
		return
	}
	o := readOpts{filters: []string{mainSubject(req.tenant, req.session)}, start: start, end: meta.MainLastSeq,
		limit: limit, maxBytes: maxPageBytes}
	switch {
	case agent != "":
		o.filters, o.end = []string{agentSubject(req.tenant, req.session, agent)}, 0
		if a := meta.Agents[agent]; a != nil {
			o.end = a.LastSeq
		}
	case subagents:
		o.filters, o.end = []string{sessionFilter(req.tenant, req.session)}, meta.LastSeq
	}
	var buf bytes.Buffer
	buf.WriteString(`{"data":[`)
	n := 0
	last, more, err := s.st.read(req.ctx, o, func(_ uint64, subject string, data []byte) error {
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		buf.WriteString(`{"payload":`)
		buf.Write(data)
		if a, _ := agentOf(subject, req.tenant, req.session); a != "" {
			buf.WriteString(`,"session_agent_id":`)
			buf.WriteString(strconv.Quote(a))
		}
		buf.WriteByte('}')
		return nil
	})
	if err != nil {
		s.storeError(w, err)
		return
	}
	buf.WriteString(`],"next_cursor":`)
	if more {
		buf.WriteString(strconv.Quote(encodeCursor(last + 1)))
	} else {
		buf.WriteString("null")
	}
	buf.WriteString("}\n")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// event is one element of an events batch.
type event struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
	AgentID string          `json:"agent_id"`
	EventID string          `json:"event_id"`
	State   string          `json:"state"`
}

// step is a parsed event: an entry to store, or a state to set.
type step struct {
	it    item
	state string
}

// parseEvents parses a batch body.
func parseEvents(body []byte, session string) ([]step, error) {
	body = bytes.TrimSpace(body)
	if steps, ok := parseEventsFast(body, session); ok {
		return steps, nil
	}
	// Anything the fast parser does not take (an error, an unusual shape)
	// is parsed again with encoding/json, which also words the error.
	return parseEventsJSON(body, session)
}

// parseEventsJSON is parseEvents with encoding/json, for a trimmed body.
func parseEventsJSON(body []byte, session string) ([]step, error) {
	var raws []json.RawMessage
	switch {
	case len(body) > 0 && body[0] == '[':
		if err := json.Unmarshal(body, &raws); err != nil {
			return nil, fmt.Errorf("the body is not a JSON array of events: %v", err)
		}
	case len(body) > 0 && body[0] == '{':
		var b struct {
			Events *[]json.RawMessage `json:"events"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			return nil, fmt.Errorf("the body is not {\"events\":[...]}: %v", err)
		}
		if b.Events == nil {
			return nil, errors.New(`the body has no "events": want {"events":[...]} or a JSON array of entries`)
		}
		raws = *b.Events
	default:
		return nil, errors.New(`want {"events":[...]} or a JSON array of entries`)
	}
	if len(raws) > maxBatchEvents {
		return nil, fmt.Errorf("%d events in one batch; at most %d", len(raws), maxBatchEvents)
	}
	steps := make([]step, 0, len(raws))
	for i, raw := range raws {
		var ev event
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("events[%d]: not an object: %v", i, err)
		}
		st, err := eventStep(i, raw, &ev, session)
		if err != nil {
			return nil, err
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// eventStep turns events[i] (raw, decoded into ev) into a step.
func eventStep(i int, raw []byte, ev *event, session string) (step, error) {
	hasPayload := len(ev.Payload) > 0 && !bytes.Equal(bytes.TrimSpace(ev.Payload), []byte("null"))
	if ev.Type == "state" {
		st := ev.State
		if st == "" && hasPayload {
			var p struct {
				State string `json:"state"`
			}
			_ = json.Unmarshal(ev.Payload, &p)
			st = p.State
		}
		if !core.State(st).Valid() {
			return step{}, fmt.Errorf("events[%d]: state %q: want idle, running or requires_action", i, truncate(st, 50))
		}
		return step{state: st}, nil
	}
	entry, agent, key := raw, "", ""
	if hasPayload {
		entry, agent, key = ev.Payload, ev.AgentID, ev.EventID
		if agent != "" && !isToken(agent, 64) {
			return step{}, fmt.Errorf("events[%d]: agent_id %q: want 1 to 64 of letters, digits, '-' and '_'", i, truncate(agent, 100))
		}
	}
	it, err := parseEntry(entry, session, agent, key)
	if err != nil {
		return step{}, fmt.Errorf("events[%d]: %v", i, err)
	}
	return step{it: it}, nil
}

func (s *Server) postEvents(w http.ResponseWriter, r *http.Request, req request) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	steps, err := parseEvents(body, req.session)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "%v", err)
		return
	}
	stored, dups := 0, 0
	var meta *sessionMeta
	var pending []item
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		res, err := s.st.append(req.ctx, req.tenant, req.session, pending, nil)
		pending = pending[:0]
		if err != nil {
			return err
		}
		stored += res.stored
		dups += res.dups
		s.m.duplicates.Add(int64(res.dups))
		if res.meta != nil {
			meta = res.meta
		}
		return nil
	}
	for i := range steps {
		if steps[i].state != "" {
			continue
		}
		if steps[i].it, err = s.process(req.ctx, steps[i].it); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "events[%d]: %v", i, err)
			return
		}
	}
	for _, st := range steps {
		if st.state == "" {
			pending = append(pending, st.it)
			continue
		}
		if err := flush(); err != nil {
			s.storeError(w, err)
			return
		}
		m, err := s.st.setState(req.ctx, req.tenant, req.session, st.state)
		if err != nil {
			s.storeError(w, err)
			return
		}
		s.m.stateEvents.Add(1)
		meta = m
	}
	if err := flush(); err != nil {
		s.storeError(w, err)
		return
	}
	out := map[string]any{"stored": stored, "duplicates": dups, "last_uuid": "", "state": ""}
	if meta != nil {
		out["last_uuid"], out["state"] = meta.LastUUID, meta.State
	}
	writeJSON(w, http.StatusOK, out)
}

// sessionInfo is one session in GET /v1/sessions.
type sessionInfo struct {
	ID           string    `json:"id"`
	Title        string    `json:"title"`
	Tag          string    `json:"tag"`
	State        string    `json:"state"`
	CreatedAt    time.Time `json:"created_at"`
	LastActivity time.Time `json:"last_activity"`
	Entries      int64     `json:"entries"`
	MainEntries  int64     `json:"main_entries"`
	Subagents    int       `json:"subagents"`
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, req request) {
	q := r.URL.Query()
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "limit=%q: want a whole number from 1 to 1000", truncate(v, 50))
			return
		}
		limit = min(max(n, 1), 1000)
	}
	state, tag, prefix := q.Get("state"), q.Get("tag"), strings.ToLower(q.Get("id_prefix"))
	if state != "" && !core.State(state).Valid() {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "state=%q: want idle, running or requires_action", truncate(state, 50))
		return
	}
	if len(prefix) > 36 || strings.Trim(prefix, "0123456789abcdef-") != "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "id_prefix=%q: want up to 36 of 0-9, a-f and '-'", truncate(prefix, 50))
		return
	}
	metas, err := s.st.listSessions(req.ctx, req.tenant)
	if err != nil {
		s.storeError(w, err)
		return
	}
	list := make([]sessionInfo, 0, len(metas))
	for _, m := range metas {
		if (tag != "" && m.Tag != tag) || (state != "" && m.State != state) || m.Tenant != req.tenant ||
			!strings.HasPrefix(strings.ToLower(m.Session), prefix) {
			continue
		}
		list = append(list, sessionInfo{ID: m.Session, Title: m.Title(), Tag: m.Tag, State: m.State,
			CreatedAt: m.CreatedAt, LastActivity: m.UpdatedAt, Entries: m.Count, MainEntries: m.MainCount,
			Subagents: len(m.Agents)})
	}
	sort.Slice(list, func(i, j int) bool {
		if !list[i].LastActivity.Equal(list[j].LastActivity) {
			return list[i].LastActivity.After(list[j].LastActivity)
		}
		return list[i].ID > list[j].ID
	})
	more := len(list) > limit
	if more {
		list = list[:limit]
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": list, "has_more": more})
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
