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
