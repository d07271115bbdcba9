package coretest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/e0dc0000/scribe/core"
)

// Session is a stored session a loader harness is seeded with: its main
// transcript (Ref.AgentID empty) or a subagent's sidechain.
type Session struct {
	Ref   core.SessionRef
	Lines []string
}

// LoaderHarness lets RunLoaderContract drive one loader implementation.
type LoaderHarness struct {
	// New returns a loader whose storage holds exactly the given sessions.
	New func(t *testing.T, sessions []Session) core.Loader
	// Sidechains is true when the loader serves subagent sidechains.
	Sidechains bool
	// Compacted is true for a loader that serves a session only from its
	// last compaction on (the summary loader): every session the suite
	// stores then starts with a compact boundary, and a session stored
	// without one must be a miss.
	Compacted bool
}

// compactBoundary is a compact boundary row in Claude Code's key order.
func compactBoundary(session, uuid string) string {
	return `{"parentUuid":null,"logicalParentUuid":null,"isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"timestamp":"2026-01-10T12:00:00.000Z","uuid":"` +
		uuid + `","level":"info","compactMetadata":{"trigger":"manual","preTokens":1000},"userType":"external","cwd":"/home/alice/src/shop","sessionId":"` + session + `"}`
}

// RunLoaderContract holds a loader to the contract every loader shares:
// a hit returns the stored lines byte for byte in order, a miss is
// core.ErrNotFound with a reason, large sessions come back whole, loads may
// run concurrently, the caller owns what it gets, and a load under a
// cancelled context fails with the context's error (it is not a miss).
func RunLoaderContract(t *testing.T, h LoaderHarness) {
	c := loaderCase{h: h, ctx: context.Background()}
	for _, tc := range []struct {
		name string
		when bool
		run  func(*testing.T)
	}{
		{"hit returns the lines in order", true, c.loaderHitReturnsTheLinesInOrder},
		{"miss is ErrNotFound", true, c.loaderMissIsErrNotFound},
		{"cancelled context", true, c.loaderCancelledContext},
		{"never compacted is a miss", h.Compacted, c.loaderNeverCompactedIsAMiss},
		{"large session comes back whole", true, c.loaderLargeSessionComesBackWhole},
		{"sidechain", h.Sidechains, c.loaderSidechain},
		{"concurrent loads", true, c.loaderConcurrentLoads},
		{"caller owns the entries", true, c.loaderCallerOwnsTheEntries},
	} {
		if tc.when {
			t.Run(tc.name, tc.run)
		}
	}
}

const loaderCWD = "/home/alice/src/shop"

// loaderCase is one run of the loader contract.
type loaderCase struct {
	h   LoaderHarness
	ctx context.Context
}

// mk makes a stored session of n rows (the first a compact boundary for a
// compacted loader), each message padded with pad bytes.
func (c loaderCase) mk(session string, n, pad int) Session {
	var lines []string
	parent := ""
	if c.h.Compacted {
		parent = fmt.Sprintf("7a1e0000-0000-4000-8000-b%011d", n)
		lines = append(lines, compactBoundary(session, parent))
		n--
	}
	for i := range n {
		typ := core.TypeUser
		if i%2 == 1 {
			typ = core.TypeAssistant
		}
		u := fmt.Sprintf("7a1e0000-0000-4000-8000-%012d", i)
		l := Line(typ, session, u, parent)
		if pad > 0 {
			l = strings.Replace(l, `"hello from `, `"`+strings.Repeat("x", pad)+` hello from `, 1)
		}
		lines = append(lines, l)
		parent = u
	}
	return Session{Ref: core.SessionRef{SessionID: session, CWD: loaderCWD}, Lines: lines}
}

func sid(i int) string { return fmt.Sprintf("0565a3a4-0000-4000-8000-%012d", i) }

func (c loaderCase) loaderHitReturnsTheLinesInOrder(t *testing.T) {
	a, b := c.mk(sid(1), 7, 0), c.mk(sid(2), 3, 0)
	l := c.h.New(t, []Session{a, b})
	for _, s := range []Session{a, b} {
		tr, err := l.Load(c.ctx, s.Ref)
		if err != nil {
			t.Fatalf("Load %s: %v", s.Ref.SessionID, err)
		}
		if got := raws(tr); !equalLines(got, s.Lines) {
			t.Fatalf("Load %s returned\n%q\nwant\n%q", s.Ref.SessionID, got, s.Lines)
		}
		for i, e := range tr.Entries {
			if e.SessionID != s.Ref.SessionID || e.UUID == "" {
				t.Fatalf("entry %d not parsed: session %q uuid %q", i, e.SessionID, e.UUID)
			}
		}
	}
}

func (c loaderCase) loaderMissIsErrNotFound(t *testing.T) {
	l := c.h.New(t, []Session{c.mk(sid(1), 2, 0)})
	_, err := l.Load(c.ctx, core.SessionRef{SessionID: sid(99), CWD: loaderCWD})
	if !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("Load of a missing session: %v, want ErrNotFound", err)
	}
	if strings.TrimSpace(err.Error()) == core.ErrNotFound.Error() {
		t.Errorf("a miss gives no reason beyond %q", err)
	}
	// A miss leaves the loader working.
	if _, err := l.Load(c.ctx, core.SessionRef{SessionID: sid(1), CWD: loaderCWD}); err != nil {
		t.Fatalf("Load after a miss: %v", err)
	}
}

func (c loaderCase) loaderCancelledContext(t *testing.T) {
	s := c.mk(sid(6), 4, 0)
	l := c.h.New(t, []Session{s})
	cctx, cancel := context.WithCancel(c.ctx)
	cancel()
	tr, err := l.Load(cctx, s.Ref)
	if !errors.Is(err, context.Canceled) || tr != nil {
		t.Fatalf("Load under a cancelled context: error %v, a transcript %v; want context.Canceled and none", err, tr != nil)
	}
	if errors.Is(err, core.ErrNotFound) {
		t.Fatalf("a cancelled load is reported as a miss: %v", err)
	}
	// The loader still works afterwards.
	if tr, err := l.Load(c.ctx, s.Ref); err != nil || !equalLines(raws(tr), s.Lines) {
		t.Fatalf("Load after a cancelled one: %v", err)
	}
}

func (c loaderCase) loaderNeverCompactedIsAMiss(t *testing.T) {
	s := c.mk(sid(7), 4, 0)
	s.Lines = s.Lines[1:] // no compact boundary
	l := c.h.New(t, []Session{s})
	if _, err := l.Load(c.ctx, s.Ref); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("Load of a session never compacted: %v, want ErrNotFound", err)
	}
}

func (c loaderCase) loaderLargeSessionComesBackWhole(t *testing.T) {
	big := c.mk(sid(3), 3000, 1500) // ~5 MB: more than one page or message
	l := c.h.New(t, []Session{big})
	tr, err := l.Load(c.ctx, big.Ref)
	if err != nil {
		t.Fatal(err)
	}
	got := raws(tr)
	if len(got) != len(big.Lines) {
		t.Fatalf("got %d entries, want %d", len(got), len(big.Lines))
	}
	if !equalLines(got, big.Lines) {
		t.Fatal("entries differ from the stored lines")
	}
}

func (c loaderCase) loaderSidechain(t *testing.T) {
	main := c.mk(sid(4), 4, 0)
	side := c.mk(sid(4), 2, 0)
	side.Ref.AgentID = "a1b2c3d4"
	for i, l := range side.Lines {
		// The sidechain's rows have uuids of their own, as a
		// subagent's do.
		l = strings.ReplaceAll(l, "7a1e0000-", "7a1e0001-")
		side.Lines[i] = strings.Replace(l, `"isSidechain":false`, `"isSidechain":true,"agentId":"a1b2c3d4"`, 1)
	}
	l := c.h.New(t, []Session{main, side})
	tr, err := l.Load(c.ctx, side.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if got := raws(tr); !equalLines(got, side.Lines) {
		t.Fatalf("sidechain: got\n%q\nwant\n%q", got, side.Lines)
	}
	tr, err = l.Load(c.ctx, main.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if got := raws(tr); !equalLines(got, main.Lines) {
		t.Fatalf("main transcript: got\n%q\nwant\n%q", got, main.Lines)
	}
}

func (c loaderCase) loaderConcurrentLoads(t *testing.T) {
	var ss []Session
	for i := range 6 {
		ss = append(ss, c.mk(sid(10+i), 20+i, 0))
	}
	l := c.h.New(t, ss)
	var wg sync.WaitGroup
	errs := make(chan error, len(ss)*3)
	for range 3 {
		for _, s := range ss {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tr, err := l.Load(c.ctx, s.Ref)
				if err != nil {
					errs <- err
					return
				}
				if !equalLines(raws(tr), s.Lines) {
					errs <- fmt.Errorf("session %s: wrong entries", s.Ref.SessionID)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func (c loaderCase) loaderCallerOwnsTheEntries(t *testing.T) {
	s := c.mk(sid(5), 3, 0)
	l := c.h.New(t, []Session{s})
	tr, err := l.Load(c.ctx, s.Ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tr.Entries {
		for j := range e.Raw {
			e.Raw[j] = 'X'
		}
	}
	tr, err = l.Load(c.ctx, s.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if !equalLines(raws(tr), s.Lines) {
		t.Fatal("a second Load returned what the caller changed")
	}
}

func raws(t *core.Transcript) []string {
	if t == nil {
		return nil
	}
	out := make([]string, len(t.Entries))
	for i, e := range t.Entries {
		out[i] = string(e.Raw)
	}
	return out
}
