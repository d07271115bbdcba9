package ingress

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/e0dc0000/scribe/core"
)

// standIn is an in-memory stand-in of scribe serve's session-ingress
// routes, faithful to the protocol: an entry is stored once (by uuid, or by
// its bytes when it has none); a PUT whose Last-Uuid is not the session's
// last uuid gets 409 with x-last-uuid; a duplicate gets 409 with its own
// uuid when it is the last one, else 200; GET returns {"loglines":[…]}.
type standIn struct {
	token string

	mu       sync.Mutex
	sessions map[string]*stored
	// Faults.
	failPuts     int  // the next failPuts PUTs get 500
	noLastHeader bool // 409s carry no x-last-uuid (the client must read the log)
	// What happened.
	puts, gets, dupes, conflicts int
	lastHeaders                  []string
	contentTypes                 map[string]int
}

type stored struct {
	lines  []string
	agents []string
	uuids  map[string]bool
	raws   map[string]bool
	last   string
}

func newStandIn(token string) *standIn {
	return &standIn{token: token, sessions: map[string]*stored{}, contentTypes: map[string]int{}}
}

const (
	ingressPrefix = "/v1/session_ingress/session/"
	maxBody       = 1 << 20
)

func jsonError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid, ok := strings.CutPrefix(r.URL.Path, ingressPrefix)
	if !ok || sid == "" || strings.Contains(sid, "/") {
		jsonError(w, http.StatusNotFound, "no such route")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		jsonError(w, http.StatusUnauthorized, "invalid token")
		return
	}
	switch r.Method {
	case http.MethodPut:
		s.put(w, r, sid)
	case http.MethodGet:
		s.get(w, sid)
	default:
		jsonError(w, http.StatusMethodNotAllowed, "PUT or GET")
	}
}

func (s *standIn) session(sid string) *stored {
	st := s.sessions[sid]
	if st == nil {
		st = &stored{uuids: map[string]bool{}, raws: map[string]bool{}}
		s.sessions[sid] = st
	}
	return st
}

func (s *standIn) put(w http.ResponseWriter, r *http.Request, sid string) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		jsonError(w, http.StatusRequestEntityTooLarge, "entry too large")
		return
	}
	e, err := core.ParseEntry(body)
	if err != nil {
		jsonError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	s.puts++
	s.contentTypes[r.Header.Get("Content-Type")]++
	if s.failPuts > 0 {
		s.failPuts--
		s.mu.Unlock()
		jsonError(w, http.StatusInternalServerError, "injected failure")
		return
	}
	defer s.mu.Unlock()
	last := r.Header.Get("Last-Uuid")
	s.lastHeaders = append(s.lastHeaders, last)
	st := s.session(sid)
	if e.UUID != "" && st.uuids[e.UUID] || e.UUID == "" && st.raws[string(body)] {
		s.dupes++
		if e.UUID != "" && st.last == e.UUID {
			if !s.noLastHeader {
				w.Header().Set("x-last-uuid", e.UUID)
			}
			jsonError(w, http.StatusConflict, "already stored")
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	if last != st.last {
		s.conflicts++
		if st.last != "" && !s.noLastHeader {
			w.Header().Set("x-last-uuid", st.last)
		}
		jsonError(w, http.StatusConflict, "last uuid mismatch")
		return
	}
	code := http.StatusOK
	if len(st.lines) == 0 {
		code = http.StatusCreated
	}
	st.lines = append(st.lines, string(body))
	agent := ""
	if e.IsSidechain {
		agent = e.AgentID
	}
	st.agents = append(st.agents, agent)
	if e.UUID != "" {
		st.uuids[e.UUID] = true
		st.last = e.UUID
	} else {
		st.raws[string(body)] = true
	}
	w.WriteHeader(code)
}

func (s *standIn) get(w http.ResponseWriter, sid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	var b bytes.Buffer
	b.WriteString(`{"loglines":[`)
	if st := s.sessions[sid]; st != nil {
		b.WriteString(strings.Join(st.lines, ","))
	}
	b.WriteString(`]}`)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b.Bytes())
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
