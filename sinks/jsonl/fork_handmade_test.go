package jsonl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/internal/peer"
)

// Hand-made sessions for the fork comparison: the shapes the fixture and
// the corpus lack.

// forkJ builds a JSON object line with keys in the given order, written
// as JSON.stringify writes it (no HTML escaping). A json.RawMessage value
// is written as is.
func forkJ(kv ...any) string {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		forkJVal(&b, kv[i])
		b.WriteByte(':')
		forkJVal(&b, kv[i+1])
	}
	b.WriteByte('}')
	return b.String()
}

func forkJVal(b *bytes.Buffer, v any) {
	if r, ok := v.(json.RawMessage); ok {
		b.Write(r)
		return
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	b.Truncate(b.Len() - 1) // Encode's newline
}

type forkRaw = json.RawMessage

// forkU is the n-th made-up uuid.
func forkU(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// forkTranscripts are hand-made sessions that exercise every fork rule:
// id → file lines.
func forkTranscripts() map[string][]string {
	const cwd = "/home/alice/src/shop"
	ts := func(i int) string { return fmt.Sprintf("2026-01-10T11:%02d:%02d.%03dZ", i/60, i%60, i*7%1000) }
	out := map[string][]string{}
	row := func(sid string, i int, typ, id string, parent any, body []any, tail ...any) string {
		kv := []any{"parentUuid", parent, "isSidechain", false}
		kv = append(kv, "type", typ)
		kv = append(kv, body...)
		kv = append(kv, "uuid", id, "timestamp", ts(i), "userType", "external", "entrypoint", "cli", "cwd", cwd,
			"sessionId", sid, "version", "2.1.332", "gitBranch", "main")
		return forkJ(append(kv, tail...)...)
	}
	user := func(text any) []any { return []any{"message", map[string]any{"role": "user", "content": text}} }
	asst := func(msgID string, content ...any) []any {
		return []any{"message", forkRaw(forkJ("model", "claude-sonnet-4-5", "id", msgID, "type", "message", "role", "assistant",
			"content", content, "stop_reason", "end_turn", "stop_sequence", nil,
			"usage", forkRaw(`{"input_tokens":12,"output_tokens":34}`))), "requestId", "req_" + msgID}
	}
	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	toolUse := func(id string) map[string]any {
		return map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "ls"}}
	}
	toolResult := func(id string) []any {
		return user([]any{map[string]any{"tool_use_id": id, "type": "tool_result", "content": "ok"}})
	}
	system := func(subtype string, extra ...any) []any {
		return append([]any{"subtype", subtype, "content", "x", "isMeta", false}, extra...)
	}

	// rules: every per-row rule and every kind of metadata.
	s := forkU(9001)
	u := func(n int) string { return forkU(100 + n) }
	out[s] = []string{
		"\uFEFF" + forkJ("type", "session-owner", "accountUuid", "acct-1", "organizationUuid", "org-1", "restricted", []any{"ldr", "x"}),
		forkJ("type", "session-owner", "accountUuid", "acct-2", "restricted", []any{"ldr"}),
		forkJ("type", "hybrid-organization", "organizationUuid", "AAAAAAAA-0000-4000-8000-00000000000A"),
		forkJ("type", "hybrid-organization", "organizationUuid", "aaaaaaaa-0000-4000-8000-00000000000a"),
		forkJ("type", "hybrid-organization", "organizationUuid", "nope"),
		forkJ("type", "history-suppression", "sessionId", "someone-else"),
		forkJ("type", "data-flow-incomplete", "sessionId", s, "codes", []any{3, 300, "x", 3}),
		row(s, 1, "user", u(1), nil, user("Plan <b>the</b> café & work"), "slug", "s1", "sessionKind", "interactive", "promptId", "p1"),
		row(s, 2, "progress", u(2), u(1), []any{"data", map[string]any{"type": "hook_progress"}, "toolUseID", "t", "parentToolUseID", "t"}),
		row(s, 3, "assistant", u(3), u(2), asst("msg_1", toolUse("toolu_1")), "agentName", "helper"),
		"\t\x01 " + row(s, 4, "user", u(4), u(3), toolResult("toolu_1"), "toolUseResult", map[string]any{"stdout": "ok"},
			"sourceToolAssistantUUID", u(3), "requestSessionId", "zzz"),
		forkJ("type", "file-history-snapshot", "messageId", u(4), "snapshot", map[string]any{"messageId": u(4)}, "isSnapshotUpdate", false),
		forkJ("parentUuid", nil, "isSidechain", true, "agentId", "ag1", "type", "user", "message", map[string]any{"role": "user", "content": "side"},
			"uuid", u(5), "timestamp", ts(5), "sessionId", s),
		forkJ("parentUuid", u(5), "isSidechain", true, "agentId", "ag1", "type", "assistant", "message", map[string]any{"role": "assistant", "id": "msg_s", "content": []any{text("side reply")}},
			"uuid", u(6), "timestamp", ts(6), "sessionId", s),
		row(s, 7, "user", u(7), u(6), user("after the side chain"), "teamName", "team-a"),
		row(s, 8, "assistant", u(8), u(7), asst("msg_2", text("two")), "forkedFrom", map[string]any{"sessionId": "prev-session", "messageUuid": "m"}),
		strings.TrimSuffix(row(s, 9, "assistant", u(9), u(8), asst("msg_3", text("three")), "requestSessionId", "req-sess", "version", "2.1.0"), "}") + `,"version":"2.1.333","1":true}`,
		forkJ("type", "content-replacement", "sessionId", s, "replacements", []any{map[string]any{"kind": "tool-result", "toolUseId": "toolu_1", "replacement": "<persisted>"}, 5, []any{1}}),
		forkJ("type", "content-replacement", "sessionId", "someone-else", "replacements", []any{map[string]any{"kind": "other"}}),
		row(s, 10, "system", u(10), u(9), system("model_refusal_fallback"), "level", "info"),
		row(s, 11, "attachment", u(11), u(10), []any{"attachment", map[string]any{"type": "queued_command", "prompt": "also lint", "source_uuid": u(1)}}),
		row(s, 12, "attachment", u(12), u(11), []any{"attachment", map[string]any{"type": "queued_command", "prompt": "later", "source_uuid": "not-a-row"}}),
		row(s, 13, "system", u(13), u(12), system("voice_call_talk", "fold", map[string]any{"command": map[string]any{"type": "queued_command", "prompt": "hi", "source_uuid": u(3)}})),
		row(s, 14, "attachment", u(14), u(13), []any{"attachment", forkRaw(forkJ("type", "deferred_tools_record", "nameOnlyAnnouncements", []any{u(1), "nope", u(2), 5}, "extra", 1))}),
		forkJ("type", "relocated", "sessionId", s, "relocatedCwd", "/new/place"),
		forkJ("type", "relocated", "sessionId", "someone-else", "relocatedCwd", "/other"),
		forkJ("type", "tools-used", "sessionId", s, "tools", []any{"Bash", "", 3, "Read"}),
		forkJ("type", "atis-latch", "sessionId", s, "atis", "abc"),
		forkJ("type", "atis-latch", "sessionId", s, "atis", "a b"),
		row(s, 15, "system", u(15), nil, system("compact_boundary", "level", "info", "compactMetadata",
			forkRaw(forkJ("trigger", "auto", "preTokens", 100, "preservedSegment", map[string]any{"headUuid": u(8), "anchorUuid": u(16), "tailUuid": u(9)},
				"runningTurnSends", []any{1}, "postTokens", 5))), "logicalParentUuid", u(14)),
		row(s, 16, "user", u(16), u(15), user("Summary of the work so far"), "isVisibleInTranscriptOnly", true, "isCompactSummary", true),
		strings.Replace(row(s, 17, "user", u(17), u(16), user("go on"), "logicalParentUuid", "00000000-0000-4000-8000-999999999999"), `"timestamp":"`+ts(17)+`",`, "", 1),
		row(s, 18, "system", u(18), u(17), system("compact_boundary", "level", "info", "compactMetadata",
			forkRaw(forkJ("trigger", "manual", "preservedMessages", map[string]any{"anchorUuid": u(17), "uuids": []any{u(3), u(4)}, "allUuids": []any{u(3), u(4), u(2)}}))), "logicalParentUuid", nil),
		row(s, 19, "user", "", u(18), user("empty uuid")),
		row(s, 20, "assistant", u(20), u(18), asst("msg_4", text("four"))),
		forkJ("type", "derived-from", "v", 1, "sessionId", s, "sessions", []any{
			map[string]any{"type": "claude_code_session", "id": "prev-session", "via": "resume", "started": "2026-01-01T00:00:00Z"},
			map[string]any{"type": "unknown", "id": nil, "via": "cloud"},
			map[string]any{"type": "bogus", "id": "x", "via": "fork"}}),
		strings.Replace(row(s, 21, "user", u(21), u(20), user("café")), "caf\u00e9", "caf\xe9", 1),
		row(s, 22, "user", u(22), 5, user("numeric parent")),
		row(s, 17, "user", u(17), u(16), user("go on, again")),
		row(s, 23, "assistant", u(23), u(22), asst("msg_5", text("five"))),
		"[1,2]", "null", "garbage{", "",
		forkJ("type", "tag", "tag", "t1", "sessionId", s),
		forkJ("type", "last-prompt", "lastPrompt", "five", "sessionId", s),
		forkJ("type", "summary", "summary", "old", "leafUuid", u(23)),
		forkJ("type", "queue-operation", "operation", "enqueue", "timestamp", ts(30), "sessionId", s, "content", "x"),
		forkJ("type", "permission-mode", "permissionMode", "default", "sessionId", s),
		forkJ("type", "ai-title", "aiTitle", "AI title", "sessionId", s),
		forkJ("type", "custom-title", "customTitle", "Rules session", "sessionId", s),
	}

	// branches: compaction and rewinds, for the cut rules.
	s = forkU(9002)
	b := func(n int) string { return forkU(200 + n) }
	out[s] = []string{
		row(s, 1, "user", b(1), nil, user("start")),
		row(s, 2, "assistant", b(2), b(1), asst("m1", text("a1"))),
		row(s, 3, "system", b(3), nil, system("compact_boundary", "compactMetadata", map[string]any{"trigger": "auto", "preTokens": 1}), "logicalParentUuid", b(2)),
		row(s, 4, "user", b(4), b(3), user("summary one"), "isCompactSummary", true),
		row(s, 5, "user", b(5), b(4), user("two")),
		row(s, 6, "assistant", b(6), b(5), asst("m2", text("a2"))),
		row(s, 7, "user", b(7), b(2), user("rewound two")),
		row(s, 8, "assistant", b(8), b(7), asst("m3", text("a2b"))),
		row(s, 9, "progress", b(9), b(8), []any{"data", map[string]any{"type": "bash_progress"}}),
		row(s, 10, "system", b(10), nil, system("compact_boundary", "compactMetadata", forkRaw(forkJ("trigger", "auto",
			"preservedSegment", map[string]any{"headUuid": b(7), "anchorUuid": b(11), "tailUuid": b(8)}))), "logicalParentUuid", b(9)),
		row(s, 11, "user", b(11), b(10), user("summary two"), "isCompactSummary", true),
		row(s, 12, "user", b(12), b(11), user("three")),
		row(s, 13, "assistant", b(13), b(12), asst("m4", text("a3"))),
		row(s, 14, "system", b(14), b(13), system("compact_boundary", "compactMetadata", forkRaw(forkJ("trigger", "auto", "durationMs", 0,
			"preservedMessages", map[string]any{"anchorUuid": b(14), "uuids": []any{b(12)}})))),
		row(s, 15, "user", b(15), b(14), user("four")),
		row(s, 16, "assistant", b(16), b(15), asst("m5", text("a4"))),
		row(s, 17, "system", b(17), nil, system("compact_boundary", "compactMetadata", forkRaw(forkJ("trigger", "manual",
			"preservedMessages", map[string]any{"anchorUuid": b(16), "uuids": []any{b(15), b(16)}}, "postTokens", 3))), "logicalParentUuid", b(16)),
		row(s, 18, "progress", b(18), b(17), []any{"data", map[string]any{"type": "bash_progress"}}),
		row(s, 19, "user", b(19), b(6), user("back on the first branch")),
		row(s, 20, "progress", b(20), b(19), []any{"data", map[string]any{"type": "bash_progress"}}),
	}

	// split: one assistant message written as several rows (older CLIs).
	s = forkU(9003)
	c := func(n int) string { return forkU(300 + n) }
	out[s] = []string{
		row(s, 1, "user", c(1), nil, user("split please")),
		row(s, 2, "assistant", c(2), c(1), asst("msg_x", text("thinking"))),
		row(s, 3, "assistant", c(3), c(2), asst("msg_x", toolUse("toolu_a"))),
		row(s, 5, "assistant", c(4), c(2), asst("msg_x", toolUse("toolu_b"))),
		row(s, 4, "user", c(5), c(3), toolResult("toolu_a"), "sourceToolAssistantUUID", c(3)),
		row(s, 6, "user", c(6), c(4), toolResult("toolu_b"), "sourceToolAssistantUUID", c(4)),
		row(s, 7, "assistant", c(7), c(5), asst("msg_y", text("done"))),
		row(s, 8, "user", c(8), c(7), user("thanks")),
	}

	// Titles: the sidecar, an empty custom title, plugin prompts, pasted
	// content, commands, bash input, long prompts, no timestamp at the end.
	s = forkU(9004)
	out[s] = []string{strings.Replace(row(s, 1, "user", forkU(401), nil, user("only row")), `"timestamp":"`+ts(1)+`",`, "", 1)}
	s = forkU(9005)
	out[s] = []string{
		forkJ("type", "ai-title", "aiTitle", "An AI title", "sessionId", s),
		row(s, 1, "user", forkU(501), nil, user("hello")),
		forkJ("type", "custom-title", "customTitle", "", "sessionId", s),
	}
	s = forkU(9006)
	out[s] = []string{
		row(s, 1, "user", forkU(601), nil, user("<command-name>/init</command-name>")),
		row(s, 2, "user", forkU(602), forkU(601), user("The foo plugin sent a message:\nDo the thing\n"), "pluginPrompt", map[string]any{"text": "Do the thing"}),
	}
	s = forkU(9009)
	out[s] = []string{
		row(s, 1, "user", forkU(901), nil, user("The foo plugin sent a message:\nDo the thing"+"\n\nThis is how Claude Code surfaces a prompt a plugin submits between turns \u2014 it starts this turn in the user's place. Address the message above."), "pluginPrompt", map[string]any{"text": "Do the thing"}),
	}
	s = forkU(9007)
	out[s] = []string{
		row(s, 1, "user", forkU(701), nil, user([]any{map[string]any{"type": "image"}, text("[Request interrupted by user]"), text("<pasted_content id=\"0a1b\">\n" + strings.Repeat("long text é ", 30) + "\n</pasted_content id=\"0a1b\">\n\nafter")})),
	}
	s = forkU(9008)
	out[s] = []string{row(s, 1, "user", forkU(801), nil, user("<bash-input>ls -la</bash-input>"), "isMeta", false)}
	return out
}

func TestForkMatchesSDKOnHandMadeSessions(t *testing.T) {
	p := peer.Find(t)
	start := time.Now()
	sdkCfg, ourCfg := t.TempDir(), t.TempDir()
	var cases []*forkCase
	var ids []string
	files := forkTranscripts()
	for id := range files {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		data := strings.Join(files[id], "\n") + "\n"
		for _, cfg := range []string{sdkCfg, ourCfg} {
			l := Layout{ConfigDir: cfg}
			forkWrite(t, MainFile(l.ProjectDir("/home/alice/src/shop"), id), data)
			if id == forkU(9004) || id == forkU(9005) {
				forkWrite(t, filepath.Join(l.ProjectDir("/home/alice/src/shop"), id, "custom-title.json"), `{"customTitle":"Side\u0000car  title "}`)
			}
		}
		cases = append(cases, &forkCase{name: id + "/whole", source: id})
		if len(files[id]) < 3 {
			continue
		}
		// Cut at every row (sidechain and progress rows, duplicates), at
		// queued commands' source_uuid, and at a uuid that is nowhere.
		seen := map[string]bool{}
		for _, ln := range files[id] {
			var r struct {
				UUID       *string `json:"uuid"`
				Attachment struct {
					Source string `json:"source_uuid"`
				} `json:"attachment"`
			}
			if json.Unmarshal([]byte(strings.TrimLeft(ln, "\t\x01 \uFEFF")), &r) != nil || r.UUID == nil || *r.UUID == "" {
				continue
			}
			for _, cut := range []string{*r.UUID, r.Attachment.Source} {
				if cut != "" && !seen[cut] {
					seen[cut] = true
					cases = append(cases, &forkCase{name: id + "/cut-" + cut, source: id, upTo: cut})
				}
			}
		}
		cases = append(cases, &forkCase{name: id + "/cut-nowhere", source: id, upTo: forkU(999999)},
			&forkCase{name: id + "/title", source: id, title: "\u00a0 Named \u2028"})
	}
	forkBatchCompare(t, p, sdkCfg, ourCfg, cases)
	failed := 0
	for _, c := range cases {
		if c.sdkErr != "" {
			failed++
		}
	}
	t.Logf("%d hand-made sessions, %d SDK/scribe fork pairs (%d refused by both) compared in %v",
		len(ids), len(cases), failed, time.Since(start).Round(time.Millisecond))
}
