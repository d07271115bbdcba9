package ingress

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

func testClient(base, dir, tok string) sinkhelper.Client {
	return sinkhelpertest.Client(base, dir, tok)
}

func newSink(t *testing.T, cl sinkhelper.Client) *Sink {
	t.Helper()
	s, err := New(Options{Client: cl, Name: "ingress/test"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func startSink(t *testing.T, cl sinkhelper.Client) *Sink {
	t.Helper()
	s := newSink(t, cl)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func uuidOf(w, i int) string { return fmt.Sprintf("4f7e0000-0000-4000-%04d-%012d", 8000+w, i) }

// chain returns n chained entries of a session written by writer w.
func chain(t testing.TB, session string, w, from, n int) ([]core.Entry, []string) {
	return sinkhelpertest.Chain(t, session, func(i int) string { return uuidOf(w, i) }, from, n)
}

func TestContract(t *testing.T) {
	sinkhelpertest.RunContract(t, func(t *testing.T) (core.Sink, sinkhelpertest.Lines) {
		srv := newStandIn(token)
		ns := sinkhelpertest.Serve(t, srv)
		return newSink(t, testClient(ns.URL(), t.TempDir(), token)), srv.Lines
	})
}

// TestProtocol checks the requests: one PUT per entry, the headers, and the
// Last-Uuid chain; subagent rows go to the session's URL.
func TestProtocol(t *testing.T) {
	srv := newStandIn(token)
	ns := sinkhelpertest.Serve(t, srv)
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
	sinkhelpertest.Equal(t, "main", srv.UUIDs(sess), append(ids, "side-1"))
	if got := srv.Lines(sess, "a1b2c3"); len(got) != 1 || got[0] != side {
		t.Fatalf("subagent lines %q", got)
	}
	srv.with(func(srv *standIn) {
		want := []string{"", ids[0], ids[1], ids[2]}
		sinkhelpertest.Equal(t, "Last-Uuid headers", srv.lastHeaders, want)
		if srv.contentTypes["application/json"] != 4 || srv.puts != 4 || srv.conflicts != 0 {
			t.Fatalf("puts %d, content types %v, conflicts %d", srv.puts, srv.contentTypes, srv.conflicts)
		}
	})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestPutFailures: a PUT the server fails is counted, and the entry goes
// through when it is answered again.
func TestPutFailures(t *testing.T) {
	srv := newStandIn(token)
	srv.failPuts = 3
	ns := sinkhelpertest.Serve(t, srv)
	s := startSink(t, testClient(ns.URL(), t.TempDir(), token))
	es, ids := chain(t, sess, 0, 0, 4)
	sinkhelpertest.WriteAll(t, s, es, 4)
	sinkhelpertest.WaitDelivered(t, s)
	sinkhelpertest.Equal(t, sess, srv.UUIDs(sess), ids)
	if r := s.Report(); r["put_failures"] != 3 || r["requests"] != 7 || r["conflicts"] != 0 {
		t.Fatalf("report %v", r)
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
			ns := sinkhelpertest.Serve(t, srv)
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
				sinkhelpertest.WaitDelivered(t, s)
			}
			got := srv.UUIDs(sess)
			if tc.same {
				sinkhelpertest.Equal(t, "server", got, idsA)
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
				sinkhelpertest.Equal(t, "writer A", gotA, idsA)
				sinkhelpertest.Equal(t, "writer B", gotB, idsB)
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

// TestUnauthorized: a 401 is counted, nothing is stored, and Flush
// reports it as ErrUnauthorized (sinkhelper gives the batch up:
// TestNetSinkUnauthorized).
func TestUnauthorized(t *testing.T) {
	srv := newStandIn(token)
	ns := sinkhelpertest.Serve(t, srv)
	s := startSink(t, testClient(ns.URL(), t.TempDir(), "wrong"))
	es, _ := chain(t, sess, 0, 0, 5)
	sinkhelpertest.WriteAll(t, s, es, 5)
	err := s.Flush(context.Background())
	if !errors.Is(err, sinkhelper.ErrUnauthorized) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Flush = %v, want the 401", err)
	}
	if r := s.Report(); r["unauthorized"] != 1 || r["dropped"] != 5 || r["refused"] != 0 {
		t.Fatalf("report %v", r)
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
	ns := sinkhelpertest.Serve(t, srv)
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
	sinkhelpertest.WriteAll(t, sink.(*Sink), es, 3)
	if err := sink.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	sinkhelpertest.Equal(t, sess, srv.UUIDs(sess), ids)
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
	ns := sinkhelpertest.Serve(t, srv)
	s := startSink(t, testClient(ns.URL(), t.TempDir(), token))
	es, ids := chain(t, sess, 0, 0, 2)
	sinkhelpertest.WriteAll(t, s, es, 2)
	deadline := time.Now().Add(10 * time.Second)
	for s.Report()["conflict_failures"] < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("report %v", s.Report())
		}
		time.Sleep(time.Millisecond)
	}
	srv.with(func(srv *standIn) { srv.session(sess).last = "" })
	sinkhelpertest.WaitDelivered(t, s)
	sinkhelpertest.Equal(t, sess, srv.UUIDs(sess), ids)
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
	ns := sinkhelpertest.Serve(t, srv)
	s := startSink(t, testClient(ns.URL(), t.TempDir(), token))
	es, ids := chain(t, sess, 0, 0, 3)
	big := coretest.MustEntry(t, strings.Replace(coretest.Line("user", sess, "big", ids[2]), "hello", strings.Repeat("x", maxBody), 1))
	more, moreIDs := chain(t, sess, 0, 3, 2)
	sinkhelpertest.WriteAll(t, s, append(append(es, big), more...), 10)
	err := s.Flush(context.Background())
	if err == nil || !strings.Contains(err.Error(), "413") {
		t.Fatalf("Flush = %v, want the 413", err)
	}
	sinkhelpertest.Equal(t, sess, srv.UUIDs(sess), append(ids, moreIDs...))
	if r := s.Report(); r["refused"] != 1 || r["dropped"] != 1 || r["delivered"] != 5 {
		t.Fatalf("report %v", r)
	}
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
