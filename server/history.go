package server

// The History API: teleport-events pages and the session listing.

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/ident"
	"github.com/e0dc0000/scribe/server/wire"
)

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
	if agent != "" && !ident.Token(agent, 64) {
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
	// A wire.HistoryPage, written as the rows are read.
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
	list := make([]wire.SessionInfo, 0, len(metas))
	for _, m := range metas {
		if (tag != "" && m.Tag != tag) || (state != "" && m.State != state) || m.Tenant != req.tenant || m.Trash != nil ||
			!strings.HasPrefix(strings.ToLower(m.Session), prefix) {
			continue
		}
		list = append(list, wire.SessionInfo{ID: m.Session, Title: m.Title(), Tag: m.Tag, State: m.State,
			CreatedAt: m.CreatedAt, LastActivity: m.UpdatedAt, Entries: m.Count, MainEntries: m.MainCount,
			Subagents: len(m.Agents), ProjectKey: m.ProjectKey, StoreSessionID: m.StoreSessionID})
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
	writeJSON(w, http.StatusOK, wire.SessionList{Data: list, HasMore: more})
}
