package backend

import (
	"testing"

	"github.com/e0dc0000/scribe/core"
)

func TestEntrySubpath(t *testing.T) {
	const sid = "0565a3a4-0000-4000-8000-000000000001"
	cases := []struct {
		line string
		sub  string
		skip bool
	}{
		{`{"parentUuid":null,"isSidechain":false,"type":"user","uuid":"u1","sessionId":"` + sid + `"}`, "", false},
		{`{"parentUuid":null,"isSidechain":true,"agentId":"a1","type":"user","uuid":"u2","sessionId":"` + sid + `"}`, "subagents/agent-a1", false},
		{`{"type":"agent-name","agentId":"a1","sessionId":"` + sid + `"}`, "subagents/agent-a1", false},
		{`{"type":"custom-title","customTitle":"t","sessionId":"` + sid + `"}`, "", false},
		{`{"type":"scribe-lifecycle","uuid":"u3","sessionId":"` + sid + `"}`, LifecycleSubpath, false},
		{`{"type":"scribe-checkpoint","uuid":"u4","sessionId":"` + sid + `"}`, LifecycleSubpath, false},
		{`{"type":"scribe-state","state":"idle","sessionId":"` + sid + `"}`, "", true},
	}
	for _, c := range cases {
		e, err := core.ParseEntry([]byte(c.line))
		if err != nil {
			t.Fatal(err)
		}
		sub, skip := EntrySubpath(&e)
		if sub != c.sub || skip != c.skip {
			t.Errorf("%s: subpath %q skip %v, want %q %v", c.line, sub, skip, c.sub, c.skip)
		}
	}
	if id, ok := AgentOfSubpath("subagents/agent-a1"); !ok || id != "a1" {
		t.Errorf("AgentOfSubpath: %q %v", id, ok)
	}
	for _, bad := range []string{LifecycleSubpath, "subagents/agent-", "subagents/agent-a/b", "x"} {
		if _, ok := AgentOfSubpath(bad); ok {
			t.Errorf("AgentOfSubpath(%q) is an agent", bad)
		}
	}
}
