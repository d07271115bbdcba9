package jsonltest

import (
	"bytes"
	"encoding/json"
	"fmt"
)

type randTranscript struct {
	rng   *mrand
	uuids []string
	tools []string
	msgs  []string
	lines []string
	ts    int
}

// mrand is a tiny deterministic generator (xorshift), so the corpus does
// not depend on math/rand's stream.
type mrand struct{ s uint64 }

func (r *mrand) next() uint64 {
	r.s ^= r.s << 13
	r.s ^= r.s >> 7
	r.s ^= r.s << 17
	return r.s
}
func (r *mrand) n(k int) int            { return int(r.next() % uint64(k)) }
func (r *mrand) p(percent int) bool     { return r.n(100) < percent }
func (r *mrand) pick(s []string) string { return s[r.n(len(s))] }

func (g *randTranscript) uuid() string {
	if len(g.uuids) > 0 && g.rng.p(5) {
		return g.rng.pick(g.uuids) // a duplicate uuid
	}
	u := fmt.Sprintf("%08x-0000-4000-8000-%012x", g.rng.next()&0xffffffff, len(g.uuids))
	g.uuids = append(g.uuids, u)
	return u
}

func (g *randTranscript) some() string {
	if len(g.uuids) == 0 || g.rng.p(10) {
		return fmt.Sprintf("ffffffff-0000-4000-8000-%012x", g.rng.n(1000)) // missing
	}
	return g.rng.pick(g.uuids)
}

func (g *randTranscript) tool() string {
	if len(g.tools) == 0 || g.rng.p(40) {
		g.tools = append(g.tools, fmt.Sprintf("toolu_%03d", len(g.tools)))
	}
	return g.rng.pick(g.tools)
}

func (g *randTranscript) timestamp() any {
	switch {
	case g.rng.p(3):
		return nil
	case g.rng.p(10):
		// keep the same time
	default:
		g.ts += g.rng.n(3)
	}
	return fmt.Sprintf("2026-01-10T11:%02d:%02d.000Z", (g.ts/60)%60, g.ts%60)
}

var randTexts = []string{
	"hello", "<command-name>/init</command-name>", "<local-command-stdout>ok</local-command-stdout>",
	"<local-command-stderr>bad</local-command-stderr>", "<local-command-caveat>Caveat: local</local-command-caveat>",
	"[Request interrupted by user]", "[Request interrupted by user for tool use]", "No response requested.", "",
}

func (g *randTranscript) userContent() any {
	if g.rng.p(40) {
		return g.rng.pick(randTexts)
	}
	var blocks []any
	for i := 0; i <= g.rng.n(3); i++ {
		switch g.rng.n(4) {
		case 0:
			blocks = append(blocks, map[string]any{"type": "text", "text": g.rng.pick(randTexts)})
		default:
			b := map[string]any{"type": "tool_result", "tool_use_id": g.tool(), "content": g.rng.pick(randTexts)}
			if g.rng.p(30) {
				b["is_error"] = true
			}
			blocks = append(blocks, b)
		}
	}
	return blocks
}

func (g *randTranscript) assistantMessage() map[string]any {
	if len(g.msgs) == 0 || g.rng.p(50) {
		g.msgs = append(g.msgs, fmt.Sprintf("msg_%03d", len(g.msgs)))
	}
	var blocks []any
	for i := 0; i <= g.rng.n(2); i++ {
		if g.rng.p(50) {
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": g.tool(), "name": "Bash", "input": map[string]any{}})
		} else {
			blocks = append(blocks, map[string]any{"type": "text", "text": g.rng.pick(randTexts)})
		}
	}
	m := map[string]any{"role": "assistant", "content": blocks, "type": "message"}
	if !g.rng.p(5) {
		m["id"] = g.rng.pick(g.msgs)
	}
	return m
}

var randOrigins = []any{
	map[string]any{"kind": "human"}, map[string]any{"kind": "channel"}, map[string]any{"kind": "peer"},
	map[string]any{"kind": "task-notification", "runId": "run:1", "extra": 1, "subkind": "x"},
	map[string]any{"kind": "task-notification", "taskKind": "mcp-task", "runId": "bad id"}, "str", 0, nil,
	// SDK 0.3.337's task-notification fields and plugin origins.
	map[string]any{"kind": "task-notification", "failure": map[string]any{"message": "m", "details": "d", "x": 1},
		"turnLimit": map[string]any{"turns": 3, "note": "n"}, "noReportNote": "none"},
	map[string]any{"kind": "task-notification", "failure": map[string]any{"message": "m"}, "turnLimit": map[string]any{"turns": 2.5, "note": "n"},
		"noReportNote": 1},
	map[string]any{"kind": "plugin", "name": "lint-bot"}, map[string]any{"kind": "plugin", "name": "bad name", "asUser": true},
}

// randRefusals are SDK 0.3.337's refusal fields of a tool_result row, one
// set per draw.
var randRefusals = []map[string]any{
	{"permissionDecision": map[string]any{"decision": "reject", "reasonType": "hook"}},
	{"permissionDecision": map[string]any{"decision": "reject", "reasonType": "mode", "reasonCode": "mode:dontAsk"}, "toolDenialAfterRun": true},
	{"permissionDecision": map[string]any{"decision": "reject", "reasonType": "rule"}, "toolDenialFromHost": 1},
	{"permissionDecision": map[string]any{"decision": "reject", "reasonType": "subcommandResults", "ruleSource": "x"}},
	{"toolResultRemedy": map[string]any{"kind": "advice_to_claude", "long_sleep": true}},
	{"toolResultRemedy": map[string]any{"kind": "check_failed", "check_failure": "other"}},
	{"toolResultFileRefusal": map[string]any{"reason": "text_repeated", "matches": 2}},
	{"toolResultFileRefusal": map[string]any{"reason": "path_not_found", "suggestion": "a"}},
	{"toolInputInvalid": true},
	{"executedInput": map[string]any{"sources": []any{"permission-answer"}}},
}

func (g *randTranscript) row(sidechain bool) map[string]any {
	r := map[string]any{"sessionId": "s", "uuid": g.uuid()}
	if ts := g.timestamp(); ts != nil {
		r["timestamp"] = ts
	}
	switch x := g.rng.n(100); {
	case x < 8:
		r["parentUuid"] = nil
	case x < 10:
	case x < 65 && len(g.uuids) > 1:
		r["parentUuid"] = g.uuids[len(g.uuids)-2]
	default:
		r["parentUuid"] = g.some()
	}
	if sidechain || g.rng.p(4) {
		r["isSidechain"] = true
		r["agentId"] = "a1"
	}
	if g.rng.p(3) {
		r["teamName"] = "t"
	}
	if g.rng.p(10) {
		r["isMeta"] = true
	}
	if g.rng.p(4) {
		r["origin"] = randOrigins[g.rng.n(len(randOrigins))]
	}
	switch t := g.rng.n(100); {
	case t < 35:
		g.userRow(r)
	case t < 65:
		g.assistantRow(r)
	case t < 75:
		r["type"] = "progress"
		r["data"] = map[string]any{"type": "bash_progress"}
	case t < 87:
		g.systemRow(r)
	default:
		g.attachmentRow(r)
	}
	return r
}

// userRow fills r as a user row.
func (g *randTranscript) userRow(r map[string]any) {
	r["type"] = "user"
	r["message"] = map[string]any{"role": "user", "content": g.userContent()}
	if g.rng.p(15) {
		r["sourceToolAssistantUUID"] = g.some()
	}
	if g.rng.p(5) {
		r["isCompactSummary"] = true
	}
	if g.rng.p(3) {
		r["isVisibleInTranscriptOnly"] = true
	}
	if g.rng.p(3) {
		r["promptSource"] = "x"
	}
	if g.rng.p(5) {
		r["toolDenialKind"] = g.rng.pick([]string{"interrupted", "user-rejected", "other", "cancelled", "automode-blocked"})
	}
	if g.rng.p(8) {
		for k, v := range randRefusals[g.rng.n(len(randRefusals))] {
			r[k] = v
		}
	}
	if g.rng.p(3) {
		r["resultEndsInWaitingNote"] = true
	}
	if g.rng.p(3) {
		r["noCommandRan"] = true
	}
	if g.rng.p(3) {
		r["toolCallEnded"] = "not_started"
	}
	if g.rng.p(3) {
		r["toolResultRewritten"] = 1
	}
	if g.rng.p(3) {
		r["toolDenialUnanswered"] = "stream-closed"
	}
	if g.rng.p(3) {
		r["interruptedByShutdown"] = true
	}
}

// assistantRow fills r as an assistant row.
func (g *randTranscript) assistantRow(r map[string]any) {
	r["type"] = "assistant"
	r["message"] = g.assistantMessage()
	if g.rng.p(4) {
		r["closesQuietTurn"] = true
		r["message"] = map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": g.rng.pick([]string{"", "No response requested.", "x"})}}}
	}
	if g.rng.p(4) {
		r["hostHiddenToolUseIds"] = []any{g.tool(), g.tool()}
		if g.rng.p(50) {
			r["hostContent"] = []any{map[string]any{"type": "tool_use", "id": g.tool(), "name": "Bash"}}
		}
	}
	if g.rng.p(3) {
		r["ranByToolUseId"] = g.tool()
		r["isVirtual"] = g.rng.p(50)
	}
	if g.rng.p(4) {
		r["namesPlanFile"] = g.rng.pick([]string{"in_project", "in_default_directory", "other"})
	}
}

// systemRow fills r as a system row (a compact boundary, a voice call or information).
func (g *randTranscript) systemRow(r map[string]any) {
	r["type"] = "system"
	if g.rng.p(50) {
		r["subtype"] = "compact_boundary"
		switch g.rng.n(4) {
		case 0:
			r["compactMetadata"] = map[string]any{"preservedSegment": map[string]any{"headUuid": g.some(), "anchorUuid": g.some(), "tailUuid": g.some()}}
		case 1:
			var us []any
			for i := 0; i <= g.rng.n(3); i++ {
				us = append(us, g.some())
			}
			r["compactMetadata"] = map[string]any{"preservedMessages": map[string]any{"anchorUuid": g.some(), "uuids": us}}
		default:
			r["compactMetadata"] = map[string]any{"trigger": "auto"}
		}
	} else if g.rng.p(20) {
		r["subtype"] = "voice_call_talk"
		r["content"] = "spoken"
		r["origin"] = map[string]any{"kind": "voice-call"}
		if g.rng.p(50) {
			r["fold"] = map[string]any{"command": map[string]any{"source_uuid": g.some()}, "isMeta": g.rng.p(50)}
		}
	} else {
		r["subtype"] = "informational"
		r["content"] = "info"
	}
}

// attachmentRow fills r as an attachment row.
func (g *randTranscript) attachmentRow(r map[string]any) {
	r["type"] = "attachment"
	a := map[string]any{"type": g.rng.pick([]string{"queued_command", "queued_command", "fork_briefing", "hook_success"})}
	if g.rng.p(80) {
		a["prompt"] = g.rng.pick([]string{"queued text", "<command-name>/x</command-name>"})
	} else {
		a["prompt"] = []any{map[string]any{"type": "text", "text": "q"}}
	}
	if g.rng.p(30) {
		a["source_uuid"] = g.some()
	}
	if g.rng.p(20) {
		a["delivery_id"] = fmt.Sprintf("d%d", g.rng.n(3))
	}
	if g.rng.p(20) {
		a["isMeta"] = true
	}
	if g.rng.p(15) {
		a["origin"] = randOrigins[g.rng.n(len(randOrigins))]
	}
	if g.rng.p(10) {
		a["commandMode"] = "task-notification"
		a["runId"] = "r1"
	}
	if g.rng.p(5) {
		a["forwardedIntent"] = map[string]any{"lineage": "l"}
	}
	if g.rng.p(5) {
		a["resultEndsInWaitingNote"] = true
	}
	if g.rng.p(12) {
		a["origin"] = map[string]any{"kind": "plugin", "name": g.rng.pick([]string{"lint-bot@1", "bad name", ""})}
	}
	r["attachment"] = a
}

func (g *randTranscript) metadata() map[string]any {
	switch g.rng.n(4) {
	case 0:
		m := map[string]any{"type": "queue-operation", "operation": "remove", "reason": "absorbed_mid_turn"}
		if g.rng.p(50) {
			m["deliveryId"] = fmt.Sprintf("d%d", g.rng.n(3))
		} else {
			m["commandUuid"] = g.some()
		}
		return m
	case 1:
		m := map[string]any{"type": "host-row", "ranByToolUseId": g.tool(), "rowUuid": fmt.Sprintf("eeeeeeee-0000-4000-8000-%012x", g.rng.n(50))}
		if g.rng.p(50) {
			m["block"] = map[string]any{"type": "tool_use", "id": g.tool(), "name": "Bash"}
		} else {
			m["block"] = map[string]any{"type": "tool_result", "tool_use_id": g.tool(), "content": "r"}
		}
		if g.rng.p(10) {
			m["withheld"] = true
		}
		if g.rng.p(50) {
			m["timestamp"] = "2026-01-10T11:00:00.000Z"
		}
		return m
	default:
		return map[string]any{"type": "summary", "summary": "s", "leafUuid": g.some()}
	}
}

// script returns a few linked rows that random rows rarely form.
func (g *randTranscript) script() []map[string]any {
	last := func() any {
		if len(g.uuids) == 0 {
			return nil
		}
		return g.uuids[len(g.uuids)-1]
	}
	user := func(parent any, text string, meta bool) map[string]any {
		r := map[string]any{"type": "user", "sessionId": "s", "parentUuid": parent, "timestamp": g.timestamp(),
			"message": map[string]any{"role": "user", "content": text}}
		if meta {
			r["isMeta"] = true
		}
		r["uuid"] = g.uuid()
		return r
	}
	switch g.rng.n(3) {
	case 0: // a local command: caveat, command, output
		a := user(last(), "<local-command-caveat>Caveat</local-command-caveat>", true)
		b := user(a["uuid"], "<command-name>/model</command-name>", false)
		c := user(b["uuid"], "<local-command-stdout>Set model</local-command-stdout>", g.rng.p(20))
		return []map[string]any{a, b, c}
	case 1: // queued commands fanning out below a progress row
		p := map[string]any{"type": "progress", "sessionId": "s", "parentUuid": last(), "uuid": g.uuid(), "timestamp": g.timestamp()}
		out := []map[string]any{p}
		for i := 0; i <= g.rng.n(3); i++ {
			a := map[string]any{"type": "attachment", "sessionId": "s", "parentUuid": p["uuid"], "uuid": g.uuid(),
				"timestamp":  fmt.Sprintf("2026-01-10T10:00:%02d.000Z", g.rng.n(5)),
				"attachment": map[string]any{"type": "queued_command", "prompt": fmt.Sprintf("q%d", i)}}
			out = append(out, a)
		}
		return out
	default: // a branch of meta rows only, and a fresh root
		a := user(nil, "meta root", true)
		b := user(a["uuid"], "meta child", true)
		return []map[string]any{a, b}
	}
}

// RandomTranscript is a made-up transcript of rows, metadata, damaged lines
// and blank lines, the same for the same seed (sidechain: a subagent's).
func RandomTranscript(seed uint64, sidechain bool) []byte {
	g := &randTranscript{rng: &mrand{s: seed*0x9E3779B97F4A7C15 + 1}}
	var b bytes.Buffer
	n := 3 + g.rng.n(50)
	var pending []map[string]any
	for i := 0; i < n || len(pending) > 0; i++ {
		var v map[string]any
		switch {
		case len(pending) > 0:
			v, pending = pending[0], pending[1:]
		case g.rng.p(10):
			v = g.metadata()
		case g.rng.p(6):
			pending = g.script()
			continue
		default:
			v = g.row(sidechain)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		switch {
		case g.rng.p(2):
			b.WriteString("{not json\n")
		case g.rng.p(2):
			b.WriteString("\n")
		case g.rng.p(2):
			b.WriteString(" \t")
		}
		b.Write(raw)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
