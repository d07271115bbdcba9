package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// The ways of publishing a request of several entries (see store.go).
var writeModes = []string{"run", "batch", "one by one"}

// forceMode makes st publish requests of several entries in one way only:
// runs (the default on a standalone server), atomic batches (as in a
// cluster), or one fenced publish at a time (as without batches).
func forceMode(st *store, mode string) {
	switch mode {
	case "batch":
		st.standalone.Store(false)
	case "one by one":
		st.standalone.Store(false)
		st.atomicOK.Store(false)
	}
}

// chain makes n entries of session following parent, and returns them and
// the last uuid.
func chain(session, parent string, n int, text string) ([][]byte, string) {
	var out [][]byte
	for i := 0; i < n; i++ {
		id := newUUID()
		out = append(out, chainEntry(session, id, parent, fmt.Sprintf("%s %d", text, i)))
		parent = id
	}
	return out, parent
}

// crashAppend does what a writer does up to its publish in mode, then
// stops: entries are stored right after the session's last message, not
// indexed; the markers of the first withMarkers of them are created.
func crashAppend(t *testing.T, st *store, mode, session string, entries [][]byte, withMarkers int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var items []item
	var idx []int
	for i, e := range entries {
		it, err := parseEntry(e, session, "", "")
		if err != nil {
			t.Fatal(err)
		}
		items, idx = append(items, it), append(idx, i)
	}
	var last uint64
	if m, err := st.getMsg(ctx, streamName, msgGetRequest{LastBySubj: sessionFilter("acme", session)}); err != nil {
		t.Fatal(err)
	} else if m != nil {
		last = m.Seq
	}
	var seqs []uint64
	var err error
	switch mode {
	case "run":
		seqs, err = st.publishRun(ctx, "acme", session, items, idx, last, "")
	case "batch":
		seqs, err = st.publishBatch(ctx, "acme", session, items, idx, last, "")
	default:
		for _, i := range idx {
			var s []uint64
			if s, err = st.publishRun(ctx, "acme", session, items, []int{i}, last, ""); err != nil {
				break
			}
			seqs, last = append(seqs, s...), s[0]
		}
	}
	if err != nil || len(seqs) != len(items) {
		t.Fatalf("%s: %d of %d stored: %v", mode, len(seqs), len(items), err)
	}
	var recs []rec
	for k, seq := range seqs[:withMarkers] {
		recs = append(recs, rec{seq: seq, id: items[k].id, e: items[k].e})
	}
	if err := st.createMarkers(ctx, "acme", session, recs); err != nil {
		t.Fatal(err)
	}
}

// Every way of publishing stores each entry once, in order, and leaves a
// crash between its steps for the next request to repair.
func TestWriteModes(t *testing.T) {
	for _, mode := range writeModes {
		t.Run(mode, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.DuplicateWindow = "100ms"
			s := startServer(t, cfg)
			forceMode(s.st, mode)
			c := newClient(t, s, tokACME)
			sess := newUUID()

			a, last := chain(sess, "", 30, "first")
			if r := c.postEvents(sess, eventsBody(a...)); r.Stored != 30 || r.Duplicates != 0 || r.LastUUID != last {
				t.Fatalf("first batch: %+v", r)
			}
			b, last2 := chain(sess, last, 10, "second")
			if r := c.postEvents(sess, eventsBody(append(slices.Clone(a), b...)...)); r.Stored != 10 || r.Duplicates != 30 || r.LastUUID != last2 {
				t.Fatalf("overlapping batch: %+v", r)
			}
			put, last3 := chain(sess, last2, 1, "put")
			if r := c.put(sess, put[0], last2); r.code != http.StatusCreated {
				t.Fatalf("PUT: %s", r)
			}
			want := slices.Concat(a, b, put)

			// Crashes: after a publish, before any marker; then after a
			// publish and some of its markers.
			cr, last4 := chain(sess, last3, 15, "crashed")
			crashAppend(t, s.st, mode, sess, cr, 0)
			cm, last5 := chain(sess, last4, 12, "crashed with markers")
			crashAppend(t, s.st, mode, sess, cm, 5)
			time.Sleep(300 * time.Millisecond) // past the duplicate window
			extra, _ := chain(sess, last5, 5, "after")
			if r := c.postEvents(sess, eventsBody(slices.Concat(cr, cm, extra)...)); r.Stored != 5 || r.Duplicates != 27 {
				t.Fatalf("retry after the crashes: %+v", r)
			}
			want = slices.Concat(want, cr, cm, extra)
			items, _ := c.history(sess, "", 1000)
			checkItems(t, items, want)
			if n := streamMsgs(t, s); n != uint64(len(want)) {
				t.Errorf("stream: %d messages, want %d", n, len(want))
			}
			if s.m.Repaired.Load() < 27 {
				t.Errorf("repaired %d entries, want at least 27", s.m.Repaired.Load())
			}
		})
	}
}

// A run overtaken by another writer stores a prefix; the rest follows (as
// an atomic batch), once, in order, and the answer counts it all stored.
func TestRunOvertaken(t *testing.T) {
	for _, after := range []int{0, 9, 38} { // the foreign message comes after message after
		t.Run(fmt.Sprint(after), func(t *testing.T) {
			s := startServer(t, testConfig(t))
			c := newClient(t, s, tokACME)
			sess, other := newUUID(), newUUID()
			foreign := chainEntry(other, newUUID(), "", "from another writer")
			var overtaken atomic.Bool
			s.st.runSent = func(k int) {
				if k == after && overtaken.CompareAndSwap(false, true) {
					// Sent on the same connection, so right after message k.
					if err := s.st.pub.PublishMsg(&nats.Msg{Subject: mainSubject("acme", other), Data: foreign}); err != nil {
						t.Error(err)
					}
				}
			}
			entries, last := chain(sess, "", 40, "entry")
			if r := c.postEvents(sess, eventsBody(entries...)); r.Stored != 40 || r.Duplicates != 0 || r.LastUUID != last {
				t.Fatalf("POST: %+v", r)
			}
			if !overtaken.Load() {
				t.Fatal("the run was not overtaken")
			}
			if s.m.FenceRetries.Load() < 1 {
				t.Errorf("fence retries: %d, want at least 1", s.m.FenceRetries.Load())
			}
			items, _ := c.history(sess, "", 1000)
			checkItems(t, items, entries)
			items, _ = c.history(other, "", 1000)
			checkItems(t, items, [][]byte{foreign})
			if n := streamMsgs(t, s); n != 41 {
				t.Errorf("stream: %d messages, want 41", n)
			}
			m, err := s.st.getMsg(context.Background(), streamName, msgGetRequest{LastBySubj: mainSubject("acme", other)})
			if want := uint64(after + 2); err != nil || m == nil || m.Seq != want {
				t.Fatalf("foreign message at %+v (%v), want sequence %d", m, err, want)
			}
		})
	}
}

// The bulk marker lookup answers as the lookup one by one does.
func TestMarkersBulk(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newClient(t, s, tokACME)
	sess := newUUID()
	entries, _ := chain(sess, "", 40, "entry")
	if r := c.postEvents(sess, eventsBody(entries...)); r.Stored != 40 {
		t.Fatalf("POST: %+v", r)
	}
	var ids []string
	for i, e := range entries {
		if i%3 == 0 {
			e = chainEntry(sess, newUUID(), "", "not stored")
		}
		it, err := parseEntry(e, sess, "", "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, it.id)
	}
	ctx := context.Background()
	bulk, ok, err := s.st.markersBulk(ctx, "acme", sess, ids)
	if err != nil || !ok {
		t.Fatalf("bulk lookup: ok %v, %v", ok, err)
	}
	each, err := s.st.markersEach(ctx, "acme", sess, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ids {
		if bulk[i] != each[i] || bulk[i] != (i%3 != 0) {
			t.Fatalf("id %d: bulk %v, one by one %v", i, bulk[i], each[i])
		}
	}
	// Another session's lookup sees none of them.
	bulk, ok, err = s.st.markersBulk(ctx, "acme", newUUID(), ids)
	if err != nil || !ok || slices.Contains(bulk, true) {
		t.Fatalf("other session: %v %v %v", bulk, ok, err)
	}
}
