package ingress

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

func testClient(base, dir, tok string) sinkhelper.Client {
	return sinkhelper.Client{
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
	}
}

func newSink(t *testing.T, cl sinkhelper.Client, log hclog.Logger) *Sink {
	t.Helper()
	s, err := New(Options{Client: cl, Name: "ingress/test", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func startSink(t *testing.T, cl sinkhelper.Client) *Sink {
	t.Helper()
	s := newSink(t, cl, nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func uuidOf(w, i int) string { return fmt.Sprintf("4f7e0000-0000-4000-%04d-%012d", 8000+w, i) }

// chain returns n chained entries of a session written by writer w.
func chain(t testing.TB, session string, w, from, n int) ([]core.Entry, []string) {
	var es []core.Entry
	var ids []string
	parent := ""
	for i := from; i < from+n; i++ {
		typ := core.TypeUser
		if i%2 == 1 {
			typ = core.TypeAssistant
		}
		u := uuidOf(w, i)
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
		t.Fatalf("%s: server holds %d entries, want %d\n got %q\nwant %q", what, len(got), len(want), got, want)
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
			s := newSink(t, testClient(ns.URL(), t.TempDir(), token), nil)
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

// TestProtocol checks the requests: one PUT per entry, the headers, and the
// Last-Uuid chain; subagent rows go to the session's URL.
func TestProtocol(t *testing.T) {
	srv := newStandIn(token)
	ns := serve(t, srv)
	s := startSink(t, testClient(ns.URL(), t.TempDir(), token))
	es, ids := chain(t, sess, 0, 0, 3)
	side := strings.Replace(coretest.Line("user", sess, "side-1", ""), `"isSidechain":false`, `"isSidechain":true,"agentId":"a1b2c3"`, 1)
	es = append(es, coretest.MustEntry(t, side))
	if err := s.Write(context.Background(), es); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	equal(t, "main", srv.UUIDs(sess), append(ids, "side-1"))
	if got := srv.Lines(sess, "a1b2c3"); len(got) != 1 || got[0] != side {
		t.Fatalf("subagent lines %q", got)
	}
	srv.with(func(srv *standIn) {
		want := []string{"", ids[0], ids[1], ids[2]}
		equal(t, "Last-Uuid headers", srv.lastHeaders, want)
		if srv.contentTypes["application/json"] != 4 || srv.puts != 4 || srv.conflicts != 0 {
			t.Fatalf("puts %d, content types %v, conflicts %d", srv.puts, srv.contentTypes, srv.conflicts)
		}
	})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestServerErrorsThenRecovers: the server answers 500 for a while; every
// entry of every session is then stored once, in order, and each failure
// was counted.
func TestServerErrorsThenRecovers(t *testing.T) {
	srv := newStandIn(token)
	srv.failPuts = 25
	ns := serve(t, srv)
	s := startSink(t, testClient(ns.URL(), t.TempDir(), token))
	es1, ids1 := chain(t, sess, 0, 0, 120)
	es2, ids2 := chain(t, sess2, 0, 0, 80)
	var es []core.Entry
	for i := range 120 {
		es = append(es, es1[i])
		if i < 80 {
			es = append(es, es2[i])
		}
	}
	writeAll(t, s, es, 16)
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, s)
	equal(t, sess, srv.UUIDs(sess), ids1)
	equal(t, sess2, srv.UUIDs(sess2), ids2)
	r := s.Report()
	if r["put_failures"] != 25 || r["retries"] == 0 || r["retries"] > 25 || r["delivered"] != 200 || r["dropped"] != 0 {
		t.Fatalf("report %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestLongOutage: the server is gone (connection refused) while thousands
// of entries are written; they spill to disk and memory stays within the
// queue bound; when the server is back everything arrives once, in order.
func TestLongOutage(t *testing.T) {
	srv := newStandIn(token)
	ns := serve(t, srv)
	cl := testClient(ns.URL(), t.TempDir(), token)
	s := startSink(t, cl)
	ns.down()
	es, ids := chain(t, sess, 0, 0, 3000)
	for i := 0; i < len(es); i += 100 {
		writeAll(t, s, es[i:i+100], 100)
		if err := s.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if m := s.Report()["memory_entries"]; m > int64(cl.Options.QueueSize) {
			t.Fatalf("%d entries in memory during the outage", m)
		}
	}
	// Down long enough for rounds of attempts to fail.
	deadline := time.Now().Add(20 * time.Second)
	for s.Report()["failed_rounds"] < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no failed rounds: %v", s.Report())
		}
		time.Sleep(5 * time.Millisecond)
	}
	r := s.Report()
	if r["failing"] != 1 || r["spool_bytes"] == 0 || r["delivered"] != 0 || r["memory_entries"] != 0 {
		t.Fatalf("during the outage: %v", r)
	}
	ns.up(t)
	waitDelivered(t, s)
	equal(t, sess, srv.UUIDs(sess), ids)
	if r := s.Report(); r["spool_bytes"] != 0 || r["delivered"] != 3000 || r["dropped"] != 0 {
		t.Fatalf("after the outage: %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestConflictStorm: two sinks write the same session at the same time.
// Every PUT of one after the other's lands gets a 409; adopting the
// server's last uuid converges, and the server holds every entry once, each
// writer's in its order. With noLastHeader the 409s carry no x-last-uuid
// and the client reads the log instead.
func TestConflictStorm(t *testing.T) {
	for _, tc := range []struct {
		name         string
		noLastHeader bool
		same         bool // both writers send the same entries
	}{
		{"disjoint with header", false, false},
		{"disjoint reading the log", true, false},
		{"same entries with header", false, true},
		{"same entries reading the log", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newStandIn(token)
			srv.noLastHeader = tc.noLastHeader
			ns := serve(t, srv)
			a := startSink(t, testClient(ns.URL(), t.TempDir(), token))
			b := startSink(t, testClient(ns.URL(), t.TempDir(), token))
			esA, idsA := chain(t, sess, 1, 0, 150)
			esB, idsB := chain(t, sess, 2, 0, 150)
			if tc.same {
				esB, idsB = esA, idsA
			}
			var wg sync.WaitGroup
			for _, w := range []struct {
				s  *Sink
				es []core.Entry
			}{{a, esA}, {b, esB}} {
				wg.Go(func() {
					for i := 0; i < len(w.es); i += 10 {
						if err := w.s.Write(context.Background(), w.es[i:i+10]); err != nil {
							t.Error(err)
						}
						time.Sleep(time.Millisecond)
					}
				})
			}
			wg.Wait()
			for _, s := range []*Sink{a, b} {
				if err := s.Flush(context.Background()); err != nil {
					t.Fatal(err)
				}
				waitDelivered(t, s)
			}
			got := srv.UUIDs(sess)
			if tc.same {
				equal(t, "server", got, idsA)
			} else {
				if len(got) != len(idsA)+len(idsB) {
					t.Fatalf("server holds %d entries, want %d", len(got), len(idsA)+len(idsB))
				}
				var gotA, gotB []string
				for _, u := range got {
					if strings.Contains(u, "-8001-") {
						gotA = append(gotA, u)
					} else {
						gotB = append(gotB, u)
					}
				}
				equal(t, "writer A", gotA, idsA)
				equal(t, "writer B", gotB, idsB)
			}
			ra, rb := a.Report(), b.Report()
			if ra["conflicts"]+rb["conflicts"] == 0 {
				t.Fatalf("no conflicts: the writers did not interleave (%v, %v)", ra, rb)
			}
			if tc.noLastHeader && ra["log_fetches"]+rb["log_fetches"] == 0 {
				t.Fatalf("no log fetched without x-last-uuid: %v %v", ra, rb)
			}
			if !tc.noLastHeader && !tc.same && ra["adopted_last_uuid"]+rb["adopted_last_uuid"] == 0 {
				t.Fatalf("nothing adopted: %v %v", ra, rb)
			}
			t.Logf("conflicts %d+%d, adopted %d+%d, log fetches %d+%d, already stored %d+%d",
				ra["conflicts"], rb["conflicts"], ra["adopted_last_uuid"], rb["adopted_last_uuid"],
				ra["log_fetches"], rb["log_fetches"], ra["already_stored"], rb["already_stored"])
			for _, s := range []*Sink{a, b} {
				if err := s.Shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// syncBuffer is a log output tests can read while the sink writes to it.
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

// TestUnauthorized: a refused token is permanent: nothing is retried, the
// entries are dropped and counted, the log says so at error level, and
// Flush returns the error.
func TestUnauthorized(t *testing.T) {
	srv := newStandIn(token)
	ns := serve(t, srv)
	var logs syncBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	s := newSink(t, testClient(ns.URL(), t.TempDir(), "wrong"), log)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	es, _ := chain(t, sess, 0, 0, 5)
	writeAll(t, s, es, 5)
	err := s.Flush(context.Background())
	if !errors.Is(err, sinkhelper.ErrUnauthorized) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Flush = %v, want the 401", err)
	}
	r := s.Report()
	if r["unauthorized"] != 1 || r["dropped"] != 5 || r["permanent_failures"] != 1 || r["retries"] != 0 {
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

// TestTokenFileRotation: after a 401 the token file is read again; a
// rotated token is used at once.
func TestTokenFileRotation(t *testing.T) {
	srv := newStandIn(token)
	ns := serve(t, srv)
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.BaseURL, c.TokenFile, c.SpoolDir = ns.URL(), path, t.TempDir()
	sink, err := Factory().CreateSink(context.Background(), core.Settings{ID: core.MustParseID("ingress/cloud")}, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	es, ids := chain(t, sess, 0, 0, 3)
	writeAll(t, sink.(*Sink), es, 3)
	if err := sink.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	equal(t, sess, srv.UUIDs(sess), ids)
	if r := sink.(*Sink).Report(); r["token_reloads"] != 1 || r["unauthorized"] != 0 {
		t.Fatalf("report %v", r)
	}
	if err := sink.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestConflictFailure: a 409 with nothing to adopt (no header, an empty
// log) is a failed attempt, counted and retried; once the server is sane
// again the entry goes through.
func TestConflictFailure(t *testing.T) {
	srv := newStandIn(token)
	srv.noLastHeader = true
	srv.session(sess).last = "ghost"
	ns := serve(t, srv)
	s := startSink(t, testClient(ns.URL(), t.TempDir(), token))
	es, ids := chain(t, sess, 0, 0, 2)
	writeAll(t, s, es, 2)
	deadline := time.Now().Add(10 * time.Second)
	for s.Report()["conflict_failures"] < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("report %v", s.Report())
		}
		time.Sleep(time.Millisecond)
	}
	srv.with(func(srv *standIn) { srv.session(sess).last = "" })
	waitDelivered(t, s)
	equal(t, sess, srv.UUIDs(sess), ids)
	if r := s.Report(); r["dropped"] != 0 || r["retries"] < 3 {
		t.Fatalf("report %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestRefusedEntry: an entry the server refuses for good (413) is dropped
// and counted, the session goes on, and Flush reports it.
func TestRefusedEntry(t *testing.T) {
	srv := newStandIn(token)
	ns := serve(t, srv)
	s := startSink(t, testClient(ns.URL(), t.TempDir(), token))
	es, ids := chain(t, sess, 0, 0, 3)
	big := coretest.MustEntry(t, strings.Replace(coretest.Line("user", sess, "big", ids[2]), "hello", strings.Repeat("x", maxBody), 1))
	more, moreIDs := chain(t, sess, 0, 3, 2)
	writeAll(t, s, append(append(es, big), more...), 10)
	err := s.Flush(context.Background())
	if err == nil || !strings.Contains(err.Error(), "413") {
		t.Fatalf("Flush = %v, want the 413", err)
	}
	equal(t, sess, srv.UUIDs(sess), append(ids, moreIDs...))
	if r := s.Report(); r["refused"] != 1 || r["dropped"] != 1 || r["delivered"] != 5 {
		t.Fatalf("report %v", r)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

const (
	childURL = "SCRIBE_INGRESS_TEST_CHILD_URL"
	childDir = "SCRIBE_INGRESS_TEST_CHILD_DIR"
)

// TestKill9Child is the process TestKill9 kills; it does nothing on its own.
func TestKill9Child(t *testing.T) {
	base := os.Getenv(childURL)
	if base == "" {
		t.Skip("run by TestKill9")
	}
	cl := testClient(base, os.Getenv(childDir), token)
	cl.Options.FlushWait = 300 * time.Millisecond
	s := startSink(t, cl)
	es, _ := chain(t, sess, 0, 0, 100)
	writeAll(t, s, es, 100)
	if err := s.Flush(context.Background()); err != nil {
		fmt.Println("FLUSH FAILED", err)
		os.Exit(1)
	}
	fmt.Println("FLUSHED")
	time.Sleep(time.Minute) // killed here
	os.Exit(1)
}

// TestKill9: a process writes 100 entries; the server stores 40 and then
// hangs; the process's Flush spills the rest and returns; the process is
// killed with SIGKILL. A new sink on the same spool delivers what was not
// acknowledged, and the server holds every entry once, in order.
func TestKill9(t *testing.T) {
	srv := newStandIn(token)
	srv.stallAfter = 40
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
	if n := len(srv.UUIDs(sess)); n != 40 {
		t.Fatalf("server stored %d before the kill, want 40", n)
	}
	// The request the child was waiting on completes after its death.
	close(srv.stall)

	_, ids := chain(t, sess, 0, 0, 100)
	s := startSink(t, testClient(ns.URL(), dir, token))
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, s)
	equal(t, sess, srv.UUIDs(sess), ids)
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestScanLog(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
		found            bool
		err              bool
	}{
		{"empty", `{"loglines":[]}`, "", false, false},
		{"null", `{"loglines":null}`, "", false, false},
		{"last with uuid", `{"other":{"a":[1]},"loglines":[{"uuid":"a"},{"uuid":"b"},{"type":"custom-title"}],"x":1}`, "b", false, false},
		{"found", `{"loglines":[{"uuid":"a"},{"uuid":"w"},{"uuid":"c"}]}`, "c", true, false},
		{"not an object", `[1]`, "", false, true},
		{"bad lines", `{"loglines":3}`, "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last, found, err := scanLog(strings.NewReader(tc.body), "w")
			if (err != nil) != tc.err || last != tc.want || found != tc.found {
				t.Fatalf("scanLog = %q %v %v", last, found, err)
			}
		})
	}
}

func TestFactory(t *testing.T) {
	f := Factory()
	if f.Kind() != core.KindSink || f.Type() != "ingress" {
		t.Fatalf("factory %s %s", f.Kind(), f.Type())
	}
	c := f.DefaultConfig().(*Config)
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "base_url") {
		t.Fatalf("default config without base_url: %v", err)
	}
	c.BaseURL, c.Token = "http://127.0.0.1:1", "x"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	set := core.Settings{ID: core.MustParseID("ingress/cloud"), Host: core.HostInfo{ConfigDir: t.TempDir()}}
	s, err := f.CreateSink(context.Background(), set, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(set.Host.ConfigDir, "scribe", "spool", "ingress", "cloud", "lane-0")); err != nil {
		t.Fatalf("spool not in its default place: %v", err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateSink(context.Background(), set, struct{}{}); err == nil {
		t.Fatal("wrong config type accepted")
	}
}
