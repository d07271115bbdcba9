package transcript

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
)

// row builders for hand-made transcripts. Every expectation below was also
// checked against the SDK (sinks/jsonl's compatibility tests run the same
// kinds of files through it).

func line(fields ...any) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(fields); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(fields[i])
		v, _ := json.Marshal(fields[i+1])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.String()
}

func par(p string) any {
	if p == "" {
		return nil
	}
	return p
}

func user(id, parent, text string, extra ...any) string {
	return line(append([]any{"parentUuid", par(parent), "isSidechain", false, "type", "user",
		"message", map[string]any{"role": "user", "content": text}, "uuid", id,
		"timestamp", "2026-01-10T11:00:00.000Z", "sessionId", "s1"}, extra...)...)
}

func assistant(id, parent, msgID string, content []any, extra ...any) string {
	if content == nil {
		content = []any{map[string]any{"type": "text", "text": "reply " + id}}
	}
	return line(append([]any{"parentUuid", par(parent), "isSidechain", false,
		"message", map[string]any{"id": msgID, "type": "message", "role": "assistant", "content": content},
		"type", "assistant", "uuid", id, "timestamp", "2026-01-10T11:00:00.000Z", "sessionId", "s1"}, extra...)...)
}

func toolResult(id, parent, toolID string, extra ...any) string {
	return line(append([]any{"parentUuid", par(parent), "isSidechain", false, "type", "user",
		"message", map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": toolID, "content": "ok"}}},
		"uuid", id, "timestamp", "2026-01-10T11:00:00.000Z", "sessionId", "s1"}, extra...)...)
}

func toolUse(id string) []any {
	return []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{}}}
}

func progress(id, parent string) string {
	return line("parentUuid", par(parent), "isSidechain", false, "type", "progress", "data", map[string]any{"type": "bash_progress"},
		"uuid", id, "timestamp", "2026-01-10T11:00:00.000Z", "sessionId", "s1")
}

func boundary(id string, meta map[string]any) string {
	return line("parentUuid", nil, "logicalParentUuid", "x", "isSidechain", false, "type", "system", "subtype", "compact_boundary",
		"content", "Conversation compacted", "uuid", id, "timestamp", "2026-01-10T11:00:00.000Z", "compactMetadata", meta, "sessionId", "s1")
}

func entries(t *testing.T, lines ...string) []core.Entry {
	t.Helper()
	var out []core.Entry
	for _, l := range lines {
		e, err := core.ParseEntry([]byte(l))
		if err != nil {
			t.Fatalf("parse %s: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

func uuids(es []core.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.UUID
	}
	return out
}

func msgUUIDs(ms []SessionMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.UUID
	}
	return out
}

func check(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %v\n want %v", what, got, want)
	}
}

func TestLeafIsTheNewestBranch(t *testing.T) {
	es := entries(t,
		user("u1", "", "Pick a color"),
		assistant("a1", "u1", "m1", nil),
		user("u2", "a1", "Blue?"),
		assistant("a2", "u2", "m2", nil),
		// Rewind: a second answer to a1, written later.
		user("u3", "a1", "Actually pick a different color"),
		assistant("a3", "u3", "m3", nil),
		// Metadata and a sidechain row do not make leaves.
		line("type", "summary", "summary", "s", "leafUuid", "a2"),
		user("side", "a2", "sidechain", "isSidechain", true),
	)
	c := BuildChain(es, ChainOptions{})
	check(t, "chain", uuids(c.Entries), []string{"u1", "a1", "u3", "a3"})
	if c.Leaf != "a3" || c.Cycle != nil || len(c.Gaps) != 0 {
		t.Errorf("leaf %q cycle %v gaps %v", c.Leaf, c.Cycle, c.Gaps)
	}
	check(t, "messages", msgUUIDs(c.Messages(MessageOptions{})), []string{"u1", "a1", "u3", "a3"})

	// The newest terminal wins even when it is a system row: its nearest
	// user/assistant row is the leaf.
	es = append(es, entries(t, line("parentUuid", "a2", "type", "system", "subtype", "informational", "uuid", "sys", "timestamp", "t"))...)
	c = BuildChain(es, ChainOptions{})
	check(t, "chain after a system row on the old branch", uuids(c.Entries), []string{"u1", "a1", "u2", "a2"})
	check(t, "with system rows", msgUUIDs(c.Messages(MessageOptions{IncludeSystem: true})), []string{"u1", "a1", "u2", "a2"})
}

func TestPlainCompactBoundaryEndsTheChain(t *testing.T) {
	es := entries(t,
		user("u1", "", "old"),
		assistant("a1", "u1", "m1", nil),
		boundary("b", map[string]any{"trigger": "manual", "preTokens": 100}),
		user("s", "b", "This session is being continued", "isVisibleInTranscriptOnly", true, "isCompactSummary", true),
		user("u2", "s", "Now add tests"),
		assistant("a2", "u2", "m2", nil),
	)
	c := BuildChain(es, ChainOptions{})
	check(t, "chain", uuids(c.Entries), []string{"b", "s", "u2", "a2"})
	ms := c.Messages(MessageOptions{})
	check(t, "messages", msgUUIDs(ms), []string{"s", "u2", "a2"})
	if !ms[0].IsCompactSummary || !ms[0].IsMeta {
		t.Errorf("summary row: %+v", ms[0])
	}
	check(t, "with system", msgUUIDs(c.Messages(MessageOptions{IncludeSystem: true})), []string{"b", "s", "u2", "a2"})
}

func TestPreservedSegmentRelinks(t *testing.T) {
	es := entries(t,
		user("u1", "", "old"),
		assistant("a1", "u1", "m1", nil),
		user("u2", "a1", "kept 1"),
		assistant("a2", "u2", "m2", nil),
		boundary("b", map[string]any{"preservedSegment": map[string]any{"headUuid": "u2", "anchorUuid": "s", "tailUuid": "a2"}}),
		user("s", "b", "summary", "isCompactSummary", true),
		// Written after the compaction under the summary: moved below the
		// kept segment's tail.
		user("u3", "s", "next"),
		assistant("a3", "u3", "m3", nil),
	)
	c := BuildChain(es, ChainOptions{})
	check(t, "chain", uuids(c.Entries), []string{"b", "s", "u2", "a2", "u3", "a3"})
	check(t, "messages", msgUUIDs(c.Messages(MessageOptions{})), []string{"s", "u2", "a2", "u3", "a3"})
}

func TestPreservedMessagesRelinks(t *testing.T) {
	es := entries(t,
		user("u1", "", "old"),
		assistant("a1", "u1", "m1", nil),
		user("k1", "a1", "kept 1"),
		assistant("k2", "k1", "m2", nil),
		user("k3", "", "kept 3 (its old parent is irrelevant)"),
		boundary("b", map[string]any{"preservedMessages": map[string]any{"anchorUuid": "s", "uuids": []any{"k1", "k2", "k3"}}}),
		user("s", "b", "summary", "isCompactSummary", true),
		user("u3", "s", "next"),
		assistant("a3", "u3", "m3", nil),
	)
	c := BuildChain(es, ChainOptions{})
	check(t, "chain", uuids(c.Entries), []string{"b", "s", "k1", "k2", "k3", "u3", "a3"})

	// A preservedMessages list naming a missing row is ignored: the chain
	// ends at the summary's boundary and the kept rows stay where they were.
	es[5] = entries(t, boundary("b", map[string]any{"preservedMessages": map[string]any{"anchorUuid": "s", "uuids": []any{"k1", "gone"}}}))[0]
	c = BuildChain(es, ChainOptions{})
	check(t, "chain with a bad list", uuids(c.Entries), []string{"b", "s", "u3", "a3"})
}

func TestProgressRowsAreTransparent(t *testing.T) {
	es := entries(t,
		user("u1", "", "run tests"),
		assistant("a1", "u1", "m1", toolUse("t1")),
		progress("p1", "a1"),
		progress("p2", "p1"),
		toolResult("r1", "p2", "t1"),
		assistant("a2", "r1", "m2", nil),
		// A progress row after the last message is not a leaf.
		progress("p3", "a2"),
	)
	c := BuildChain(es, ChainOptions{})
	check(t, "chain", uuids(c.Entries), []string{"u1", "a1", "r1", "a2"})
	check(t, "messages", msgUUIDs(c.Messages(MessageOptions{IncludeSystem: true})), []string{"u1", "a1", "r1", "a2"})
	if c.Leaf != "a2" {
		t.Errorf("leaf %q", c.Leaf)
	}
}

func TestSplitAssistantSiblingsAreReattached(t *testing.T) {
	// An older CLI wrote one row per content block of message m1. The chain
	// runs through a1c; a1b (another block of m1) and the tool_result that
	// answers it are off the chain and come back after a1c, by timestamp.
	es := entries(t,
		user("u1", "", "do two things"),
		assistant("a1a", "u1", "m1", []any{map[string]any{"type": "text", "text": "ok"}}, "timestamp", "2026-01-10T11:00:01.000Z"),
		assistant("a1b", "a1a", "m1", toolUse("t1"), "timestamp", "2026-01-10T11:00:02.000Z"),
		assistant("a1c", "a1a", "m1", toolUse("t2"), "timestamp", "2026-01-10T11:00:03.000Z"),
		toolResult("r1", "a1b", "t1", "timestamp", "2026-01-10T11:00:04.000Z"),
		toolResult("r2", "a1c", "t2", "timestamp", "2026-01-10T11:00:05.000Z"),
		assistant("a2", "r2", "m2", nil, "timestamp", "2026-01-10T11:00:06.000Z"),
	)
	c := BuildChain(es, ChainOptions{})
	check(t, "chain", uuids(c.Entries), []string{"u1", "a1a", "a1c", "a1b", "r1", "r2", "a2"})

	// An orphan tool_result (its parent is elsewhere) that answers a
	// tool_use of the message is re-attached too.
	es = entries(t,
		user("u1", "", "go"),
		assistant("a1", "u1", "m1", toolUse("t1"), "timestamp", "2026-01-10T11:00:01.000Z"),
		assistant("a1x", "a1", "m1", toolUse("t9"), "timestamp", "2026-01-10T11:00:02.000Z"),
		toolResult("r9", "elsewhere", "t9", "timestamp", "2026-01-10T11:00:03.000Z"),
		toolResult("r1", "a1", "t1", "timestamp", "2026-01-10T11:00:04.000Z"),
		assistant("a2", "r1", "m2", nil),
	)
	c = BuildChain(es, ChainOptions{})
	check(t, "chain with orphan", uuids(c.Entries), []string{"u1", "a1", "a1x", "r9", "r1", "a2"})
	if len(c.Gaps) != 1 || c.Gaps[0] != (ChainBreak{UUID: "r9", Parent: "elsewhere"}) {
		t.Errorf("gaps %v", c.Gaps)
	}
}

func TestCycleEndsTheWalk(t *testing.T) {
	es := entries(t,
		user("u1", "a2", "first (its parent loops back)"),
		assistant("a1", "u1", "m1", nil),
		user("u2", "a1", "second"),
		assistant("a2", "u2", "m2", nil),
		user("leaf", "u2", "branch off the loop"),
	)
	c := BuildChain(es, ChainOptions{})
	check(t, "chain", uuids(c.Entries), []string{"a2", "u1", "a1", "u2", "leaf"})
	if c.Cycle == nil || c.Cycle.UUID != "a2" || c.Cycle.Parent != "u2" {
		t.Errorf("cycle %+v", c.Cycle)
	}
}

func TestMissingParentIsAGap(t *testing.T) {
	es := entries(t,
		user("u1", "", "hello"),
		assistant("a1", "u1", "m1", nil),
		user("u2", "gone", "after a lost row"),
		assistant("a2", "u2", "m2", nil),
	)
	c := BuildChain(es, ChainOptions{})
	check(t, "chain", uuids(c.Entries), []string{"u2", "a2"})
	if len(c.Gaps) != 1 || c.Gaps[0] != (ChainBreak{UUID: "u2", Parent: "gone"}) {
		t.Errorf("gaps %v", c.Gaps)
	}
}

func TestLaterDuplicateReplacesEarlier(t *testing.T) {
	es := entries(t,
		user("u1", "", "hello"),
		assistant("a1", "u1", "m1", []any{map[string]any{"type": "text", "text": "first"}}),
		user("u2", "a1", "more"),
		assistant("a1", "u1", "m1", []any{map[string]any{"type": "text", "text": "second"}}),
	)
	c := BuildChain(es, ChainOptions{})
	check(t, "chain", uuids(c.Entries), []string{"u1", "a1", "u2"})
	ms := c.Messages(MessageOptions{})
	if !strings.Contains(string(ms[1].Message), "second") {
		t.Errorf("a1 is %s, want the later copy", ms[1].Message)
	}
}

func TestFallbackLeafPrefersPlainRows(t *testing.T) {
	// Every message row is named by another (a loop), so no terminal is a
	// leaf candidate; the fallback climbs from the progress terminals and
	// takes the newest non-meta hit.
	es := entries(t,
		user("x", "y", "plain"),
		user("y", "x", "meta", "isMeta", true),
		progress("p1", "y"),
		progress("p2", "x"),
	)
	c := BuildChain(es, ChainOptions{})
	check(t, "chain", uuids(c.Entries), []string{"y", "x"})
	if c.Cycle == nil {
		t.Error("no cycle reported")
	}
}

func TestLocalAndQueuedCommands(t *testing.T) {
	es := entries(t,
		user("c0", "", "<local-command-caveat>Caveat: local</local-command-caveat>", "isMeta", true),
		user("c1", "c0", "<command-name>/model</command-name>"),
		user("c2", "c1", "<local-command-stdout>Set model</local-command-stdout>"),
		user("u1", "c2", "hello"),
		assistant("a1", "u1", "m1", nil),
		progress("p", "a1"),
		line("parentUuid", "p", "type", "attachment", "uuid", "q1", "timestamp", "2026-01-10T11:00:09.000Z", "sessionId", "s1",
			"attachment", map[string]any{"type": "queued_command", "prompt": "also lint"}),
	)
	c := BuildChain(es, ChainOptions{})
	check(t, "trailing", uuids(c.Trailing), []string{"q1"})
	ms := c.Messages(MessageOptions{})
	check(t, "messages", msgUUIDs(ms), []string{"c1", "c2", "u1", "a1", "q1"})
	if !ms[0].IsCompletedLocalCommand || !ms[1].IsCompletedLocalCommand || ms[2].IsCompletedLocalCommand {
		t.Errorf("local command flags: %+v", ms[:3])
	}
	if last := ms[4]; !last.IsQueuedCommand || last.Type != core.TypeUser || string(last.Message) != `{"role":"user","content":"also lint"}` {
		t.Errorf("queued command: %+v %s", last, last.Message)
	}
}

func TestSidechainChainEndsAtLastMessage(t *testing.T) {
	es := entries(t,
		user("u1", "", "Search for the login handler", "isSidechain", true, "agentId", "a1"),
		assistant("a1", "u1", "m1", nil, "isSidechain", true),
		user("meta", "a1", "meta row", "isSidechain", true, "isMeta", true),
		assistant("a2", "u1", "m2", nil, "isSidechain", true),
		line("type", "system", "subtype", "informational", "uuid", "s", "parentUuid", "a2"),
	)
	c := BuildChain(es, ChainOptions{Sidechain: true})
	check(t, "chain", uuids(c.Entries), []string{"u1", "a2"})
	ms := c.Messages(MessageOptions{ParentToolUseID: "toolu_01", ParentAgentID: "bad id"})
	check(t, "messages", msgUUIDs(ms), []string{"u1", "a2"})
	if ms[0].ParentToolUseID == nil || *ms[0].ParentToolUseID != "toolu_01" || ms[0].ParentAgentID != nil {
		t.Errorf("parent ids: %+v", ms[0])
	}
	// Meta rows are kept in subagent files.
	es = es[:3]
	c = BuildChain(es, ChainOptions{Sidechain: true})
	check(t, "meta kept", msgUUIDs(c.Messages(MessageOptions{})), []string{"u1", "a1", "meta"})
}

func TestSessionMessageJSON(t *testing.T) {
	es := entries(t, user("u1", "", "hi", "isCompactSummary", true, "origin", map[string]any{"kind": "human"}))
	ms := BuildChain(es, ChainOptions{}).Messages(MessageOptions{})
	b, err := json.Marshal(ms[0])
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"user","uuid":"u1","session_id":"s1","message":{"content":"hi","role":"user"},` +
		`"parent_tool_use_id":null,"parent_agent_id":null,"isCompactSummary":true,"is_meta":true,` +
		`"timestamp":"2026-01-10T11:00:00.000Z","origin":{"kind":"human"}}`
	if string(b) != want {
		t.Errorf("JSON\n got  %s\n want %s", b, want)
	}
}

func TestJSTruthiness(t *testing.T) {
	for in, want := range map[string]bool{
		`true`: true, `false`: false, `null`: false, `0`: false, `-0`: false, `0.0e5`: false, `0.001`: true,
		`1e-400`: true, `""`: false, `" "`: true, `{}`: true, `[]`: true, `-2`: true,
	} {
		if got := jv(in).truthy(); got != want {
			t.Errorf("truthy(%s) = %v", in, got)
		}
	}
	if jv(nil).truthy() {
		t.Error("absent is truthy")
	}
}

func TestBuildChainSurvivesOddInput(t *testing.T) {
	odd := []string{
		`{}`, `{"type":5,"uuid":"x"}`, `{"type":"user","uuid":"u","parentUuid":5}`,
		`{"type":"user","uuid":"v","parentUuid":"v"}`, `{"type":"system","subtype":"compact_boundary","uuid":"b","compactMetadata":{"preservedMessages":{"uuids":"nope"}}}`,
		`{"type":"system","subtype":"compact_boundary","uuid":"c","compactMetadata":{"preservedSegment":{"anchorUuid":null}}}`,
		`{"type":"assistant","uuid":"w","message":[1,2],"hostHiddenToolUseIds":[1,"a"]}`,
		`{"type":"host-row","ranByToolUseId":"a","rowUuid":"h","block":{"type":"tool_use","id":"a"}}`,
	}
	var es []core.Entry
	for _, l := range odd {
		es = append(es, entries(t, l)...)
	}
	for _, side := range []bool{false, true} {
		c := BuildChain(es, ChainOptions{Sidechain: side})
		_ = c.Messages(MessageOptions{IncludeSystem: true})
	}
	if c := BuildChain(nil, ChainOptions{}); len(c.Entries) != 0 || c.Leaf != "" {
		t.Errorf("empty input: %+v", c)
	}
}

func TestRebuildStaysLinear(t *testing.T) {
	const n = 20000
	var ls []string
	// Many preserved-segment boundaries naming one anchor, and many rows
	// pointing at it: each boundary must not rescan every row.
	for i := 0; i < n; i++ {
		ls = append(ls, user(fmt.Sprintf("u%d", i), "anchor", "x"))
		ls = append(ls, boundary(fmt.Sprintf("b%d", i), map[string]any{"preservedSegment": map[string]any{
			"headUuid": fmt.Sprintf("u%d", i), "anchorUuid": "anchor", "tailUuid": fmt.Sprintf("u%d", i)}}))
	}
	// A comb for the fallback leaf: a loop of two user rows, a long spine of
	// progress rows below it and many progress terminals on the spine's end.
	var comb []string
	comb = append(comb, user("x", "y", "x"), user("y", "x", "y"))
	parent := "x"
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("p%d", i)
		comb = append(comb, progress(id, parent))
		parent = id
	}
	for i := 0; i < n; i++ {
		comb = append(comb, progress(fmt.Sprintf("t%d", i), parent))
	}
	for name, lines := range map[string][]string{"boundaries": ls, "comb": comb} {
		es := entries(t, lines...)
		start := time.Now()
		c := BuildChain(es, ChainOptions{})
		_ = c.Messages(MessageOptions{})
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: %v", name, d)
		}
		if name == "comb" && c.Leaf != "x" {
			t.Errorf("comb: leaf %q", c.Leaf)
		}
	}
}
