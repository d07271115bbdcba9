// Package sinkhelpertest is what the tests of network sinks share
// (sinkhelper's own and those of the sinks built on it): a client with
// short retries, entries in a chain, writing them and waiting for their
// delivery, the sink contract against a stand-in server, a loopback server
// that can go away and come back, and a log buffer.
package sinkhelpertest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/sinks/sinkhelper"
)

// Client returns a resolved client of the server at base with the token,
// spooling in dir: a small memory queue (64 entries), 5 s a request, and
// retries from 1 ms to 20 ms, so that tests of failures run fast.
func Client(base, dir, token string) sinkhelper.Client {
	return sinkhelper.Client{
		BaseURL: base,
		Token:   sinkhelper.NewToken(token),
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

// Chain returns n entries of a session, user and assistant in turn, each
// the parent of the next, with the uuids uuid(from) to uuid(from+n-1).
func Chain(t testing.TB, session string, uuid func(int) string, from, n int) ([]core.Entry, []string) {
	var es []core.Entry
	var ids []string
	parent := ""
	for i := from; i < from+n; i++ {
		typ := core.TypeUser
		if i%2 == 1 {
			typ = core.TypeAssistant
		}
		u := uuid(i)
		es = append(es, coretest.MustEntry(t, coretest.Line(typ, session, u, parent)))
		ids = append(ids, u)
		parent = u
	}
	return es, ids
}

// WriteAll writes es to s in writes of at most chunk entries.
func WriteAll(t *testing.T, s core.Sink, es []core.Entry, chunk int) {
	t.Helper()
	for len(es) > 0 {
		n := min(chunk, len(es))
		if err := s.Write(context.Background(), es[:n]); err != nil {
			t.Fatal(err)
		}
		es = es[n:]
	}
}

// WaitDelivered waits, up to 30 s, until s reports nothing queued.
func WaitDelivered(t *testing.T, s core.Reporter) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for s.Report()["queued"] != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("not delivered in time: %v", s.Report())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Equal fails unless the server holds want, in order.
func Equal(t *testing.T, what string, got, want []string) {
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

// Lines returns what a stand-in server holds for a session's main
// transcript (agent "") or one subagent.
type Lines func(sessionID, agentID string) []string

// RunContract runs coretest.RunSinkContract on the sinks newSink makes,
// each with its own stand-in server, read back through the Lines it
// returns. The sinks tell sessions and sidechains apart.
func RunContract(t *testing.T, newSink func(t *testing.T) (core.Sink, Lines)) {
	var mu sync.Mutex
	servers := map[core.Sink]Lines{}
	coretest.RunSinkContract(t, coretest.SinkHarness{
		New: func(t *testing.T) core.Sink {
			s, lines := newSink(t)
			mu.Lock()
			servers[s] = lines
			mu.Unlock()
			return s
		},
		Read: func(t *testing.T, s core.Sink, ref core.SessionRef) []string {
			mu.Lock()
			lines := servers[s]
			mu.Unlock()
			return lines(ref.SessionID, ref.AgentID)
		},
		Sessions:   true,
		Sidechains: true,
	})
}

// Server serves a handler on a loopback port that survives a restart:
// Down closes the listener (clients get connection refused), Up listens on
// the same port again.
type Server struct {
	h    http.Handler
	addr string
	mu   sync.Mutex
	hs   *http.Server
}

// Serve serves h until the test ends.
func Serve(t *testing.T, h http.Handler) *Server {
	t.Helper()
	n := &Server{h: h, addr: "127.0.0.1:0"}
	n.Up(t)
	t.Cleanup(n.Down)
	return n
}

// URL is the server's base URL.
func (n *Server) URL() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return "http://" + n.addr
}

// Up listens again, on the same port.
func (n *Server) Up(t *testing.T) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	ln, err := net.Listen("tcp", n.addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", n.addr, err)
	}
	n.addr = ln.Addr().String()
	n.hs = &http.Server{Handler: n.h}
	go func(hs *http.Server) {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}(n.hs)
}

// Down closes the listener and every connection.
func (n *Server) Down() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.hs != nil {
		_ = n.hs.Close()
		n.hs = nil
	}
}

// SyncBuffer is a log output tests read while the sink writes to it.
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
