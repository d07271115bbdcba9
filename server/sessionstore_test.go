package server

// The SessionStore routes, over HTTP against an embedded JetStream (the
// npm package against the real Agent SDK is tested in cmd/scribe):
//
//   - TestStoreRoutes: append/load keep order and uuids dedup per key,
//     uuid-less entries are kept as sent (deduplicated only within a
//     batch id), subkeys apart from the main transcript, listSessions and
//     listSubkeys, delete of a subpath then the main key, and appending
//     again after a delete (the markers went with the entries); what was
//     stored is the same session for the History API.
//   - TestStoreDeleteThenEvents: a session first written by the events
//     route, deleted through the store, takes the same entries again from
//     the events route at once (the duplicate window does not hold them).
//   - TestStoreRefusals: wrong or missing token, another tenant,
//     traversal and malformed keys (400), a body over the limit (413), a
//     read-only token writing (403).
//   - TestStoreOpaqueKeys: session ids that are not UUIDs, and one UUID
//     under two project keys, are sessions apart, each under its name
//     (storekey.Name); a UUID keeps its own name under the project key that
//     has it, and the pair's session stays one after that one is deleted.
//   - TestStoreSummaryCAS: a stale revision is 409, fold ids are kept.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/server/storekey"
)

const storeSID = "5e55a000-0000-4000-8000-000000000001"

func storeQuery(project, sid, subpath string) string {
	q := url.Values{"project_key": {project}}
	if sid != "" {
		q.Set("session_id", sid)
	}
	if subpath != "" {
		q.Set("subpath", subpath)
	}
	return q.Encode()
}

func (c *client) storeAppend(project, sid, subpath, batch string, entries ...string) response {
	c.t.Helper()
	q := storeQuery(project, sid, subpath)
	if batch != "" {
		q += "&batch=" + batch
	}
	return c.do(http.MethodPost, "/v1/session_store/entries?"+q, []byte("["+strings.Join(entries, ",")+"]"))
}

// storeLoad returns the entries of a key (nil for null) as JSON values.
func (c *client) storeLoad(project, sid, subpath string) []any {
	c.t.Helper()
	r := c.do(http.MethodGet, "/v1/session_store/entries?"+storeQuery(project, sid, subpath), nil)
	if r.code != http.StatusOK {
		c.t.Fatalf("load: %s", r)
	}
	var out struct {
		Entries []any `json:"entries"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		c.t.Fatalf("load: %v: %s", err, r.body)
	}
	return out.Entries
}

func (c *client) storeGet(route, query string, v any) {
	c.t.Helper()
	r := c.do(http.MethodGet, "/v1/session_store/"+route+"?"+query, nil)
	if r.code != http.StatusOK {
		c.t.Fatalf("%s: %s", route, r)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		c.t.Fatalf("%s: %v: %s", route, err, r.body)
	}
}

func userEntry(sid, uuid, text string) string {
	return fmt.Sprintf(`{"type":"user","uuid":%q,"sessionId":%q,"message":{"role":"user","content":%q}}`, uuid, sid, text)
}

func decodeAll(t *testing.T, lines ...string) []any {
	t.Helper()
	out := make([]any, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestStoreRoutes(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newClient(t, s, tokACME)
	const p, sub = "-home-me-proj", "subagents/agent-a1b2"
	u1, u2, u3 := userEntry(storeSID, "u-1", "one"), userEntry(storeSID, "u-2", "two"), userEntry(storeSID, "u-3", "three")
	title := `{"type":"custom-title","customTitle":"t","sessionId":"` + storeSID + `"}`

	if got := c.storeLoad(p, storeSID, ""); got != nil {
		t.Fatalf("load of an unknown key = %v, want null", got)
	}
	if r := c.storeAppend(p, storeSID, "", "b1", u1, u2, title); r.code != http.StatusOK || !strings.Contains(string(r.body), `"stored":3`) {
		t.Fatalf("append: %s", r)
	}
	// A retry of the same request (same batch) stores nothing twice; a new
	// batch repeating a uuid-less entry keeps it (the SDK's rule).
	if r := c.storeAppend(p, storeSID, "", "b1", u1, u2, title); !strings.Contains(string(r.body), `"stored":0}`) {
		t.Fatalf("retry of a batch: %s", r)
	}
	c.storeAppend(p, storeSID, "", "b2", u2, u3, title)
	if got, want := c.storeLoad(p, storeSID, ""), decodeAll(t, u1, u2, title, u3, title); !reflect.DeepEqual(got, want) {
		t.Fatalf("load = %v\nwant %v", got, want)
	}
	if got := c.storeLoad(p, storeSID, sub); got != nil {
		t.Fatalf("load of an unwritten subpath = %v, want null", got)
	}
	// The subkey is apart: the same uuid is stored again there.
	a1 := userEntry(storeSID, "u-1", "agent one")
	c.storeAppend(p, storeSID, sub, "", a1)
	if got, want := c.storeLoad(p, storeSID, sub), decodeAll(t, a1); !reflect.DeepEqual(got, want) {
		t.Fatalf("subpath load = %v, want %v", got, want)
	}
	var subkeys struct{ Subkeys []string }
	c.storeGet("subkeys", storeQuery(p, storeSID, ""), &subkeys)
	if !reflect.DeepEqual(subkeys.Subkeys, []string{sub}) {
		t.Fatalf("subkeys = %v", subkeys.Subkeys)
	}
	// Only the main transcript lists; a subagent-only session does not.
	other := "5e55a000-0000-4000-8000-000000000002"
	c.storeAppend(p, other, sub, "", userEntry(other, "x-1", "only a subagent"))
	var sessions struct {
		Sessions []projectSession
	}
	c.storeGet("sessions", storeQuery(p, "", ""), &sessions)
	if len(sessions.Sessions) != 1 || sessions.Sessions[0].SessionID != storeSID || sessions.Sessions[0].MTime <= 0 {
		t.Fatalf("sessions = %+v", sessions.Sessions)
	}
	// The History API sees the same session, subagent included.
	items, _ := c.history(storeSID, "&subagents=true", 100)
	if len(items) != 6 || items[5].AgentID != "a1b2" {
		t.Fatalf("history: %d items %+v", len(items), items)
	}

	// Delete the subpath: the main transcript stays; the subkey can be
	// written again (its markers went with it).
	if r := c.do(http.MethodDelete, "/v1/session_store/entries?"+storeQuery(p, storeSID, sub), nil); r.code != http.StatusOK {
		t.Fatalf("delete subpath: %s", r)
	}
	if got := c.storeLoad(p, storeSID, sub); got != nil {
		t.Fatalf("subpath after delete = %v", got)
	}
	if got := c.storeLoad(p, storeSID, ""); len(got) != 5 {
		t.Fatalf("main after a subpath delete: %d entries", len(got))
	}
	if r := c.storeAppend(p, storeSID, sub, "", a1); !strings.Contains(string(r.body), `"stored":1}`) {
		t.Fatalf("append to a deleted subpath: %s", r)
	}
	c.storeAppend(p, storeSID, "", "", u3, userEntry(storeSID, "u-4", "four"))
	if got := c.storeLoad(p, storeSID, sub); len(got) != 1 {
		t.Fatalf("subpath written again: %v", got)
	}
	if got := c.storeLoad(p, storeSID, ""); len(got) != 6 {
		t.Fatalf("main after appending past a subpath delete: %d entries, want 6", len(got))
	}
	// Delete the main key: everything goes, and the id can start again.
	if r := c.do(http.MethodDelete, "/v1/session_store/entries?"+storeQuery(p, storeSID, ""), nil); r.code != http.StatusOK {
		t.Fatalf("delete: %s", r)
	}
	for _, k := range []string{"", sub} {
		if got := c.storeLoad(p, storeSID, k); got != nil {
			t.Fatalf("load %q after delete = %v", k, got)
		}
	}
	c.storeGet("subkeys", storeQuery(p, storeSID, ""), &subkeys)
	if len(subkeys.Subkeys) != 0 {
		t.Fatalf("subkeys after delete = %v", subkeys.Subkeys)
	}
	c.storeAppend("-another-project", storeSID, "", "", u1)
	if got, want := c.storeLoad("-another-project", storeSID, ""), decodeAll(t, u1); !reflect.DeepEqual(got, want) {
		t.Fatalf("after delete, the id starts again: %v", got)
	}
}

func TestStoreDeleteThenEvents(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newClient(t, s, tokACME)
	const p = "-proj"
	events := []byte(`{"events":[` + userEntry(storeSID, "u-1", "one") + "]}")
	post := func() response {
		return c.do(http.MethodPost, "/v1/code/sessions/"+storeSID+"/events", events)
	}
	if r := post(); !strings.Contains(string(r.body), `"stored":1`) {
		t.Fatalf("events: %s", r)
	}
	c.storeAppend(p, storeSID, "", "", userEntry(storeSID, "u-2", "two"))
	if r := c.do(http.MethodDelete, "/v1/session_store/entries?"+storeQuery(p, storeSID, ""), nil); r.code != http.StatusOK {
		t.Fatalf("delete: %s", r)
	}
	if r := post(); r.code != http.StatusOK || !strings.Contains(string(r.body), `"stored":1`) {
		t.Fatalf("events after the delete: %s", r)
	}
	if got := c.loglines(storeSID, ""); len(got) != 1 {
		t.Fatalf("log after delete and events: %d entries, want 1", len(got))
	}
}

func TestStoreRefusals(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxBodyBytes = 64 << 10
	s := startServer(t, cfg)
	c := newClient(t, s, tokACME)
	const p = "-proj"
	c.storeAppend(p, storeSID, "", "", userEntry(storeSID, "u-1", "one"))

	cases := []struct {
		name, method, route, query string
		token                      string
		want                       int
	}{
		{"no token", "GET", "entries", storeQuery(p, storeSID, ""), "", 401},
		{"wrong token", "GET", "entries", storeQuery(p, storeSID, ""), "not-a-token", 401},
		{"read-only token writes", "DELETE", "entries", storeQuery(p, storeSID, ""), tokACMERO, 403},
		{"traversal project", "GET", "entries", storeQuery("../etc", storeSID, ""), tokACME, 400},
		{"slash project", "GET", "sessions", storeQuery("a/b", "", ""), tokACME, 400},
		{"dotdot project", "GET", "sessions", storeQuery("..", "", ""), tokACME, 400},
		{"no project", "GET", "sessions", "", tokACME, 400},
		{"control character", "GET", "sessions", storeQuery("a\x00b", "", ""), tokACME, 400},
		{"no session id", "GET", "entries", storeQuery(p, "", "") + "&session_id=", tokACME, 400},
		{"session id with a control character", "GET", "entries", storeQuery(p, "s\x01", ""), tokACME, 400},
		{"session id with a C1 control", "GET", "entries", storeQuery(p, "s\u0085", ""), tokACME, 400},
		{"session id not UTF-8", "GET", "entries", storeQuery(p, "s\xff", ""), tokACME, 400},
		{"session id too long", "GET", "entries", storeQuery(p, strings.Repeat("s", storekey.MaxSessionID+1), ""), tokACME, 400},
		{"empty subpath", "GET", "entries", storeQuery(p, storeSID, "") + "&subpath=", tokACME, 400},
		{"traversal subpath", "GET", "entries", storeQuery(p, storeSID, "subagents/../../x"), tokACME, 400},
		{"dot segment subpath", "GET", "entries", storeQuery(p, storeSID, "subagents/./agent-b"), tokACME, 400},
		{"empty segment subpath", "GET", "entries", storeQuery(p, storeSID, "subagents//agent-b"), tokACME, 400},
		{"backslash subpath", "GET", "entries", storeQuery(p, storeSID, `subagents\agent-b`), tokACME, 400},
		{"bad method", "PATCH", "entries", storeQuery(p, storeSID, ""), tokACME, 405},
		{"no such route", "GET", "nothing", "", tokACME, 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cc := newClient(t, s, tc.token)
			body := []byte(nil)
			if tc.method == "POST" {
				body = []byte("[" + userEntry(storeSID, "u-9", "nine") + "]")
			}
			if r := cc.do(tc.method, "/v1/session_store/"+tc.route+"?"+tc.query, body); r.code != tc.want {
				t.Fatalf("%s %s?%s = %s, want %d", tc.method, tc.route, tc.query, r, tc.want)
			}
		})
	}
	big := userEntry(storeSID, "u-big", strings.Repeat("x", 70<<10))
	if r := c.storeAppend(p, storeSID, "", "", big); r.code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over the limit: %s", r)
	}
	// Another tenant: the same key does not exist for it, and its own
	// session of the same id stays its own.
	o := newClient(t, s, tokOther)
	if got := o.storeLoad(p, storeSID, ""); got != nil {
		t.Fatalf("tenant other sees acme's session: %v", got)
	}
	var sessions struct{ Sessions []projectSession }
	o.storeGet("sessions", storeQuery(p, "", ""), &sessions)
	if len(sessions.Sessions) != 0 {
		t.Fatalf("tenant other lists %v", sessions.Sessions)
	}
	if r := o.do(http.MethodDelete, "/v1/session_store/entries?"+storeQuery(p, storeSID, ""), nil); r.code != http.StatusOK {
		t.Fatalf("other's delete: %s", r)
	}
	if got := c.storeLoad(p, storeSID, ""); len(got) != 1 {
		t.Fatalf("another tenant's delete removed acme's entries: %v", got)
	}
}

func TestStoreSummaryCAS(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newClient(t, s, tokACME)
	const p = "-proj"
	put := func(rev uint64, data, fold string) response {
		return c.do(http.MethodPut, "/v1/session_store/summary?"+storeQuery(p, storeSID, ""),
			[]byte(fmt.Sprintf(`{"revision":%d,"data":%s,"fold_id":%q}`, rev, data, fold)))
	}
	if r := put(0, `{"n":1}`, "f1"); r.code != http.StatusNotFound {
		t.Fatalf("a summary of a session never appended: %s", r)
	}
	c.storeAppend(p, storeSID, "", "", userEntry(storeSID, "u-1", "one"))
	r := put(0, `{"n":1}`, "f1")
	var ok struct {
		Revision uint64
		MTime    int64
	}
	if r.code != http.StatusOK || json.Unmarshal(r.body, &ok) != nil || ok.Revision == 0 {
		t.Fatalf("first summary: %s", r)
	}
	if r := put(0, `{"n":2}`, "f2"); r.code != http.StatusConflict {
		t.Fatalf("create over an existing summary: %s", r)
	}
	if r := put(ok.Revision+7, `{"n":2}`, "f2"); r.code != http.StatusConflict {
		t.Fatalf("stale revision: %s", r)
	}
	if r := put(ok.Revision, `{"n":2}`, "f2"); r.code != http.StatusOK {
		t.Fatalf("update: %s", r)
	}
	var got struct {
		Summary *summaryOut
		Folds   []string
	}
	c.storeGet("summary", storeQuery(p, storeSID, ""), &got)
	if got.Summary == nil || string(got.Summary.Data) != `{"n":2}` || !reflect.DeepEqual(got.Folds, []string{"f1", "f2"}) {
		t.Fatalf("summary = %+v", got)
	}
	var list struct{ Summaries []summaryOut }
	c.storeGet("summaries", storeQuery(p, "", ""), &list)
	var sessions struct{ Sessions []projectSession }
	c.storeGet("sessions", storeQuery(p, "", ""), &sessions)
	if len(list.Summaries) != 1 || list.Summaries[0].MTime < sessions.Sessions[0].MTime {
		t.Fatalf("summaries %+v, sessions %+v: the summary must not look older than the session", list.Summaries, sessions.Sessions)
	}
}

func TestStoreOpaqueKeys(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newClient(t, s, tokACME)
	const p, q = "-proj", "-other"
	named := func(r response) string {
		c.t.Helper()
		var out struct {
			Stored  int
			Session string
		}
		if r.code != http.StatusOK || json.Unmarshal(r.body, &out) != nil || out.Stored != 1 {
			t.Fatalf("append: %s", r)
		}
		return out.Session
	}
	e := func(text string) string { return `{"type":"x","n":` + strconv.Quote(text) + `}` }
	// A UUID is its own name under the first project key; under another,
	// the pair's name.
	if got := named(c.storeAppend(p, storeSID, "", "", e("p1"))); got != storeSID {
		t.Fatalf("%s/%s kept under %s", p, storeSID, got)
	}
	if got := named(c.storeAppend(q, strings.ToUpper(storeSID), "", "", e("q1"))); got != storekey.Name(q, storeSID) {
		t.Fatalf("%s/%s kept under %s, want %s", q, storeSID, got, storekey.Name(q, storeSID))
	}
	if got, want := c.storeLoad(q, storeSID, ""), decodeAll(t, e("q1")); !reflect.DeepEqual(got, want) {
		t.Fatalf("load %s = %v", q, got)
	}
	// The first project key deletes its session: the other's stays one
	// session under the pair's name.
	if r := c.do(http.MethodDelete, "/v1/session_store/entries?"+storeQuery(p, storeSID, ""), nil); r.code != http.StatusOK {
		t.Fatalf("delete: %s", r)
	}
	if got := named(c.storeAppend(q, storeSID, "", "", e("q2"))); got != storekey.Name(q, storeSID) {
		t.Fatalf("after the delete, %s/%s kept under %s", q, storeSID, got)
	}
	if got, want := c.storeLoad(q, storeSID, ""), decodeAll(t, e("q1"), e("q2")); !reflect.DeepEqual(got, want) {
		t.Fatalf("load %s after the delete = %v", q, got)
	}
	if got := c.storeLoad(p, storeSID, ""); got != nil {
		t.Fatalf("load %s after its delete = %v", p, got)
	}
	// Opaque ids: "sess" under two project keys, a UUID of version 8 (taken
	// as opaque, so no client id is a storekey.Name), all apart.
	v8 := storekey.Name("x", "y")
	for _, k := range [][2]string{{p, "sess"}, {q, "sess"}, {p, v8}, {p, "../x"}} {
		if got := named(c.storeAppend(k[0], k[1], "", "", e(k[0]+k[1]))); got != storekey.Name(k[0], k[1]) || !core.IsUUID(got) || got[14] != '8' {
			t.Fatalf("%s/%s kept under %s, want %s", k[0], k[1], got, storekey.Name(k[0], k[1]))
		}
		if got, want := c.storeLoad(k[0], k[1], ""), decodeAll(t, e(k[0]+k[1])); !reflect.DeepEqual(got, want) {
			t.Fatalf("load %s/%s = %v", k[0], k[1], got)
		}
	}
	var sessions struct{ Sessions []projectSession }
	c.storeGet("sessions", storeQuery(q, "", ""), &sessions)
	ids := []string{}
	for _, x := range sessions.Sessions {
		ids = append(ids, x.SessionID)
	}
	sort.Strings(ids)
	if want := []string{storeSID, "sess"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("listSessions(%s) = %v, want %v", q, ids, want)
	}
}

// TestStoreOversizeBodyAnswered: a SessionStore append of 9 MB with a
// Content-Length (over the default max_body_bytes of 8 MiB), or of 24 MB
// chunked, sent whole as a client sends it, gets its 413 and JSON error,
// not a connection reset; the server takes requests after.
func TestStoreOversizeBodyAnswered(t *testing.T) {
	s := startServer(t, testConfig(t))
	for _, chunked := range []bool{false, true} {
		// Chunked, the server reads up to the limit before it knows: a
		// larger body leaves as much unread as the 9 MB one with a length.
		size := 9 << 20
		if chunked {
			size = 24 << 20
		}
		body := []byte("[" + userEntry(storeSID, "u-big", strings.Repeat("x", size)) + "]")
		conn, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		head := "POST /v1/session_store/entries?" + storeQuery("-proj", storeSID, "") + " HTTP/1.1\r\nHost: x\r\n" +
			"Authorization: Bearer " + tokACME + "\r\nContent-Type: application/json\r\n"
		var req []byte
		if chunked {
			req = fmt.Appendf(nil, "%sTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", head, len(body), body)
		} else {
			req = fmt.Appendf(nil, "%sContent-Length: %d\r\n\r\n%s", head, len(body), body)
		}
		// The whole request goes out before the answer is read, as fetch
		// does: a server that answers and closes without reading it resets
		// the connection, and the answer is lost.
		if _, err := conn.Write(req); err != nil {
			t.Fatalf("chunked=%v: send the request: %v", chunked, err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("chunked=%v: read the answer: %v", chunked, err)
		}
		b, err := io.ReadAll(resp.Body)
		_ = conn.Close()
		var e struct {
			Error struct{ Type, Message string }
		}
		if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || json.Unmarshal(b, &e) != nil || e.Error.Type != "request_too_large" {
			t.Fatalf("chunked=%v: %d %s (%v), want 413 request_too_large", chunked, resp.StatusCode, b, err)
		}
	}
	c := newClient(t, s, tokACME)
	if r := c.storeAppend("-proj", storeSID, "", "", userEntry(storeSID, "u-1", "small")); r.code != http.StatusOK {
		t.Fatalf("an append after: %s", r)
	}
}
