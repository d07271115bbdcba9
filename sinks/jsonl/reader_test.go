package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/gen"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testenv"
	"github.com/e0dc0000/scribe/transcript"
)

// ---------------------------------------------------------------------------
// Comparison helpers

// decodeAll decodes each JSON value; the comparison is on decoded values,
// so key order and number spelling do not matter.
func decodeAll(t *testing.T, raws []json.RawMessage) []any {
	t.Helper()
	out := make([]any, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatalf("decode %s: %v", r, err)
		}
	}
	return out
}

func encodeMsgs(t *testing.T, msgs []SessionMessage) []json.RawMessage {
	t.Helper()
	out := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("encode message %d: %v", i, err)
		}
		out[i] = b
	}
	return out
}

// sameMessages compares scribe's messages with the SDK's, element by
// element, and fails with the first difference.
func sameMessages(t *testing.T, what string, got []SessionMessage, want []json.RawMessage) {
	t.Helper()
	g := decodeAll(t, encodeMsgs(t, got))
	w := decodeAll(t, want)
	for i := 0; i < len(g) || i < len(w); i++ {
		switch {
		case i >= len(g):
			t.Errorf("%s: scribe has %d messages, the SDK %d; first missing: %.400s", what, len(g), len(w), want[i])
			return
		case i >= len(w):
			gb, _ := json.Marshal(got[i])
			t.Errorf("%s: scribe has %d messages, the SDK %d; first extra: %.400s", what, len(g), len(w), gb)
			return
		case !reflect.DeepEqual(g[i], w[i]):
			gb, _ := json.Marshal(got[i])
			t.Errorf("%s: message %d differs\nscribe: %.600s\nSDK:    %.600s", what, i, gb, want[i])
			return
		}
	}
}

// withoutSystem is the SDK's includeSystemMessages:false answer derived from
// its includeSystemMessages:true answer: the output filter is the only step
// that looks at the flag, and system rows have no message for the later
// steps to change.
func withoutSystem(t *testing.T, msgs []json.RawMessage) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, m := range msgs {
		var v struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(m, &v); err != nil {
			t.Fatal(err)
		}
		if v.Type != "system" {
			out = append(out, m)
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// A batch driver for the SDK: one node process answers many queries, so the
// corpus comparison does not pay the SDK's start-up per file.

type sdkQuery struct {
	Op      string `json:"op"` // messages | subagents | subagentMessages
	Session string `json:"session"`
	Agent   string `json:"agent,omitempty"`
	Dir     string `json:"dir,omitempty"`
	System  bool   `json:"system,omitempty"`
	Limit   int    `json:"limit,omitempty"`
	Offset  int    `json:"offset,omitempty"`
}

const sdkBatchScript = `
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
const sdk = await import(pathToFileURL(process.env.SCRIBE_SDK_MJS).href);
const qs = JSON.parse(fs.readFileSync(process.env.SCRIBE_SDK_QUERIES, 'utf8'));
const out = [];
for (const q of qs) {
  const o = {};
  if (q.dir) o.dir = q.dir;
  if (q.limit) o.limit = q.limit;
  if (q.offset) o.offset = q.offset;
  try {
    if (q.op === 'messages') {
      if (q.system) o.includeSystemMessages = true;
      out.push({ ok: await sdk.getSessionMessages(q.session, o) });
    } else if (q.op === 'subagents') {
      out.push({ ok: await sdk.listSubagents(q.session, o) });
    } else {
      out.push({ ok: await sdk.getSubagentMessages(q.session, q.agent, o) });
    }
  } catch (e) {
    out.push({ err: String(e) });
  }
}
process.stdout.write(JSON.stringify(out));
`

type sdkAnswer struct {
	OK  json.RawMessage `json:"ok"`
	Err string          `json:"err"`
}

func sdkBatch(t *testing.T, p *peer.Peer, configDir string, qs []sdkQuery) []sdkAnswer {
	t.Helper()
	in, err := json.Marshal(qs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Node, "--input-type=module", "-e", sdkBatchScript)
	cmd.Dir = p.Dir
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
			"NODE_OPTIONS", "CLAUDE_CODE_PROJECT_DIR_NAME", "CLAUDE_CODE_DISABLE_PRECOMPACT_SKIP":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	qfile := filepath.Join(t.TempDir(), "queries.json")
	if err := os.WriteFile(qfile, in, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(cmd.Env, "CLAUDE_CONFIG_DIR="+configDir, "SCRIBE_SDK_MJS="+filepath.Join(p.SDKDir, "sdk.mjs"),
		"SCRIBE_SDK_QUERIES="+qfile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sdk batch: %v\n%s", err, stderr.String())
	}
	var out []sdkAnswer
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out) != len(qs) {
		t.Fatalf("sdk batch: decode %d answers for %d queries: %v", len(out), len(qs), err)
	}
	for i, a := range out {
		if a.Err != "" {
			t.Fatalf("sdk batch: query %+v failed: %s", qs[i], a.Err)
		}
	}
	return out
}

func rawList(t *testing.T, raw json.RawMessage) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("decode SDK list: %v: %.300s", err, raw)
	}
	return out
}

// messagesOrEmpty is Layout.Messages with "not found" as the SDK's [].
func messagesOrEmpty(t *testing.T, l Layout, id, dir string, opt MessagesOptions) ([]SessionMessage, *MessagesReport) {
	t.Helper()
	msgs, rep, err := l.Messages(context.Background(), id, dir, opt)
	if err != nil && !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("Messages(%s, %q): %v", id, dir, err)
	}
	return msgs, rep
}

func subagentMessagesOrEmpty(t *testing.T, l Layout, id, agent, dir string) []SessionMessage {
	t.Helper()
	msgs, _, err := l.SubagentMessages(context.Background(), id, agent, dir, MessagesOptions{})
	if err != nil && !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("SubagentMessages(%s, %s): %v", id, agent, err)
	}
	return msgs
}

func subagentsOrEmpty(t *testing.T, l Layout, id, dir string) []string {
	t.Helper()
	ids, err := l.Subagents(context.Background(), id, dir)
	if err != nil && !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("Subagents(%s): %v", id, err)
	}
	if ids == nil {
		ids = []string{}
	}
	return ids
}

// ---------------------------------------------------------------------------
// Compatibility with the SDK

func TestMessagesMatchSDKOnFixture(t *testing.T) {
	p := peer.Find(t)
	cfg := t.TempDir()
	cwd := filepath.Join(t.TempDir(), "shop")
	ids := p.GenFixture(t, cfg, cwd)
	l := Layout{ConfigDir: cfg}
	var sessions []string
	for role, id := range ids {
		if role != "projectDir" && role != "subagentId" {
			sessions = append(sessions, id)
		}
	}
	sort.Strings(sessions)
	if len(sessions) < 6 {
		t.Fatalf("fixture has %d sessions: %v", len(sessions), ids)
	}
	for _, id := range sessions {
		for _, system := range []bool{false, true} {
			want := p.Messages(t, cfg, id, cwd, system)
			got, _ := messagesOrEmpty(t, l, id, cwd, MessagesOptions{IncludeSystem: system})
			sameMessages(t, fmt.Sprintf("%s system=%v", id, system), got, want)
		}
		// Without a project folder: the first one that has the session.
		got, _ := messagesOrEmpty(t, l, id, "", MessagesOptions{})
		sameMessages(t, id+" dir=\"\"", got, p.Messages(t, cfg, id, "", false))

		wantIDs := p.Subagents(t, cfg, id, cwd)
		if wantIDs == nil {
			wantIDs = []string{}
		}
		if gotIDs := subagentsOrEmpty(t, l, id, cwd); !reflect.DeepEqual(gotIDs, wantIDs) {
			t.Errorf("%s: subagents %v, SDK %v", id, gotIDs, wantIDs)
		}
		for _, a := range wantIDs {
			sameMessages(t, id+"/"+a, subagentMessagesOrEmpty(t, l, id, a, cwd), p.SubagentMessages(t, cfg, id, a, cwd))
		}
	}
	// The branched, compacted and sidechain-only sessions are the ones that
	// exercise the rebuild; make sure they gave what the reference says.
	if msgs, _ := messagesOrEmpty(t, l, ids["sidechainOnly"], cwd, MessagesOptions{}); len(msgs) != 0 {
		t.Errorf("sidechain-only session: %d messages, want 0", len(msgs))
	}
	if msgs, _ := messagesOrEmpty(t, l, ids["withCompactBoundary"], cwd, MessagesOptions{}); len(msgs) == 0 || !msgs[0].IsCompactSummary {
		t.Errorf("compacted session: first message is not the compact summary: %+v", msgs)
	}
	// limit / offset.
	id := ids["withSummaryAndSubagent"]
	all, _ := messagesOrEmpty(t, l, id, cwd, MessagesOptions{})
	page, _ := messagesOrEmpty(t, l, id, cwd, MessagesOptions{Limit: 2, Offset: 1})
	if len(all) < 3 || len(page) != 2 || page[0].UUID != all[1].UUID {
		t.Errorf("limit 2 offset 1: got %d messages of %d", len(page), len(all))
	}
}

// corpusSession is one transcript of the corpus laid out in a config dir.
type corpusSession struct {
	id, cwd string
	agents  []string
}

// layCorpus copies every Claude Code transcript of testdata/corpus/real into
// a config dir in Claude Code's layout: main files (UUID names) into
// projects/<sanitized first cwd>/, agent files into
// <sessionId>/subagents/ (with their .meta.json). Files with no
// "sessionId" key anywhere (Codex rollouts) and files with other names are
// skipped and counted.
func layCorpus(t *testing.T, cfg string) (sessions map[string]*corpusSession, codex, other int) {
	t.Helper()
	root := filepath.Join(testenv.RepoRoot(t), "testdata", "corpus", "real")
	sessions = map[string]*corpusSession{}
	agentRE := regexp.MustCompile(`^agent-(.+)\.jsonl$`)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Contains(raw, []byte(`"sessionId"`)) {
			codex++
			return nil
		}
		sid, cwd := firstField(raw, "sessionId"), firstField(raw, "cwd")
		name := filepath.Base(path)
		base := strings.TrimSuffix(name, ".jsonl")
		var dst string
		switch m := agentRE.FindStringSubmatch(name); {
		case IsSessionID(base):
			dst = filepath.Join(cfg, "projects", SanitizePath(cwd), name)
			s := sessions[base]
			if s == nil {
				s = &corpusSession{id: base}
				sessions[base] = s
			}
			s.cwd = cwd
		case m != nil && IsSessionID(sid):
			dst = filepath.Join(cfg, "projects", SanitizePath(cwd), sid, "subagents", name)
			s := sessions[sid]
			if s == nil {
				s = &corpusSession{id: sid, cwd: cwd}
				sessions[sid] = s
			}
			s.agents = append(s.agents, m[1])
			if meta, err := os.ReadFile(strings.TrimSuffix(path, ".jsonl") + ".meta.json"); err == nil {
				if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
					return err
				}
				if err := os.WriteFile(strings.TrimSuffix(dst, ".jsonl")+".meta.json", meta, 0o600); err != nil {
					return err
				}
			}
		default:
			other++
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		return os.WriteFile(dst, raw, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return sessions, codex, other
}

// firstField returns the first string value of key in the file's lines.
func firstField(raw []byte, key string) string {
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if !bytes.Contains(line, []byte(`"`+key+`"`)) {
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		var s string
		if json.Unmarshal(m[key], &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

func TestMessagesMatchSDKOnRealCorpus(t *testing.T) {
	p := peer.Find(t)
	cfg := t.TempDir()
	sessions, codex, other := layCorpus(t, cfg)
	l := Layout{ConfigDir: cfg}
	var ids []string
	for id := range sessions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var qs []sdkQuery
	for _, id := range ids {
		s := sessions[id]
		qs = append(qs, sdkQuery{Op: "messages", Session: id, Dir: s.cwd, System: true},
			sdkQuery{Op: "messages", Session: id},
			sdkQuery{Op: "subagents", Session: id, Dir: s.cwd})
		for _, a := range s.agents {
			qs = append(qs, sdkQuery{Op: "subagentMessages", Session: id, Agent: a, Dir: s.cwd})
		}
	}
	ans := sdkBatch(t, p, cfg, qs)
	mains, agents, msgs := 0, 0, 0
	for i, q := range qs {
		want := ans[i].OK
		switch q.Op {
		case "messages":
			got, _ := messagesOrEmpty(t, l, q.Session, q.Dir, MessagesOptions{IncludeSystem: q.System})
			w := rawList(t, want)
			sameMessages(t, fmt.Sprintf("%s dir=%q system=%v", q.Session, q.Dir, q.System), got, w)
			if q.System {
				mains++
				msgs += len(w)
				got, _ = messagesOrEmpty(t, l, q.Session, q.Dir, MessagesOptions{})
				sameMessages(t, q.Session+" system=false", got, withoutSystem(t, w))
			}
		case "subagents":
			var w []string
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if w == nil {
				w = []string{}
			}
			if g := subagentsOrEmpty(t, l, q.Session, q.Dir); !reflect.DeepEqual(g, w) {
				t.Errorf("%s: subagents %v, SDK %v", q.Session, g, w)
			}
		case "subagentMessages":
			agents++
			w := rawList(t, want)
			msgs += len(w)
			sameMessages(t, q.Session+"/"+q.Agent, subagentMessagesOrEmpty(t, l, q.Session, q.Agent, q.Dir), w)
		}
	}
	t.Logf("corpus: %d sessions, %d subagent files, %d SDK messages compared; skipped %d Codex files and %d other names",
		mains, agents, msgs, codex, other)
	if mains < 30 || agents < 30 || msgs < 1000 {
		t.Errorf("corpus too small: %d sessions, %d agents, %d messages", mains, agents, msgs)
	}
}

// ---------------------------------------------------------------------------
// Randomised differential test: transcripts made of every feature the
// rebuild knows (branches, duplicates, cycles, missing parents, progress,
// compact boundaries of all kinds, split assistants, orphan tool results,
// queued and local commands, meta rows and origins, sidechain and team rows,
// host rows, voice-call rows, damaged lines), compared with the SDK.

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
			r["toolDenialKind"] = g.rng.pick([]string{"interrupted", "user-rejected", "other"})
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
	case t < 65:
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
	case t < 75:
		r["type"] = "progress"
		r["data"] = map[string]any{"type": "bash_progress"}
	case t < 87:
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
	default:
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
		r["attachment"] = a
	}
	return r
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

func randomTranscript(seed uint64, sidechain bool) []byte {
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

func TestMessagesMatchSDKOnRandomTranscripts(t *testing.T) {
	p := peer.Find(t)
	cfg := t.TempDir()
	l := Layout{ConfigDir: cfg}
	const n = 400
	proj := filepath.Join(cfg, "projects", "-rand")
	var qs []sdkQuery
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%08x-1111-4111-8111-111111111111", i)
		writeFile(t, filepath.Join(proj, id+".jsonl"), randomTranscript(uint64(i), false))
		writeFile(t, filepath.Join(proj, id, "subagents", "agent-a1.jsonl"), randomTranscript(uint64(i+n), i%2 == 0))
		writeFile(t, filepath.Join(proj, id, "subagents", "agent-a1.meta.json"),
			[]byte(fmt.Sprintf(`{"toolUseId":"toolu_%d","parentAgentId":%q}`, i, []string{"p1", "bad id", ""}[i%3])))
		qs = append(qs, sdkQuery{Op: "messages", Session: id, System: true},
			sdkQuery{Op: "subagentMessages", Session: id, Agent: "a1"})
	}
	ans := sdkBatch(t, p, cfg, qs)
	total := 0
	for i, q := range qs {
		w := rawList(t, ans[i].OK)
		total += len(w)
		if q.Op == "messages" {
			got, _ := messagesOrEmpty(t, l, q.Session, "", MessagesOptions{IncludeSystem: true})
			sameMessages(t, q.Session+" system=true", got, w)
			got, _ = messagesOrEmpty(t, l, q.Session, "", MessagesOptions{})
			sameMessages(t, q.Session+" system=false", got, withoutSystem(t, w))
		} else {
			sameMessages(t, q.Session+"/a1", subagentMessagesOrEmpty(t, l, q.Session, "a1", ""), w)
		}
		if t.Failed() {
			t.Logf("file: %s", filepath.Join(proj, q.Session+".jsonl"))
			return
		}
	}
	t.Logf("%d random transcripts, %d SDK messages compared", 2*n, total)
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------------------
// Damaged files

// jrow is one transcript row as a JSON line.
func jrow(typ, id, parent string, content any, extra ...any) string {
	m := map[string]any{"type": typ, "uuid": id, "sessionId": "s", "timestamp": "2026-01-10T11:00:00.000Z"}
	if parent == "" {
		m["parentUuid"] = nil
	} else {
		m["parentUuid"] = parent
	}
	role := typ
	if typ == "assistant" {
		m["message"] = map[string]any{"role": role, "id": "m-" + id, "content": []any{map[string]any{"type": "text", "text": content}}}
	} else if typ == "user" {
		m["message"] = map[string]any{"role": role, "content": content}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

type damaged struct {
	name string
	data []byte
	// checks on scribe's own report
	check func(t *testing.T, msgs []SessionMessage, rep *MessagesReport)
}

func damagedFiles() []damaged {
	conv := func(n int) []string {
		var out []string
		parent := ""
		for i := 0; i < n; i++ {
			typ := "user"
			if i%2 == 1 {
				typ = "assistant"
			}
			id := fmt.Sprintf("r%02d", i)
			out = append(out, jrow(typ, id, parent, fmt.Sprintf("turn %d", i)))
			parent = id
		}
		return out
	}
	lines := func(ls []string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }

	malformed := conv(20)
	malformed[2] = `{"type":"user","uuid":` // line 3: torn JSON
	malformed[16] = "not json at all"       // line 17
	cycle := conv(6)
	cycle[0] = jrow("user", "r00", "r03", "turn 0 (parent loops)")
	cycle = append(cycle, jrow("user", "leaf", "r03", "leaf"))
	gap := conv(6)
	gap[3] = jrow("assistant", "r03", "lost", "after a lost row")
	torn := conv(5)
	tornData := append(lines(torn), []byte(jrow("user", "r05", "r04", "no newline"))...)
	tornJunk := append(lines(torn), []byte(`{"type":"user","uuid":"r05","parentUu`)...)

	return []damaged{
		{"malformed", lines(malformed), func(t *testing.T, msgs []SessionMessage, rep *MessagesReport) {
			var at []int
			for _, m := range rep.Malformed {
				at = append(at, m.Line)
			}
			if !reflect.DeepEqual(at, []int{3, 17}) || rep.Lines != 20 || rep.Entries != 18 {
				t.Errorf("malformed: lines %v, report %+v", at, rep.ReadReport)
			}
			// r02 and r16 are gone: gaps, and the chain starts at r17 as
			// in the SDK.
			if !reflect.DeepEqual(rep.Gaps, []transcript.ChainBreak{{UUID: "r03", Parent: "r02"}, {UUID: "r17", Parent: "r16"}}) {
				t.Errorf("malformed: gaps %v", rep.Gaps)
			}
		}},
		{"cycle", lines(cycle), func(t *testing.T, msgs []SessionMessage, rep *MessagesReport) {
			if rep.Cycle == nil || len(msgs) != 5 {
				t.Errorf("cycle: %v, %d messages", rep.Cycle, len(msgs))
			}
		}},
		{"gap", lines(gap), func(t *testing.T, msgs []SessionMessage, rep *MessagesReport) {
			if len(rep.Gaps) != 1 || rep.Gaps[0] != (transcript.ChainBreak{UUID: "r03", Parent: "lost"}) || len(msgs) != 3 {
				t.Errorf("gap: %v, %d messages", rep.Gaps, len(msgs))
			}
		}},
		{"torn", tornData, func(t *testing.T, msgs []SessionMessage, rep *MessagesReport) {
			if !rep.Torn || len(msgs) != 6 || len(rep.Malformed) != 0 {
				t.Errorf("torn: %+v, %d messages", rep.ReadReport, len(msgs))
			}
		}},
		{"torn-junk", tornJunk, func(t *testing.T, msgs []SessionMessage, rep *MessagesReport) {
			if !rep.Torn || len(msgs) != 5 || len(rep.Malformed) != 1 || rep.Malformed[0].Line != 6 {
				t.Errorf("torn junk: %+v, %d messages", rep.ReadReport, len(msgs))
			}
		}},
		{"blank-and-indented", []byte("\n\n   \t" + strings.Join(conv(4), "\n\x01 ") + "\n\n"), func(t *testing.T, msgs []SessionMessage, rep *MessagesReport) {
			if len(msgs) != 4 || len(rep.Malformed) != 0 {
				t.Errorf("blank lines: %+v, %d messages", rep.ReadReport, len(msgs))
			}
		}},
		{"huge-line", hugeLine(20 << 20), func(t *testing.T, msgs []SessionMessage, rep *MessagesReport) {
			if len(msgs) != 3 || len(msgs[1].Message) < 20<<20 {
				t.Errorf("huge line: %d messages", len(msgs))
			}
		}},
	}
}

// hugeLine is a three-row session whose middle row is one line of n bytes.
func hugeLine(n int) []byte {
	var b bytes.Buffer
	b.WriteString(jrow("user", "h0", "", "paste this") + "\n")
	head := jrow("assistant", "h1", "h0", "X")
	i := strings.Index(head, `"X"`)
	b.WriteString(head[:i+1])
	b.Write(bytes.Repeat([]byte("abcdefghij"), n/10))
	b.WriteString(head[i+2:] + "\n")
	b.WriteString(jrow("user", "h2", "h1", "thanks") + "\n")
	return b.Bytes()
}

func TestDamagedFilesMatchSDK(t *testing.T) {
	p := peer.Find(t)
	cfg := t.TempDir()
	l := Layout{ConfigDir: cfg}
	proj := filepath.Join(cfg, "projects", "-damaged")
	cases := damagedFiles()
	var qs []sdkQuery
	for i, c := range cases {
		id := fmt.Sprintf("%08x-2222-4222-8222-222222222222", i)
		writeFile(t, filepath.Join(proj, id+".jsonl"), c.data)
		qs = append(qs, sdkQuery{Op: "messages", Session: id, System: true})
	}
	ans := sdkBatch(t, p, cfg, qs)
	for i, c := range cases {
		start := time.Now()
		got, rep, err := l.Messages(context.Background(), qs[i].Session, "", MessagesOptions{IncludeSystem: true})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %v", c.name, d)
		}
		sameMessages(t, c.name, got, rawList(t, ans[i].OK))
		c.check(t, got, rep)
	}
}

func TestEmptyAndMissingSessions(t *testing.T) {
	cfg := t.TempDir()
	l := Layout{ConfigDir: cfg}
	proj := filepath.Join(cfg, "projects", "-p")
	empty := "33333333-3333-4333-8333-333333333333"
	writeFile(t, filepath.Join(proj, empty+".jsonl"), nil)
	writeFile(t, filepath.Join(proj, "not-a-uuid.jsonl"), []byte(jrow("user", "u", "", "hi")+"\n"))
	ctx := context.Background()

	msgs, _, err := l.Messages(ctx, empty, "", MessagesOptions{})
	if err != nil || len(msgs) != 0 {
		t.Errorf("empty file: %d messages, %v", len(msgs), err)
	}
	if ids, err := l.Subagents(ctx, empty, ""); err != nil || len(ids) != 0 {
		t.Errorf("empty file subagents: %v, %v", ids, err)
	}
	for _, id := range []string{"not-a-uuid", "44444444-4444-4444-8444-444444444444", ""} {
		if _, _, err := l.Messages(ctx, id, "", MessagesOptions{}); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("Messages(%q): %v, want ErrNotFound", id, err)
		}
		if _, err := l.Subagents(ctx, id, ""); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("Subagents(%q): %v, want ErrNotFound", id, err)
		}
		if _, err := NewLoader(l).Load(ctx, core.SessionRef{SessionID: id}); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("Load(%q): %v, want ErrNotFound", id, err)
		}
	}
	if _, _, err := l.SubagentMessages(ctx, empty, "", "", MessagesOptions{}); err == nil {
		t.Error("empty agent id: no error")
	}
	if p := peer.Find(t); p != nil {
		for _, id := range []string{empty, "not-a-uuid"} {
			if w := p.Messages(t, cfg, id, "", false); len(w) != 0 {
				t.Errorf("SDK has %d messages for %s", len(w), id)
			}
		}
	}
}

func TestLoader(t *testing.T) {
	cfg := t.TempDir()
	l := Layout{ConfigDir: cfg}
	id := "55555555-5555-4555-8555-555555555555"
	proj := l.ProjectDir("/w/app")
	writeFile(t, MainFile(proj, id), []byte(strings.Join([]string{
		jrow("user", "u1", "", "hi"), jrow("assistant", "a1", "u1", "hello"),
		jrow("progress", "p1", "a1", nil), jrow("user", "u2", "p1", "more"),
	}, "\n")+"\n"))
	writeFile(t, AgentFile(proj, id, "ag"), []byte(jrow("user", "s1", "", "task", "isSidechain", true)+"\n"))
	ld := NewLoader(l)
	ld.ID = core.MustParseID("jsonl/local")
	tr, err := ld.Load(context.Background(), core.SessionRef{SessionID: id, CWD: "/w/app"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tr.Entries {
		got = append(got, e.UUID)
	}
	if !reflect.DeepEqual(got, []string{"u1", "a1", "p1", "u2"}) || tr.Source != ld.ID {
		t.Errorf("main: %v from %v, want the file's entries in order", got, tr.Source)
	}
	tr, err = ld.Load(context.Background(), core.SessionRef{SessionID: id, AgentID: "ag"})
	if err != nil || len(tr.Entries) != 1 || tr.Entries[0].UUID != "s1" {
		t.Errorf("agent: %+v, %v", tr, err)
	}
	if _, err := ld.Load(context.Background(), core.SessionRef{SessionID: id, AgentID: "nope"}); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("missing agent: %v", err)
	}
	ld.MaxBytes = 10
	if _, err := ld.Load(context.Background(), core.SessionRef{SessionID: id}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over max_bytes: %v", err)
	}
}

// A conversation cut by a cycle or a missing parent is refused as damaged
// rather than served short.
func TestLoaderRefusesDamagedChains(t *testing.T) {
	for name, rows := range map[string][]string{
		"cycle":       {jrow("user", "u1", "a1", "hi"), jrow("assistant", "a1", "u1", "hello")},
		"cycle below": {jrow("user", "u1", "a1", "hi"), jrow("assistant", "a1", "u1", "hello"), jrow("user", "u3", "a1", "again")},
		"gap":         {jrow("user", "u2", "gone", "hi"), jrow("assistant", "a2", "u2", "hello")},
	} {
		t.Run(name, func(t *testing.T) {
			l := Layout{ConfigDir: t.TempDir()}
			id := "66666666-6666-4666-8666-666666666666"
			writeFile(t, MainFile(l.ProjectDir("/w/app"), id), []byte(strings.Join(rows, "\n")+"\n"))
			_, err := NewLoader(l).Load(context.Background(), core.SessionRef{SessionID: id})
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("Load = %v, want ErrDamaged", err)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Large files: the pre-compact skip

// bigFile builds a transcript over 5 MiB line by line, so tests can place a
// line at an exact offset (such as across a 1 MiB chunk edge).
type bigFile struct {
	b    bytes.Buffer
	last string
	n    int
}

func (f *bigFile) add(line string) int64 {
	off := int64(f.b.Len())
	f.b.WriteString(line + "\n")
	return off
}

func (f *bigFile) msg(typ, text string, extra ...any) {
	f.n++
	id := fmt.Sprintf("%s-%05d", typ[:1], f.n)
	f.add(jrow(typ, id, f.last, text, extra...))
	f.last = id
}

// fill adds progress rows until the file is exactly at offset off.
func (f *bigFile) fill(off int64) {
	for {
		f.n++
		id := fmt.Sprintf("p-%05d", f.n)
		short := jrow("progress", id, f.last, nil, "data", map[string]any{"out": ""})
		need := off - int64(f.b.Len()) - int64(len(short)) - 1
		switch {
		case need < 0:
			panic("fill: overshot")
		case need > 6000:
			f.add(jrow("progress", id, f.last, nil, "data", map[string]any{"out": strings.Repeat("o", 3000)}))
		default:
			f.add(jrow("progress", id, f.last, nil, "data", map[string]any{"out": strings.Repeat("o", int(need))}))
			f.last = id
			return
		}
		f.last = id
	}
}

// boundaryLine is a compact boundary in the CLI's key order (parentUuid
// first, so "compact_boundary" is ~100 bytes in), or with "type" first
// (systemFirst) and padding that pushes the marker just past 256 bytes.
func boundaryLine(id, logical string, systemFirst bool, meta string) string {
	if systemFirst {
		// The marker starts at byte 28+pad+12 = 260: past the 256-byte
		// window, yet within the first 272 bytes a reader might peek at.
		return `{"type":"system","padding":"` + strings.Repeat("x", 220) + `","subtype":"compact_boundary","parentUuid":null,"uuid":"` +
			id + `","timestamp":"2026-01-10T11:00:00.000Z","sessionId":"s","compactMetadata":` + meta + `}`
	}
	return `{"parentUuid":null,"logicalParentUuid":"` + logical + `","isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","uuid":"` +
		id + `","timestamp":"2026-01-10T11:00:00.000Z","sessionId":"s","compactMetadata":` + meta + `}`
}

func (f *bigFile) boundary(systemFirst bool, meta string) int64 {
	f.n++
	id := fmt.Sprintf("b-%05d", f.n)
	off := f.add(boundaryLine(id, f.last, systemFirst, meta))
	f.last = id
	f.msg("user", "summary of the conversation", "isCompactSummary", true)
	return off
}

// linkBack adds a user row whose parent is id (a row written earlier) and
// a reply: whether id survived the loader's cut shows in the chain.
func (f *bigFile) linkBack(id string) {
	f.last = id
	f.msg("user", "linked back")
	f.msg("assistant", "reply")
}

const mib = 1 << 20

func TestLargeFileSkipMatchesSDK(t *testing.T) {
	p := peer.Find(t)
	cfg := t.TempDir()
	l := Layout{ConfigDir: cfg}
	proj := filepath.Join(cfg, "projects", "-big")
	type big struct {
		name string
		data []byte
		skip int64 // expected SkippedBytes
		bad  int   // expected line of the malformed line (0: none)
	}
	var cases []big

	// 1. From gen: progress rows, subagents, a boundary near the end.
	res, err := gen.LargeSession(proj, gen.LargeOptions{Progress: 2100, ProgressBytes: 3000, Subagents: 3, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if res.Size <= precompactSkipSize {
		t.Fatalf("gen wrote %d bytes", res.Size)
	}
	data, err := os.ReadFile(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	cases = append(cases, big{"gen", data, res.BoundaryOffset, 0})

	// 2. A plain boundary, a malformed line after it, attribution snapshots
	//    (one of them really a user row) that the loader moves to the end.
	var f bigFile
	f.msg("user", "start")
	f.fill(3 * mib)
	f.boundary(false, `{"trigger":"auto"}`)
	f.msg("assistant", "between")
	between := f.last
	f.fill(5*mib + 100)
	cut := f.boundary(false, `{"trigger":"manual"}`)
	f.msg("assistant", "after")
	f.linkBack(between)                                      // cut away: a gap
	f.add(`{"type":"attribution-snapshot","messageId":"y"}`) // dropped: not the last one
	// The last snapshot line is really a user row (JSON.parse keeps the
	// second "type"); moved to the end, it becomes the newest leaf.
	f.add(`{"type":"attribution-snapshot","messageId":"x","type":"user","uuid":"snap-user","parentUuid":"` + f.last + `","message":{"role":"user","content":"moved"},"sessionId":"s"}`)
	f.add("{broken")
	bad := strings.Count(f.b.String(), "\n")
	f.msg("user", "last")
	cases = append(cases, big{"snapshots", bytes.Clone(f.b.Bytes()), cut, bad})

	// 3. The last boundary keeps a preserved segment, so the cut is at the
	//    plain one before it.
	f = bigFile{}
	f.msg("user", "start")
	f.fill(5*mib + 10)
	cut = f.boundary(false, `{"trigger":"auto"}`)
	f.msg("assistant", "kept")
	head := f.last
	f.msg("user", "kept 2")
	tail := f.last
	f.fill(6 * mib)
	f.boundary(false, `{"preservedSegment":{"headUuid":"`+head+`","anchorUuid":"b-anchor","tailUuid":"`+tail+`"}}`)
	f.msg("assistant", "after")
	f.linkBack(tail) // kept
	cases = append(cases, big{"preserved", bytes.Clone(f.b.Bytes()), cut, 0})

	// 4. A boundary in the CLI's key order that crosses a 1 MiB edge with
	//    more than 30 bytes before it: the SDK does not see it, so the cut
	//    is at the earlier boundary.
	f = bigFile{}
	f.msg("user", "start")
	f.fill(2 * mib)
	cut = f.boundary(false, `{"trigger":"auto"}`)
	f.msg("assistant", "between")
	between = f.last
	f.fill(6*mib - 100)
	f.boundary(false, `{"trigger":"auto"}`)
	f.msg("assistant", "after")
	f.linkBack(between) // kept: the SDK does not cut at the later boundary
	cases = append(cases, big{"straddle-unseen", bytes.Clone(f.b.Bytes()), cut, 0})

	// 5. A boundary starting {"type":"system" across an edge is seen even
	//    with its marker past 256 bytes; the same line inside a chunk is not.
	f = bigFile{}
	f.msg("user", "start")
	f.fill(3*mib - 200)
	f.boundary(true, `{"trigger":"auto"}`) // inside chunk 2: not seen
	f.msg("assistant", "between")
	between = f.last
	f.fill(6*mib - 100)
	cut = f.boundary(true, `{"trigger":"auto"}`) // across the 6 MiB edge: seen
	f.msg("assistant", "after")
	f.linkBack(between) // cut away: a gap
	cases = append(cases, big{"straddle-system", bytes.Clone(f.b.Bytes()), cut, 0})

	// 6. A boundary starting {"type":"system" inside a chunk with its
	//    marker past 256 bytes is not seen: the cut is the earlier one.
	f = bigFile{}
	f.msg("user", "start")
	f.fill(4 * mib)
	cut = f.boundary(false, `{"trigger":"auto"}`)
	f.msg("assistant", "between")
	between = f.last
	f.fill(5*mib + 1000)
	f.boundary(true, `{"trigger":"auto"}`)
	f.msg("assistant", "after")
	f.linkBack(between) // kept
	cases = append(cases, big{"window", bytes.Clone(f.b.Bytes()), cut, 0})

	// 7. No boundary at all: nothing skipped.
	f = bigFile{}
	f.msg("user", "start")
	f.fill(5*mib + 5000)
	f.msg("assistant", "end")
	cases = append(cases, big{"no-boundary", bytes.Clone(f.b.Bytes()), 0, 0})

	var qs []sdkQuery
	for i, c := range cases {
		id := fmt.Sprintf("%08x-6666-4666-8666-666666666666", i)
		if c.name == "gen" {
			id = res.SessionID
		} else {
			writeFile(t, filepath.Join(proj, id+".jsonl"), c.data)
		}
		qs = append(qs, sdkQuery{Op: "messages", Session: id, System: true})
	}
	ans := sdkBatch(t, p, cfg, qs)
	for i, c := range cases {
		got, rep, err := l.Messages(context.Background(), qs[i].Session, "", MessagesOptions{IncludeSystem: true})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		w := rawList(t, ans[i].OK)
		if len(w) == 0 {
			t.Errorf("%s: the SDK returned nothing", c.name)
		}
		sameMessages(t, c.name, got, w)
		if rep.SkippedBytes != c.skip {
			t.Errorf("%s: SkippedBytes %d, want %d", c.name, rep.SkippedBytes, c.skip)
		}
		if c.skip > 0 && rep.Compactions < 1 {
			t.Errorf("%s: Compactions %d", c.name, rep.Compactions)
		}
		if c.bad != 0 && (len(rep.Malformed) != 1 || rep.Malformed[0].Line != c.bad) {
			t.Errorf("%s: malformed %v, want line %d", c.name, rep.Malformed, c.bad)
		}
		if c.name == "gen" {
			// Subagents of the generated session, too.
			for _, a := range res.AgentIDs {
				got := subagentMessagesOrEmpty(t, l, res.SessionID, a, "")
				if len(got) != 3 || got[0].ParentToolUseID == nil {
					t.Errorf("gen agent %s: %d messages", a, len(got))
				}
			}
		}
	}
	// Without the skip, the whole file is read.
	_, rep, err := ReadFile(filepath.Join(proj, qs[1].Session+".jsonl"), ReadOptions{NoPrecompactSkip: true})
	if err != nil || rep.SkippedBytes != 0 || rep.Compactions != 2 {
		t.Errorf("NoPrecompactSkip: %+v, %v", rep, err)
	}
}

// ---------------------------------------------------------------------------
// Fuzzing

func FuzzReadAndRebuild(f *testing.F) {
	for _, d := range damagedFiles() {
		if len(d.data) < 1<<16 {
			f.Add(d.data)
		}
	}
	for i := 0; i < 20; i++ {
		f.Add(randomTranscript(uint64(i), i%2 == 0))
	}
	f.Add([]byte("{\"type\":\"user\",\"uuid\":\"a\",\"parentUuid\":\"a\"}\n{\"type\":\"system\",\"subtype\":\"compact_boundary\",\"uuid\":\"b\",\"compactMetadata\":{\"preservedSegment\":{}}}"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		// No input may take long: a stuck run crashes the worker, which
		// the fuzzer reports with the input.
		watchdog := time.AfterFunc(20*time.Second, func() { panic("FuzzReadAndRebuild: input took over 20s") })
		defer watchdog.Stop()
		path := filepath.Join(dir, "f.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		entries, rep, err := ReadFile(path, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Entries != len(entries) {
			t.Fatalf("report says %d entries, got %d", rep.Entries, len(entries))
		}
		for _, side := range []bool{false, true} {
			ch := transcript.BuildChain(entries, transcript.ChainOptions{Sidechain: side})
			msgs := ch.Messages(transcript.MessageOptions{IncludeSystem: true, ParentToolUseID: "t"})
			for _, m := range msgs {
				if _, err := json.Marshal(m); err != nil {
					t.Fatalf("message does not encode: %v", err)
				}
			}
			if len(ch.Entries) > len(entries) {
				t.Fatalf("chain longer than the file: %d > %d", len(ch.Entries), len(entries))
			}
		}
		// The large-file scan on the same bytes, with no size threshold.
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if cut, err := findCut(fh, int64(len(data))); err != nil || cut < 0 || cut > int64(len(data)) {
			t.Fatalf("findCut: %d, %v", cut, err)
		}
	})
}

func TestMessagesFindsWorktreeAndLongPathSessions(t *testing.T) {
	p := peer.Find(t)
	cfg := t.TempDir()
	l := Layout{ConfigDir: cfg}
	conv := strings.Join([]string{jrow("user", "u1", "", "hi"), jrow("assistant", "a1", "u1", "hello")}, "\n") + "\n"

	// A session stored under a sibling worktree's project folder.
	if git, err := exec.LookPath("git"); err == nil {
		base := t.TempDir()
		repo, wt := filepath.Join(base, "repo"), filepath.Join(base, "wt")
		run := func(dir string, args ...string) {
			cmd := exec.Command(git, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		if err := os.MkdirAll(repo, 0o700); err != nil {
			t.Fatal(err)
		}
		run(repo, "init", "-q")
		run(repo, "commit", "-q", "--allow-empty", "-m", "x")
		run(repo, "worktree", "add", "-q", wt)
		id := "77777777-7777-4777-8777-777777777777"
		writeFile(t, MainFile(l.ProjectDir(liteRealpath(wt)), id), []byte(conv))
		want := p.Messages(t, cfg, id, repo, false)
		got, _ := messagesOrEmpty(t, l, id, repo, MessagesOptions{})
		if len(want) != 2 {
			t.Errorf("worktree: the SDK found %d messages", len(want))
		}
		sameMessages(t, "worktree", got, want)
	}

	// A project path over 200 characters whose folder carries another hash
	// suffix: found because a session in it records the path.
	long := "/work/" + strings.Repeat("very-long-directory-name/", 9) + "project"
	id := "88888888-8888-4888-8888-888888888888"
	other := filepath.Join(cfg, "projects", SanitizePath(long)[:maxProjectName]+"-zzzz")
	writeFile(t, MainFile(other, id), []byte(strings.ReplaceAll(conv, `"sessionId":"s"`, `"cwd":`+string(mustJSON(long))+`,"sessionId":"s"`)))
	want := p.Messages(t, cfg, id, long, false)
	got, _ := messagesOrEmpty(t, l, id, long, MessagesOptions{})
	if len(want) != 2 {
		t.Errorf("long path: the SDK found %d messages", len(want))
	}
	sameMessages(t, "long path", got, want)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
