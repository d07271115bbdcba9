package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/e0dc0000/scribe/core"
)

// standIn is an in-memory stand-in of scribe serve's events route,
// faithful to the protocol: a batch of events, each stored once by its
// payload's uuid (or its bytes when it has none), checked for a type that
// matches the payload and an agent_id exactly on sidechain rows.
type standIn struct {
	token   string
	maxBody int64

	mu       sync.Mutex
	sessions map[string]*stored
	// Faults.
	failPosts int // the next failPosts requests get 500
	// What happened.
	posts, dupes int
	batches      []int // events per stored request
}

type stored struct {
	lines  []string
	agents []string
	seen   map[string]bool
}

func newStandIn(token string) *standIn {
	return &standIn{token: token, maxBody: 8 << 20, sessions: map[string]*stored{}}
}

func jsonError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

type event struct {
	Type    *string         `json:"type"`
	Payload json.RawMessage `json:"payload"`
	AgentID *string         `json:"agent_id"`
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/code/sessions/")
	sid, ok2 := strings.CutSuffix(rest, "/events")
	if !ok || !ok2 || sid == "" || strings.Contains(sid, "/") {
		jsonError(w, http.StatusNotFound, "no such route")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		jsonError(w, http.StatusUnauthorized, "invalid token")
		return
	}
	if r.Method != http.MethodPost {
		jsonError(w, http.StatusMethodNotAllowed, "POST")
		return
	}
	if r.Header.Get("Content-Type") != "application/json" {
		jsonError(w, http.StatusUnsupportedMediaType, "want application/json")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		jsonError(w, http.StatusRequestEntityTooLarge, "request too large")
		return
	}
	var req struct {
		Events []event `json:"events"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || len(req.Events) == 0 {
		jsonError(w, http.StatusBadRequest, fmt.Sprintf("want {\"events\":[…]}: %v", err))
		return
	}
	entries := make([]core.Entry, len(req.Events))
	for i, ev := range req.Events {
		e, err := core.ParseEntry(ev.Payload)
		switch {
		case err != nil:
			jsonError(w, http.StatusBadRequest, fmt.Sprintf("event %d: payload: %v", i, err))
			return
		case ev.Type == nil || *ev.Type != e.Type:
			jsonError(w, http.StatusBadRequest, fmt.Sprintf("event %d: type does not match the payload's", i))
			return
		case e.IsSidechain && e.AgentID != "" && (ev.AgentID == nil || *ev.AgentID != e.AgentID):
			jsonError(w, http.StatusBadRequest, fmt.Sprintf("event %d: sidechain row without its agent_id", i))
			return
		case !(e.IsSidechain && e.AgentID != "") && ev.AgentID != nil:
			jsonError(w, http.StatusBadRequest, fmt.Sprintf("event %d: agent_id on a main-chain row", i))
			return
		case strings.Contains(string(ev.Payload), "REFUSE-ME"):
			jsonError(w, http.StatusUnprocessableEntity, fmt.Sprintf("event %d: refused", i))
			return
		}
		entries[i] = e
	}

	s.mu.Lock()
	s.posts++
	if s.failPosts > 0 {
		s.failPosts--
		s.mu.Unlock()
		jsonError(w, http.StatusInternalServerError, "injected failure")
		return
	}
	defer s.mu.Unlock()
	st := s.sessions[sid]
	if st == nil {
		st = &stored{seen: map[string]bool{}}
		s.sessions[sid] = st
	}
	for i, e := range entries {
		key := e.UUID
		if key == "" {
			key = "raw:" + string(req.Events[i].Payload)
		}
		if st.seen[key] {
			s.dupes++
			continue
		}
		st.seen[key] = true
		st.lines = append(st.lines, string(req.Events[i].Payload))
		agent := ""
		if req.Events[i].AgentID != nil {
			agent = *req.Events[i].AgentID
		}
		st.agents = append(st.agents, agent)
	}
	s.batches = append(s.batches, len(entries))
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{}`))
}

// Lines returns what the server holds for a session's main transcript
// (agent "") or one subagent.
func (s *standIn) Lines(sid, agent string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sessions[sid]
	if st == nil {
		return nil
	}
	var out []string
	for i, l := range st.lines {
		if st.agents[i] == agent {
			out = append(out, l)
		}
	}
	return out
}

// UUIDs returns the uuids of everything stored for a session, in order.
func (s *standIn) UUIDs(sid string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sessions[sid]
	if st == nil {
		return nil
	}
	var out []string
	for _, l := range st.lines {
		e, _ := core.ParseEntry([]byte(l))
		out = append(out, e.UUID)
	}
	return out
}

func (s *standIn) with(f func(s *standIn)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}
