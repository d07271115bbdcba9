package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestSecurity(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxBodyBytes = 64 << 10
	s := startServer(t, cfg)
	acme := newClient(t, s, tokACME)
	acmeRO := newClient(t, s, tokACMERO)
	other := newClient(t, s, tokOther)
	sess := newUUID()
	first := chainEntry(sess, newUUID(), "", "secret prompt of acme")
	if r := acme.put(sess, first, ""); r.code != http.StatusCreated {
		t.Fatalf("PUT: %s", r)
	}
	stored := streamMsgs(t, s)
	nothingStored := func(what string) {
		t.Helper()
		if n := streamMsgs(t, s); n != stored {
			t.Errorf("%s: the stream went from %d to %d messages", what, stored, n)
			stored = n
		}
	}
	fresh := func() []byte { return chainEntry(sess, newUUID(), uuidOf(t, first), "more") }
	putPath := "/v1/session_ingress/session/" + sess
	eventsPath := "/v1/code/sessions/" + sess + "/events"

	// Tokens.
	for name, tok := range map[string]string{"no token": "", "wrong token": "nope", "hash as token": HashToken(tokACME)} {
		c := newClient(t, s, tok)
		for _, r := range []response{
			c.put(sess, fresh(), uuidOf(t, first)),
			c.do(http.MethodPost, eventsPath, eventsBody(fresh())),
			c.do(http.MethodGet, putPath, nil),
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
	basic := acme.do(http.MethodGet, putPath, nil, "Authorization", "Basic "+tokACME)
	if basic.code != http.StatusUnauthorized {
		t.Errorf("Basic auth: %s", basic)
	}
	nothingStored("bad tokens")

	// A read-only token cannot write, but can read.
	for _, r := range []response{
		acmeRO.put(sess, fresh(), uuidOf(t, first)),
		acmeRO.do(http.MethodPost, eventsPath, eventsBody(fresh())),
	} {
		if r.code != http.StatusForbidden {
			t.Errorf("read-only write: %s, want 403", r)
		}
		assertErrorBody(t, r, "permission_error")
	}
	if lines := acmeRO.loglines(sess, ""); len(lines) != 1 {
		t.Errorf("read-only read: %d lines", len(lines))
	}
	nothingStored("read-only token")

	// Another tenant does not see acme's session: 404, not 403.
	for _, r := range []response{
		other.do(http.MethodGet, putPath, nil),
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
	if r := other.put(sess, first, ""); r.code != http.StatusCreated {
		t.Errorf("other tenant, same id and entry: %s, want 201", r)
	}
	if lines := acme.loglines(sess, ""); len(lines) != 1 {
		t.Errorf("acme's session now has %d lines", len(lines))
	}
	if lines := other.loglines(sess, ""); len(lines) != 1 {
		t.Errorf("other's session has %d lines", len(lines))
	}
	stored = streamMsgs(t, s)

	// Ids that are not UUIDs, in the path.
	for _, id := range []string{"../x", "..%2Fx", "%2E%2E%2Fx", "a.b", "*", ">", "a%20b", "a b", "", "..",
		strings.ToUpper(sess) + "x", sess + "/x", sess + "%00", "scribe.acme.x.>"} {
		for _, r := range []response{
			rawRequest(t, acme, http.MethodPut, "/v1/session_ingress/session/"+id, fresh()),
			rawRequest(t, acme, http.MethodGet, "/v1/session_ingress/session/"+id, nil),
			rawRequest(t, acme, http.MethodPost, "/v1/code/sessions/"+id+"/events", eventsBody(fresh())),
			rawRequest(t, acme, http.MethodGet, "/v1/code/sessions/"+id+"/teleport-events", nil),
		} {
			if r.code != http.StatusBadRequest {
				t.Errorf("id %q: %s, want 400", id, r)
			}
		}
	}
	nothingStored("bad ids in paths")

	// Ids inside entries.
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
			r := acme.do(http.MethodPut, putPath, []byte(`{"type":"tag","tag":"x"}`), "Idempotency-Key", "a.b")
			if r.code != http.StatusBadRequest {
				t.Errorf("%s: %s, want 400", name, r)
			}
			continue
		}
		r := acme.put(sess, []byte(e), uuidOf(t, first))
		if r.code != http.StatusBadRequest {
			t.Errorf("%s: %s, want 400", name, r)
		}
		assertErrorBody(t, r, "invalid_request_error")
	}
	nothingStored("bad ids in entries")

	// Oversized bodies.
	big := chainEntry(sess, newUUID(), uuidOf(t, first), strings.Repeat("x", 70<<10))
	if r := acme.put(sess, big, uuidOf(t, first)); r.code != http.StatusRequestEntityTooLarge {
		t.Errorf("big PUT: %s, want 413", r)
	} else {
		assertErrorBody(t, r, "request_too_large")
	}
	if r := acme.do(http.MethodPost, eventsPath, eventsBody(big)); r.code != http.StatusRequestEntityTooLarge {
		t.Errorf("big POST: %s, want 413", r)
	}
	// Without a Content-Length (chunked), too.
	if r := chunked(t, acme, putPath, big); r.code != http.StatusRequestEntityTooLarge {
		t.Errorf("big chunked PUT: %s, want 413", r)
	}
	nothingStored("oversized bodies")

	// Unknown routes and methods.
	if r := acme.do(http.MethodGet, "/v1/nope", nil); r.code != http.StatusNotFound {
		t.Errorf("unknown route: %s", r)
	}
	if r := acme.do(http.MethodDelete, putPath, nil); r.code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %s", r)
	}

	// In the end acme has its one session with its one entry.
	r := acme.do(http.MethodGet, "/v1/sessions", nil)
	var list struct {
		Data []sessionInfo `json:"data"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Data) != 1 || list.Data[0].Entries != 1 {
		t.Errorf("acme's sessions: %s", r.body)
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
