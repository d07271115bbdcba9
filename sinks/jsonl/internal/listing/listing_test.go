package listing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// ---------------------------------------------------------------------------
// Comparison with the SDK

// sdkQuery is one listSessions or getSessionInfo call.
type sdkQuery struct {
	Op             string `json:"op"` // "list" or "info"
	Dir            string `json:"dir,omitempty"`
	Session        string `json:"session,omitempty"`
	Limit          int    `json:"limit,omitempty"`
	Offset         int    `json:"offset,omitempty"`
	NoWorktrees    bool   `json:"noWorktrees,omitempty"`
	NoProgrammatic bool   `json:"noProgrammatic,omitempty"`
}

func (q sdkQuery) String() string {
	b, _ := json.Marshal(q)
	return string(b)
}

// batchScript runs many queries in one node process (peer.mjs would
// start one per query).
const batchScript = `
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
const sdk = await import(pathToFileURL(process.env.SCRIBE_SDK_MJS).href);
const qs = JSON.parse(fs.readFileSync(process.env.SCRIBE_SDK_QUERIES, 'utf8'));
const res = [];
for (const q of qs) {
  if (q.op === 'info') {
    res.push((await sdk.getSessionInfo(q.session, q.dir ? { dir: q.dir } : {})) ?? null);
    continue;
  }
  const o = {};
  if (q.dir) o.dir = q.dir;
  if (q.limit) o.limit = q.limit;
  if (q.offset) o.offset = q.offset;
  if (q.noWorktrees) o.includeWorktrees = false;
  if (q.noProgrammatic) o.includeProgrammatic = false;
  res.push(await sdk.listSessions(o));
}
process.stdout.write(JSON.stringify(res));
`

// sdkAnswers answers the queries with the real SDK.
func sdkAnswers(t *testing.T, p *peer.Peer, configDir string, qs []sdkQuery) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	p.Script(t, configDir, batchScript, qs, &out)
	if len(out) != len(qs) {
		t.Fatalf("sdk batch: %d answers for %d queries", len(out), len(qs))
	}
	return out
}

// goAnswer answers one query with scribe.
func goAnswer(t *testing.T, configDir string, q sdkQuery) json.RawMessage {
	t.Helper()
	l := Layout{Layout: layout.Layout{ConfigDir: configDir}}
	var v any
	var err error
	if q.Op == "info" {
		v, err = l.Info(context.Background(), q.Session, q.Dir)
	} else {
		v, err = l.List(context.Background(), sessions.ListOptions{Dir: q.Dir, Limit: q.Limit, Offset: q.Offset,
			IncludeWorktrees: !q.NoWorktrees, IncludeProgrammatic: !q.NoProgrammatic})
	}
	if err != nil {
		t.Fatalf("%v: %v", q, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeAnswer(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %.200s: %v", raw, err)
	}
	return v
}

// sameAnswer compares two answers as JSON values (objects compared by key, so
// key order does not matter) and reports the differing fields.
func sameAnswer(t *testing.T, what string, want, got json.RawMessage) bool {
	t.Helper()
	w, g := decodeAnswer(t, want), decodeAnswer(t, got)
	if reflect.DeepEqual(w, g) {
		return true
	}
	var msg strings.Builder
	wl, wok := w.([]any)
	gl, gok := g.([]any)
	if !wok || !gok {
		wl, gl = []any{w}, []any{g}
	}
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var wi, gi map[string]any
		if i < len(wl) {
			wi, _ = wl[i].(map[string]any)
		}
		if i < len(gl) {
			gi, _ = gl[i].(map[string]any)
		}
		if reflect.DeepEqual(wi, gi) {
			continue
		}
		fmt.Fprintf(&msg, "  [%d] sdk %v / scribe %v\n", i, wi["sessionId"], gi["sessionId"])
		keys := map[string]bool{}
		for k := range wi {
			keys[k] = true
		}
		for k := range gi {
			keys[k] = true
		}
		var ks []string
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			wv, wh := wi[k]
			gv, gh := gi[k]
			if wh != gh || !reflect.DeepEqual(wv, gv) {
				fmt.Fprintf(&msg, "      %s: sdk %s / scribe %s\n", k, showValue(wv, wh), showValue(gv, gh))
			}
		}
	}
	t.Errorf("%s: scribe differs from the SDK (%d vs %d entries):\n%s", what, len(wl), len(gl), msg.String())
	return false
}

func showValue(v any, present bool) string {
	if !present {
		return "(absent)"
	}
	s := fmt.Sprintf("%#v", v)
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// compareWithSDK runs every query through both and compares.
func compareWithSDK(t *testing.T, p *peer.Peer, configDir string, qs []sdkQuery) {
	t.Helper()
	sdk := sdkAnswers(t, p, configDir, qs)
	t.Logf("comparing %d listSessions/getSessionInfo answers with the SDK", len(qs))
	bad := 0
	for i, q := range qs {
		if !sameAnswer(t, q.String(), sdk[i], goAnswer(t, configDir, q)) {
			if bad++; bad > 10 {
				t.Fatalf("too many differences")
			}
		}
	}
}

// queriesFor is the standard set: every listing variant for the whole
// config and for each project path, and getSessionInfo for every id with
// and without the project path.
func queriesFor(projects []string, ids map[string]string) []sdkQuery {
	qs := []sdkQuery{
		{Op: "list"},
		{Op: "list", NoProgrammatic: true},
		{Op: "list", Limit: 3},
		{Op: "list", Limit: 4, Offset: 2},
		{Op: "list", Offset: 5},
	}
	for _, d := range projects {
		qs = append(qs,
			sdkQuery{Op: "list", Dir: d},
			sdkQuery{Op: "list", Dir: d, NoWorktrees: true},
			sdkQuery{Op: "list", Dir: d, NoProgrammatic: true},
			sdkQuery{Op: "list", Dir: d, Limit: 2},
			sdkQuery{Op: "list", Dir: d, Limit: 2, Offset: 1},
		)
	}
	var sorted []string
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	for _, id := range sorted {
		qs = append(qs, sdkQuery{Op: "info", Session: id}, sdkQuery{Op: "info", Session: id, Dir: ids[id]})
	}
	return qs
}

// ---------------------------------------------------------------------------
// Compatibility tests

func TestListMatchesSDKOnFixture(t *testing.T) {
	p := peer.Find(t)
	root := t.TempDir()
	cfg := filepath.Join(root, "cfg")
	cwd := filepath.Join(root, "proj")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	ids := p.GenFixture(t, cfg, cwd)
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	ctx := context.Background()

	check := func(what string, sdk []peer.SessionInfo, opt sessions.ListOptions) {
		t.Helper()
		got, err := l.List(ctx, opt)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]map[string]any, len(sdk))
		for i := range sdk {
			want[i] = sdk[i].Raw
		}
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got)
		sameAnswer(t, what, wb, gb)
	}
	all := sessions.ListOptions{IncludeWorktrees: true, IncludeProgrammatic: true}
	check("list all", p.List(t, cfg, ""), all)
	inDir := all
	inDir.Dir = cwd
	check("list dir", p.List(t, cfg, cwd), inDir)
	paged := inDir
	paged.Limit, paged.Offset = 2, 1
	check("list dir --limit 2 --offset 1", p.List(t, cfg, cwd, "--limit", "2", "--offset", "1"), paged)
	paged.Limit, paged.Offset = 0, 3
	check("list dir --offset 3", p.List(t, cfg, cwd, "--offset", "3"), paged)
	noProg := all
	noProg.IncludeProgrammatic = false
	check("list --no-programmatic", p.List(t, cfg, "", "--no-programmatic"), noProg)

	for role, id := range ids {
		if role == "projectDir" || role == "subagentId" {
			continue
		}
		for _, dir := range []string{"", cwd} {
			want := p.Info(t, cfg, id, dir)
			got, err := l.Info(ctx, id, dir)
			if err != nil {
				t.Fatal(err)
			}
			var wb []byte
			if want == nil {
				wb = []byte("null")
			} else {
				wb, _ = json.Marshal(want.Raw)
			}
			gb, _ := json.Marshal(got)
			sameAnswer(t, fmt.Sprintf("info %s (%s) dir=%q", role, id, dir), wb, gb)
		}
	}
	// The sidechain-only file is neither listed nor described.
	if got, _ := l.Info(ctx, ids["sidechainOnly"], cwd); got != nil {
		t.Errorf("Info(sidechain-only) = %+v, want nil", got)
	}
}

func TestListMatchesSDKOnRealCorpus(t *testing.T) {
	p := peer.Find(t)
	cfg := filepath.Join(t.TempDir(), "cfg")
	ids, projects, codex, files := jsonltest.LayCorpus(t, cfg)
	t.Logf("corpus: %d Claude Code files laid out (%d UUID-named sessions in %d projects, the rest subagent or non-UUID files); %d Codex files skipped",
		files, len(ids), len(projects), codex)
	if len(ids) < 20 {
		t.Fatalf("corpus: only %d sessions", len(ids))
	}
	compareWithSDK(t, p, cfg, queriesFor(projects, ids))
}

func TestListMatchesSDKOnBulk(t *testing.T) {
	p := peer.Find(t)
	root := t.TempDir()
	cfg := filepath.Join(root, "cfg")
	cwd := filepath.Join(root, "proj")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	res := p.GenBulk(t, cfg, cwd, 300, 50_000, 3)
	qs := []sdkQuery{
		{Op: "list"}, {Op: "list", Dir: cwd}, {Op: "list", Dir: cwd, Limit: 50, Offset: 10},
		{Op: "list", Limit: 7, Offset: 290},
	}
	start := time.Now()
	sdk := sdkAnswers(t, p, cfg, qs)
	sdkTime := time.Since(start)
	start = time.Now()
	var got []json.RawMessage
	for _, q := range qs {
		got = append(got, goAnswer(t, cfg, q))
	}
	goTime := time.Since(start)
	t.Logf("bulk: %d sessions, %d bytes; 4 queries: SDK %v (one node process), scribe %v",
		res.Sessions, res.TotalBytes, sdkTime.Round(time.Millisecond), goTime.Round(time.Millisecond))
	for i, q := range qs {
		sameAnswer(t, q.String(), sdk[i], got[i])
	}
	var all []sessions.Info
	if err := json.Unmarshal(got[0], &all); err != nil || len(all) != 300 {
		t.Fatalf("bulk: listed %d sessions (%v), want 300", len(all), err)
	}
}

// ---------------------------------------------------------------------------
// Hand-made sessions, one per rule

// ruleCase is one hand-made session and what its listing entry must hold.
type ruleCase struct {
	name   string
	s      *jsonltest.Session
	file   string         // raw content instead of s.text()
	id     string         // file name without .jsonl when not s.id
	proj   string         // project path of the folder (default: the rules project)
	side   map[string]any // <id>/<name> sidecar files: name -> raw string
	listed bool           // expected in List(all)
	want   map[string]any // JSON fields of the entry (nil value: absent)
	mtime  time.Time
}
