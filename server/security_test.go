package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/server/wire"
)

// secFixture is the server, the clients and acme's one session that the
// phases of TestSecurity share.
type secFixture struct {
	t                   *testing.T
	s                   *Server
	acme, acmeRO, other *client
	sess                string
	first               []byte
	stored              uint64 // messages in the stream, as last checked
	putPath, eventsPath string
}

// newSecFixture starts a server with a 64 KiB body limit and stores acme's
// first entry.
func newSecFixture(t *testing.T) *secFixture {
	t.Helper()
	cfg := testConfig(t)
	cfg.MaxBodyBytes = 64 << 10
	s := startServer(t, cfg)
	f := &secFixture{t: t, s: s,
		acme:   newClient(t, s, tokACME),
		acmeRO: newClient(t, s, tokACMERO),
		other:  newClient(t, s, tokOther),
		sess:   newUUID(),
	}
	f.first = chainEntry(f.sess, newUUID(), "", "secret prompt of acme")
	if r := f.acme.put(f.sess, f.first, ""); r.code != http.StatusCreated {
		t.Fatalf("PUT: %s", r)
	}
	f.stored = streamMsgs(t, s)
	f.putPath = "/v1/session_ingress/session/" + f.sess
	f.eventsPath = "/v1/code/sessions/" + f.sess + "/events"
	return f
}

// nothingStored wants the stream to hold as many messages as when last
// checked.
func (f *secFixture) nothingStored(what string) {
	f.t.Helper()
	if n := streamMsgs(f.t, f.s); n != f.stored {
		f.t.Errorf("%s: the stream went from %d to %d messages", what, f.stored, n)
		f.stored = n
	}
}

// fresh is a new entry that would follow acme's first one.
func (f *secFixture) fresh() []byte {
	return chainEntry(f.sess, newUUID(), uuidOf(f.t, f.first), "more")
}

func TestSecurity(t *testing.T) {
	f := newSecFixture(t)
	secBadTokens(t, f)
	secReadOnlyToken(t, f)
	secOtherTenant(t, f)
	secBadIDsInPaths(t, f)
	secBadIDsInEntries(t, f)
	secOversizedBodies(t, f)
	secUnknownRoutes(t, f)

	// In the end acme has its one session with its one entry.
	r := f.acme.do(http.MethodGet, "/v1/sessions", nil)
	var list struct {
		Data []wire.SessionInfo `json:"data"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Data) != 1 || list.Data[0].Entries != 1 {
		t.Errorf("acme's sessions: %s", r.body)
	}
}

// secBadTokens wants no token, a wrong one, a token's hash and Basic auth
// refused with 401 on every route, leaking nothing and storing nothing.
func secBadTokens(t *testing.T, f *secFixture) {
	sess, first := f.sess, f.first
	for name, tok := range map[string]string{"no token": "", "wrong token": "nope", "hash as token": HashToken(tokACME)} {
		c := newClient(t, f.s, tok)
		for _, r := range []response{
			c.put(sess, f.fresh(), uuidOf(t, first)),
			c.do(http.MethodPost, f.eventsPath, eventsBody(f.fresh())),
			c.do(http.MethodGet, f.putPath, nil),
			c.do(http.MethodGet, "/v1/code/sessions/"+sess+"/teleport-events", nil),
			c.do(http.MethodGet, "/v1/sessions", nil),
		} {
			if r.code != http.StatusUnauthorized {
				t.Errorf("%s: %s, want 401", name, r)
			}
			assertErrorBody(t, r, "authentication_error")
			if bytes.Contains(r.body, []byte("secret prompt")) {
				t.Errorf("%s: leaked %s", name, r.body)
			}
		}
	}
	basic := f.acme.do(http.MethodGet, f.putPath, nil, "Authorization", "Basic "+tokACME)
	if basic.code != http.StatusUnauthorized {
		t.Errorf("Basic auth: %s", basic)
	}
	f.nothingStored("bad tokens")
}

// secReadOnlyToken wants a read-only token refused writes (403) but
// allowed reads.
func secReadOnlyToken(t *testing.T, f *secFixture) {
	for _, r := range []response{
		f.acmeRO.put(f.sess, f.fresh(), uuidOf(t, f.first)),
		f.acmeRO.do(http.MethodPost, f.eventsPath, eventsBody(f.fresh())),
	} {
		if r.code != http.StatusForbidden {
			t.Errorf("read-only write: %s, want 403", r)
		}
		assertErrorBody(t, r, "permission_error")
	}
	if lines := f.acmeRO.loglines(f.sess, ""); len(lines) != 1 {
		t.Errorf("read-only read: %d lines", len(lines))
	}
	f.nothingStored("read-only token")
}

// secOtherTenant wants another tenant not to see acme's session (404, not
// 403), and its write to the same id to make its own session.
func secOtherTenant(t *testing.T, f *secFixture) {
	sess, other := f.sess, f.other
	for _, r := range []response{
		other.do(http.MethodGet, f.putPath, nil),
		other.do(http.MethodGet, "/v1/code/sessions/"+sess+"/teleport-events?subagents=true", nil),
	} {
		if r.code != http.StatusNotFound || bytes.Contains(r.body, []byte("secret")) {
			t.Errorf("other tenant read: %s, want 404", r)
		}
		assertErrorBody(t, r, "not_found_error")
	}
	if r := other.do(http.MethodGet, "/v1/sessions", nil); strings.Contains(string(r.body), sess) || r.code != http.StatusOK {
		t.Errorf("other tenant's listing: %s", r)
	}
	// Writing to the same id makes the other tenant's own session; acme's
	// is untouched and acme's entry is not a duplicate for it.
	if r := other.put(sess, f.first, ""); r.code != http.StatusCreated {
		t.Errorf("other tenant, same id and entry: %s, want 201", r)
	}
	if lines := f.acme.loglines(sess, ""); len(lines) != 1 {
		t.Errorf("acme's session now has %d lines", len(lines))
	}
	if lines := other.loglines(sess, ""); len(lines) != 1 {
		t.Errorf("other's session has %d lines", len(lines))
	}
	f.stored = streamMsgs(t, f.s)
}

// secBadIDsInPaths wants ids that are not UUIDs refused with 400 on every
// route that takes a session id in its path.
func secBadIDsInPaths(t *testing.T, f *secFixture) {
	sess, acme := f.sess, f.acme
	for _, id := range []string{"../x", "..%2Fx", "%2E%2E%2Fx", "a.b", "*", ">", "a%20b", "a b", "", "..",
		strings.ToUpper(sess) + "x", sess + "/x", sess + "%00", "scribe.acme.x.>"} {
		for _, r := range []response{
			rawRequest(t, acme, http.MethodPut, "/v1/session_ingress/session/"+id, f.fresh()),
			rawRequest(t, acme, http.MethodGet, "/v1/session_ingress/session/"+id, nil),
			rawRequest(t, acme, http.MethodPost, "/v1/code/sessions/"+id+"/events", eventsBody(f.fresh())),
			rawRequest(t, acme, http.MethodGet, "/v1/code/sessions/"+id+"/teleport-events", nil),
		} {
			if r.code != http.StatusBadRequest {
				t.Errorf("id %q: %s, want 400", id, r)
			}
		}
	}
	f.nothingStored("bad ids in paths")
}

// secBadIDsInEntries wants entries with bad ids, of another session, or
// not one JSON object, and a bad idempotency key, refused with 400.
func secBadIDsInEntries(t *testing.T, f *secFixture) {
	sess, acme := f.sess, f.acme
	for name, e := range map[string]string{
		"agent with a dot":    `{"type":"user","isSidechain":true,"agentId":"a.b","uuid":"` + newUUID() + `","sessionId":"` + sess + `"}`,
		"agent traversal":     `{"type":"user","isSidechain":true,"agentId":"../x","uuid":"` + newUUID() + `","sessionId":"` + sess + `"}`,
		"agent wildcard":      `{"type":"user","isSidechain":true,"agentId":">","uuid":"` + newUUID() + `","sessionId":"` + sess + `"}`,
		"uuid with a dot":     `{"type":"user","uuid":"a.b","sessionId":"` + sess + `"}`,
		"uuid wildcard":       `{"type":"user","uuid":"*","sessionId":"` + sess + `"}`,
		"uuid with a space":   `{"type":"user","uuid":"a b","sessionId":"` + sess + `"}`,
		"another session":     `{"type":"user","uuid":"` + newUUID() + `","sessionId":"` + newUUID() + `"}`,
		"not an object":       `["type","user"]`,
		"torn":                `{"type":"user","uuid":"`,
		"two objects":         `{"type":"user"} {"type":"user"}`,
		"empty":               ``,
		"bad idempotency key": "", // below
	} {
		if name == "bad idempotency key" {
			r := acme.do(http.MethodPut, f.putPath, []byte(`{"type":"tag","tag":"x"}`), "Idempotency-Key", "a.b")
			if r.code != http.StatusBadRequest {
				t.Errorf("%s: %s, want 400", name, r)
			}
			continue
		}
		r := acme.put(sess, []byte(e), uuidOf(t, f.first))
		if r.code != http.StatusBadRequest {
			t.Errorf("%s: %s, want 400", name, r)
		}
		assertErrorBody(t, r, "invalid_request_error")
	}
	f.nothingStored("bad ids in entries")
}

// secOversizedBodies wants bodies over the limit refused with 413, with or
// without a Content-Length.
func secOversizedBodies(t *testing.T, f *secFixture) {
	acme := f.acme
	big := chainEntry(f.sess, newUUID(), uuidOf(t, f.first), strings.Repeat("x", 70<<10))
	if r := acme.put(f.sess, big, uuidOf(t, f.first)); r.code != http.StatusRequestEntityTooLarge {
		t.Errorf("big PUT: %s, want 413", r)
	} else {
		assertErrorBody(t, r, "request_too_large")
	}
	if r := acme.do(http.MethodPost, f.eventsPath, eventsBody(big)); r.code != http.StatusRequestEntityTooLarge {
		t.Errorf("big POST: %s, want 413", r)
	}
	// Without a Content-Length (chunked), too.
	if r := chunked(t, acme, f.putPath, big); r.code != http.StatusRequestEntityTooLarge {
		t.Errorf("big chunked PUT: %s, want 413", r)
	}
	f.nothingStored("oversized bodies")
}

// secUnknownRoutes wants 404 for an unknown route and 405 for an unknown
// method.
func secUnknownRoutes(t *testing.T, f *secFixture) {
	if r := f.acme.do(http.MethodGet, "/v1/nope", nil); r.code != http.StatusNotFound {
		t.Errorf("unknown route: %s", r)
	}
	if r := f.acme.do(http.MethodDelete, f.putPath, nil); r.code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %s", r)
	}
}

// rawRequest sends path without any cleaning or escaping by the client.
func rawRequest(t *testing.T, c *client, method, path string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(method, c.base+"/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = "//" + req.URL.Host + path
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return response{code: resp.StatusCode, hdr: resp.Header, body: b.Bytes()}
}

// chunked PUTs body without a Content-Length.
func chunked(t *testing.T, c *client, path string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, c.base+path, struct{ *bytes.Reader }{bytes.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return response{code: resp.StatusCode, hdr: resp.Header, body: b.Bytes()}
}
