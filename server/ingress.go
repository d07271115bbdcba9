package server

// The v1 session ingress routes: PUT one entry, GET the log.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/ident"
)

// parseEntry checks one entry of session and returns its item. agent is a
// subagent named by the request (an event's agent_id), "" if none.
func parseEntry(raw []byte, session, agent, key string) (item, error) {
	e, err := parseRaw(raw)
	if err != nil {
		return item{}, err
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
	if agent != "" && !ident.Token(agent, 64) {
		return item{}, fmt.Errorf("agent id %q: want 1 to 64 of letters, digits, '-' and '_'", truncate(agent, 100))
	}
	if key != "" && e.UUID == "" && !ident.Token(key, 128) {
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
		s.m.Conflicts.Add(1)
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
		s.m.Duplicates.Add(1)
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
	s.streamEntries(w, req, o, `{"loglines":[`)
}

// streamEntries answers 200 with head, the entries o selects separated by
// commas, and "]}". The entries can be many: they are streamed, a chunk at
// a time. A failure after the first byte aborts the response, so that a
// client never takes a cut list for a whole one.
func (s *Server) streamEntries(w http.ResponseWriter, req request, o readOpts, head string) {
	var buf bytes.Buffer
	buf.WriteString(head)
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
	_, _, err := s.st.read(req.ctx, o, func(_ uint64, _ string, data []byte) error {
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

// parseRaw parses one entry as sent: a JSON object, on one line (a
// pretty-printed one is compacted), with a uuid that can be part of a key.
func parseRaw(raw []byte) (core.Entry, error) {
	raw = bytes.TrimSpace(raw)
	if bytes.IndexByte(raw, '\n') >= 0 || bytes.IndexByte(raw, '\r') >= 0 {
		// Pretty-printed: a stored entry is one line.
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return core.Entry{}, fmt.Errorf("the entry is not valid JSON: %v", err)
		}
		raw = buf.Bytes()
	}
	// raw is the request's (or a copy of it), not reused: the entry may
	// keep it.
	e, err := core.ParseEntryOwned(raw)
	if err != nil {
		return core.Entry{}, fmt.Errorf("the entry is not a JSON object: %v", err)
	}
	if e.UUID != "" && !ident.Token(e.UUID, 128) {
		return core.Entry{}, fmt.Errorf("entry uuid %q: want 1 to 128 of letters, digits, '-' and '_'", truncate(e.UUID, 100))
	}
	return e, nil
}
