package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testenv"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// Forks of the real corpus, many SDK calls in one node process.

// forkLayCorpus lays the corpus's Claude Code main transcripts out as a
// config folder: projects/<SanitizePath(first cwd)>/<uuid>.jsonl. Codex
// files (no "sessionId" anywhere) and files not named by a UUID are
// skipped.
func forkLayCorpus(t *testing.T, cfg string) []string {
	t.Helper()
	root := testenv.CorpusDir(t)
	var ids []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		id := strings.TrimSuffix(filepath.Base(path), ".jsonl")
		if !claudedir.IsSessionID(id) {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Contains(raw, []byte(`"sessionId"`)) {
			return nil
		}
		cwd := ""
		for _, ln := range bytes.Split(raw, []byte("\n")) {
			if e, err := core.ParseEntry(ln); err == nil && e.CWD != "" {
				cwd = e.CWD
				break
			}
		}
		ids = append(ids, id)
		forkWrite(t, claudedir.MainFile(Layout{Layout: layout.Layout{ConfigDir: cfg}}.ProjectDir(cwd), id), string(raw))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(ids)
	return ids
}

func TestForkMatchesSDKOnRealCorpus(t *testing.T) {
	p := peer.Find(t)
	start := time.Now()
	sdkCfg, ourCfg := t.TempDir(), t.TempDir()
	ids := forkLayCorpus(t, sdkCfg)
	forkLayCorpus(t, ourCfg)
	if len(ids) == 0 {
		t.Fatal("no Claude Code main transcripts in the corpus")
	}
	var cases []*forkCase
	for _, id := range ids {
		cases = append(cases, &forkCase{name: id + "/whole", source: id})
		rows := forkChainRows(forkFile(t, sdkCfg, id))
		for _, k := range []int{len(rows) / 3, len(rows) / 2, len(rows) - 2} {
			if k > 0 && k < len(rows) {
				cases = append(cases, &forkCase{name: fmt.Sprintf("%s/row-%d", id, k), source: id, upTo: rows[k]})
			}
		}
	}
	forkBatchCompare(t, p, sdkCfg, ourCfg, cases)
	t.Logf("%d corpus sessions, %d SDK/scribe fork pairs compared in %v", len(ids), len(cases), time.Since(start).Round(time.Millisecond))
}

// forkBatchScript runs many SDK calls in one node process: the SDK's
// start-up would otherwise dominate.
const forkBatchScript = `
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
const sdk = await import(pathToFileURL(process.env.SCRIBE_SDK_MJS).href);
const qs = JSON.parse(fs.readFileSync(process.env.SCRIBE_SDK_QUERIES, 'utf8'));
const out = [];
for (const q of qs) {
  try {
    if (q.op === 'fork') {
      const o = {};
      if (q.upTo) o.upToMessageId = q.upTo;
      if (q.title) o.title = q.title;
      out.push({ ok: await sdk.forkSession(q.session, o) });
    } else if (q.op === 'list') {
      out.push({ ok: await sdk.listSessions({}) });
    } else {
      out.push({ ok: await sdk.getSessionMessages(q.session, { includeSystemMessages: true }) });
    }
  } catch (e) {
    out.push({ err: String((e && e.message) || e) });
  }
}
process.stdout.write(JSON.stringify(out));
`

type forkQuery struct {
	Op      string `json:"op"` // fork | list | messages
	Session string `json:"session,omitempty"`
	UpTo    string `json:"upTo,omitempty"`
	Title   string `json:"title,omitempty"`
}

type forkAnswer struct {
	OK  json.RawMessage `json:"ok"`
	Err string          `json:"err"`
}

func forkBatch(t *testing.T, p *peer.Peer, cfg string, qs []forkQuery) []forkAnswer {
	t.Helper()
	var out []forkAnswer
	p.Script(t, cfg, forkBatchScript, qs, &out)
	if len(out) != len(qs) {
		t.Fatalf("sdk batch: %d answers for %d queries", len(out), len(qs))
	}
	return out
}

// forkBatchCompare forks every case with the SDK (one node process) and
// with scribe, then reads both sets back through the SDK and compares.
func forkBatchCompare(t *testing.T, p *peer.Peer, sdkCfg, ourCfg string, cases []*forkCase) {
	t.Helper()
	qs := make([]forkQuery, len(cases))
	for i, c := range cases {
		qs[i] = forkQuery{Op: "fork", Session: c.source, UpTo: c.upTo, Title: c.title}
	}
	for i, a := range forkBatch(t, p, sdkCfg, qs) {
		c := cases[i]
		if a.Err != "" {
			c.sdkErr = a.Err
		} else {
			var r struct {
				SessionID string `json:"sessionId"`
			}
			if err := json.Unmarshal(a.OK, &r); err != nil || r.SessionID == "" {
				t.Fatalf("%s: SDK fork answered %s", c.name, a.OK)
			}
			c.sdkID = r.SessionID
		}
		forkOurs(t, sdkCfg, ourCfg, c)
	}
	read := func(cfg string, id func(*forkCase) string) (map[string]map[string]any, map[string][]json.RawMessage) {
		q := []forkQuery{{Op: "list"}}
		for _, c := range cases {
			if id(c) != "" {
				q = append(q, forkQuery{Op: "messages", Session: id(c)})
			}
		}
		ans := forkBatch(t, p, cfg, q)
		if ans[0].Err != "" {
			t.Fatalf("SDK listSessions: %s", ans[0].Err)
		}
		var list []map[string]any
		if err := json.Unmarshal(ans[0].OK, &list); err != nil {
			t.Fatal(err)
		}
		infos := map[string]map[string]any{}
		for _, si := range list {
			infos[si["sessionId"].(string)] = si
		}
		msgs := map[string][]json.RawMessage{}
		for i, qq := range q[1:] {
			a := ans[i+1]
			if a.Err != "" {
				t.Fatalf("SDK getSessionMessages(%s): %s", qq.Session, a.Err)
			}
			var m []json.RawMessage
			if err := json.Unmarshal(a.OK, &m); err != nil {
				t.Fatal(err)
			}
			msgs[qq.Session] = m
		}
		return infos, msgs
	}
	sdkInfos, sdkMsgs := read(sdkCfg, func(c *forkCase) string { return c.sdkID })
	ourInfos, ourMsgs := read(ourCfg, func(c *forkCase) string { return c.ourID })
	for _, c := range cases {
		forkCompare(t, sdkCfg, ourCfg, c, sdkInfos[c.sdkID], ourInfos[c.ourID], sdkMsgs[c.sdkID], ourMsgs[c.ourID])
	}
}
