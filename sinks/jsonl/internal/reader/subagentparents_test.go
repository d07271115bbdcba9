package reader

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// SubagentParents, which reads only meta files, names for every subagent
// the parent_tool_use_id SubagentMessages gives its messages: with a meta
// file, without one, with a toolUseId that is not a string, with an empty
// transcript, and for an id that repeats in a nested folder (the first
// file counts, as for SubagentMessages).
func TestSubagentParentsAreTheMessagesParents(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := Layout{layout.Layout{ConfigDir: dir}}
	const id = "5ea4c000-0000-4000-8000-0000000000bb"
	main, top, nested := agentFolders(t, l, id)
	row := func(agent string) string {
		return `{"type":"user","uuid":"u-` + agent + `","parentUuid":null,"isSidechain":true,"agentId":"` + agent + `","sessionId":"` + id + `","message":{"role":"user","content":"go"},"timestamp":"2026-01-01T00:00:00Z"}` + "\n"
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(main, strings.Replace(row("main"), `"isSidechain":true`, `"isSidechain":false`, 1))
	agent := func(d, a, meta string, empty bool) {
		body := row(a)
		if empty {
			body = ""
		}
		write(filepath.Join(d, "agent-"+a+".jsonl"), body)
		if meta != "" {
			write(filepath.Join(d, "agent-"+a+".meta.json"), meta)
		}
	}
	agent(top, "a1", `{"agentType":"x","toolUseId":"toolu_1"}`, false)
	agent(top, "a2", "", false)                                // no meta file
	agent(top, "a3", `{"toolUseId":7}`, false)                 // not a string
	agent(top, "a4", `{"toolUseId":"toolu_4"}`, true)          // empty transcript
	agent(top, "a5", `{"toolUseId":""}`, false)                // empty id
	agent(top, "a6", `not json`, false)                        // damaged meta
	agent(nested, "a1", `{"toolUseId":"toolu_nested"}`, false) // a repeated id
	agent(nested, "a7", `{"toolUseId":"toolu_7","parentAgentId":"a1"}`, false)

	got, err := l.SubagentParents(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	agents, err := l.Subagents(ctx, id, "")
	if err != nil || len(agents) != 8 {
		t.Fatalf("Subagents = %v, %v", agents, err)
	}
	for _, a := range agents {
		msgs, _, err := l.SubagentMessages(ctx, id, a, "", sessions.MessagesOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := ""
		if len(msgs) > 0 && msgs[0].ParentToolUseID != nil {
			want = *msgs[0].ParentToolUseID
		}
		if got[a] != want {
			t.Errorf("SubagentParents[%s] = %q; SubagentMessages gives %q", a, got[a], want)
		}
	}
	if got["a1"] != "toolu_1" || got["a7"] != "toolu_7" || len(got) != 2 {
		t.Errorf("SubagentParents = %v; want a1 → toolu_1 and a7 → toolu_7 only", got)
	}
}
