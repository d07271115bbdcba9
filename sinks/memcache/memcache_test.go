package memcache

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
)

const sess = "0565a3a4-0000-4000-8000-000000000001"

func TestContract(t *testing.T) {
	coretest.RunSinkContract(t, coretest.SinkHarness{
		New: func(*testing.T) core.Sink { return New(1 << 20) },
		Read: func(t *testing.T, s core.Sink, ref core.SessionRef) []string {
			tr, err := s.(*Cache).Load(context.Background(), ref)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, e := range tr.Entries {
				out = append(out, string(e.Raw))
			}
			return out
		},
		Sessions:   true,
		Sidechains: true,
	})
}

func write(t *testing.T, c *Cache, lines ...string) {
	t.Helper()
	var es []core.Entry
	for _, l := range lines {
		es = append(es, coretest.MustEntry(t, l))
	}
	if err := c.Write(context.Background(), es); err != nil {
		t.Fatal(err)
	}
}

func TestRefusesASessionJoinedHalfway(t *testing.T) {
	c := New(1 << 20)
	write(t, c, coretest.Line("assistant", sess, "a-2", "u-1"))
	_, err := c.Load(context.Background(), core.SessionRef{SessionID: sess})
	if !errors.Is(err, core.ErrNotFound) || !strings.Contains(err.Error(), "joined") {
		t.Fatalf("Load = %v, want a miss saying the cache joined late", err)
	}
	if c.Report()["refused_partial"] != 1 {
		t.Errorf("report %v", c.Report())
	}
}

func TestEvictsWholeSessionsLeastRecentFirst(t *testing.T) {
	line := func(s, u string) string { return coretest.Line("user", s, u, "") }
	one := line("11111111-0000-4000-8000-000000000001", "u-1")
	c := New(int64(len(one)*2 + 10))
	write(t, c, one)
	write(t, c, line("22222222-0000-4000-8000-000000000002", "u-2"))
	// Touch the first so the second is the least recently used.
	if _, err := c.Load(context.Background(), core.SessionRef{SessionID: "11111111-0000-4000-8000-000000000001"}); err != nil {
		t.Fatal(err)
	}
	write(t, c, line("33333333-0000-4000-8000-000000000003", "u-3"))
	if _, err := c.Load(context.Background(), core.SessionRef{SessionID: "22222222-0000-4000-8000-000000000002"}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("least recently used session still cached: %v", err)
	}
	for _, id := range []string{"11111111-0000-4000-8000-000000000001", "33333333-0000-4000-8000-000000000003"} {
		if _, err := c.Load(context.Background(), core.SessionRef{SessionID: id}); err != nil {
			t.Errorf("%s evicted: %v", id, err)
		}
	}
	if r := c.Report(); r["evictions"] != 1 || r["bytes"] > int64(len(one)*2+10) {
		t.Errorf("report %v", r)
	}
}

func TestSidechainsAreTheirOwnSessions(t *testing.T) {
	c := New(1 << 20)
	side := strings.Replace(coretest.Line("user", sess, "s-1", ""), `"isSidechain":false`, `"isSidechain":true,"agentId":"a1"`, 1)
	write(t, c, coretest.Line("user", sess, "u-1", ""), side)
	main, err := c.Load(context.Background(), core.SessionRef{SessionID: sess})
	if err != nil || len(main.Entries) != 1 {
		t.Fatalf("main: %v %v", main, err)
	}
	agent, err := c.Load(context.Background(), core.SessionRef{SessionID: sess, AgentID: "a1"})
	if err != nil || len(agent.Entries) != 1 || agent.Entries[0].UUID != "s-1" {
		t.Fatalf("agent: %v %v", agent, err)
	}
}
