package sinkhelper_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/sinks/sinkhelper"
	"github.com/e0dc0000/scribe/sinks/sinkhelper/sinkhelpertest"
)

// The tests of what NetSink gives every network sink: the queue, retry and
// spool behind a real HTTP round trip, the token, the session fan-out. The
// sinks built on it (events, ingress) test only their protocols.

const (
	token = "tok-alice"
	sess  = "0565a3a4-0000-4000-8000-000000000001"
	sess2 = "0565a3a4-0000-4000-8000-000000000002"
)

func uuidOf(i int) string { return fmt.Sprintf("4f7e0000-0000-4000-8000-%012d", i) }

// lineServer is a minimal server for a line protocol: POST /s/{session}
// with entries one a line; each is stored once by its uuid. It refuses a
// wrong token (401) and, on demand, fails requests (500), refuses one
// session for good (403), or stalls once enough is stored.
type lineServer struct {
	mu       sync.Mutex
	lines    map[string][]string // session → lines, in order
	seen     map[string]bool
	failNext int    // the next failNext requests get 500
	failSess string // requests for this session get 500
	refuse   string // requests for this session get 403
	// With stall set: once stallAfter entries are stored, requests wait
	// for it to close (and are stored even if the client has gone).
	stallAfter int
	stall      chan struct{}
}

func newLineServer() *lineServer {
	return &lineServer{lines: map[string][]string{}, seen: map[string]bool{}}
}

func (s *lineServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid, ok := strings.CutPrefix(r.URL.Path, "/s/")
	if !ok || r.Method != http.MethodPost {
		http.Error(w, "no such route", http.StatusNotFound)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+token {
		http.Error(w, "invalid token", http.StatusUnauthorized)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	stall := s.stall != nil && s.total() >= s.stallAfter
	switch {
	case sid == s.refuse:
		s.mu.Unlock()
		http.Error(w, "refused", http.StatusForbidden)
		return
	case s.failNext > 0 || sid == s.failSess:
		s.failNext = max(s.failNext-1, 0)
		s.mu.Unlock()
		http.Error(w, "injected failure", http.StatusInternalServerError)
		return
	}
	s.mu.Unlock()
	if stall {
		<-s.stall
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range bytes.Split(body, []byte("\n")) {
		var e struct {
			UUID string `json:"uuid"`
		}
		if json.Unmarshal(l, &e) != nil || s.seen[e.UUID] {
			continue
		}
		s.seen[e.UUID] = true
		s.lines[sid] = append(s.lines[sid], string(l))
	}
}

func (s *lineServer) total() int {
	n := 0
	for _, ls := range s.lines {
		n += len(ls)
	}
	return n
}

// Lines returns a session's lines of the main transcript (agent "") or of
// one subagent.
func (s *lineServer) Lines(sid, agent string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.lines[sid] {
		e, _ := core.ParseEntry([]byte(l))
		if !e.IsSidechain {
			e.AgentID = ""
		}
		if e.AgentID == agent {
			out = append(out, l)
		}
	}
	return out
}

// UUIDs returns the uuids of a session's lines, in order.
func (s *lineServer) UUIDs(sid string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.lines[sid] {
		e, _ := core.ParseEntry([]byte(l))
		out = append(out, e.UUID)
	}
	return out
}

// lineSink is a network sink of the line protocol: a NetSink whose push is
// one POST per session.
type lineSink struct {
	*sinkhelper.NetSink
	posts, unrouted atomic.Int64
}

func newLineSink(t *testing.T, cl sinkhelper.Client, log hclog.Logger) *lineSink {
	t.Helper()
	s := &lineSink{}
	ns, err := sinkhelper.NewNetSink(sinkhelper.NetSinkOptions{
		Type: "lines", Name: "lines/test", Client: cl, Logger: log, MaxBatch: 50,
		Counters: func(m map[string]int64) {
			m["posts"] = s.posts.Load()
			m["unrouted"] = s.unrouted.Load()
		},
	}, sinkhelper.BySession(s.send, &s.unrouted))
	if err != nil {
		t.Fatal(err)
	}
	s.NetSink = ns
	return s
}

func startLineSink(t *testing.T, cl sinkhelper.Client) *lineSink {
	t.Helper()
	s := newLineSink(t, cl, nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *lineSink) send(ctx context.Context, b *sinkhelper.Batch, sid string, idx []int) error {
	conn := s.Conn()
	var body bytes.Buffer
	for k, i := range idx {
		if k > 0 {
			body.WriteByte('\n')
		}
		body.Write(b.Entries[i].Raw)
	}
	ctx, cancel := context.WithTimeout(ctx, conn.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, conn.BaseURL+"/s/"+sid, &body)
	if err != nil {
		return sinkhelper.Permanent(err)
	}
	conn.Token.Authorize(req)
	s.posts.Add(1)
	resp, err := conn.HTTP.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return sinkhelper.ResponseError(resp)
	}
	sinkhelper.DrainClose(resp)
	for _, i := range idx {
		b.MarkDone(i)
	}
	return nil
}

func TestNetSinkContract(t *testing.T) {
	sinkhelpertest.RunContract(t, func(t *testing.T) (core.Sink, sinkhelpertest.Lines) {
		srv := newLineServer()
		ns := sinkhelpertest.Serve(t, srv)
		return newLineSink(t, sinkhelpertest.Client(ns.URL(), t.TempDir(), token), nil), srv.Lines
	})
}

// TestNetSinkServerErrorsThenRecovers: 500s for a while, then every entry
// of every session is stored once, in order, and the retries were counted.
func TestNetSinkServerErrorsThenRecovers(t *testing.T) {
	srv := newLineServer()
	srv.failNext = 12
	ns := sinkhelpertest.Serve(t, srv)
	s := startLineSink(t, sinkhelpertest.Client(ns.URL(), t.TempDir(), token))
	es1, ids1 := sinkhelpertest.Chain(t, sess, uuidOf, 0, 300)
	es2, ids2 := sinkhelpertest.Chain(t, sess2, uuidOf, 1000, 200)
	for i := 0; i < 300; i += 25 {
		sinkhelpertest.WriteAll(t, s, es1[i:i+25], 25)
		if i < 200 {
			sinkhelpertest.WriteAll(t, s, es2[i:i+25], 25)
		}
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	sinkhelpertest.WaitDelivered(t, s)
	sinkhelpertest.Equal(t, sess, srv.UUIDs(sess), ids1)
	sinkhelpertest.Equal(t, sess2, srv.UUIDs(sess2), ids2)
	if r := s.Report(); r["retries"] == 0 || r["delivered"] != 500 || r["dropped"] != 0 {
		t.Fatalf("report %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestNetSinkLongOutage: the server is gone (connection refused) for many
// rounds of attempts while thousands of entries are written; they spill to
// disk, memory stays within the queue bound, and all arrive once, in
// order, when it is back.
func TestNetSinkLongOutage(t *testing.T) {
	srv := newLineServer()
	ns := sinkhelpertest.Serve(t, srv)
	cl := sinkhelpertest.Client(ns.URL(), t.TempDir(), token)
	s := startLineSink(t, cl)
	ns.Down()
	es, ids := sinkhelpertest.Chain(t, sess, uuidOf, 0, 3000)
	for i := 0; i < len(es); i += 100 {
		sinkhelpertest.WriteAll(t, s, es[i:i+100], 50)
		if err := s.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if m := s.Report()["memory_entries"]; m > int64(cl.Options.QueueSize) {
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
	ns.Up(t)
	sinkhelpertest.WaitDelivered(t, s)
	sinkhelpertest.Equal(t, sess, srv.UUIDs(sess), ids)
	if r := s.Report(); r["spool_bytes"] != 0 || r["delivered"] != 3000 || r["dropped"] != 0 {
		t.Fatalf("after the outage: %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestNetSinkUnauthorized: a refused token is permanent: nothing is
// retried, the entries are dropped and counted, the log says so at error
// level, and Flush returns the error.
func TestNetSinkUnauthorized(t *testing.T) {
	srv := newLineServer()
	ns := sinkhelpertest.Serve(t, srv)
	var logs sinkhelpertest.SyncBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	s := newLineSink(t, sinkhelpertest.Client(ns.URL(), t.TempDir(), "wrong"), log)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	es, _ := sinkhelpertest.Chain(t, sess, uuidOf, 0, 7)
	sinkhelpertest.WriteAll(t, s, es, 7)
	err := s.Flush(context.Background())
	if !errors.Is(err, sinkhelper.ErrUnauthorized) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Flush = %v, want the 401", err)
	}
	if r := s.Report(); r["dropped"] != 7 || r["permanent_failures"] != 1 || r["retries"] != 0 || r["posts"] != 1 {
		t.Fatalf("report %v", r)
	}
	if !strings.Contains(logs.String(), "[ERROR]") || !strings.Contains(logs.String(), "invalid token") {
		t.Fatalf("log does not say it loudly:\n%s", logs.String())
	}
	if len(srv.UUIDs(sess)) != 0 {
		t.Fatal("stored with a wrong token")
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestNetSinkBySession: a session the server refuses for good gives up the
// whole batch, even the sessions whose failure would have been retried; an
// entry without a session is dropped, counted, and reported by Flush, and
// the others are delivered.
func TestNetSinkBySession(t *testing.T) {
	srv := newLineServer()
	srv.refuse, srv.failSess = sess, sess2
	ns := sinkhelpertest.Serve(t, srv)
	s := startLineSink(t, sinkhelpertest.Client(ns.URL(), t.TempDir(), token))
	es1, _ := sinkhelpertest.Chain(t, sess, uuidOf, 0, 3)
	es2, _ := sinkhelpertest.Chain(t, sess2, uuidOf, 10, 2)
	// The session whose failure would be retried comes first.
	sinkhelpertest.WriteAll(t, s, append(append([]core.Entry(nil), es2...), es1...), 10)
	err := s.Flush(context.Background())
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("Flush = %v, want the 403", err)
	}
	if r := s.Report(); r["dropped"] != 5 || r["permanent_failures"] != 1 || r["retries"] != 0 {
		t.Fatalf("report %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	srv = newLineServer()
	ns = sinkhelpertest.Serve(t, srv)
	s = startLineSink(t, sinkhelpertest.Client(ns.URL(), t.TempDir(), token))
	lost := coretest.MustEntry(t, coretest.Line(core.TypeUser, "", uuidOf(20), ""))
	sinkhelpertest.WriteAll(t, s, []core.Entry{es1[0], lost, es2[0]}, 3)
	if err := s.Flush(context.Background()); !errors.Is(err, sinkhelper.ErrNoSession) {
		t.Fatalf("Flush = %v, want ErrNoSession", err)
	}
	sinkhelpertest.Equal(t, sess, srv.UUIDs(sess), []string{uuidOf(0)})
	sinkhelpertest.Equal(t, sess2, srv.UUIDs(sess2), []string{uuidOf(10)})
	if r := s.Report(); r["unrouted"] != 1 || r["dropped"] != 1 || r["delivered"] != 2 {
		t.Fatalf("report %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// idleCloser counts CloseIdleConnections.
type idleCloser struct {
	http.RoundTripper
	closed atomic.Int64
}

func (c *idleCloser) CloseIdleConnections() { c.closed.Add(1) }

// TestNetSinkLifecycle: Start reads the token (and fails, naming the sink
// type, without one); Report holds the sink's counters beside the
// Sender's; Shutdown closes the HTTP client's idle connections; a network
// sink is idempotent.
func TestNetSinkLifecycle(t *testing.T) {
	cc := sinkhelper.DefaultClientConfig()
	cc.BaseURL, cc.SpoolDir = "http://127.0.0.1:1", t.TempDir()
	resolved, err := cc.Resolve(core.Settings{ID: core.MustParseID("lines/none")})
	if err != nil {
		t.Fatal(err)
	}
	none, err := sinkhelper.NewNetSink(sinkhelper.NetSinkOptions{Type: "lines", Name: "lines/none", Client: resolved},
		func(context.Context, *sinkhelper.Batch) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := none.Start(context.Background()); !errors.Is(err, sinkhelper.ErrNoToken) || !strings.HasPrefix(err.Error(), "sink lines: ") {
		t.Fatalf("Start without a token = %v, want ErrNoToken naming the sink type", err)
	}

	rt := &idleCloser{RoundTripper: http.DefaultTransport}
	s, err := sinkhelper.NewNetSink(sinkhelper.NetSinkOptions{
		Type: "lines", Name: "lines/test", Client: sinkhelpertest.Client("http://127.0.0.1:1", t.TempDir(), token),
		HTTPClient: &http.Client{Transport: rt},
		Counters:   func(m map[string]int64) { m["mine"] = 7 },
	}, func(context.Context, *sinkhelper.Batch) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := s.Report(); r["mine"] != 7 || r["written"] != 0 {
		t.Fatalf("report %v: want the sink's counter beside the Sender's", r)
	}
	if !s.Idempotent() || s.Conn().HTTP.Transport != rt || s.Conn().Timeout != 5*time.Second {
		t.Fatalf("idempotent %v, conn %+v", s.Idempotent(), s.Conn())
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rt.closed.Load() != 1 {
		t.Fatalf("Shutdown closed idle connections %d times, want 1", rt.closed.Load())
	}
}

const (
	childURL = "SCRIBE_NETSINK_TEST_CHILD_URL"
	childDir = "SCRIBE_NETSINK_TEST_CHILD_DIR"
)

// TestNetSinkKill9Child is the process TestNetSinkKill9 kills; it does
// nothing on its own.
func TestNetSinkKill9Child(t *testing.T) {
	base := os.Getenv(childURL)
	if base == "" {
		t.Skip("run by TestNetSinkKill9")
	}
	cl := sinkhelpertest.Client(base, os.Getenv(childDir), token)
	cl.Options.FlushWait = 300 * time.Millisecond
	s := startLineSink(t, cl)
	es, _ := sinkhelpertest.Chain(t, sess, uuidOf, 0, 300)
	sinkhelpertest.WriteAll(t, s, es, 300)
	if err := s.Flush(context.Background()); err != nil {
		fmt.Println("FLUSH FAILED", err)
		os.Exit(1)
	}
	fmt.Println("FLUSHED")
	time.Sleep(time.Minute) // killed here
	os.Exit(1)
}

// TestNetSinkKill9: a process writes 300 entries; the server stores two
// batches and then hangs; the process's Flush spills the rest and returns;
// it is killed with SIGKILL. The batch it was sending is stored after its
// death. A new sink on the same spool sends what was not acknowledged, and
// the server holds every entry once, in order.
func TestNetSinkKill9(t *testing.T) {
	srv := newLineServer()
	srv.stallAfter = 100
	srv.stall = make(chan struct{})
	ns := sinkhelpertest.Serve(t, srv)
	dir := t.TempDir()

	cmd := exec.Command(os.Args[0], "-test.run=^TestNetSinkKill9Child$")
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

	_, ids := sinkhelpertest.Chain(t, sess, uuidOf, 0, 300)
	s := startLineSink(t, sinkhelpertest.Client(ns.URL(), dir, token))
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	sinkhelpertest.WaitDelivered(t, s)
	sinkhelpertest.Equal(t, sess, srv.UUIDs(sess), ids)
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
