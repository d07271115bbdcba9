package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
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
	out := map[string][]string{
		forkU(9001): hmRulesSession(forkU(9001)),
		forkU(9002): hmBranchesSession(forkU(9002)),
		forkU(9003): hmSplitSession(forkU(9003)),
	}
	hmTitleSessions(out)
	return out
}

// hmCwd is the working folder of the hand-made sessions.
const hmCwd = "/home/alice/src/shop"

// hmTS is the timestamp of the i-th row.
func hmTS(i int) string { return fmt.Sprintf("2026-01-10T11:%02d:%02d.%03dZ", i/60, i%60, i*7%1000) }

// hmRow is a conversation row of session sid in Claude Code's key order:
// the envelope around body, then tail.
func hmRow(sid string, i int, typ, id string, parent any, body []any, tail ...any) string {
	kv := []any{"parentUuid", parent, "isSidechain", false}
	kv = append(kv, "type", typ)
	kv = append(kv, body...)
	kv = append(kv, "uuid", id, "timestamp", hmTS(i), "userType", "external", "entrypoint", "cli", "cwd", hmCwd,
		"sessionId", sid, "version", "2.1.332", "gitBranch", "main")
	return forkJ(append(kv, tail...)...)
}

// hmUser is the body of a user row with content text.
func hmUser(text any) []any { return []any{"message", map[string]any{"role": "user", "content": text}} }

// hmAsst is the body of an assistant row of message msgID with content.
func hmAsst(msgID string, content ...any) []any {
	return []any{"message", json.RawMessage(forkJ("model", "claude-sonnet-4-5", "id", msgID, "type", "message", "role", "assistant",
		"content", content, "stop_reason", "end_turn", "stop_sequence", nil,
		"usage", json.RawMessage(`{"input_tokens":12,"output_tokens":34}`))), "requestId", "req_" + msgID}
}

// hmText is a text block.
func hmText(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// hmToolUse is a Bash tool_use block with the given id.
func hmToolUse(id string) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "ls"}}
}

// hmToolResult is the body of a user row answering tool call id.
func hmToolResult(id string) []any {
	return hmUser([]any{map[string]any{"tool_use_id": id, "type": "tool_result", "content": "ok"}})
}

// hmSystem is the body of a system row of subtype, then extra.
func hmSystem(subtype string, extra ...any) []any {
	return append([]any{"subtype", subtype, "content", "x", "isMeta", false}, extra...)
}

// hmRulesSession exercises every per-row rule and every kind of metadata.
func hmRulesSession(s string) []string {
	u := func(n int) string { return forkU(100 + n) }
	return []string{
		"\uFEFF" + forkJ("type", "session-owner", "accountUuid", "acct-1", "organizationUuid", "org-1", "restricted", []any{"ldr", "x"}),
		forkJ("type", "session-owner", "accountUuid", "acct-2", "restricted", []any{"ldr"}),
		forkJ("type", "hybrid-organization", "organizationUuid", "AAAAAAAA-0000-4000-8000-00000000000A"),
		forkJ("type", "hybrid-organization", "organizationUuid", "aaaaaaaa-0000-4000-8000-00000000000a"),
		forkJ("type", "hybrid-organization", "organizationUuid", "nope"),
		forkJ("type", "history-suppression", "sessionId", "someone-else"),
		forkJ("type", "data-flow-incomplete", "sessionId", s, "codes", []any{3, 300, "x", 3}),
		hmRow(s, 1, "user", u(1), nil, hmUser("Plan <b>the</b> café & work"), "slug", "s1", "sessionKind", "interactive", "promptId", "p1"),
		hmRow(s, 2, "progress", u(2), u(1), []any{"data", map[string]any{"type": "hook_progress"}, "toolUseID", "t", "parentToolUseID", "t"}),
		hmRow(s, 3, "assistant", u(3), u(2), hmAsst("msg_1", hmToolUse("toolu_1")), "agentName", "helper"),
		"\t\x01 " + hmRow(s, 4, "user", u(4), u(3), hmToolResult("toolu_1"), "toolUseResult", map[string]any{"stdout": "ok"},
			"sourceToolAssistantUUID", u(3), "requestSessionId", "zzz"),
		forkJ("type", "file-history-snapshot", "messageId", u(4), "snapshot", map[string]any{"messageId": u(4)}, "isSnapshotUpdate", false),
		forkJ("parentUuid", nil, "isSidechain", true, "agentId", "ag1", "type", "user", "message", map[string]any{"role": "user", "content": "side"},
			"uuid", u(5), "timestamp", hmTS(5), "sessionId", s),
		forkJ("parentUuid", u(5), "isSidechain", true, "agentId", "ag1", "type", "assistant", "message", map[string]any{"role": "assistant", "id": "msg_s", "content": []any{hmText("side reply")}},
			"uuid", u(6), "timestamp", hmTS(6), "sessionId", s),
		hmRow(s, 7, "user", u(7), u(6), hmUser("after the side chain"), "teamName", "team-a"),
		hmRow(s, 8, "assistant", u(8), u(7), hmAsst("msg_2", hmText("two")), "forkedFrom", map[string]any{"sessionId": "prev-session", "messageUuid": "m"}),
		strings.TrimSuffix(hmRow(s, 9, "assistant", u(9), u(8), hmAsst("msg_3", hmText("three")), "requestSessionId", "req-sess", "version", "2.1.0"), "}") + `,"version":"2.1.333","1":true}`,
		forkJ("type", "content-replacement", "sessionId", s, "replacements", []any{map[string]any{"kind": "tool-result", "toolUseId": "toolu_1", "replacement": "<persisted>"}, 5, []any{1}}),
		forkJ("type", "content-replacement", "sessionId", "someone-else", "replacements", []any{map[string]any{"kind": "other"}}),
		hmRow(s, 10, "system", u(10), u(9), hmSystem("model_refusal_fallback"), "level", "info"),
		hmRow(s, 11, "attachment", u(11), u(10), []any{"attachment", map[string]any{"type": "queued_command", "prompt": "also lint", "source_uuid": u(1)}}),
		hmRow(s, 12, "attachment", u(12), u(11), []any{"attachment", map[string]any{"type": "queued_command", "prompt": "later", "source_uuid": "not-a-row"}}),
		hmRow(s, 13, "system", u(13), u(12), hmSystem("voice_call_talk", "fold", map[string]any{"command": map[string]any{"type": "queued_command", "prompt": "hi", "source_uuid": u(3)}})),
		hmRow(s, 14, "attachment", u(14), u(13), []any{"attachment", json.RawMessage(forkJ("type", "deferred_tools_record", "nameOnlyAnnouncements", []any{u(1), "nope", u(2), 5}, "extra", 1))}),
		forkJ("type", "relocated", "sessionId", s, "relocatedCwd", "/new/place"),
		forkJ("type", "relocated", "sessionId", "someone-else", "relocatedCwd", "/other"),
		forkJ("type", "tools-used", "sessionId", s, "tools", []any{"Bash", "", 3, "Read"}),
		forkJ("type", "atis-latch", "sessionId", s, "atis", "abc"),
		forkJ("type", "atis-latch", "sessionId", s, "atis", "a b"),
		hmRow(s, 15, "system", u(15), nil, hmSystem("compact_boundary", "level", "info", "compactMetadata",
			json.RawMessage(forkJ("trigger", "auto", "preTokens", 100, "preservedSegment", map[string]any{"headUuid": u(8), "anchorUuid": u(16), "tailUuid": u(9)},
				"runningTurnSends", []any{1}, "postTokens", 5))), "logicalParentUuid", u(14)),
		hmRow(s, 16, "user", u(16), u(15), hmUser("Summary of the work so far"), "isVisibleInTranscriptOnly", true, "isCompactSummary", true),
		strings.Replace(hmRow(s, 17, "user", u(17), u(16), hmUser("go on"), "logicalParentUuid", "00000000-0000-4000-8000-999999999999"), `"timestamp":"`+hmTS(17)+`",`, "", 1),
		hmRow(s, 18, "system", u(18), u(17), hmSystem("compact_boundary", "level", "info", "compactMetadata",
			json.RawMessage(forkJ("trigger", "manual", "preservedMessages", map[string]any{"anchorUuid": u(17), "uuids": []any{u(3), u(4)}, "allUuids": []any{u(3), u(4), u(2)}}))), "logicalParentUuid", nil),
		hmRow(s, 19, "user", "", u(18), hmUser("empty uuid")),
		hmRow(s, 20, "assistant", u(20), u(18), hmAsst("msg_4", hmText("four"))),
		forkJ("type", "derived-from", "v", 1, "sessionId", s, "sessions", []any{
			map[string]any{"type": "claude_code_session", "id": "prev-session", "via": "resume", "started": "2026-01-01T00:00:00Z"},
			map[string]any{"type": "unknown", "id": nil, "via": "cloud"},
			map[string]any{"type": "bogus", "id": "x", "via": "fork"}}),
		strings.Replace(hmRow(s, 21, "user", u(21), u(20), hmUser("café")), "caf\u00e9", "caf\xe9", 1),
		hmRow(s, 22, "user", u(22), 5, hmUser("numeric parent")),
		hmRow(s, 17, "user", u(17), u(16), hmUser("go on, again")),
		hmRow(s, 23, "assistant", u(23), u(22), hmAsst("msg_5", hmText("five"))),
		"[1,2]", "null", "garbage{", "",
		forkJ("type", "tag", "tag", "t1", "sessionId", s),
		forkJ("type", "last-prompt", "lastPrompt", "five", "sessionId", s),
		forkJ("type", "summary", "summary", "old", "leafUuid", u(23)),
		forkJ("type", "queue-operation", "operation", "enqueue", "timestamp", hmTS(30), "sessionId", s, "content", "x"),
		forkJ("type", "permission-mode", "permissionMode", "default", "sessionId", s),
		forkJ("type", "ai-title", "aiTitle", "AI title", "sessionId", s),
		forkJ("type", "custom-title", "customTitle", "Rules session", "sessionId", s),
	}
}

// hmBranchesSession has compaction and rewinds, for the cut rules.
func hmBranchesSession(s string) []string {
	b := func(n int) string { return forkU(200 + n) }
	return []string{
		hmRow(s, 1, "user", b(1), nil, hmUser("start")),
		hmRow(s, 2, "assistant", b(2), b(1), hmAsst("m1", hmText("a1"))),
		hmRow(s, 3, "system", b(3), nil, hmSystem("compact_boundary", "compactMetadata", map[string]any{"trigger": "auto", "preTokens": 1}), "logicalParentUuid", b(2)),
		hmRow(s, 4, "user", b(4), b(3), hmUser("summary one"), "isCompactSummary", true),
		hmRow(s, 5, "user", b(5), b(4), hmUser("two")),
		hmRow(s, 6, "assistant", b(6), b(5), hmAsst("m2", hmText("a2"))),
		hmRow(s, 7, "user", b(7), b(2), hmUser("rewound two")),
		hmRow(s, 8, "assistant", b(8), b(7), hmAsst("m3", hmText("a2b"))),
		hmRow(s, 9, "progress", b(9), b(8), []any{"data", map[string]any{"type": "bash_progress"}}),
		hmRow(s, 10, "system", b(10), nil, hmSystem("compact_boundary", "compactMetadata", json.RawMessage(forkJ("trigger", "auto",
			"preservedSegment", map[string]any{"headUuid": b(7), "anchorUuid": b(11), "tailUuid": b(8)}))), "logicalParentUuid", b(9)),
		hmRow(s, 11, "user", b(11), b(10), hmUser("summary two"), "isCompactSummary", true),
		hmRow(s, 12, "user", b(12), b(11), hmUser("three")),
		hmRow(s, 13, "assistant", b(13), b(12), hmAsst("m4", hmText("a3"))),
		hmRow(s, 14, "system", b(14), b(13), hmSystem("compact_boundary", "compactMetadata", json.RawMessage(forkJ("trigger", "auto", "durationMs", 0,
			"preservedMessages", map[string]any{"anchorUuid": b(14), "uuids": []any{b(12)}})))),
		hmRow(s, 15, "user", b(15), b(14), hmUser("four")),
		hmRow(s, 16, "assistant", b(16), b(15), hmAsst("m5", hmText("a4"))),
		hmRow(s, 17, "system", b(17), nil, hmSystem("compact_boundary", "compactMetadata", json.RawMessage(forkJ("trigger", "manual",
			"preservedMessages", map[string]any{"anchorUuid": b(16), "uuids": []any{b(15), b(16)}}, "postTokens", 3))), "logicalParentUuid", b(16)),
		hmRow(s, 18, "progress", b(18), b(17), []any{"data", map[string]any{"type": "bash_progress"}}),
		hmRow(s, 19, "user", b(19), b(6), hmUser("back on the first branch")),
		hmRow(s, 20, "progress", b(20), b(19), []any{"data", map[string]any{"type": "bash_progress"}}),
	}
}

// hmSplitSession has one assistant message written as several rows (older
// CLIs).
func hmSplitSession(s string) []string {
	c := func(n int) string { return forkU(300 + n) }
	return []string{
		hmRow(s, 1, "user", c(1), nil, hmUser("split please")),
		hmRow(s, 2, "assistant", c(2), c(1), hmAsst("msg_x", hmText("thinking"))),
		hmRow(s, 3, "assistant", c(3), c(2), hmAsst("msg_x", hmToolUse("toolu_a"))),
		hmRow(s, 5, "assistant", c(4), c(2), hmAsst("msg_x", hmToolUse("toolu_b"))),
		hmRow(s, 4, "user", c(5), c(3), hmToolResult("toolu_a"), "sourceToolAssistantUUID", c(3)),
		hmRow(s, 6, "user", c(6), c(4), hmToolResult("toolu_b"), "sourceToolAssistantUUID", c(4)),
		hmRow(s, 7, "assistant", c(7), c(5), hmAsst("msg_y", hmText("done"))),
		hmRow(s, 8, "user", c(8), c(7), hmUser("thanks")),
	}
}

// hmTitleSessions adds the sessions for titles to out: the sidecar, an
// empty custom title, plugin prompts, pasted content, commands, bash input,
// long prompts, no timestamp at the end.
func hmTitleSessions(out map[string][]string) {
	s := forkU(9004)
	out[s] = []string{strings.Replace(hmRow(s, 1, "user", forkU(401), nil, hmUser("only row")), `"timestamp":"`+hmTS(1)+`",`, "", 1)}
	s = forkU(9005)
	out[s] = []string{
		forkJ("type", "ai-title", "aiTitle", "An AI title", "sessionId", s),
		hmRow(s, 1, "user", forkU(501), nil, hmUser("hello")),
		forkJ("type", "custom-title", "customTitle", "", "sessionId", s),
	}
	s = forkU(9006)
	out[s] = []string{
		hmRow(s, 1, "user", forkU(601), nil, hmUser("<command-name>/init</command-name>")),
		hmRow(s, 2, "user", forkU(602), forkU(601), hmUser("The foo plugin sent a message:\nDo the thing\n"), "pluginPrompt", map[string]any{"text": "Do the thing"}),
	}
	s = forkU(9009)
	out[s] = []string{
		hmRow(s, 1, "user", forkU(901), nil, hmUser("The foo plugin sent a message:\nDo the thing"+"\n\nThis is how Claude Code surfaces a prompt a plugin submits between turns \u2014 it starts this turn in the user's place. Address the message above."), "pluginPrompt", map[string]any{"text": "Do the thing"}),
	}
	s = forkU(9007)
	out[s] = []string{
		hmRow(s, 1, "user", forkU(701), nil, hmUser([]any{map[string]any{"type": "image"}, hmText("[Request interrupted by user]"), hmText("<pasted_content id=\"0a1b\">\n" + strings.Repeat("long text é ", 30) + "\n</pasted_content id=\"0a1b\">\n\nafter")})),
	}
	s = forkU(9008)
	out[s] = []string{hmRow(s, 1, "user", forkU(801), nil, hmUser("<bash-input>ls -la</bash-input>"), "isMeta", false)}
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
			l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
			forkWrite(t, claudedir.MainFile(l.ProjectDir("/home/alice/src/shop"), id), data)
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
