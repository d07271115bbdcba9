package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/server/wire"
)

// Test tokens: acme may read and write, acme-ro only read, other is another
// tenant.
const (
	tokACME   = "acme-secret-rw"
	tokACMERO = "acme-secret-ro"
	tokOther  = "other-secret-rw"
)

func testTokens() []Token {
	return []Token{
		{SHA256: HashToken(tokACME), Tenant: "acme", Scopes: []string{ScopeRead, ScopeWrite}},
		{SHA256: HashToken(tokACMERO), Tenant: "acme", Scopes: []string{ScopeRead}},
		{SHA256: HashToken(tokOther), Tenant: "other", Scopes: []string{ScopeRead, ScopeWrite}},
	}
}

// testConfig is an embedded-JetStream server on a random loopback port.
func testConfig(t *testing.T) Config {
	return Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Tokens: testTokens()}
}

func testLogger(t *testing.T, name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Warn, Output: testWriter{t}})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startServer starts a server and stops it at the end of the test.
func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg, testLogger(t, "serve"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopServer(t, s) })
	return s
}

func stopServer(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Error(err)
	}
}

// client talks to one server with one token.
type client struct {
	t     testing.TB
	base  string
	token string
	hc    *http.Client
}

func newClient(t testing.TB, s *Server, token string) *client {
	return &client{t: t, base: "http://" + s.Addr(), token: token, hc: &http.Client{Timeout: 60 * time.Second}}
}

type response struct {
	code int
	hdr  http.Header
	body []byte
}

func (r response) String() string { return fmt.Sprintf("%d %s", r.code, r.body) }

// try sends one request; the error is a transport error.
func (c *client) try(method, path string, body []byte, hdr ...string) (response, error) {
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return response{}, err
	}
	if body == nil {
		req.Body = nil
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	return response{code: resp.StatusCode, hdr: resp.Header, body: b}, nil
}

func (c *client) do(method, path string, body []byte, hdr ...string) response {
	c.t.Helper()
	r, err := c.try(method, path, body, hdr...)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

func (c *client) put(session string, entry []byte, lastUUID string) response {
	c.t.Helper()
	return c.do(http.MethodPut, "/v1/session_ingress/session/"+session, entry, "Last-Uuid", lastUUID)
}

// loglines GETs the v1 log.
func (c *client) loglines(session, query string) []json.RawMessage {
	c.t.Helper()
	r := c.do(http.MethodGet, "/v1/session_ingress/session/"+session+query, nil)
	if r.code != http.StatusOK {
		c.t.Fatalf("GET log: %s", r)
	}
	var out struct {
		Loglines []json.RawMessage `json:"loglines"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		c.t.Fatalf("GET log: %v: %s", err, r.body)
	}
	return out.Loglines
}

func (c *client) teleport(session, query string) (wire.HistoryPage, response) {
	c.t.Helper()
	r := c.do(http.MethodGet, "/v1/code/sessions/"+session+"/teleport-events"+query, nil)
	var p wire.HistoryPage
	if r.code == http.StatusOK {
		if err := json.Unmarshal(r.body, &p); err != nil {
			c.t.Fatalf("teleport: %v: %s", err, r.body)
		}
	}
	return p, r
}

// history pages through the whole History API and returns every item.
func (c *client) history(session, query string, limit int) ([]wire.HistoryEvent, int) {
	c.t.Helper()
	var all []wire.HistoryEvent
	cursor, pages := "", 0
	for {
		q := fmt.Sprintf("?limit=%d%s", limit, query)
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		p, r := c.teleport(session, q)
		if r.code != http.StatusOK {
			c.t.Fatalf("teleport page %d: %s", pages, r)
		}
		pages++
		all = append(all, p.Data...)
		if p.NextCursor == nil {
			return all, pages
		}
		cursor = *p.NextCursor
		if pages > 1000 {
			c.t.Fatal("too many pages")
		}
	}
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// chainEntry is a user entry of a session, shaped like Claude Code's.
func chainEntry(session, uuid, parent, text string) []byte {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return []byte(fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":"user","message":{"role":"user","content":%q},"uuid":"%s","timestamp":"2026-01-10T11:00:02.267Z","userType":"external","cwd":"/home/alice/src/shop","sessionId":"%s","version":"2.1.332"}`,
		p, text, uuid, session))
}

// agentEntry is a subagent's sidechain entry.
func agentEntry(session, agent, uuid, text string) []byte {
	return []byte(fmt.Sprintf(`{"parentUuid":null,"isSidechain":true,"agentId":"%s","type":"user","message":{"role":"user","content":%q},"uuid":"%s","timestamp":"2026-01-10T11:00:03.000Z","sessionId":"%s"}`,
		agent, text, uuid, session))
}

// uuidOf returns an entry's uuid.
func uuidOf(t testing.TB, raw []byte) string {
	t.Helper()
	var e struct {
		UUID string `json:"uuid"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return e.UUID
}

func eventsBody(entries ...[]byte) []byte {
	var b bytes.Buffer
	b.WriteString(`{"events":[`)
	for i, e := range entries {
		if i > 0 {
			b.WriteByte(',')
		}
		var typ struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(e, &typ)
		fmt.Fprintf(&b, `{"type":%q,"payload":%s}`, typ.Type, e)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func (c *client) postEvents(session string, body []byte) wire.EventsResult {
	c.t.Helper()
	r := c.do(http.MethodPost, "/v1/code/sessions/"+session+"/events", body)
	if r.code != http.StatusOK {
		c.t.Fatalf("POST events: %s", r)
	}
	var out wire.EventsResult
	if err := json.Unmarshal(r.body, &out); err != nil {
		c.t.Fatal(err)
	}
	return out
}

// streamMsgs is the number of messages in the entries stream.
func streamMsgs(t *testing.T, s *Server) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	str, err := s.st.js.Stream(ctx, streamName)
	if err != nil {
		t.Fatal(err)
	}
	return str.CachedInfo().State.Msgs
}
