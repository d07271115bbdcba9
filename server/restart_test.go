package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestRestart(t *testing.T) {
	cfg := testConfig(t)
	cfg.DuplicateWindow = "100ms"
	s := startServer(t, cfg)
	c := newClient(t, s, tokACME)
	sess := newUUID()
	var entries [][]byte
	parent := ""
	for i := 0; i < 20; i++ {
		id := newUUID()
		e := chainEntry(sess, id, parent, fmt.Sprintf("before restart %d", i))
		if r := c.put(sess, e, parent); r.code != http.StatusCreated {
			t.Fatalf("PUT: %s", r)
		}
		entries, parent = append(entries, e), id
	}
	title := []byte(`{"type":"custom-title","customTitle":"kept","sessionId":"` + sess + `"}`)
	if res := c.postEvents(sess, eventsBody(title)); res.Stored != 1 {
		t.Fatalf("title: %+v", res)
	}
	stopServer(t, s)

	s2 := startServer(t, cfg)
	c = newClient(t, s2, tokACME)
	lines := c.loglines(sess, "")
	if len(lines) != 21 {
		t.Fatalf("after restart: %d lines, want 21", len(lines))
	}
	for i, e := range entries {
		if !bytes.Equal(lines[i], e) {
			t.Fatalf("line %d differs", i)
		}
	}
	for i, e := range entries {
		r := c.put(sess, e, parent)
		if r.code != http.StatusConflict || r.hdr.Get("x-last-uuid") != uuidOf(t, e) {
			t.Fatalf("resend %d after restart: %s", i, r)
		}
	}
	if res := c.postEvents(sess, eventsBody(append(entries, title)...)); res.Stored != 0 || res.Duplicates != 21 {
		t.Fatalf("batch resend after restart: %+v", res)
	}
	// Last-Uuid survives too.
	next := chainEntry(sess, newUUID(), parent, "after restart")
	if r := c.put(sess, next, parent); r.code != http.StatusCreated {
		t.Fatalf("PUT after restart: %s", r)
	}
	if r := c.do(http.MethodGet, "/v1/sessions", nil); !bytes.Contains(r.body, []byte(`"title":"kept"`)) {
		t.Errorf("title after restart: %s", r)
	}
	if n := streamMsgs(t, s2); n != 22 {
		t.Errorf("stream: %d messages, want 22", n)
	}
}

// A writer that dies between the steps of a write leaves the session in a
// state the next request repairs, and the retry is never stored twice.
func TestCrashBetweenSteps(t *testing.T) {
	cfg := testConfig(t)
	cfg.DuplicateWindow = "100ms"
	s := startServer(t, cfg)
	c := newClient(t, s, tokACME)
	sess := newUUID()
	e0 := chainEntry(sess, newUUID(), "", "first")
	if r := c.put(sess, e0, ""); r.code != http.StatusCreated {
		t.Fatalf("PUT: %s", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// crashPublish does what a writer does up to its publish, then stops.
	crashPublish := func(e []byte, withMarker bool) {
		t.Helper()
		it, err := parseEntry(e, sess, "", "")
		if err != nil {
			t.Fatal(err)
		}
		meta, _, err := s.st.loadMeta(ctx, "acme", sess)
		if err != nil {
			t.Fatal(err)
		}
		ack, err := s.st.js.PublishMsg(ctx, &nats.Msg{Subject: it.subject("acme", sess), Data: it.e.Raw,
			Header: nats.Header{hdrID: []string{it.id}}},
			jetstream.WithMsgID(sessionKey("acme", sess)+"."+it.id),
			jetstream.WithExpectLastSequenceForSubject(meta.LastSeq, sessionFilter("acme", sess)))
		if err != nil {
			t.Fatal(err)
		}
		if withMarker {
			if err := s.st.createMarkers(ctx, "acme", sess, []rec{{seq: ack.Sequence, id: it.id, e: it.e}}); err != nil {
				t.Fatal(err)
			}
		}
	}

	// 1. Crash after the publish, before the markers; the client retries
	// after the duplicate window.
	e1 := chainEntry(sess, newUUID(), uuidOf(t, e0), "second")
	crashPublish(e1, false)
	time.Sleep(300 * time.Millisecond)
	r := c.put(sess, e1, uuidOf(t, e0))
	if r.code != http.StatusConflict || r.hdr.Get("x-last-uuid") != uuidOf(t, e1) {
		t.Fatalf("retry after a crash before the markers: %s, want 409 with its own uuid", r)
	}

	// 2. Crash after the markers, before meta; another entry comes first.
	e2 := chainEntry(sess, newUUID(), uuidOf(t, e1), "third")
	crashPublish(e2, true)
	time.Sleep(300 * time.Millisecond)
	e3 := chainEntry(sess, newUUID(), uuidOf(t, e2), "fourth")
	if r := c.put(sess, e3, uuidOf(t, e2)); r.code != http.StatusCreated {
		t.Fatalf("PUT after a crash before meta: %s", r)
	}
	if r := c.put(sess, e2, uuidOf(t, e3)); r.code != http.StatusConflict || r.hdr.Get("x-last-uuid") != uuidOf(t, e2) {
		t.Fatalf("retry of the crashed entry: %s", r)
	}

	// 3. A crash the next reader repairs.
	e4 := chainEntry(sess, newUUID(), uuidOf(t, e3), "fifth")
	crashPublish(e4, false)
	items, _ := c.history(sess, "", 1000)
	checkItems(t, items, [][]byte{e0, e1, e2, e3, e4})
	if n := streamMsgs(t, s); n != 5 {
		t.Errorf("stream: %d messages, want 5", n)
	}
	if s.m.Repaired.Load() < 3 {
		t.Errorf("repaired %d entries, want at least 3", s.m.Repaired.Load())
	}
}
