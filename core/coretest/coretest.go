// Package coretest holds test helpers for scribe components: a recording
// sink with fault injection, entry builders, and the contract suite that
// every sink runs.
package coretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
)

// Line builds a chain entry line of the given type with Claude Code's key
// order.
func Line(typ, session, uuid, parent string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	role := typ
	if typ != core.TypeUser && typ != core.TypeAssistant {
		return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":%q,"subtype":"informational","content":"x","uuid":%q,"timestamp":"2026-01-10T11:00:02.267Z","userType":"external","cwd":"/home/alice/src/shop","sessionId":%q}`, p, typ, uuid, session)
	}
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":%q,"message":{"role":%q,"content":"hello from %s"},"uuid":%q,"timestamp":"2026-01-10T11:00:02.267Z","userType":"external","cwd":"/home/alice/src/shop","sessionId":%q}`, p, typ, role, uuid, uuid, session)
}

// MustEntry parses a line or fails the test.
func MustEntry(t testing.TB, line string) core.Entry {
	t.Helper()
	e, err := core.ParseEntry([]byte(line))
	if err != nil {
		t.Fatalf("parse %s: %v", line, err)
	}
	return e
}

// RecordingSink keeps a copy of everything written to it. Failures and
// delays can be injected. It is safe for concurrent use.
type RecordingSink struct {
	mu       sync.Mutex
	pending  [][]byte
	durable  [][]byte
	failNext int
	failErr  error
	delay    time.Duration
	block    chan struct{}

	Started, ShutdownCalls, Flushes int
	shut                            bool
}

var _ core.Sink = (*RecordingSink)(nil)

// FailWrites makes the next n Write calls fail with err.
func (s *RecordingSink) FailWrites(n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext, s.failErr = n, err
}

// Delay makes every Write sleep for d first.
func (s *RecordingSink) Delay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Block makes Write wait until the returned function is called.
func (s *RecordingSink) Block() (release func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.block = ch
	s.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// Start implements core.Sink.
func (s *RecordingSink) Start(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Started++
	return nil
}

// Write implements core.Sink.
func (s *RecordingSink) Write(ctx context.Context, entries []core.Entry) error {
	s.mu.Lock()
	block, delay := s.block, s.delay
	s.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shut {
		return core.Permanent(errors.New("recording sink: write after shutdown"))
	}
	if s.failNext > 0 {
		s.failNext--
		return s.failErr
	}
	for _, e := range entries {
		s.pending = append(s.pending, bytes.Clone(e.Raw))
	}
	return nil
}

// Flush implements core.Sink.
func (s *RecordingSink) Flush(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Flushes++
	s.durable = append(s.durable, s.pending...)
	s.pending = nil
	return nil
}

// Shutdown implements core.Sink.
func (s *RecordingSink) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.ShutdownCalls++
	s.shut = true
	s.mu.Unlock()
	return s.Flush(ctx)
}

// Durable returns the lines flushed so far.
func (s *RecordingSink) Durable() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.durable))
	for i, b := range s.durable {
		out[i] = string(b)
	}
	return out
}

// All returns every line written, flushed or not.
func (s *RecordingSink) All() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, b := range append(append([][]byte{}, s.durable...), s.pending...) {
		out = append(out, string(b))
	}
	return out
}

// SinkHarness lets RunSinkContract drive one sink implementation.
type SinkHarness struct {
	// New returns a fresh, unstarted sink with empty storage.
	New func(t *testing.T) core.Sink
	// Read returns the lines the sink durably holds for the session (its
	// main transcript when ref.AgentID is empty), in stored order. It is
	// called after Flush or Shutdown.
	Read func(t *testing.T, s core.Sink, ref core.SessionRef) []string
	// Sessions is true when Read returns one session's lines only (false:
	// it returns everything the sink holds); Sidechains is true when it
	// returns a subagent's transcript apart for ref.AgentID.
	Sessions, Sidechains bool
}

// deliver hands a batch to a sink as the pipeline does: past the entries a
// PartialError says were taken, dropping an entry with a permanent error,
// retrying others a few times.
func deliver(t *testing.T, s core.Sink, batch []core.Entry) (dropped int) {
	t.Helper()
	ctx := context.Background()
	for attempt := 0; len(batch) > 0; attempt++ {
		err := s.Write(ctx, batch)
		if err == nil {
			return dropped
		}
		var pe *core.PartialError
		if errors.As(err, &pe) && pe.N > 0 && pe.N <= len(batch) {
			batch = batch[pe.N:]
		}
		if core.IsPermanent(err) && len(batch) > 0 {
			if pe == nil && len(batch) > 1 {
				for i := range batch {
					dropped += deliver(t, s, batch[i:i+1])
				}
				return dropped
			}
			batch, dropped = batch[1:], dropped+1
			continue
		}
		if attempt > 20 {
			t.Fatalf("Write keeps failing: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return dropped
}

func sidechain(t *testing.T, session, agent string, i int, parent string) (core.Entry, string) {
	u := fmt.Sprintf("5a5a0000-0000-4000-8000-%012d", i)
	l := strings.Replace(Line(core.TypeUser, session, u, parent), `"isSidechain":false`, `"isSidechain":true,"agentId":`+quote(agent), 1)
	return MustEntry(t, l), l
}

// RunSinkContract holds a sink to the contract every sink shares.
func RunSinkContract(t *testing.T, h SinkHarness) {
	ctx := context.Background()
	const session = "0565a3a4-0000-4000-8000-000000000001"
	ref := core.SessionRef{SessionID: session, CWD: "/home/alice/src/shop"}
	mk := func(n int) ([]core.Entry, []string) {
		var es []core.Entry
		var lines []string
		parent := ""
		for i := range n {
			typ := core.TypeUser
			if i%2 == 1 {
				typ = core.TypeAssistant
			}
			u := fmt.Sprintf("4f7e0000-0000-4000-8000-%012d", i)
			l := Line(typ, session, u, parent)
			parent = u
			es = append(es, MustEntry(t, l))
			lines = append(lines, l)
		}
		return es, lines
	}

	t.Run("shutdown without start", func(t *testing.T) {
		s := h.New(t)
		if err := s.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown without Start: %v", err)
		}
		if err := s.Shutdown(ctx); err != nil {
			t.Fatalf("second Shutdown: %v", err)
		}
	})

	t.Run("write flush read", func(t *testing.T) {
		s := h.New(t)
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		es, lines := mk(10)
		if err := s.Write(ctx, es[:4]); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, es[4:]); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		got := h.Read(t, s, ref)
		if !equalLines(got, lines) {
			t.Fatalf("after Flush the sink holds\n%q\nwant\n%q", got, lines)
		}
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Shutdown(ctx); err != nil {
			t.Fatalf("second Shutdown: %v", err)
		}
	})

	t.Run("does not keep caller buffers", func(t *testing.T) {
		s := h.New(t)
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		es, lines := mk(4)
		if err := s.Write(ctx, es); err != nil {
			t.Fatal(err)
		}
		for i := range es {
			for j := range es[i].Raw {
				es[i].Raw[j] = 'X'
			}
		}
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if got := h.Read(t, s, ref); !equalLines(got, lines) {
			t.Fatalf("sink kept the caller's buffers: holds\n%q\nwant\n%q", got, lines)
		}
	})

	t.Run("write after shutdown fails", func(t *testing.T) {
		s := h.New(t)
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		es, _ := mk(2)
		if err := s.Write(ctx, es); err == nil {
			t.Fatal("Write after Shutdown returned nil: the entries went nowhere, silently")
		}
	})

	t.Run("a cancelled context repeats nothing", func(t *testing.T) {
		s := h.New(t)
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		es, lines := mk(6)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		rest := es
		if err := s.Write(cctx, es); err != nil {
			var pe *core.PartialError
			if errors.As(err, &pe) && pe.N > 0 {
				rest = es[pe.N:]
			}
			deliver(t, s, rest)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got := h.Read(t, s, ref); !equalLines(got, lines) {
			t.Fatalf("after a cancelled Write and a retry the sink holds\n%q\nwant\n%q", got, lines)
		}
		_ = s.Shutdown(ctx)
	})

	t.Run("a poison entry leaves every other line once", func(t *testing.T) {
		s := h.New(t)
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		es, lines := mk(8)
		poison, _ := sidechain(t, session, "a/b", 1, "4f7e0000-0000-4000-8000-000000000003")
		batch := append(append(append([]core.Entry{}, es[:4]...), poison), es[4:]...)
		deliver(t, s, batch)
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		got := h.Read(t, s, ref)
		if !h.Sidechains {
			// The sink keeps sidechains with the main lines: the poison
			// may be among them, once.
			got = slicesDelete(got, string(poison.Raw))
		}
		if !equalLines(got, lines) {
			t.Fatalf("with a poison entry in the batch the sink holds\n%q\nwant\n%q", got, lines)
		}
		_ = s.Shutdown(ctx)
	})

	t.Run("many sessions at once", func(t *testing.T) {
		s := h.New(t)
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		const sessions = 100
		var batch []core.Entry
		want := map[string][]string{}
		var all []string
		for i := range 3 {
			for n := range sessions {
				id := fmt.Sprintf("%08x-0000-4000-8000-000000000001", n)
				u := fmt.Sprintf("4f7e%04x-0000-4000-8000-%012d", n, i)
				parent := ""
				if i > 0 {
					parent = fmt.Sprintf("4f7e%04x-0000-4000-8000-%012d", n, i-1)
				}
				l := Line(core.TypeUser, id, u, parent)
				batch = append(batch, MustEntry(t, l))
				want[id] = append(want[id], l)
				all = append(all, l)
			}
		}
		deliver(t, s, batch)
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if !h.Sessions {
			if got := h.Read(t, s, ref); !equalLines(got, all) {
				t.Fatalf("the sink holds %d lines, want %d in submission order", len(got), len(all))
			}
		} else {
			for id, lines := range want {
				if got := h.Read(t, s, core.SessionRef{SessionID: id, CWD: ref.CWD}); !equalLines(got, lines) {
					t.Fatalf("session %s holds\n%q\nwant\n%q", id, got, lines)
				}
			}
		}
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("sidechains go to their own transcript", func(t *testing.T) {
		if !h.Sidechains {
			t.Skip("the harness reads sidechains with the main transcript")
		}
		s := h.New(t)
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		es, lines := mk(4)
		var side []string
		batch := append([]core.Entry{}, es[:2]...)
		parent := "" // a subagent's transcript starts its own chain
		for i := range 3 {
			e, l := sidechain(t, session, "worker-1", i, parent)
			parent = e.UUID
			batch = append(batch, e)
			side = append(side, l)
		}
		batch = append(batch, es[2:]...)
		deliver(t, s, batch)
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got := h.Read(t, s, ref); !equalLines(got, lines) {
			t.Fatalf("main transcript holds\n%q\nwant\n%q", got, lines)
		}
		aref := ref
		aref.AgentID = "worker-1"
		if got := h.Read(t, s, aref); !equalLines(got, side) {
			t.Fatalf("the sidechain holds\n%q\nwant\n%q", got, side)
		}
		_ = s.Shutdown(ctx)
	})

	t.Run("shutdown flushes", func(t *testing.T) {
		s := h.New(t)
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		es, lines := mk(3)
		if err := s.Write(ctx, es); err != nil {
			t.Fatal(err)
		}
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if got := h.Read(t, s, ref); !equalLines(got, lines) {
			t.Fatalf("after Shutdown the sink holds\n%q\nwant\n%q", got, lines)
		}
	})

}

func slicesDelete(lines []string, drop string) []string {
	var out []string
	for _, l := range lines {
		if l != drop {
			out = append(out, l)
		}
	}
	return out
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
