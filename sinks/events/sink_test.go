package events

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/sinks/sinkhelper"
	"github.com/e0dc0000/scribe/sinks/sinkhelper/sinkhelpertest"
)

const (
	token = "tok-alice"
	sess  = "0565a3a4-0000-4000-8000-000000000001"
	sess2 = "0565a3a4-0000-4000-8000-000000000002"
)

func testOptions(base, dir, tok string) Options {
	return Options{
		Client:        sinkhelpertest.Client(base, dir, tok),
		FlushInterval: 10 * time.Millisecond,
		Name:          "events/test",
	}
}

func newSink(t *testing.T, o Options) *Sink {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func startSink(t *testing.T, o Options) *Sink {
	t.Helper()
	s := newSink(t, o)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func uuidOf(i int) string { return fmt.Sprintf("4f7e0000-0000-4000-8000-%012d", i) }

func chain(t testing.TB, session string, from, n int) ([]core.Entry, []string) {
	return sinkhelpertest.Chain(t, session, uuidOf, from, n)
}

func TestContract(t *testing.T) {
	sinkhelpertest.RunContract(t, func(t *testing.T) (core.Sink, sinkhelpertest.Lines) {
		srv := newStandIn(token)
		ns := sinkhelpertest.Serve(t, srv)
		return newSink(t, testOptions(ns.URL(), t.TempDir(), token)), srv.Lines
	})
}

// TestBatching: entries of two sessions written together go out as one
// request per session per drain, at most MaxBatch events each; sidechain
// rows carry their agent_id.
func TestBatching(t *testing.T) {
	srv := newStandIn(token)
	ns := sinkhelpertest.Serve(t, srv)
	o := testOptions(ns.URL(), t.TempDir(), token)
	o.MaxBatch = 100
	o.Client.Options.QueueSize = 1000
	s := startSink(t, o)
	es1, ids1 := chain(t, sess, 0, 250)
	es2, ids2 := chain(t, sess2, 1000, 30)
	side := strings.Replace(coretest.Line("user", sess, "side-1", ""), `"isSidechain":false`, `"isSidechain":true,"agentId":"a1b2c3"`, 1)
	es := append(append(es1, es2...), coretest.MustEntry(t, side))
	if err := s.Write(context.Background(), es); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	sinkhelpertest.Equal(t, sess, srv.UUIDs(sess), append(ids1, "side-1"))
	sinkhelpertest.Equal(t, sess2, srv.UUIDs(sess2), ids2)
	if got := srv.Lines(sess, "a1b2c3"); len(got) != 1 || got[0] != side {
		t.Fatalf("subagent lines %q", got)
	}
	srv.with(func(srv *standIn) {
		// 281 entries in batches of 100 across two sessions: 251+30 →
		// requests of 100,100,51 and 30 (the queue hands out 100 at a time).
		total := 0
		for _, n := range srv.batches {
			if n > 100 {
				t.Fatalf("a request of %d events; max 100", n)
			}
			total += n
		}
		if total != 281 || len(srv.batches) > 6 {
			t.Fatalf("requests %v", srv.batches)
		}
	})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestFlushInterval: entries written one at a time within an interval go
// out together.
func TestFlushInterval(t *testing.T) {
	srv := newStandIn(token)
	ns := sinkhelpertest.Serve(t, srv)
	o := testOptions(ns.URL(), t.TempDir(), token)
	o.FlushInterval = 200 * time.Millisecond
	s := startSink(t, o)
	es, ids := chain(t, sess, 0, 20)
	for i := range es {
		if err := s.Write(context.Background(), es[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	sinkhelpertest.WaitDelivered(t, s)
	sinkhelpertest.Equal(t, sess, srv.UUIDs(sess), ids)
	srv.with(func(srv *standIn) {
		if len(srv.batches) > 2 {
			t.Fatalf("20 entries written within the interval took %d requests", len(srv.batches))
		}
	})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestRequestFailures: a request the server fails is counted, and the
// batch goes through when it is answered again.
func TestRequestFailures(t *testing.T) {
	srv := newStandIn(token)
	srv.failPosts = 3
	ns := sinkhelpertest.Serve(t, srv)
	s := startSink(t, testOptions(ns.URL(), t.TempDir(), token))
	es, ids := chain(t, sess, 0, 10)
	sinkhelpertest.WriteAll(t, s, es, 10)
	sinkhelpertest.WaitDelivered(t, s)
	sinkhelpertest.Equal(t, sess, srv.UUIDs(sess), ids)
	if r := s.Report(); r["request_failures"] != 3 || r["requests"] != 4 || r["events_sent"] != 10 {
		t.Fatalf("report %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestUnauthorized: a 401 is counted, and Flush reports it as
// ErrUnauthorized (sinkhelper gives the batch up: TestNetSinkUnauthorized).
func TestUnauthorized(t *testing.T) {
	srv := newStandIn(token)
	ns := sinkhelpertest.Serve(t, srv)
	s := startSink(t, testOptions(ns.URL(), t.TempDir(), "wrong"))
	es, _ := chain(t, sess, 0, 7)
	sinkhelpertest.WriteAll(t, s, es, 7)
	err := s.Flush(context.Background())
	if !errors.Is(err, sinkhelper.ErrUnauthorized) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Flush = %v, want the 401", err)
	}
	if r := s.Report(); r["unauthorized"] != 1 || r["dropped"] != 7 || r["request_failures"] != 1 {
		t.Fatalf("report %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestTooLargeSplits: a 413 halves the request until it fits; an entry the
// server refuses alone is dropped, and only it.
func TestTooLargeSplits(t *testing.T) {
	srv := newStandIn(token)
	srv.maxBody = 4 << 10
	ns := sinkhelpertest.Serve(t, srv)
	s := startSink(t, testOptions(ns.URL(), t.TempDir(), token))
	es, ids := chain(t, sess, 0, 40)
	bad := coretest.MustEntry(t, strings.Replace(coretest.Line("user", sess, "bad", ""), "hello", "REFUSE-ME", 1))
	es = append(es[:20], append([]core.Entry{bad}, es[20:]...)...)
	sinkhelpertest.WriteAll(t, s, es, 41)
	err := s.Flush(context.Background())
	if err == nil || !strings.Contains(err.Error(), "422") {
		t.Fatalf("Flush = %v, want the refused entry", err)
	}
	sinkhelpertest.Equal(t, sess, srv.UUIDs(sess), ids)
	if r := s.Report(); r["splits"] == 0 || r["refused"] != 1 || r["dropped"] != 1 || r["delivered"] != 40 {
		t.Fatalf("report %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestEncode(t *testing.T) {
	main := coretest.MustEntry(t, coretest.Line("user", sess, "u1", ""))
	side := coretest.MustEntry(t, strings.Replace(coretest.Line("assistant", sess, "s1", ""), `"isSidechain":false`, `"isSidechain":true,"agentId":"a\"b"`, 1))
	got := string(encode([]core.Entry{main, side}, []int{0, 1}))
	want := `{"events":[{"type":"user","payload":` + string(main.Raw) + `},{"type":"assistant","payload":` + string(side.Raw) + `,"agent_id":"a\"b"}]}`
	if got != want {
		t.Fatalf("encode\n got %s\nwant %s", got, want)
	}
}

func TestConfig(t *testing.T) {
	f := Factory()
	if f.Kind() != core.KindSink || f.Type() != "events" {
		t.Fatalf("factory %s %s", f.Kind(), f.Type())
	}
	ok := DefaultConfig()
	ok.BaseURL, ok.Token = "http://127.0.0.1:1", "x"
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no url", func(c *Config) { c.BaseURL = "" }, "base_url"},
		{"bad interval", func(c *Config) { c.FlushInterval = "0s" }, "flush_interval"},
		{"no batch", func(c *Config) { c.MaxBatch = 0 }, "max_batch"},
		{"no request bytes", func(c *Config) { c.MaxRequestBytes = -1 }, "max_request_bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := *ok
			tc.mod(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
	set := core.Settings{ID: core.MustParseID("events/cloud"), Host: core.HostInfo{ConfigDir: t.TempDir()}}
	s, err := f.CreateSink(context.Background(), set, ok)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(set.Host.ConfigDir, "scribe", "spool", "events", "cloud", "lane-0")); err != nil {
		t.Fatalf("spool not in its default place: %v", err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
