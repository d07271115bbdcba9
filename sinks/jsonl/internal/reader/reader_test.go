package reader

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testenv"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
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

func encodeMsgs(t *testing.T, msgs []transcript.SessionMessage) []json.RawMessage {
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
func sameMessages(t *testing.T, what string, got []transcript.SessionMessage, want []json.RawMessage) {
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
	var out []sdkAnswer
	p.Script(t, configDir, sdkBatchScript, qs, &out)
	if len(out) != len(qs) {
		t.Fatalf("sdk batch: %d answers for %d queries", len(out), len(qs))
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
func messagesOrEmpty(t *testing.T, l Layout, id, dir string, opt sessions.MessagesOptions) ([]transcript.SessionMessage, *sessions.MessagesReport) {
	t.Helper()
	msgs, rep, err := l.Messages(context.Background(), id, dir, opt)
	if err != nil && !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("Messages(%s, %q): %v", id, dir, err)
	}
	return msgs, rep
}

func subagentMessagesOrEmpty(t *testing.T, l Layout, id, agent, dir string) []transcript.SessionMessage {
	t.Helper()
	msgs, _, err := l.SubagentMessages(context.Background(), id, agent, dir, sessions.MessagesOptions{})
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
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	var sessionIDs []string
	for role, id := range ids {
		if role != "projectDir" && role != "subagentId" {
			sessionIDs = append(sessionIDs, id)
		}
	}
	sort.Strings(sessionIDs)
	if len(sessionIDs) < 6 {
		t.Fatalf("fixture has %d sessions: %v", len(sessionIDs), ids)
	}
	for _, id := range sessionIDs {
		for _, system := range []bool{false, true} {
			want := p.Messages(t, cfg, id, cwd, system)
			got, _ := messagesOrEmpty(t, l, id, cwd, sessions.MessagesOptions{IncludeSystem: system})
			sameMessages(t, fmt.Sprintf("%s system=%v", id, system), got, want)
		}
		// Without a project folder: the first one that has the session.
		got, _ := messagesOrEmpty(t, l, id, "", sessions.MessagesOptions{})
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
	// The branched, compacted and sidechain-only sessionIDs are the ones that
	// exercise the rebuild; make sure they gave what the reference says.
	if msgs, _ := messagesOrEmpty(t, l, ids["sidechainOnly"], cwd, sessions.MessagesOptions{}); len(msgs) != 0 {
		t.Errorf("sidechain-only session: %d messages, want 0", len(msgs))
	}
	if msgs, _ := messagesOrEmpty(t, l, ids["withCompactBoundary"], cwd, sessions.MessagesOptions{}); len(msgs) == 0 || !msgs[0].IsCompactSummary {
		t.Errorf("compacted session: first message is not the compact summary: %+v", msgs)
	}
	// limit / offset.
	id := ids["withSummaryAndSubagent"]
	all, _ := messagesOrEmpty(t, l, id, cwd, sessions.MessagesOptions{})
	page, _ := messagesOrEmpty(t, l, id, cwd, sessions.MessagesOptions{Limit: 2, Offset: 1})
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
func layCorpus(t *testing.T, cfg string) (corpus map[string]*corpusSession, codex, other int) {
	t.Helper()
	root := filepath.Join(testenv.RepoRoot(t), "testdata", "corpus", "real")
	corpus = map[string]*corpusSession{}
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
		case claudedir.IsSessionID(base):
			dst = filepath.Join(cfg, "projects", claudedir.SanitizePath(cwd), name)
			s := corpus[base]
			if s == nil {
				s = &corpusSession{id: base}
				corpus[base] = s
			}
			s.cwd = cwd
		case m != nil && claudedir.IsSessionID(sid):
			dst = filepath.Join(cfg, "projects", claudedir.SanitizePath(cwd), sid, "subagents", name)
			s := corpus[sid]
			if s == nil {
				s = &corpusSession{id: sid, cwd: cwd}
				corpus[sid] = s
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
	return corpus, codex, other
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
	corpus, codex, other := layCorpus(t, cfg)
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	var ids []string
	for id := range corpus {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var qs []sdkQuery
	for _, id := range ids {
		s := corpus[id]
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
			got, _ := messagesOrEmpty(t, l, q.Session, q.Dir, sessions.MessagesOptions{IncludeSystem: q.System})
			w := rawList(t, want)
			sameMessages(t, fmt.Sprintf("%s dir=%q system=%v", q.Session, q.Dir, q.System), got, w)
			if q.System {
				mains++
				msgs += len(w)
				got, _ = messagesOrEmpty(t, l, q.Session, q.Dir, sessions.MessagesOptions{})
				sameMessages(t, q.Session+" system=false", got, jsonltest.WithoutSystem(t, w))
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
