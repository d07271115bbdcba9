package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/server/wire"
)

// putGetFixture is the server, client and session of TestPutGet, with the
// five chained entries stored first.
type putGetFixture struct {
	s       *Server
	c       *client
	sess    string
	entries [][]byte
	ids     []string
}

// newPutGetFixture starts a server with a 100ms duplicate window and PUTs
// a chain of five entries into a new session.
func newPutGetFixture(t *testing.T) *putGetFixture {
	t.Helper()
	cfg := testConfig(t)
	cfg.DuplicateWindow = "100ms"
	s := startServer(t, cfg)
	f := &putGetFixture{s: s, c: newClient(t, s, tokACME), sess: newUUID()}
	parent := ""
	for i := 0; i < 5; i++ {
		id := newUUID()
		e := chainEntry(f.sess, id, parent, fmt.Sprintf("prompt %d", i))
		r := f.c.put(f.sess, e, parent)
		if r.code != http.StatusCreated {
			t.Fatalf("PUT %d: %s", i, r)
		}
		f.entries, f.ids, parent = append(f.entries, e), append(f.ids, id), id
	}
	return f
}

func TestPutGet(t *testing.T) {
	f := newPutGetFixture(t)
	putGetConflicts(t, f)
	putGetMetadata(t, f)
	putGetSubagentAndCompaction(t, f)
	putGetListing(t, f)
	putGetMetrics(t, f)
}

// putGetConflicts wants a stale or missing Last-Uuid and every resend,
// within the duplicate window and after it, answered 409, and the log and
// the stream to hold each entry once.
func putGetConflicts(t *testing.T, f *putGetFixture) {
	c, sess, entries, ids := f.c, f.sess, f.entries, f.ids
	// A stale Last-Uuid: 409 with the server's last uuid.
	stale := chainEntry(sess, newUUID(), ids[1], "stale")
	r := c.put(sess, stale, ids[1])
	if r.code != http.StatusConflict || r.hdr.Get("x-last-uuid") != ids[4] {
		t.Fatalf("stale Last-Uuid: %s, x-last-uuid %q, want 409 and %s", r, r.hdr.Get("x-last-uuid"), ids[4])
	}
	assertErrorBody(t, r, "conflict_error")
	// No Last-Uuid at all on a session that has entries: also a conflict.
	if r := c.put(sess, stale, ""); r.code != http.StatusConflict || r.hdr.Get("x-last-uuid") != ids[4] {
		t.Fatalf("missing Last-Uuid: %s", r)
	}

	// The same entry again: 409 with its own uuid, whatever Last-Uuid says.
	for _, last := range []string{ids[4], ids[0], ""} {
		r := c.put(sess, entries[2], last)
		if r.code != http.StatusConflict || r.hdr.Get("x-last-uuid") != ids[2] {
			t.Fatalf("resend with Last-Uuid %q: %s, x-last-uuid %q, want 409 and %s", last, r, r.hdr.Get("x-last-uuid"), ids[2])
		}
	}

	// After the duplicate window, still never twice.
	time.Sleep(300 * time.Millisecond)
	for i, e := range entries {
		r := c.put(sess, e, ids[4])
		if r.code != http.StatusConflict || r.hdr.Get("x-last-uuid") != ids[i] {
			t.Fatalf("resend %d after the window: %s", i, r)
		}
	}

	got := c.loglines(sess, "")
	if len(got) != len(entries) {
		t.Fatalf("loglines: %d, want %d", len(got), len(entries))
	}
	for i := range entries {
		if !bytes.Equal(got[i], entries[i]) {
			t.Errorf("logline %d:\n got %s\nwant %s", i, got[i], entries[i])
		}
	}
	if n := streamMsgs(t, f.s); n != uint64(len(entries)) {
		t.Errorf("stream holds %d messages, want %d", n, len(entries))
	}
}

// putGetMetadata stores a title (once per content) and tags (once per
// idempotency key).
func putGetMetadata(t *testing.T, f *putGetFixture) {
	c, sess, ids := f.c, f.sess, f.ids
	// Uuid-less metadata: stored once per content; Last-Uuid is not checked.
	title := []byte(`{"type":"custom-title","customTitle":"Login bug","sessionId":"` + sess + `"}`)
	if r := c.put(sess, title, "whatever"); r.code != http.StatusCreated {
		t.Fatalf("title: %s", r)
	}
	if r := c.put(sess, title, ids[4]); r.code != http.StatusOK || !strings.Contains(string(r.body), `"duplicate":true`) {
		t.Fatalf("title again: %s", r)
	}
	// With an idempotency key, the same bytes twice are two facts.
	tag := []byte(`{"type":"tag","tag":"auth","sessionId":"` + sess + `"}`)
	for i, key := range []string{"k1", "k2", "k1"} {
		want := http.StatusCreated
		if i == 2 {
			want = http.StatusOK // k1 again: a duplicate
		}
		r := c.do(http.MethodPut, "/v1/session_ingress/session/"+sess, tag, "Last-Uuid", ids[4], "Idempotency-Key", key)
		if r.code != want {
			t.Fatalf("tag with key %s: %s, want %d", key, r, want)
		}
	}
}

// putGetSubagentAndCompaction stores a subagent's entry, a compact boundary
// and an entry after it, and wants the main log, the log with subagents and
// the log after the last compaction to show each where it belongs.
func putGetSubagentAndCompaction(t *testing.T, f *putGetFixture) {
	c, sess, ids := f.c, f.sess, f.ids
	// A subagent's entries are stored under the agent, outside the main log.
	agentID := "a1b2c3d4e5f6a7b8c"
	ae := agentEntry(sess, agentID, newUUID(), "search")
	if r := c.put(sess, ae, ids[4]); r.code != http.StatusCreated {
		t.Fatalf("agent entry: %s", r)
	}
	lastUUID := uuidOf(t, ae)

	// A compact boundary and what follows.
	boundary := []byte(`{"parentUuid":null,"logicalParentUuid":"` + ids[4] + `","isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","uuid":"` + newUUID() + `","sessionId":"` + sess + `"}`)
	if r := c.put(sess, boundary, lastUUID); r.code != http.StatusCreated {
		t.Fatalf("boundary: %s", r)
	}
	after := chainEntry(sess, newUUID(), uuidOf(t, boundary), "after compaction")
	if r := c.put(sess, after, uuidOf(t, boundary)); r.code != http.StatusCreated {
		t.Fatalf("after boundary: %s", r)
	}

	main := c.loglines(sess, "")
	if len(main) != 5+1+2+2 { // 5 chain, title, two tags, boundary, after
		t.Errorf("main log has %d lines, want 10", len(main))
	}
	for _, l := range main {
		if bytes.Contains(l, []byte(agentID)) {
			t.Errorf("the main log holds a subagent entry: %s", l)
		}
	}
	all := c.loglines(sess, "?subagents=true")
	if len(all) != len(main)+1 || !bytes.Equal(all[8], ae) {
		t.Errorf("log with subagents: %d lines, [8] = %s", len(all), all[8])
	}
	compacted := c.loglines(sess, "?after_last_compact=true")
	if len(compacted) != 2 || !bytes.Equal(compacted[0], boundary) || !bytes.Equal(compacted[1], after) {
		t.Errorf("after_last_compact: %q", compacted)
	}
}

// putGetListing wants the session listing to carry the title, the tag and
// the counts, the tag filter to work, and an unknown session to be 404.
func putGetListing(t *testing.T, f *putGetFixture) {
	c, sess := f.c, f.sess
	// The listing has the title and the counts.
	r := c.do(http.MethodGet, "/v1/sessions", nil)
	var list struct {
		Data []wire.SessionInfo `json:"data"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil || r.code != http.StatusOK {
		t.Fatalf("sessions: %s", r)
	}
	if len(list.Data) != 1 || list.Data[0].ID != sess || list.Data[0].Title != "Login bug" || list.Data[0].Tag != "auth" ||
		list.Data[0].Entries != 11 || list.Data[0].Subagents != 1 {
		t.Errorf("sessions: %s", r.body)
	}
	if r := c.do(http.MethodGet, "/v1/sessions?tag=nope", nil); !strings.Contains(string(r.body), `"data":[]`) {
		t.Errorf("tag filter: %s", r)
	}

	// Unknown sessions.
	if r := c.do(http.MethodGet, "/v1/session_ingress/session/"+newUUID(), nil); r.code != http.StatusNotFound {
		t.Errorf("GET unknown session: %s", r)
	}
}

// putGetMetrics wants /metrics to count what TestPutGet stored, refused
// and found duplicate.
func putGetMetrics(t *testing.T, f *putGetFixture) {
	metrics := string(f.c.do(http.MethodGet, "/metrics", nil).body)
	for _, want := range []string{
		"scribe_entries_stored_total 11",
		`scribe_http_requests_total{route="session_ingress_put",code="409"}`,
		"scribe_conflicts_total 2",
		`scribe_http_request_duration_seconds_bucket{route="session_ingress_put",le="+Inf"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q:\n%s", want, metrics)
		}
	}
	// entries[2] three times, five resends, the title and the k1 tag.
	if !strings.Contains(metrics, "scribe_entries_duplicate_total 10\n") {
		t.Errorf("duplicates counted wrong:\n%s", metrics)
	}
}

func assertErrorBody(t *testing.T, r response, typ string) {
	t.Helper()
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Type != typ || e.Error.Message == "" {
		t.Errorf("error body %s: want type %q and a message", r.body, typ)
	}
}

func TestHealth(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newClient(t, s, "")
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := c.do(http.MethodGet, p, nil); r.code != http.StatusOK {
			t.Errorf("%s: %s", p, r)
		}
	}
	if r := c.do(http.MethodGet, "/metrics", nil); r.code != http.StatusOK || !strings.Contains(string(r.body), "# TYPE scribe_entries_stored_total counter") {
		t.Errorf("metrics: %s", r)
	}
}
