package server

// The Agent SDK's SessionStore over HTTP (the npm package in
// clients/session-store speaks it). Tokens and tenants as every route;
// the key of a request is in its query: project_key (1 to 512 bytes of
// UTF-8, no control characters, no '/' or '\', not "." or ".."),
// session_id (1 to 512 bytes of UTF-8, no control characters: an opaque
// string, as the SDK's conformance suite uses "sess", "s1", "main") and,
// for a subagent, subpath=subagents/agent-<id> (<id>: 1 to 64 of
// letters, digits, '-' and '_'), or any other path of segments the SDK
// makes (subagents/workflows/<run>/agent-<id>, subagents/x, …), kept as
// an agent named after its hash (_sp-<32 hex>: the name the History API
// and `scribe pull` show it under); an empty subpath is refused, the main
// transcript has none.
//
// The store's key is {project_key, session_id, subpath}: the same session
// id under two project keys is two sessions. Scribe keeps a session under
// a UUID (its subjects, the History API, `scribe pull`, `ls --remote`):
// a session id that is a UUID (not of version 8) is its own name, in
// lower case, while it is not another project key's; any other session
// id, and a UUID session id already taken by another project key, is
// kept under storekey.Name(project_key, session_id), a version-8 UUID made
// of their SHA-256 (a UUID session id of version 8 is taken as opaque,
// so that no id a client sends is such a name). The append's answer says
// the name ("session"); listSessions, summaries and the History API's
// listing (project_key, store_session_id) give the ids as sent.
//
//   POST   /v1/session_store/entries?<key>&batch=<id>        write
//          body: a JSON array of entries. Entries with a uuid are stored
//          once per key; entries without one are stored as sent (the SDK's
//          rule), once per batch and position, so a retry of the same
//          request with the same batch id is not stored twice.
//          200 {"stored":n,"duplicates":n,"session":"<name kept under>"}
//   GET    /v1/session_store/entries?<key>                   read
//          200 {"entries":[<entry>,…]}, or {"entries":null} for a key the
//          store does not hold
//   DELETE /v1/session_store/entries?<key>                   write
//          the main key deletes the whole session; a subpath only itself
//          200 {"deleted":n}
//   GET    /v1/session_store/sessions?project_key=           read
//          200 {"sessions":[{"sessionId","mtime"}]}  (mtime: epoch ms)
//   GET    /v1/session_store/subkeys?project_key=&session_id= read
//          200 {"subkeys":["subagents/agent-<id>",…]}
//   GET    /v1/session_store/summaries?project_key=          read
//          200 {"summaries":[{"sessionId","mtime","data"}]}
//   GET    /v1/session_store/summary?<key>                   read
//          200 {"summary":{"sessionId","mtime","data"}|null,"revision":n,
//               "folds":[<fold id>,…]}
//   PUT    /v1/session_store/summary?<key>                   write
//          body: {"revision":n (0: none yet),"data":{…},"fold_id":"…"}
//          200 {"revision":n,"mtime":ms}; 409 the revision is stale (read
//          again, fold again, write again)

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/e0dc0000/scribe/internal/ident"
	"github.com/e0dc0000/scribe/server/storekey"
)

const storePrefix = "/v1/session_store/"

// storeKey is a SessionStore key, validated (storekey.Parse).
type storeKey = storekey.Key

// Route names of the SessionStore, as they appear in metrics.
const (
	routeStoreEntries   = "session_store_entries"
	routeStoreSessions  = "session_store_sessions"
	routeStoreSubkeys   = "session_store_subkeys"
	routeStoreSummaries = "session_store_summaries"
	routeStoreSummary   = "session_store_summary"
)

// dispatchStore routes /v1/session_store/<rest>.
func (s *Server) dispatchStore(w http.ResponseWriter, r *http.Request, rest string) string {
	type route struct {
		name    string
		methods map[string]func(http.ResponseWriter, *http.Request, request)
	}
	routes := map[string]route{
		"entries": {routeStoreEntries, map[string]func(http.ResponseWriter, *http.Request, request){
			http.MethodGet: s.storeLoad, http.MethodPost: s.storeAppend, http.MethodDelete: s.storeDelete}},
		"sessions":  {routeStoreSessions, map[string]func(http.ResponseWriter, *http.Request, request){http.MethodGet: s.storeSessions}},
		"subkeys":   {routeStoreSubkeys, map[string]func(http.ResponseWriter, *http.Request, request){http.MethodGet: s.storeSubkeys}},
		"summaries": {routeStoreSummaries, map[string]func(http.ResponseWriter, *http.Request, request){http.MethodGet: s.storeSummaries}},
		"summary": {routeStoreSummary, map[string]func(http.ResponseWriter, *http.Request, request){
			http.MethodGet: s.storeGetSummary, http.MethodPut: s.storePutSummary}},
	}
	rt, ok := routes[rest]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found_error", "no such route: %s %s", r.Method, truncate(r.URL.Path, 200))
		return routeOther
	}
	h, ok := rt.methods[r.Method]
	if !ok {
		var methods []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			if rt.methods[m] != nil {
				methods = append(methods, m)
			}
		}
		allow(w, r, methods...)
		return rt.name
	}
	scope := ScopeRead
	if r.Method != http.MethodGet {
		scope = ScopeWrite
	}
	s.withSession(w, r, scope, "", h)
	return rt.name
}

// storeKeyOf answers 400 itself when the key is not valid.
func storeKeyOf(w http.ResponseWriter, r *http.Request, withSession, subpath bool) (storeKey, bool) {
	k, err := storekey.Parse(r.URL.Query(), withSession, subpath)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "%v", err)
		return k, false
	}
	return k, true
}

// storeKeyRead is storeKeyOf with the key resolved for a request that
// writes no entries (resolveKey); it answers a failure itself.
func (s *Server) storeKeyRead(w http.ResponseWriter, r *http.Request, req request, subpath bool) (storeKey, bool) {
	k, ok := storeKeyOf(w, r, true, subpath)
	if !ok {
		return k, false
	}
	k, err := s.st.resolveKey(req.ctx, req.tenant, k)
	if err != nil {
		s.storeError(w, err)
		return k, false
	}
	return k, true
}

// storeItem checks the i-th entry of an append to k and returns its item.
func storeItem(raw []byte, k storeKey, batch string, i int) (item, error) {
	e, err := parseRaw(raw)
	if err != nil {
		return item{}, err
	}
	key := batch + "-" + strconv.Itoa(i)
	if k.Agent == "" {
		return newItem(e, "", key), nil
	}
	id := "a." + k.Agent + ".k-" + key
	if e.UUID != "" {
		id = "a." + k.Agent + ".u-" + e.UUID
	}
	return item{e: e, agent: k.Agent, id: id}, nil
}

func (s *Server) storeAppend(w http.ResponseWriter, r *http.Request, req request) {
	k, ok := storeKeyOf(w, r, true, true)
	if !ok {
		return
	}
	batch := r.URL.Query().Get("batch")
	if batch == "" {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		batch = hex.EncodeToString(b)
	} else if !ident.Token(batch, 64) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "batch %q: want 1 to 64 of letters, digits, '-' and '_'", truncate(batch, 100))
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil || raws == nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "the body is not a JSON array of entries: %v", err)
		return
	}
	if len(raws) > maxBatchEvents {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "%d entries in one append; at most %d", len(raws), maxBatchEvents)
		return
	}
	items := make([]item, len(raws))
	for i, raw := range raws {
		it, err := storeItem(raw, k, batch, i)
		if err == nil {
			it, err = s.process(req.ctx, it)
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "entries[%d]: %v", i, err)
			return
		}
		items[i] = it
	}
	if len(items) == 0 {
		writeJSON(w, http.StatusOK, map[string]any{"stored": 0, "duplicates": 0})
		return
	}
	k, err := s.st.bindKey(req.ctx, req.tenant, k)
	if err != nil {
		s.storeError(w, err)
		return
	}
	if err := s.st.nameSubpath(req.ctx, req.tenant, k); err != nil {
		s.storeError(w, err)
		return
	}
	res, err := s.st.append(req.ctx, req.tenant, k.Session, items, nil)
	if err != nil {
		s.storeError(w, err)
		return
	}
	s.m.Duplicates.Add(int64(res.dups))
	writeJSON(w, http.StatusOK, map[string]any{"stored": res.stored, "duplicates": res.dups, "session": k.Session})
}

func (s *Server) storeLoad(w http.ResponseWriter, r *http.Request, req request) {
	k, ok := s.storeKeyRead(w, r, req, true)
	if !ok {
		return
	}
	o, err := s.st.keyRead(req.ctx, req.tenant, k)
	switch {
	case err != nil:
		s.storeError(w, err)
	case o == nil:
		writeJSON(w, http.StatusOK, map[string]any{"entries": nil})
	default:
		req.session = k.Session
		s.streamEntries(w, req, *o, `{"entries":[`)
	}
}

func (s *Server) storeDelete(w http.ResponseWriter, r *http.Request, req request) {
	k, ok := s.storeKeyRead(w, r, req, true)
	if !ok {
		return
	}
	n, err := s.st.deleteKey(req.ctx, req.tenant, k)
	if err != nil {
		s.storeError(w, err)
		return
	}
	s.m.StoreDeleted.Add(int64(n))
	writeJSON(w, http.StatusOK, map[string]any{"deleted": n})
}

func (s *Server) storeSessions(w http.ResponseWriter, r *http.Request, req request) {
	k, ok := storeKeyOf(w, r, false, false)
	if !ok {
		return
	}
	list, err := s.st.projectSessions(req.ctx, req.tenant, k.Project)
	if err != nil {
		s.storeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": list})
}

func (s *Server) storeSubkeys(w http.ResponseWriter, r *http.Request, req request) {
	k, ok := s.storeKeyRead(w, r, req, false)
	if !ok {
		return
	}
	list, err := s.st.subkeys(req.ctx, req.tenant, k)
	if err != nil {
		s.storeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"subkeys": list})
}

// summaryOut is a summary as the SDK's listSessionSummaries returns it.
type summaryOut struct {
	SessionID string          `json:"sessionId"`
	MTime     int64           `json:"mtime"`
	Data      json.RawMessage `json:"data"`
}

func (s *Server) storeSummaries(w http.ResponseWriter, r *http.Request, req request) {
	k, ok := storeKeyOf(w, r, false, false)
	if !ok {
		return
	}
	list, err := s.st.projectSummaries(req.ctx, req.tenant, k.Project)
	if err != nil {
		s.storeError(w, err)
		return
	}
	out := make([]summaryOut, 0, len(list))
	for _, sm := range list {
		out = append(out, summaryOut{SessionID: sm.Session, MTime: sm.MTime, Data: sm.Data})
	}
	writeJSON(w, http.StatusOK, map[string]any{"summaries": out})
}

func (s *Server) storeGetSummary(w http.ResponseWriter, r *http.Request, req request) {
	k, ok := s.storeKeyRead(w, r, req, false)
	if !ok {
		return
	}
	sm, rev, err := s.st.getSummary(req.ctx, req.tenant, k)
	if err != nil {
		s.storeError(w, err)
		return
	}
	out := map[string]any{"summary": nil, "revision": rev, "folds": []string{}}
	if sm != nil {
		out["summary"] = summaryOut{SessionID: sm.Session, MTime: sm.MTime, Data: sm.Data}
		if sm.Folds != nil {
			out["folds"] = sm.Folds
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) storePutSummary(w http.ResponseWriter, r *http.Request, req request) {
	k, ok := s.storeKeyRead(w, r, req, false)
	if !ok {
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var in struct {
		Revision uint64          `json:"revision"`
		Data     json.RawMessage `json:"data"`
		FoldID   string          `json:"fold_id"`
	}
	if err := json.Unmarshal(body, &in); err != nil || len(bytes.TrimSpace(in.Data)) == 0 || in.Data[0] != '{' {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			`want {"revision":n,"data":{...},"fold_id":"..."} (data a JSON object): %v`, err)
		return
	}
	if in.FoldID != "" && !ident.Token(in.FoldID, 64) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "fold_id %q: want 1 to 64 of letters, digits, '-' and '_'", truncate(in.FoldID, 100))
		return
	}
	sm, rev, err := s.st.putSummary(req.ctx, req.tenant, k, in.Data, in.FoldID, in.Revision)
	if errors.Is(err, errSummaryStale) {
		s.m.SummaryConflicts.Add(1)
		writeError(w, http.StatusConflict, "conflict_error", "summary revision %d is stale: read it again, fold again and retry", in.Revision)
		return
	}
	if err != nil {
		s.storeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"revision": rev, "mtime": sm.MTime})
}
