package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/server/wire"
)

func TestEventsBatches(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newClient(t, s, tokACME)
	sess := newUUID()

	var entries [][]byte
	parent := ""
	for i := 0; i < 8; i++ {
		id := newUUID()
		entries = append(entries, chainEntry(sess, id, parent, fmt.Sprintf("turn %d", i)))
		parent = id
	}
	// A duplicate inside the batch.
	res := c.postEvents(sess, eventsBody(entries[0], entries[1], entries[2], entries[1], entries[3]))
	if res.Stored != 4 || res.Duplicates != 1 || res.LastUUID != uuidOf(t, entries[3]) {
		t.Fatalf("first batch: %+v", res)
	}
	// Duplicates across batches, as a bare array this time.
	bare := []byte("[" + string(bytes.Join([][]byte{entries[2], entries[3], entries[4], entries[5]}, []byte(","))) + "]")
	res = c.postEvents(sess, bare)
	if res.Stored != 2 || res.Duplicates != 2 {
		t.Fatalf("second batch: %+v", res)
	}
	// A state event between entries, and a bare entry inside "events".
	body := fmt.Sprintf(`{"events":[{"type":"user","payload":%s},{"type":"state","state":"requires_action"},%s]}`, entries[6], entries[7])
	res = c.postEvents(sess, []byte(body))
	if res.Stored != 2 || res.Duplicates != 0 || res.State != "requires_action" {
		t.Fatalf("third batch: %+v", res)
	}
	// A scribe-state entry is stored and sets the state too.
	st := []byte(`{"type":"scribe-state","state":"idle","from":"requires_action","reason":"done","sessionId":"` + sess + `","uuid":"` + newUUID() + `","timestamp":"2026-01-10T11:00:05.000Z"}`)
	res = c.postEvents(sess, eventsBody(st))
	if res.Stored != 1 || res.State != "idle" {
		t.Fatalf("state entry: %+v", res)
	}
	// Everything again: all duplicates.
	res = c.postEvents(sess, eventsBody(append(entries, st)...))
	if res.Stored != 0 || res.Duplicates != 9 {
		t.Fatalf("replay: %+v", res)
	}
	// A subagent's entries, by agent_id or by the entry's own agentId.
	ae := agentEntry(sess, "agent-1", newUUID(), "look")
	plain := chainEntry(sess, newUUID(), "", "by agent_id")
	body = fmt.Sprintf(`{"events":[{"type":"user","payload":%s},{"type":"user","payload":%s,"agent_id":"agent-2"}]}`, ae, plain)
	if res = c.postEvents(sess, []byte(body)); res.Stored != 2 {
		t.Fatalf("agent events: %+v", res)
	}

	items, _ := c.history(sess, "&subagents=true", 1000)
	want := append(append([][]byte{}, entries...), st, ae, plain)
	if len(items) != len(want) {
		t.Fatalf("history: %d items, want %d", len(items), len(want))
	}
	for i := range want {
		if !bytes.Equal(items[i].Payload, want[i]) {
			t.Errorf("item %d: %s\nwant %s", i, items[i].Payload, want[i])
		}
	}
	if items[9].AgentID != "agent-1" || items[10].AgentID != "agent-2" || items[0].AgentID != "" {
		t.Errorf("agents: %q %q %q", items[0].AgentID, items[9].AgentID, items[10].AgentID)
	}
	if only, _ := c.history(sess, "&session_agent_id=agent-2", 10); len(only) != 1 || !bytes.Equal(only[0].Payload, plain) {
		t.Errorf("session_agent_id: %v", only)
	}

	// State in the listing, with its filter.
	r := c.do(http.MethodGet, "/v1/sessions?state=idle", nil)
	if !strings.Contains(string(r.body), sess) {
		t.Errorf("sessions?state=idle: %s", r)
	}
	r = c.do(http.MethodGet, "/v1/sessions?state=running", nil)
	if strings.Contains(string(r.body), sess) {
		t.Errorf("sessions?state=running: %s", r)
	}

	// Malformed batches are refused whole.
	before := streamMsgs(t, s)
	for _, bad := range []string{
		`{"events":[{"type":"user","payload":` + string(chainEntry(sess, newUUID(), "", "ok")) + `},{"type":"user","payload":"nope"}]}`,
		`{"events":[{"type":"state","state":"sleeping"}]}`,
		`{"nope":[]}`,
		`"text"`,
		`[{"type":"user","uuid":"a.b","sessionId":"` + sess + `"}]`,
		`[{"type":"user","uuid":"x","sessionId":"` + newUUID() + `"}]`,
		`{"events":[{"type":"user","payload":` + string(chainEntry(sess, newUUID(), "", "ok")) + `,"agent_id":"a.b"}]}`,
	} {
		r := c.do(http.MethodPost, "/v1/code/sessions/"+sess+"/events", []byte(bad))
		if r.code != http.StatusBadRequest {
			t.Errorf("batch %s: %s, want 400", bad, r)
		}
		assertErrorBody(t, r, "invalid_request_error")
	}
	if after := streamMsgs(t, s); after != before {
		t.Errorf("refused batches stored %d messages", after-before)
	}
}

func TestTeleportPagination(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newClient(t, s, tokACME)
	sess := newUUID()

	const n = 2500
	var want, wantAll [][]byte
	var batch [][]byte
	parent := ""
	for i := 0; i < n; i++ {
		id := newUUID()
		e := chainEntry(sess, id, parent, fmt.Sprintf("entry %d", i))
		parent = id
		want = append(want, e)
		wantAll = append(wantAll, e)
		batch = append(batch, e)
		if i%25 == 0 {
			ae := agentEntry(sess, fmt.Sprintf("agent-%d", i%3), newUUID(), fmt.Sprintf("agent entry %d", i))
			wantAll = append(wantAll, ae)
			batch = append(batch, ae)
		}
		if len(batch) >= 500 || i == n-1 {
			if res := c.postEvents(sess, eventsBody(batch...)); res.Stored != len(batch) {
				t.Fatalf("batch: %+v, want %d stored", res, len(batch))
			}
			batch = nil
		}
	}

	// limit=5000 clamps to 1000: three pages.
	for _, limit := range []int{1000, 5000} {
		items, pages := c.history(sess, "&from_first_event=true", limit)
		if pages != 3 {
			t.Errorf("limit %d: %d pages, want 3", limit, pages)
		}
		checkItems(t, items, want)
	}
	p, _ := c.teleport(sess, "")
	if len(p.Data) != 1000 || p.NextCursor == nil {
		t.Errorf("default page: %d items, next_cursor %v", len(p.Data), p.NextCursor)
	}
	items, pages := c.history(sess, "&subagents=true", 1000)
	if pages != 3 {
		t.Errorf("subagents: %d pages", pages)
	}
	checkItems(t, items, wantAll)
	for _, it := range items {
		isAgent := bytes.Contains(it.Payload, []byte(`"isSidechain":true`))
		if isAgent != (it.AgentID != "") || (isAgent && !strings.HasPrefix(it.AgentID, "agent-")) {
			t.Fatalf("session_agent_id %q on %s", it.AgentID, it.Payload)
		}
	}
	small, pages := c.history(sess, "", 7)
	if pages != (n+6)/7 {
		t.Errorf("limit 7: %d pages, want %d", pages, (n+6)/7)
	}
	checkItems(t, small, want)

	// The v1 log is the same entries.
	if lines := c.loglines(sess, ""); len(lines) != n {
		t.Errorf("loglines: %d", len(lines))
	}

	for _, q := range []string{"?cursor=bogus", "?limit=ten", "?subagents=maybe", "?session_agent_id=a.b"} {
		if _, r := c.teleport(sess, q); r.code != http.StatusBadRequest {
			t.Errorf("%s: %s, want 400", q, r)
		}
	}
	if _, r := c.teleport(newUUID(), ""); r.code != http.StatusNotFound {
		t.Errorf("unknown session: %s, want 404", r)
	}
}

// checkItems checks that items are exactly want, in order.
func checkItems(t *testing.T, items []wire.HistoryEvent, want [][]byte) {
	t.Helper()
	if len(items) != len(want) {
		t.Errorf("%d items, want %d", len(items), len(want))
	}
	seen := map[string]bool{}
	for i, it := range items {
		var e struct {
			UUID string `json:"uuid"`
		}
		if err := json.Unmarshal(it.Payload, &e); err != nil {
			t.Fatal(err)
		}
		if seen[e.UUID] {
			t.Fatalf("item %d: %s twice", i, e.UUID)
		}
		seen[e.UUID] = true
		if i < len(want) && !bytes.Equal(it.Payload, want[i]) {
			t.Fatalf("item %d:\n got %s\nwant %s", i, it.Payload, want[i])
		}
	}
}
