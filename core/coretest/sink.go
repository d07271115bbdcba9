package coretest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/e0dc0000/scribe/core"
)

// RunSinkContract holds a sink to the contract every sink shares.
func RunSinkContract(t *testing.T, h SinkHarness) {
	c := sinkCase{h: h, ctx: context.Background()}
	c.ref = core.SessionRef{SessionID: contractSession, CWD: "/home/alice/src/shop"}
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"shutdown without start", c.sinkShutdownWithoutStart},
		{"write flush read", c.sinkWriteFlushRead},
		{"does not keep caller buffers", c.sinkDoesNotKeepCallerBuffers},
		{"write after shutdown fails", c.sinkWriteAfterShutdownFails},
		{"a cancelled context repeats nothing", c.sinkACancelledContextRepeatsNothing},
		{"a poison entry leaves every other line once", c.sinkAPoisonEntryLeavesEveryOtherLineOnce},
		{"many sessions at once", c.sinkManySessionsAtOnce},
		{"sidechains go to their own transcript", c.sinkSidechainsGoToTheirOwnTranscript},
		{"shutdown flushes", c.sinkShutdownFlushes},
	} {
		t.Run(tc.name, tc.run)
	}
}

const contractSession = "0565a3a4-0000-4000-8000-000000000001"

// sinkCase is one run of the sink contract: the harness and what its
// cases share.
type sinkCase struct {
	h   SinkHarness
	ctx context.Context
	ref core.SessionRef
}

// mk makes n chained entries of the contract's session and their lines.
func (c sinkCase) mk(t *testing.T, n int) ([]core.Entry, []string) {
	var es []core.Entry
	var lines []string
	parent := ""
	for i := range n {
		typ := core.TypeUser
		if i%2 == 1 {
			typ = core.TypeAssistant
		}
		u := fmt.Sprintf("4f7e0000-0000-4000-8000-%012d", i)
		l := Line(typ, contractSession, u, parent)
		parent = u
		es = append(es, MustEntry(t, l))
		lines = append(lines, l)
	}
	return es, lines
}

func (c sinkCase) sinkShutdownWithoutStart(t *testing.T) {
	s := c.h.New(t)
	if err := s.Shutdown(c.ctx); err != nil {
		t.Fatalf("Shutdown without Start: %v", err)
	}
	if err := s.Shutdown(c.ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

func (c sinkCase) sinkWriteFlushRead(t *testing.T) {
	s := c.h.New(t)
	if err := s.Start(c.ctx); err != nil {
		t.Fatal(err)
	}
	es, lines := c.mk(t, 10)
	if err := s.Write(c.ctx, es[:4]); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(c.ctx, es[4:]); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(c.ctx); err != nil {
		t.Fatal(err)
	}
	got := c.h.Read(t, s, c.ref)
	if !equalLines(got, lines) {
		t.Fatalf("after Flush the sink holds\n%q\nwant\n%q", got, lines)
	}
	if err := s.Shutdown(c.ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(c.ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

func (c sinkCase) sinkDoesNotKeepCallerBuffers(t *testing.T) {
	s := c.h.New(t)
	if err := s.Start(c.ctx); err != nil {
		t.Fatal(err)
	}
	es, lines := c.mk(t, 4)
	if err := s.Write(c.ctx, es); err != nil {
		t.Fatal(err)
	}
	for i := range es {
		for j := range es[i].Raw {
			es[i].Raw[j] = 'X'
		}
	}
	if err := s.Shutdown(c.ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.h.Read(t, s, c.ref); !equalLines(got, lines) {
		t.Fatalf("sink kept the caller's buffers: holds\n%q\nwant\n%q", got, lines)
	}
}

func (c sinkCase) sinkWriteAfterShutdownFails(t *testing.T) {
	s := c.h.New(t)
	if err := s.Start(c.ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(c.ctx); err != nil {
		t.Fatal(err)
	}
	es, _ := c.mk(t, 2)
	if err := s.Write(c.ctx, es); err == nil {
		t.Fatal("Write after Shutdown returned nil: the entries went nowhere, silently")
	}
}

func (c sinkCase) sinkACancelledContextRepeatsNothing(t *testing.T) {
	s := c.h.New(t)
	if err := s.Start(c.ctx); err != nil {
		t.Fatal(err)
	}
	es, lines := c.mk(t, 6)
	cctx, cancel := context.WithCancel(c.ctx)
	cancel()
	rest := es
	if err := s.Write(cctx, es); err != nil {
		var pe *core.PartialError
		if errors.As(err, &pe) && pe.N > 0 {
			rest = es[pe.N:]
		}
		deliver(t, s, rest)
	}
	if err := s.Flush(c.ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.h.Read(t, s, c.ref); !equalLines(got, lines) {
		t.Fatalf("after a cancelled Write and a retry the sink holds\n%q\nwant\n%q", got, lines)
	}
	_ = s.Shutdown(c.ctx)
}

func (c sinkCase) sinkAPoisonEntryLeavesEveryOtherLineOnce(t *testing.T) {
	s := c.h.New(t)
	if err := s.Start(c.ctx); err != nil {
		t.Fatal(err)
	}
	es, lines := c.mk(t, 8)
	poison, _ := sidechain(t, contractSession, "a/b", 1, "4f7e0000-0000-4000-8000-000000000003")
	batch := append(append(append([]core.Entry{}, es[:4]...), poison), es[4:]...)
	deliver(t, s, batch)
	if err := s.Flush(c.ctx); err != nil {
		t.Fatal(err)
	}
	got := c.h.Read(t, s, c.ref)
	if !c.h.Sidechains {
		// The sink keeps sidechains with the main lines: the poison
		// may be among them, once.
		got = slicesDelete(got, string(poison.Raw))
	}
	if !equalLines(got, lines) {
		t.Fatalf("with a poison entry in the batch the sink holds\n%q\nwant\n%q", got, lines)
	}
	_ = s.Shutdown(c.ctx)
}

func (c sinkCase) sinkManySessionsAtOnce(t *testing.T) {
	s := c.h.New(t)
	if err := s.Start(c.ctx); err != nil {
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
	if err := s.Flush(c.ctx); err != nil {
		t.Fatal(err)
	}
	if !c.h.Sessions {
		if got := c.h.Read(t, s, c.ref); !equalLines(got, all) {
			t.Fatalf("the sink holds %d lines, want %d in submission order", len(got), len(all))
		}
	} else {
		for id, lines := range want {
			if got := c.h.Read(t, s, core.SessionRef{SessionID: id, CWD: c.ref.CWD}); !equalLines(got, lines) {
				t.Fatalf("session %s holds\n%q\nwant\n%q", id, got, lines)
			}
		}
	}
	if err := s.Shutdown(c.ctx); err != nil {
		t.Fatal(err)
	}
}

func (c sinkCase) sinkSidechainsGoToTheirOwnTranscript(t *testing.T) {
	if !c.h.Sidechains {
		t.Skip("the harness reads sidechains with the main transcript")
	}
	s := c.h.New(t)
	if err := s.Start(c.ctx); err != nil {
		t.Fatal(err)
	}
	es, lines := c.mk(t, 4)
	var side []string
	batch := append([]core.Entry{}, es[:2]...)
	parent := "" // a subagent's transcript starts its own chain
	for i := range 3 {
		e, l := sidechain(t, contractSession, "worker-1", i, parent)
		parent = e.UUID
		batch = append(batch, e)
		side = append(side, l)
	}
	batch = append(batch, es[2:]...)
	deliver(t, s, batch)
	if err := s.Flush(c.ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.h.Read(t, s, c.ref); !equalLines(got, lines) {
		t.Fatalf("main transcript holds\n%q\nwant\n%q", got, lines)
	}
	aref := c.ref
	aref.AgentID = "worker-1"
	if got := c.h.Read(t, s, aref); !equalLines(got, side) {
		t.Fatalf("the sidechain holds\n%q\nwant\n%q", got, side)
	}
	_ = s.Shutdown(c.ctx)
}

func (c sinkCase) sinkShutdownFlushes(t *testing.T) {
	s := c.h.New(t)
	if err := s.Start(c.ctx); err != nil {
		t.Fatal(err)
	}
	es, lines := c.mk(t, 3)
	if err := s.Write(c.ctx, es); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(c.ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.h.Read(t, s, c.ref); !equalLines(got, lines) {
		t.Fatalf("after Shutdown the sink holds\n%q\nwant\n%q", got, lines)
	}
}
