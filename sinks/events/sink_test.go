package events

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/sinks/sinkhelper"
)

const (
	token = "tok-alice"
	sess  = "0565a3a4-0000-4000-8000-000000000001"
	sess2 = "0565a3a4-0000-4000-8000-000000000002"
)

func testOptions(base, dir, tok string) Options {
	return Options{
		Client: sinkhelper.Client{
			BaseURL: base,
			Token:   sinkhelper.NewToken(tok),
			Timeout: 5 * time.Second,
			Options: sinkhelper.Options{
				Dir:       dir,
				QueueSize: 64,
				FlushWait: 10 * time.Second,
				Retry: sinkhelper.RetryConfig{
					MaxAttempts: 10,
					BackoffMin:  time.Millisecond,
					BackoffMax:  20 * time.Millisecond,
					Jitter:      0.2,
				},
			},
		},
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
	var es []core.Entry
	var ids []string
	parent := ""
	for i := from; i < from+n; i++ {
		typ := core.TypeUser
		if i%2 == 1 {
			typ = core.TypeAssistant
		}
		u := uuidOf(i)
		es = append(es, coretest.MustEntry(t, coretest.Line(typ, session, u, parent)))
		ids = append(ids, u)
		parent = u
	}
	return es, ids
}

func writeAll(t *testing.T, s *Sink, es []core.Entry, chunk int) {
	t.Helper()
	for len(es) > 0 {
		n := min(chunk, len(es))
		if err := s.Write(context.Background(), es[:n]); err != nil {
			t.Fatal(err)
		}
		es = es[n:]
	}
}

func waitDelivered(t *testing.T, s *Sink) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for s.Report()["queued"] != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("not delivered in time: %v", s.Report())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: server holds %d entries, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: entry %d is %s, want %s", what, i, got[i], want[i])
		}
	}
}

func TestContract(t *testing.T) {
	var mu sync.Mutex
	servers := map[core.Sink]*standIn{}
	coretest.RunSinkContract(t, coretest.SinkHarness{
		New: func(t *testing.T) core.Sink {
			srv := newStandIn(token)
			ns := serve(t, srv)
			s := newSink(t, testOptions(ns.URL(), t.TempDir(), token))
			mu.Lock()
			servers[s] = srv
			mu.Unlock()
			return s
		},
		Read: func(t *testing.T, s core.Sink, ref core.SessionRef) []string {
			mu.Lock()
			defer mu.Unlock()
			return servers[s].Lines(ref.SessionID, ref.AgentID)
		},
		Sessions:   true,
		Sidechains: true,
	})
}

// TestBatching: entries of two sessions written together go out as one
// request per session per drain, at most MaxBatch events each; sidechain
// rows carry their agent_id.
func TestBatching(t *testing.T) {
	srv := newStandIn(token)
	ns := serve(t, srv)
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
	equal(t, sess, srv.UUIDs(sess), append(ids1, "side-1"))
	equal(t, sess2, srv.UUIDs(sess2), ids2)
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
	ns := serve(t, srv)
	o := testOptions(ns.URL(), t.TempDir(), token)
	o.FlushInterval = 200 * time.Millisecond
	s := startSink(t, o)
	es, ids := chain(t, sess, 0, 20)
	for i := range es {
		if err := s.Write(context.Background(), es[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	waitDelivered(t, s)
	equal(t, sess, srv.UUIDs(sess), ids)
	srv.with(func(srv *standIn) {
		if len(srv.batches) > 2 {
			t.Fatalf("20 entries written within the interval took %d requests", len(srv.batches))
		}
	})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestServerErrorsThenRecovers: 500s for a while, then everything is stored
// once, in order, and each failure was counted.
func TestServerErrorsThenRecovers(t *testing.T) {
	srv := newStandIn(token)
	srv.failPosts = 12
	ns := serve(t, srv)
	s := startSink(t, testOptions(ns.URL(), t.TempDir(), token))
	es1, ids1 := chain(t, sess, 0, 300)
	es2, ids2 := chain(t, sess2, 1000, 200)
	for i := 0; i < 300; i += 25 {
		writeAll(t, s, es1[i:i+25], 25)
		if i < 200 {
			writeAll(t, s, es2[i:i+25], 25)
		}
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, s)
	equal(t, sess, srv.UUIDs(sess), ids1)
	equal(t, sess2, srv.UUIDs(sess2), ids2)
	r := s.Report()
	if r["request_failures"] != 12 || r["retries"] == 0 || r["delivered"] != 500 || r["dropped"] != 0 {
		t.Fatalf("report %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestLongOutage: the server is gone for many rounds of attempts while
// thousands of entries are written; they spill to disk, memory stays within
// the queue bound, and all arrive once, in order, when it is back.
func TestLongOutage(t *testing.T) {
	srv := newStandIn(token)
	ns := serve(t, srv)
	o := testOptions(ns.URL(), t.TempDir(), token)
	s := startSink(t, o)
	ns.down()
	es, ids := chain(t, sess, 0, 5000)
	for i := 0; i < len(es); i += 250 {
		writeAll(t, s, es[i:i+250], 50)
		if err := s.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if m := s.Report()["memory_entries"]; m > int64(o.Client.Options.QueueSize) {
			t.Fatalf("%d entries in memory during the outage", m)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for s.Report()["failed_rounds"] < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no failed rounds: %v", s.Report())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r := s.Report(); r["failing"] != 1 || r["spool_bytes"] == 0 || r["delivered"] != 0 || r["memory_entries"] != 0 {
		t.Fatalf("during the outage: %v", r)
	}
	ns.up(t)
	waitDelivered(t, s)
	equal(t, sess, srv.UUIDs(sess), ids)
	if r := s.Report(); r["spool_bytes"] != 0 || r["delivered"] != 5000 || r["dropped"] != 0 {
		t.Fatalf("after the outage: %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestUnauthorized: a refused token is permanent, loud, counted, and Flush
// returns it.
func TestUnauthorized(t *testing.T) {
	srv := newStandIn(token)
	ns := serve(t, srv)
	var logs syncBuffer
	o := testOptions(ns.URL(), t.TempDir(), "wrong")
	o.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	s := startSink(t, o)
	es, _ := chain(t, sess, 0, 7)
	writeAll(t, s, es, 7)
	err := s.Flush(context.Background())
	if !errors.Is(err, sinkhelper.ErrUnauthorized) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Flush = %v, want the 401", err)
	}
	if r := s.Report(); r["unauthorized"] != 1 || r["dropped"] != 7 || r["permanent_failures"] != 1 || r["retries"] != 0 {
		t.Fatalf("report %v", r)
	}
	if !strings.Contains(logs.String(), "[ERROR]") || !strings.Contains(logs.String(), "invalid token") {
		t.Fatalf("log does not say it loudly:\n%s", logs.String())
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
	ns := serve(t, srv)
	s := startSink(t, testOptions(ns.URL(), t.TempDir(), token))
	es, ids := chain(t, sess, 0, 40)
	bad := coretest.MustEntry(t, strings.Replace(coretest.Line("user", sess, "bad", ""), "hello", "REFUSE-ME", 1))
	es = append(es[:20], append([]core.Entry{bad}, es[20:]...)...)
	writeAll(t, s, es, 41)
	err := s.Flush(context.Background())
	if err == nil || !strings.Contains(err.Error(), "422") {
		t.Fatalf("Flush = %v, want the refused entry", err)
	}
	equal(t, sess, srv.UUIDs(sess), ids)
	if r := s.Report(); r["splits"] == 0 || r["refused"] != 1 || r["dropped"] != 1 || r["delivered"] != 40 {
		t.Fatalf("report %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

const (
	childURL = "SCRIBE_EVENTS_TEST_CHILD_URL"
	childDir = "SCRIBE_EVENTS_TEST_CHILD_DIR"
)

// TestKill9Child is the process TestKill9 kills; it does nothing on its own.
func TestKill9Child(t *testing.T) {
	base := os.Getenv(childURL)
	if base == "" {
		t.Skip("run by TestKill9")
	}
	o := testOptions(base, os.Getenv(childDir), token)
	o.MaxBatch = 50
	o.Client.Options.FlushWait = 300 * time.Millisecond
	s := startSink(t, o)
	es, _ := chain(t, sess, 0, 300)
	writeAll(t, s, es, 300)
	if err := s.Flush(context.Background()); err != nil {
		fmt.Println("FLUSH FAILED", err)
		os.Exit(1)
	}
	fmt.Println("FLUSHED")
	time.Sleep(time.Minute) // killed here
	os.Exit(1)
}

// TestKill9: a process writes 300 entries; the server stores two batches
// and then hangs; the process's Flush spills the rest and returns; it is
// killed with SIGKILL. The batch it was sending is stored after its death.
// A new sink on the same spool sends what was not acknowledged, and the
// server holds every entry once, in order.
func TestKill9(t *testing.T) {
	srv := newStandIn(token)
	srv.stallAfter = 100
	srv.stall = make(chan struct{})
	ns := serve(t, srv)
	dir := t.TempDir()

	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9Child$")
	cmd.Env = append(os.Environ(), childURL+"="+ns.URL(), childDir+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	flushed := false
	for sc.Scan() {
		if sc.Text() == "FLUSHED" {
			flushed = true
			break
		}
		t.Logf("child: %s", sc.Text())
	}
	if !flushed {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("the child did not flush")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if n := len(srv.UUIDs(sess)); n != 100 {
		t.Fatalf("server stored %d before the kill, want 100", n)
	}
	close(srv.stall)

	_, ids := chain(t, sess, 0, 300)
	s := startSink(t, testOptions(ns.URL(), dir, token))
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, s)
	equal(t, sess, srv.UUIDs(sess), ids)
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
