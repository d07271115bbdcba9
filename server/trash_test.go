package server

// The trash (trash.go, storetrash.go), over HTTP against an embedded
// JetStream:
//
//   - TestTrashMoveRestore: a session with subagents, a title and a tag
//     moved to the trash is gone from the listing, the History API, the
//     session log and the SessionStore's load, list, subkeys and summaries;
//     restored, its History pages are byte for byte those before, and its
//     title, tag and subagents are back.
//   - TestTrashTenants: another tenant neither sees, restores nor empties
//     an item; a read-only token lists but cannot move, restore or empty.
//   - TestTrashEmpty: empty by item and by age (dry run first), counted in
//     /metrics; an emptied session is gone for good, and its id starts
//     again; the retention sweep empties only what is past it.
//   - TestTrashSurvivesRestart: the trash is in JetStream: a restarted
//     server lists and restores it.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/server/storekey"
	"github.com/e0dc0000/scribe/server/wire"
)

// trashPost posts a trash request and decodes the answer into v.
func (c *client) trashPost(route string, in wire.TrashRequest, v any) response {
	c.t.Helper()
	body, _ := json.Marshal(in)
	r := c.do(http.MethodPost, "/v1/trash"+route, body)
	if r.code == http.StatusOK && v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			c.t.Fatalf("POST /v1/trash%s: %v: %s", route, err, r.body)
		}
	}
	return r
}

// trashList is the tenant's trash.
func (c *client) trashList() []wire.TrashItem {
	c.t.Helper()
	r := c.do(http.MethodGet, "/v1/trash", nil)
	var l wire.TrashList
	if r.code != http.StatusOK || json.Unmarshal(r.body, &l) != nil || l.Data == nil {
		c.t.Fatalf("GET /v1/trash: %s", r)
	}
	return l.Data
}

// historyBody is the session's whole History (main and subagents) as the
// server writes it: one page.
func (c *client) historyBody(session string) response {
	c.t.Helper()
	return c.do(http.MethodGet, "/v1/code/sessions/"+session+"/teleport-events?subagents=true", nil)
}

// listed reports whether GET /v1/sessions lists session.
func (c *client) listed(session string) bool {
	c.t.Helper()
	return bytes.Contains(c.do(http.MethodGet, "/v1/sessions", nil).body, []byte(session))
}

// trashFixture stores a session with a subagent, a title and a tag
// through the events route, and one through the SessionStore routes.
func trashFixture(t *testing.T, c *client) (sess, storeSess string) {
	t.Helper()
	sess = newUUID()
	u1, u2 := newUUID(), newUUID()
	c.postEvents(sess, eventsBody(chainEntry(sess, u1, "", "one"), agentEntry(sess, "a1", newUUID(), "sub"),
		chainEntry(sess, u2, u1, "two"),
		[]byte(`{"type":"custom-title","customTitle":"the title","sessionId":"`+sess+`"}`),
		[]byte(`{"type":"tag","tag":"keep","sessionId":"`+sess+`"}`)))
	c.storeAppend("-proj", storeSID, "", "", userEntry(storeSID, newUUID(), "sdk"))
	c.storeAppend("-proj", storeSID, storekey.SubagentPrefix+"x1", "", userEntry(storeSID, newUUID(), "sdk sub"))
	if r := c.do(http.MethodPut, "/v1/session_store/summary?"+storeQuery("-proj", storeSID, ""), []byte(`{"revision":0,"data":{"a":1}}`)); r.code != http.StatusOK {
		t.Fatalf("summary: %s", r)
	}
	return sess, storeSID
}

func TestTrashMoveRestore(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newClient(t, s, tokACME)
	sess, sdk := trashFixture(t, c)
	before := c.historyBody(sess)
	if before.code != http.StatusOK || !bytes.Contains(before.body, []byte(`"session_agent_id":"a1"`)) {
		t.Fatalf("history before: %s", before)
	}
	sdkBefore := c.historyBody(sdk)
	for _, id := range []string{sess, sdk} {
		var it wire.TrashItem
		if r := c.trashPost("", wire.TrashRequest{SessionID: id}, &it); r.code != http.StatusOK || it.SessionID != id || it.Reason != "rm" {
			t.Fatalf("trash %s: %s", id, r)
		}
	}
	// Gone everywhere, as if deleted.
	if c.listed(sess) || c.listed(sdk) {
		t.Fatal("a session in the trash is listed")
	}
	for _, id := range []string{sess, sdk} {
		if r := c.historyBody(id); r.code != http.StatusNotFound {
			t.Fatalf("history of %s in the trash: %s", id, r)
		}
		if r := c.do(http.MethodGet, "/v1/session_ingress/session/"+id, nil); r.code != http.StatusNotFound {
			t.Fatalf("log of %s in the trash: %s", id, r)
		}
	}
	if got := c.storeLoad("-proj", sdk, ""); got != nil {
		t.Fatalf("SessionStore load of a session in the trash: %v", got)
	}
	var sessions struct{ Sessions []projectSession }
	c.storeGet("sessions", storeQuery("-proj", "", ""), &sessions)
	var subkeys struct{ Subkeys []string }
	c.storeGet("subkeys", storeQuery("-proj", sdk, ""), &subkeys)
	var sums struct{ Summaries []summaryOut }
	c.storeGet("summaries", storeQuery("-proj", "", ""), &sums)
	if len(sessions.Sessions)+len(subkeys.Subkeys)+len(sums.Summaries) != 0 {
		t.Fatalf("SessionStore lists a session in the trash: %+v %+v %+v", sessions, subkeys, sums)
	}
	// A SessionStore delete of it deletes nothing: only emptying does.
	if r := c.do(http.MethodDelete, "/v1/session_store/entries?"+storeQuery("-proj", sdk, ""), nil); r.code != http.StatusOK || !strings.Contains(string(r.body), `"deleted":0`) {
		t.Fatalf("SessionStore delete of a session in the trash: %s", r)
	}
	items := c.trashList()
	if len(items) != 2 || items[0].Title != "the title" || items[0].Tag != "keep" || len(items[0].Subagents) != 1 || items[1].ProjectKey != "-proj" {
		t.Fatalf("trash: %+v", items)
	}
	// A second move of the same session: not found (it is in the trash).
	if r := c.trashPost("", wire.TrashRequest{SessionID: sess}, nil); r.code != http.StatusNotFound {
		t.Fatalf("trash twice: %s", r)
	}
	// Restore by a prefix of the session id, and by the item id.
	if r := c.trashPost("/restore", wire.TrashRequest{Ref: sess[:8]}, nil); r.code != http.StatusOK {
		t.Fatalf("restore: %s", r)
	}
	if r := c.trashPost("/restore", wire.TrashRequest{Ref: items[1].ID}, nil); r.code != http.StatusOK {
		t.Fatalf("restore: %s", r)
	}
	if after := c.historyBody(sess); !bytes.Equal(after.body, before.body) {
		t.Fatalf("history after restore differs:\n%s\nbefore:\n%s", after.body, before.body)
	}
	if after := c.historyBody(sdk); !bytes.Equal(after.body, sdkBefore.body) {
		t.Fatalf("SessionStore session's history after restore differs:\n%s\nbefore:\n%s", after.body, sdkBefore.body)
	}
	list := c.do(http.MethodGet, "/v1/sessions", nil).body
	if !bytes.Contains(list, []byte(`"title":"the title","tag":"keep"`)) || !bytes.Contains(list, []byte(sdk)) {
		t.Fatalf("listing after restore: %s", list)
	}
	c.storeGet("subkeys", storeQuery("-proj", sdk, ""), &subkeys)
	c.storeGet("summaries", storeQuery("-proj", "", ""), &sums)
	if len(subkeys.Subkeys) != 1 || len(sums.Summaries) != 1 || c.storeLoad("-proj", sdk, "") == nil {
		t.Fatalf("SessionStore after restore: %+v %+v", subkeys, sums)
	}
	if got := c.trashList(); len(got) != 0 {
		t.Fatalf("trash after restore: %+v", got)
	}
}

func TestTrashTenants(t *testing.T) {
	s := startServer(t, testConfig(t))
	c, o, ro := newClient(t, s, tokACME), newClient(t, s, tokOther), newClient(t, s, tokACMERO)
	sess, _ := trashFixture(t, c)
	if r := o.trashPost("", wire.TrashRequest{SessionID: sess}, nil); r.code != http.StatusNotFound {
		t.Fatalf("another tenant trashed acme's session: %s", r)
	}
	if r := ro.trashPost("", wire.TrashRequest{SessionID: sess}, nil); r.code != http.StatusForbidden {
		t.Fatalf("a read-only token trashed: %s", r)
	}
	var it wire.TrashItem
	if r := c.trashPost("", wire.TrashRequest{SessionID: sess}, &it); r.code != http.StatusOK {
		t.Fatalf("trash: %s", r)
	}
	if got := o.trashList(); len(got) != 0 {
		t.Fatalf("another tenant sees acme's trash: %+v", got)
	}
	if got := ro.trashList(); len(got) != 1 {
		t.Fatalf("a read-only token of acme lists %+v", got)
	}
	for _, ref := range []string{it.ID, sess} {
		if r := o.trashPost("/restore", wire.TrashRequest{Ref: ref}, nil); r.code != http.StatusNotFound {
			t.Fatalf("another tenant restored %s: %s", ref, r)
		}
		if r := o.trashPost("/empty", wire.TrashRequest{Ref: ref}, nil); r.code != http.StatusNotFound {
			t.Fatalf("another tenant emptied %s: %s", ref, r)
		}
	}
	var l wire.TrashList
	if r := o.trashPost("/empty", wire.TrashRequest{}, &l); r.code != http.StatusOK || len(l.Data) != 0 {
		t.Fatalf("another tenant's empty: %s", r)
	}
	for _, route := range []string{"/restore", "/empty"} {
		if r := ro.trashPost(route, wire.TrashRequest{Ref: it.ID}, nil); r.code != http.StatusForbidden {
			t.Fatalf("a read-only token's %s: %s", route, r)
		}
	}
	if got := c.trashList(); len(got) != 1 {
		t.Fatalf("acme's trash after the others tried: %+v", got)
	}
	if r := c.trashPost("/restore", wire.TrashRequest{Ref: it.ID}, nil); r.code != http.StatusOK || !c.listed(sess) {
		t.Fatalf("restore: %s", r)
	}
}

func TestTrashEmpty(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newClient(t, s, tokACME)
	var ids []string
	for i := 0; i < 3; i++ {
		sess := newUUID()
		c.postEvents(sess, eventsBody(chainEntry(sess, newUUID(), "", "x"), agentEntry(sess, "a1", newUUID(), "sub")))
		if r := c.trashPost("", wire.TrashRequest{SessionID: sess}, nil); r.code != http.StatusOK {
			t.Fatalf("trash: %s", r)
		}
		ids = append(ids, sess)
	}
	// One item; a dry run empties nothing.
	var l wire.TrashList
	if r := c.trashPost("/empty", wire.TrashRequest{Ref: ids[0], DryRun: true}, &l); r.code != http.StatusOK || len(l.Data) != 1 || len(c.trashList()) != 3 {
		t.Fatalf("dry run: %s", r)
	}
	if r := c.trashPost("/empty", wire.TrashRequest{Ref: ids[0]}, &l); r.code != http.StatusOK || len(l.Data) != 1 || len(c.trashList()) != 2 {
		t.Fatalf("empty one: %s", r)
	}
	if r := c.trashPost("/restore", wire.TrashRequest{Ref: ids[0]}, nil); r.code != http.StatusNotFound {
		t.Fatalf("restore of an emptied item: %s", r)
	}
	// Gone for good: the id starts again with the same entry.
	again := chainEntry(ids[0], newUUID(), "", "again")
	if res := c.postEvents(ids[0], eventsBody(again)); res.Stored != 1 {
		t.Fatalf("the emptied id does not start again: %+v", res)
	}
	// By age: nothing is an hour old.
	if r := c.trashPost("/empty", wire.TrashRequest{OlderThanSeconds: 3600}, &l); r.code != http.StatusOK || len(l.Data) != 0 {
		t.Fatalf("empty older than an hour: %s", r)
	}
	// The retention sweep: none past 30 days now, both a year from now.
	ctx := context.Background()
	if n, err := s.sweepTrash(ctx, 720*time.Hour, time.Now()); err != nil || n != 0 {
		t.Fatalf("sweep now: %d, %v", n, err)
	}
	if n, err := s.sweepTrash(ctx, 720*time.Hour, time.Now().Add(365*24*time.Hour)); err != nil || n != 2 {
		t.Fatalf("sweep in a year: %d, %v", n, err)
	}
	if got := c.trashList(); len(got) != 0 {
		t.Fatalf("trash after the sweep: %+v", got)
	}
	if r := c.historyBody(ids[1]); r.code != http.StatusNotFound {
		t.Fatalf("a swept session: %s", r)
	}
	m := c.do(http.MethodGet, "/metrics", nil).body
	for _, want := range []string{"scribe_trash_moved_total 3", "scribe_trash_purged_total 3", "scribe_trash_purged_entries_total 6"} {
		if !bytes.Contains(m, []byte(want+"\n")) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestTrashSurvivesRestart(t *testing.T) {
	cfg := testConfig(t)
	s := startServer(t, cfg)
	c := newClient(t, s, tokACME)
	sess, _ := trashFixture(t, c)
	before := c.historyBody(sess)
	if r := c.trashPost("", wire.TrashRequest{SessionID: sess}, nil); r.code != http.StatusOK {
		t.Fatalf("trash: %s", r)
	}
	stopServer(t, s)
	s2 := startServer(t, cfg)
	c = newClient(t, s2, tokACME)
	if c.listed(sess) || len(c.trashList()) != 1 {
		t.Fatal("after a restart, the trash is not as it was")
	}
	if r := c.trashPost("/restore", wire.TrashRequest{Ref: sess}, nil); r.code != http.StatusOK {
		t.Fatalf("restore after restart: %s", r)
	}
	if after := c.historyBody(sess); !bytes.Equal(after.body, before.body) {
		t.Fatal("history after a restart and restore differs")
	}
}
