package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
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

	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testenv"
)

// ---------------------------------------------------------------------------
// Comparison with the SDK

// lstQuery is one listSessions or getSessionInfo call.
type lstQuery struct {
	Op             string `json:"op"` // "list" or "info"
	Dir            string `json:"dir,omitempty"`
	Session        string `json:"session,omitempty"`
	Limit          int    `json:"limit,omitempty"`
	Offset         int    `json:"offset,omitempty"`
	NoWorktrees    bool   `json:"noWorktrees,omitempty"`
	NoProgrammatic bool   `json:"noProgrammatic,omitempty"`
}

func (q lstQuery) String() string {
	b, _ := json.Marshal(q)
	return string(b)
}

// lstBatchScript runs many queries in one node process (peer.mjs would
// start one per query).
const lstBatchScript = `
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
const sdk = await import(pathToFileURL(process.env.LST_SDK_MJS).href);
const qs = JSON.parse(fs.readFileSync(process.env.LST_QUERIES, 'utf8'));
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

// lstSDK answers the queries with the real SDK.
func lstSDK(t *testing.T, p *peer.Peer, configDir string, qs []lstQuery) []json.RawMessage {
	t.Helper()
	in, err := json.Marshal(qs)
	if err != nil {
		t.Fatal(err)
	}
	qfile := filepath.Join(t.TempDir(), "queries.json")
	if err := os.WriteFile(qfile, in, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Node, "--input-type=module", "-e", lstBatchScript)
	cmd.Dir = p.Dir
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
			"NODE_OPTIONS", "CLAUDE_CODE_PROJECT_DIR_NAME":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "CLAUDE_CONFIG_DIR="+configDir,
		"LST_SDK_MJS="+filepath.Join(p.SDKDir, "sdk.mjs"), "LST_QUERIES="+qfile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sdk batch: %v\n%s", err, stderr.String())
	}
	var out []json.RawMessage
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out) != len(qs) {
		t.Fatalf("sdk batch: %d answers for %d queries: %v", len(out), len(qs), err)
	}
	return out
}

// lstGo answers one query with scribe.
func lstGo(t *testing.T, configDir string, q lstQuery) json.RawMessage {
	t.Helper()
	l := Layout{ConfigDir: configDir}
	var v any
	var err error
	if q.Op == "info" {
		v, err = l.Info(context.Background(), q.Session, q.Dir)
	} else {
		v, err = l.List(context.Background(), ListOptions{Dir: q.Dir, Limit: q.Limit, Offset: q.Offset,
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

func lstDecode(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %.200s: %v", raw, err)
	}
	return v
}

// lstSame compares two answers as JSON values (objects compared by key, so
// key order does not matter) and reports the differing fields.
func lstSame(t *testing.T, what string, want, got json.RawMessage) bool {
	t.Helper()
	w, g := lstDecode(t, want), lstDecode(t, got)
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
				fmt.Fprintf(&msg, "      %s: sdk %s / scribe %s\n", k, lstShow(wv, wh), lstShow(gv, gh))
			}
		}
	}
	t.Errorf("%s: scribe differs from the SDK (%d vs %d entries):\n%s", what, len(wl), len(gl), msg.String())
	return false
}

func lstShow(v any, present bool) string {
	if !present {
		return "(absent)"
	}
	s := fmt.Sprintf("%#v", v)
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// lstCompare runs every query through both and compares.
func lstCompare(t *testing.T, p *peer.Peer, configDir string, qs []lstQuery) {
	t.Helper()
	sdk := lstSDK(t, p, configDir, qs)
	t.Logf("comparing %d listSessions/getSessionInfo answers with the SDK", len(qs))
	bad := 0
	for i, q := range qs {
		if !lstSame(t, q.String(), sdk[i], lstGo(t, configDir, q)) {
			if bad++; bad > 10 {
				t.Fatalf("too many differences")
			}
		}
	}
}

// lstQueriesFor is the standard set: every listing variant for the whole
// config and for each project path, and getSessionInfo for every id with
// and without the project path.
func lstQueriesFor(projects []string, ids map[string]string) []lstQuery {
	qs := []lstQuery{
		{Op: "list"},
		{Op: "list", NoProgrammatic: true},
		{Op: "list", Limit: 3},
		{Op: "list", Limit: 4, Offset: 2},
		{Op: "list", Offset: 5},
	}
	for _, d := range projects {
		qs = append(qs,
			lstQuery{Op: "list", Dir: d},
			lstQuery{Op: "list", Dir: d, NoWorktrees: true},
			lstQuery{Op: "list", Dir: d, NoProgrammatic: true},
			lstQuery{Op: "list", Dir: d, Limit: 2},
			lstQuery{Op: "list", Dir: d, Limit: 2, Offset: 1},
		)
	}
	var sorted []string
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	for _, id := range sorted {
		qs = append(qs, lstQuery{Op: "info", Session: id}, lstQuery{Op: "info", Session: id, Dir: ids[id]})
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
	l := Layout{ConfigDir: cfg}
	ctx := context.Background()

	check := func(what string, sdk []peer.SessionInfo, opt ListOptions) {
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
		lstSame(t, what, wb, gb)
	}
	all := ListOptions{IncludeWorktrees: true, IncludeProgrammatic: true}
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
			lstSame(t, fmt.Sprintf("info %s (%s) dir=%q", role, id, dir), wb, gb)
		}
	}
	// The sidechain-only file is neither listed nor described.
	if got, _ := l.Info(ctx, ids["sidechainOnly"], cwd); got != nil {
		t.Errorf("Info(sidechain-only) = %+v, want nil", got)
	}
}

// lstLayCorpus lays out every Claude Code transcript of the real corpus in
// Claude Code's layout: projects/<SanitizePath(first cwd)>/<name>, subagent
// files under their session's folder. Codex files (no "sessionId" key) are
// skipped and counted. Files get distinct mtimes with sub-millisecond
// parts. It returns the project path of each session id.
func lstLayCorpus(t *testing.T, cfg string) (ids map[string]string, projects []string, codex, files int) {
	t.Helper()
	src := testenv.CorpusDir(t)
	cwdRE := regexp.MustCompile(`"cwd":\s*"((?:[^"\\]|\\.)*)"`)
	ids = map[string]string{}
	seenProj := map[string]bool{}
	type sub struct{ path, sid, cwd string }
	var subs []sub
	n := 0
	place := func(from, to string) {
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(to); err == nil {
			t.Fatalf("corpus layout: %s twice", to)
		}
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o600); err != nil {
			t.Fatal(err)
		}
		mt := time.Unix(1760000000+int64(n)*3600, int64(n)*7919777%1e9)
		n++
		files++
		if err := os.Chtimes(to, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	sessionDir := map[string]string{}
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Contains(data, []byte(`"sessionId"`)) {
			codex++
			return nil
		}
		cwd := "/corpus/no-cwd"
		if m := cwdRE.FindSubmatch(data); m != nil {
			if err := json.Unmarshal(append(append([]byte{'"'}, m[1]...), '"'), &cwd); err != nil {
				return err
			}
		}
		if filepath.Base(filepath.Dir(path)) == "subagents" {
			subs = append(subs, sub{path, filepath.Base(filepath.Dir(filepath.Dir(path))), cwd})
			return nil
		}
		dir := Layout{ConfigDir: cfg}.ProjectDir(cwd)
		name := filepath.Base(path)
		place(path, filepath.Join(dir, name))
		if id := strings.TrimSuffix(name, ".jsonl"); IsSessionID(id) {
			ids[id] = cwd
			sessionDir[id] = dir
		}
		if !seenProj[cwd] {
			seenProj[cwd] = true
			projects = append(projects, cwd)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range subs {
		dir, ok := sessionDir[s.sid]
		if !ok {
			dir = Layout{ConfigDir: cfg}.ProjectDir(s.cwd)
		}
		place(s.path, filepath.Join(dir, s.sid, "subagents", filepath.Base(s.path)))
	}
	sort.Strings(projects)
	return ids, projects, codex, files
}

func TestListMatchesSDKOnRealCorpus(t *testing.T) {
	p := peer.Find(t)
	cfg := filepath.Join(t.TempDir(), "cfg")
	ids, projects, codex, files := lstLayCorpus(t, cfg)
	t.Logf("corpus: %d Claude Code files laid out (%d UUID-named sessions in %d projects, the rest subagent or non-UUID files); %d Codex files skipped",
		files, len(ids), len(projects), codex)
	if len(ids) < 20 {
		t.Fatalf("corpus: only %d sessions", len(ids))
	}
	lstCompare(t, p, cfg, lstQueriesFor(projects, ids))
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
	qs := []lstQuery{
		{Op: "list"}, {Op: "list", Dir: cwd}, {Op: "list", Dir: cwd, Limit: 50, Offset: 10},
		{Op: "list", Limit: 7, Offset: 290},
	}
	start := time.Now()
	sdk := lstSDK(t, p, cfg, qs)
	sdkTime := time.Since(start)
	start = time.Now()
	var got []json.RawMessage
	for _, q := range qs {
		got = append(got, lstGo(t, cfg, q))
	}
	goTime := time.Since(start)
	t.Logf("bulk: %d sessions, %d bytes; 4 queries: SDK %v (one node process), scribe %v",
		res.Sessions, res.TotalBytes, sdkTime.Round(time.Millisecond), goTime.Round(time.Millisecond))
	for i, q := range qs {
		lstSame(t, q.String(), sdk[i], got[i])
	}
	var all []SessionInfo
	if err := json.Unmarshal(got[0], &all); err != nil || len(all) != 300 {
		t.Fatalf("bulk: listed %d sessions (%v), want 300", len(all), err)
	}
}

// ---------------------------------------------------------------------------
// Hand-made sessions, one per rule

// lstSession writes one transcript line by line.
type lstSession struct {
	id, cwd, branch, entry string
	t                      time.Time
	n                      int
	lines                  []string
	extraTop               string // inserted at the start of every chain row
}

var lstSeq int

func lstID() string {
	lstSeq++
	return fmt.Sprintf("%08x-1111-4222-8333-%012x", lstSeq, lstSeq*7919)
}

func lstNew(cwd string) *lstSession {
	return &lstSession{id: lstID(), cwd: cwd, branch: "main", entry: "cli",
		t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
}

func lstQ(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func (s *lstSession) uuid() string {
	s.n++
	return fmt.Sprintf("%08x-aaaa-4bbb-8ccc-%012x", s.n, lstSeq)
}

func (s *lstSession) ts() string {
	s.t = s.t.Add(1500 * time.Millisecond)
	return s.t.Format("2006-01-02T15:04:05.000Z")
}

func (s *lstSession) tail() string {
	return fmt.Sprintf(`"userType":"external","entrypoint":%s,"cwd":%s,"sessionId":%s,"version":"2.1.332","gitBranch":%s}`,
		lstQ(s.entry), lstQ(s.cwd), lstQ(s.id), lstQ(s.branch))
}

// user appends a user row; content is a string or blocks; extra is
// inserted before "type" (e.g. `"isMeta":true,`).
func (s *lstSession) user(content any, extra string) *lstSession {
	s.lines = append(s.lines, fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,%s%s"type":"user","message":{"role":"user","content":%s},"uuid":%s,"timestamp":%s,`,
		s.extraTop, extra, lstQ(content), lstQ(s.uuid()), lstQ(s.ts()))+s.tail())
	return s
}

func (s *lstSession) assistant(text string) *lstSession {
	s.lines = append(s.lines, fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,%s"message":{"model":"claude-sonnet-4-5","id":"msg_01x","type":"message","role":"assistant","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","stop_sequence":null},"type":"assistant","uuid":%s,"timestamp":%s,`,
		s.extraTop, lstQ(text), lstQ(s.uuid()), lstQ(s.ts()))+s.tail())
	return s
}

func (s *lstSession) raw(line string) *lstSession {
	s.lines = append(s.lines, line)
	return s
}

func (s *lstSession) meta(typ, key, val string) *lstSession {
	return s.raw(fmt.Sprintf(`{"type":%s,%s:%s,"sessionId":%s}`, lstQ(typ), lstQ(key), lstQ(val), lstQ(s.id)))
}

// filler adds assistant rows until the transcript has grown by n bytes.
func (s *lstSession) filler(n int) *lstSession {
	word := "lorem ipsum dolor sit amet consectetur "
	for n > 0 {
		s.assistant(strings.Repeat(word, 25))
		n -= len(s.lines[len(s.lines)-1]) + 1
	}
	return s
}

func (s *lstSession) text() string { return strings.Join(s.lines, "\n") + "\n" }

// lstWrite writes data as <dir>/<name> with the given mtime.
func lstWrite(t *testing.T, dir, name, data string, mtime time.Time) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return p
}

// lstCase is one hand-made session and what its listing entry must hold.
type lstCase struct {
	name   string
	s      *lstSession
	file   string         // raw content instead of s.text()
	id     string         // file name without .jsonl when not s.id
	proj   string         // project path of the folder (default: the rules project)
	side   map[string]any // <id>/<name> sidecar files: name -> raw string
	listed bool           // expected in List(all)
	want   map[string]any // JSON fields of the entry (nil value: absent)
	mtime  time.Time
}

func TestListRules(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "cfg")
	l := Layout{ConfigDir: cfg}
	proj := filepath.Join(root, "rules-proj")
	// Two existing folders with the same sanitized name (collision filter).
	collA := filepath.Join(root, "coll", "proj-a")
	collB := filepath.Join(root, "coll", "proj", "a")
	longProj := filepath.Join(root, strings.Repeat("very-long-folder-name-", 10)+"end")
	for _, d := range []string{proj, collA, collB, longProj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if SanitizePath(collA) != SanitizePath(collB) {
		t.Fatalf("collision folders sanitize differently")
	}
	big := 150 << 10 // puts head and tail windows apart
	ts := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	longPrompt := strings.Repeat("abcdefghij", 25)
	surrogateCut := strings.Repeat("x", 199) + "😀" + strings.Repeat("y", 20)
	surrogateKept := strings.Repeat("x", 198) + "😀" + strings.Repeat("y", 20)
	hugeText := strings.Repeat("0123456789abcdef", 200<<10/16)

	var cases []lstCase
	add := func(c lstCase) { cases = append(cases, c) }

	// Title precedence: tail custom-title ‖ sidecar ‖ head custom-title ‖ tail ai-title ‖ head ai-title.
	s := lstNew(proj).user("first prompt", "").meta("custom-title", "customTitle", "Head title").meta("ai-title", "aiTitle", "Head AI").filler(big).
		meta("ai-title", "aiTitle", "Tail AI").meta("custom-title", "customTitle", "Tail title")
	add(lstCase{name: "title: tail custom-title wins", s: s, listed: true, side: map[string]any{"custom-title.json": `{"customTitle":"Sidecar"}`},
		want: map[string]any{"customTitle": "Tail title", "summary": "Tail title", "firstPrompt": "first prompt"}})
	s = lstNew(proj).user("first prompt", "").meta("custom-title", "customTitle", "Head title").filler(big).meta("ai-title", "aiTitle", "Tail AI")
	add(lstCase{name: "title: sidecar beats head custom-title", s: s, listed: true,
		side: map[string]any{"custom-title.json": `{"customTitle":"  Side\u0007car\u200b\u200b title  ","by":"user"}`},
		want: map[string]any{"customTitle": "Side car  title", "summary": "Side car  title"}})
	s = lstNew(proj).user("first prompt", "").meta("custom-title", "customTitle", "Head title").filler(big).meta("ai-title", "aiTitle", "Tail AI")
	add(lstCase{name: "title: head custom-title beats tail ai-title", s: s, listed: true,
		want: map[string]any{"customTitle": "Head title", "summary": "Head title"}})
	s = lstNew(proj).user("first prompt", "").meta("ai-title", "aiTitle", "Head AI").filler(big).meta("ai-title", "aiTitle", "Tail AI")
	add(lstCase{name: "title: tail ai-title beats head ai-title", s: s, listed: true,
		want: map[string]any{"customTitle": "Tail AI"}})
	s = lstNew(proj).user("first prompt", "").meta("ai-title", "aiTitle", "Head AI").filler(big)
	add(lstCase{name: "title: head ai-title", s: s, listed: true, want: map[string]any{"customTitle": "Head AI"}})
	s = lstNew(proj).user("first prompt", "").meta("custom-title", "customTitle", "Head title").filler(big).meta("custom-title", "customTitle", "")
	add(lstCase{name: "title: empty tail custom-title skips the sidecar", s: s, listed: true,
		side: map[string]any{"custom-title.json": `{"customTitle":"Sidecar"}`},
		want: map[string]any{"customTitle": "Head title"}})
	s = lstNew(proj).user("first prompt", "").meta("custom-title", "customTitle", "Old").meta("custom-title", "customTitle", "New")
	add(lstCase{name: "title: last custom-title wins", s: s, listed: true, want: map[string]any{"customTitle": "New"}})
	s = lstNew(proj).user("first prompt", "").filler(big).meta("custom-title", "customTitle", "Far away").filler(big)
	add(lstCase{name: "title: custom-title in neither window is invisible", s: s,
		listed: true, want: map[string]any{"customTitle": nil, "summary": "first prompt"}})

	// Summary precedence: customTitle ‖ tail lastPrompt ‖ tail summary ‖ firstPrompt ‖ Image/Document.
	s = lstNew(proj).user("first prompt", "").meta("summary", "summary", "Summary text").meta("last-prompt", "lastPrompt", "Last prompt")
	add(lstCase{name: "summary: lastPrompt beats summary", s: s, listed: true,
		want: map[string]any{"summary": "Last prompt", "firstPrompt": "first prompt", "customTitle": nil}})
	s = lstNew(proj).user("first prompt", "").meta("summary", "summary", "Summary text")
	add(lstCase{name: "summary: summary beats firstPrompt", s: s, listed: true, want: map[string]any{"summary": "Summary text"}})
	s = lstNew(proj).user("first prompt", "").meta("last-prompt", "lastPrompt", "Only in head").filler(big)
	add(lstCase{name: "summary: lastPrompt outside the tail", s: s, listed: true, want: map[string]any{"summary": "first prompt"}})
	s = lstNew(proj).user([]any{map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}}, "").assistant("a picture")
	add(lstCase{name: "summary: Image placeholder", s: s, listed: true, want: map[string]any{"summary": "Image", "firstPrompt": nil}})
	s = lstNew(proj).user([]any{map[string]any{"type": "document", "source": map[string]any{"type": "text", "data": "x"}}}, "")
	add(lstCase{name: "summary: Document placeholder", s: s, listed: true, want: map[string]any{"summary": "Document"}})
	s = lstNew(proj).assistant("nobody asked")
	add(lstCase{name: "summary: assistant-only file is omitted", s: s, listed: false})
	s = lstNew(proj).filler(big).user("late prompt", "")
	add(lstCase{name: "summary: first prompt past the head is omitted", s: s, listed: false})

	// firstPrompt.
	s = lstNew(proj).user("<local-command-caveat>Caveat</local-command-caveat>", "").
		user("meta prompt", `"isMeta":true,`).
		user("This session is being continued", `"isCompactSummary":true,`).
		user([]any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}}, "").
		user("[Request interrupted by user for tool use]", "").
		user("  the\nreal  prompt\n ", "")
	add(lstCase{name: "firstPrompt: skips meta, compact, tool_result, tags, interrupts", s: s, listed: true,
		want: map[string]any{"firstPrompt": "the real  prompt"}})
	s = lstNew(proj).user("<command-name>/init</command-name>\n<command-message>init</command-message>\n<command-args></command-args>", "").assistant("done")
	add(lstCase{name: "firstPrompt: command-name fallback", s: s, listed: true, want: map[string]any{"firstPrompt": "/init", "summary": "/init"}})
	s = lstNew(proj).user("<command-name>/init</command-name>", "").user("a later prompt", "")
	add(lstCase{name: "firstPrompt: a real prompt beats the command fallback", s: s, listed: true, want: map[string]any{"firstPrompt": "a later prompt"}})
	s = lstNew(proj).user("<bash-input>ls -la</bash-input>", "").user("<bash-stdout>total 0</bash-stdout><bash-stderr></bash-stderr>", "")
	add(lstCase{name: "firstPrompt: bash input", s: s, listed: true, want: map[string]any{"firstPrompt": "! ls -la"}})
	s = lstNew(proj).user(longPrompt, "")
	add(lstCase{name: "firstPrompt: 250 characters", s: s, listed: true, want: map[string]any{"firstPrompt": longPrompt[:200] + "…"}})
	s = lstNew(proj).user(surrogateCut, "")
	add(lstCase{name: "firstPrompt: surrogate pair at the cut", s: s, listed: true, want: map[string]any{"firstPrompt": strings.Repeat("x", 199) + "…"}})
	s = lstNew(proj).user(surrogateKept, "")
	add(lstCase{name: "firstPrompt: surrogate pair before the cut", s: s, listed: true, want: map[string]any{"firstPrompt": strings.Repeat("x", 198) + "😀…"}})
	s = lstNew(proj).user([]any{map[string]any{"type": "text", "text": "   "}, map[string]any{"type": "image", "source": map[string]any{}}, map[string]any{"type": "text", "text": "second block"}}, "")
	add(lstCase{name: "firstPrompt: first non-empty text block", s: s, listed: true, want: map[string]any{"firstPrompt": "second block"}})
	s = lstNew(proj).user("see this:\n<pasted_content id=\"0a1f\">\n<b>pasted</b> text\n</pasted_content id=\"0a1f\">\n\nthanks", "")
	add(lstCase{name: "firstPrompt: pasted content unwrapped", s: s, listed: true, want: map[string]any{"firstPrompt": "see this:<b>pasted</b> textthanks"}})
	s = lstNew(proj).raw(`{"parentUuid": null, "type": "user", "message": {"role": "user", "content": "spaced json"}, "uuid": "u1", "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/spaced/cwd", "sessionId": "x", "gitBranch": "spaced"}`)
	add(lstCase{name: "firstPrompt: spaced JSON", s: s, listed: true, want: map[string]any{"firstPrompt": "spaced json", "cwd": "/spaced/cwd", "gitBranch": "spaced"}})

	// Tag.
	s = lstNew(proj).user("tagged", "").meta("tag", "tag", "docs").meta("tag", "tag", "")
	add(lstCase{name: "tag: empty clears", s: s, listed: true, want: map[string]any{"tag": nil}})
	s = lstNew(proj).user("tagged", "").meta("tag", "tag", "").meta("tag", "tag", "work")
	add(lstCase{name: "tag: last wins", s: s, listed: true, want: map[string]any{"tag": "work"}})
	s = lstNew(proj).user("tagged", "").meta("tag", "tag", "old").
		raw(`{"parentUuid":null,"type":"user","message":{"role":"user","content":"torn wri{"type":"tag","tag":"glued","sessionId":"x"}`)
	add(lstCase{name: "tag: two rows glued by a torn write", s: s, listed: true, want: map[string]any{"tag": "glued"}})

	// Parsing nuances.
	s = lstNew(proj).user("spaced relocated", "").raw(`{"type": "relocated", "relocatedCwd": "/not/used", "sessionId": "x"}`)
	add(lstCase{name: "relocated: only the compact type form counts", s: s, listed: true, want: map[string]any{"cwd": s.cwd}})
	s = lstNew(proj).user("first prompt", "").meta("summary", "summary", "Summary text").
		meta("last-prompt", "lastPrompt", "Earlier").meta("last-prompt", "lastPrompt", "")
	add(lstCase{name: "summary: an empty last lastPrompt does not fall back to an earlier one", s: s, listed: true,
		want: map[string]any{"summary": "Summary text"}})
	s = lstNew(proj).user("first prompt", "").meta("custom-title", "customTitle", "Good").
		raw(`{"type":"custom-title","customTitle":42,"sessionId":"x"}`)
	add(lstCase{name: "title: a non-string title is skipped", s: s, listed: true, want: map[string]any{"customTitle": "Good"}})
	s = lstNew(proj).user("first prompt", "").raw(`{"type": "custom-title", "customTitle": "Spaced", "sessionId": "x"}`)
	add(lstCase{name: "title: spaced custom-title", s: s, listed: true, want: map[string]any{"customTitle": "Spaced"}})
	s = lstNew(proj).user("crlf prompt", "").meta("tag", "tag", "crlf")
	add(lstCase{name: "CRLF line ends", s: s, file: strings.ReplaceAll(s.text(), "\n", "\r\n"), listed: true,
		want: map[string]any{"firstPrompt": "crlf prompt", "tag": "crlf"}})
	s = lstNew(proj)
	s.user("spaced sidechain", "")
	s.lines[0] = strings.Replace(s.lines[0], `"isSidechain":false`, `"isSidechain": true`, 1)
	add(lstCase{name: "skip: spaced sidechain first line", s: s, listed: false})
	s = lstNew(proj).user("queued later", "").assistant("ok").
		raw(`{"type":"attachment","attachment":{"type":"queued_command","prompt":"do more","origin":{"kind":"human"}},"uuid":"q1","timestamp":"2026-03-01T11:00:00.000Z","parentUuid":null,"isSidechain":false}`)
	add(lstCase{name: "archived: a queued prompt after it unarchives", s: s, listed: true,
		side: map[string]any{"archived.json": `{"archived":true,"at":"2026-03-01T10:30:00.000Z"}`},
		want: map[string]any{"archived": false}})
	s = lstNew(proj).user("meta later", "").assistant("ok").user("meta row", `"isMeta":true,`)
	add(lstCase{name: "archived: a meta row after it does not", s: s, listed: true,
		side: map[string]any{"archived.json": `{"archived":true,"at":"2026-03-01T10:00:02.000Z"}`},
		want: map[string]any{"archived": true}})

	// Skips.
	s = lstNew(proj)
	s.extraTop = `"agentId":"deadbeef",`
	s.user("sidechain prompt", "")
	s.lines[0] = strings.Replace(s.lines[0], `"isSidechain":false`, `"isSidechain":true`, 1)
	add(lstCase{name: "skip: sidechain first line", s: s, listed: false})
	add(lstCase{name: "skip: empty file", file: "", id: lstID(), listed: false})
	add(lstCase{name: "skip: non-UUID name", s: lstNew(proj).user("agent file", ""), id: "agent-1234abcd", listed: false})
	up := lstNew(proj).user("upper-case name", "")
	up.id = strings.ToUpper(up.id)
	add(lstCase{name: "uppercase UUID name", s: up, listed: true, want: map[string]any{"sessionId": up.id}})

	// Torn and huge lines.
	s = lstNew(proj).user("torn", "").meta("custom-title", "customTitle", "Complete").
		raw(`{"type":"custom-title","customTitle":"Cut off`)
	add(lstCase{name: "torn last line ignored", file: strings.TrimSuffix(s.text(), "\n"), s: s, listed: true,
		want: map[string]any{"customTitle": "Complete"}})
	s = lstNew(proj).user("short first", "").assistant(hugeText).meta("last-prompt", "lastPrompt", "after huge")
	add(lstCase{name: "huge line across both windows", s: s, listed: true,
		want: map[string]any{"firstPrompt": "short first", "summary": "after huge"}})
	s = lstNew(proj).user(hugeText, "").meta("ai-title", "aiTitle", "titled")
	add(lstCase{name: "huge first prompt cannot be parsed", s: s, listed: true,
		want: map[string]any{"firstPrompt": nil, "summary": "titled"}})

	// createdAt, gitBranch, cwd.
	s = lstNew(proj).raw(`{"type":"file-history-snapshot","messageId":"m","snapshot":{"messageId":"m","trackedFileBackups":{},"timestamp":"2026-02-03T04:05:06.789+02:00"},"isSnapshotUpdate":false}`).user("dated", "")
	add(lstCase{name: "createdAt: first timestamp anywhere, with an offset", s: s, listed: true,
		want: map[string]any{"createdAt": json.Number(fmt.Sprint(ts("2026-02-03T04:05:06.789+02:00")))}})
	s = lstNew(proj).raw(`{"type":"summary","summary":"no timestamps here","leafUuid":"x"}`)
	add(lstCase{name: "createdAt: absent", s: s, listed: true, want: map[string]any{"createdAt": nil, "cwd": nil}})
	s = lstNew(proj)
	s.branch = "head-branch"
	s.user("branches", "")
	s.filler(big)
	s.branch = "tail-branch"
	s.assistant("on another branch")
	s.branch = "last"
	s.raw(`{"type":"last-prompt","lastPrompt":"x","sessionId":"y"}`)
	add(lstCase{name: "gitBranch: last in tail", s: s, listed: true, want: map[string]any{"gitBranch": "tail-branch"}})
	s = lstNew(proj).user("relocated", "").raw(`{"type":"relocated","relocatedCwd":"/moved/here","sessionId":"x"}`)
	add(lstCase{name: "cwd: relocated beats head cwd", s: s, listed: true, want: map[string]any{"cwd": "/moved/here"}})

	// Archive.
	s = lstNew(proj).user("archived", "").assistant("reply")
	add(lstCase{name: "archived: after the last prompt", s: s, listed: true,
		side: map[string]any{"archived.json": `{"archived":true,"at":"2026-03-02T00:00:00.000Z","by":"sdk"}`},
		want: map[string]any{"archived": true}})
	s = lstNew(proj).user("archived", "").assistant("reply").user("prompt after the archive", "")
	add(lstCase{name: "archived: a prompt after it unarchives", s: s, listed: true,
		side: map[string]any{"archived.json": `{"archived":true,"at":"2026-03-01T10:00:02Z","by":"sdk"}`},
		want: map[string]any{"archived": false}})
	s = lstNew(proj).user("archived", "").assistant("reply")
	add(lstCase{name: "archived: false", s: s, listed: true,
		side: map[string]any{"archived.json": `{"archived":false,"at":"2026-03-02T00:00:00+01:00"}`},
		want: map[string]any{"archived": false}})
	s = lstNew(proj).user("archived", "")
	add(lstCase{name: "archived: bad date is ignored", s: s, listed: true,
		side: map[string]any{"archived.json": `{"archived":true,"at":"2026-02-30T00:00:00Z"}`},
		want: map[string]any{"archived": nil}})
	s = lstNew(proj).user("archived", "")
	add(lstCase{name: "archived: over 4096 bytes is ignored", s: s, listed: true,
		side: map[string]any{"archived.json": `{"archived":true,"at":"2026-03-02T00:00:00Z","pad":"` + strings.Repeat("x", 4096) + `"}`},
		want: map[string]any{"archived": nil}})

	// Programmatic sessions (hidden only by includeProgrammatic:false).
	s = lstNew(proj)
	s.entry = "sdk-ts"
	s.user("from the SDK", "")
	add(lstCase{name: "programmatic: sdk-ts", s: s, listed: true})
	s = lstNew(proj)
	s.extraTop = `"sessionKind":"daemon-worker",`
	s.user("from a daemon", "")
	add(lstCase{name: "programmatic: daemon-worker", s: s, listed: true})

	// continued-in.
	target := lstNew(proj).user("the continuation", "")
	add(lstCase{name: "continued-in: target", s: target, listed: true})
	s = lstNew(proj).user("continued", "").assistant("bye").raw(`{"type":"continued-in","continuedInSessionId":"` + target.id + `"}`)
	add(lstCase{name: "continued-in: hidden", s: s, listed: false})
	s = lstNew(proj).user("continued", "").raw(`{"type":"continued-in","continuedInSessionId":"`+target.id+`"}`).user("but came back", "")
	add(lstCase{name: "continued-in: a later prompt keeps it", s: s, listed: true})
	s = lstNew(proj).user("continued", "").raw(`{"type":"continued-in","continuedInSessionId":"` + lstID() + `"}`)
	add(lstCase{name: "continued-in: missing target keeps it", s: s, listed: true})
	s = lstNew(proj).user("continued", "").raw(`{"type":"continued-in","continuedInSessionId":"` + target.id + `"}`).
		raw(`{"type":"continued-in","continuedInSessionId":"not-a-uuid"}`)
	add(lstCase{name: "continued-in: the newest one is not a UUID", s: s, listed: true})

	// Collision filter: same folder, recorded cwds differ.
	add(lstCase{name: "collision: proj-a", s: lstNew(collA).user("from proj-a", ""), proj: collA, listed: true})
	add(lstCase{name: "collision: proj/a", s: lstNew(collB).user("from proj/a", ""), proj: collA, listed: true})
	add(lstCase{name: "collision: missing folder kept", s: lstNew(filepath.Join(root, "coll", "proj_a")).user("from proj_a", ""), proj: collA, listed: true})

	// A project path over 200 characters: the hashed folder, and another
	// folder with the same prefix that records the path.
	add(lstCase{name: "long path: hashed folder", s: lstNew(longProj).user("long one", ""), proj: longProj, listed: true})
	other := lstNew(longProj).user("long two", "")
	add(lstCase{name: "long path: other hash", s: other, proj: longProj + "\x00other", listed: true})

	// Same id in two folders: the newest copy is kept.
	dupOld := lstNew(proj).user("old copy", "")
	dupNew := *dupOld
	dupNew.lines = nil
	dupNew.cwd = collA
	dupNew.user("new copy", "")
	add(lstCase{name: "duplicate: old copy", s: dupOld, listed: true, mtime: time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC), want: map[string]any{"summary": "new copy"}})
	add(lstCase{name: "duplicate: new copy", s: &dupNew, proj: collA, listed: true, mtime: time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)})

	// Equal mtimes: sessionId descending; sub-millisecond mtimes round.
	tie := time.Date(2026, 3, 5, 0, 0, 0, 500_000, time.UTC)
	add(lstCase{name: "tie 1", s: lstNew(proj).user("tie one", ""), listed: true, mtime: tie,
		want: map[string]any{"lastModified": json.Number(fmt.Sprint(tie.UnixMilli() + 1))}})
	add(lstCase{name: "tie 2", s: lstNew(proj).user("tie two", ""), listed: true, mtime: tie})

	// Write everything.
	ids := map[string]string{}
	byID := map[string]*lstCase{}
	for i := range cases {
		c := &cases[i]
		pp := c.proj
		if pp == "" {
			pp = proj
		}
		dir := l.ProjectDir(pp)
		if base, ok := strings.CutSuffix(pp, "\x00other"); ok {
			dir = filepath.Join(l.ProjectsDir(), SanitizePath(base)[:maxProjectName]+"-otherhash")
			pp = base
		}
		data := c.file
		id := c.id
		if c.s != nil {
			if data == "" {
				data = c.s.text()
			}
			if id == "" {
				id = c.s.id
			}
		}
		mt := c.mtime
		if mt.IsZero() {
			mt = time.Date(2026, 3, 2, 0, 0, i, i*1_000_123, time.UTC)
		}
		lstWrite(t, dir, id+".jsonl", data, mt)
		for name, content := range c.side {
			lstWrite(t, filepath.Join(dir, id), name, content.(string), time.Now())
		}
		ids[id] = pp
		byID[id] = c
	}
	// A symlinked transcript is not followed.
	linked := lstNew(proj).user("via a symlink", "")
	lp := lstWrite(t, filepath.Join(root, "elsewhere"), linked.id+".jsonl", linked.text(), time.Now())
	if err := os.Symlink(lp, filepath.Join(l.ProjectDir(proj), linked.id+".jsonl")); err != nil {
		t.Fatal(err)
	}
	ids[linked.id] = proj

	ctx := context.Background()
	all, err := l.List(ctx, ListOptions{IncludeWorktrees: true, IncludeProgrammatic: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for _, si := range all {
		b, _ := json.Marshal(si)
		got[si.SessionID] = lstDecode(t, b).(map[string]any)
	}
	for i := range cases {
		c := &cases[i]
		id := c.id
		if id == "" && c.s != nil {
			id = c.s.id
		}
		e, listed := got[id]
		if listed != c.listed {
			t.Errorf("%s: listed=%v, want %v", c.name, listed, c.listed)
			continue
		}
		for k, v := range c.want {
			gv, has := e[k]
			if v == nil {
				if has {
					t.Errorf("%s: %s = %#v, want absent", c.name, k, gv)
				}
				continue
			}
			if !has || !reflect.DeepEqual(gv, v) {
				t.Errorf("%s: %s = %#v, want %#v", c.name, k, gv, v)
			}
		}
	}
	if _, ok := got[linked.id]; ok {
		t.Errorf("a symlinked transcript was listed")
	}

	// Filters.
	noProg, err := l.List(ctx, ListOptions{IncludeProgrammatic: false})
	if err != nil {
		t.Fatal(err)
	}
	for _, si := range noProg {
		if c := byID[si.SessionID]; c != nil && strings.HasPrefix(c.name, "programmatic") {
			t.Errorf("%s: listed with IncludeProgrammatic false", c.name)
		}
	}
	if len(noProg) != len(all)-2 {
		t.Errorf("IncludeProgrammatic false hid %d sessions, want 2", len(all)-len(noProg))
	}
	names := func(dir string) []string {
		t.Helper()
		ls, err := l.List(ctx, ListOptions{Dir: dir, IncludeWorktrees: true, IncludeProgrammatic: true})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, si := range ls {
			out = append(out, byID[si.SessionID].name)
		}
		sort.Strings(out)
		return out
	}
	if got, want := names(collA), []string{"collision: missing folder kept", "collision: proj-a", "duplicate: new copy"}; !reflect.DeepEqual(got, want) {
		t.Errorf("List(proj-a) = %q, want %q", got, want)
	}
	if got, want := names(collB), []string{"collision: missing folder kept", "collision: proj/a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("List(proj/a) = %q, want %q", got, want)
	}
	if got, want := names(longProj), []string{"long path: hashed folder", "long path: other hash"}; !reflect.DeepEqual(got, want) {
		t.Errorf("List(long path) = %q, want %q", got, want)
	}
	// Pages are slices of the full listing.
	full, _ := l.List(ctx, ListOptions{Dir: proj, IncludeProgrammatic: true})
	page, _ := l.List(ctx, ListOptions{Dir: proj, IncludeProgrammatic: true, Limit: 5, Offset: 3})
	if len(full) < 8 || !reflect.DeepEqual(lstIDs(page), lstIDs(full[3:8])) {
		t.Errorf("page 3..8 = %v, want %v", lstIDs(page), lstIDs(full[min(3, len(full)):min(8, len(full))]))
	}
	// Info: the sidechain-first, empty and unknown files give nil; the
	// listing's filters do not apply.
	for i := range cases {
		c := &cases[i]
		if c.s == nil || !strings.HasPrefix(c.name, "skip: sidechain") && !strings.HasPrefix(c.name, "continued-in: hidden") {
			continue
		}
		info, err := l.Info(ctx, c.s.id, proj)
		if err != nil {
			t.Fatal(err)
		}
		if (info != nil) != strings.HasPrefix(c.name, "continued-in") {
			t.Errorf("Info(%s) = %+v", c.name, info)
		}
	}
	if info, _ := l.Info(ctx, lstID(), ""); info != nil {
		t.Errorf("Info(unknown) = %+v", info)
	}
	if info, _ := l.Info(ctx, "not-a-uuid", ""); info != nil {
		t.Errorf("Info(not-a-uuid) = %+v", info)
	}

	// ReadLite on one file, and the scribe-only fields.
	rl, ok, err := ReadLite(filepath.Join(l.ProjectDir(proj), target.id+".jsonl"), proj)
	if err != nil || !ok || rl.Summary != "the continuation" || rl.Entrypoint != "cli" || rl.ProjectDir != l.ProjectDir(proj) {
		t.Errorf("ReadLite = %+v, %v, %v", rl, ok, err)
	}
	if !bytes.Contains(rl.LastEntryTail, []byte(`"the continuation"`)) {
		t.Errorf("LastEntryTail = %s", rl.LastEntryTail)
	}
	if _, ok, err := ReadLite(filepath.Join(l.ProjectDir(proj), "agent-1234abcd.jsonl"), proj); ok || err != nil {
		t.Errorf("ReadLite(non-UUID) ok=%v err=%v", ok, err)
	}

	// And the SDK agrees on all of it.
	p := peer.Find(t)
	lstCompare(t, p, cfg, lstQueriesFor([]string{proj, collA, collB, longProj}, ids))
}

func lstIDs(ls []SessionInfo) []string {
	var out []string
	for _, s := range ls {
		out = append(out, s.SessionID)
	}
	return out
}

// TestListWorktrees checks that the folders of a repository's other
// worktrees are included unless IncludeWorktrees is false.
func TestListWorktrees(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	main := filepath.Join(root, "repo")
	wt := filepath.Join(root, "repo-feature")
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command(git, append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(main, 0o755); err != nil {
		t.Fatal(err)
	}
	run(main, "init", "-q")
	run(main, "commit", "-q", "--allow-empty", "-m", "init")
	run(main, "worktree", "add", "-q", "-b", "feature", wt)
	cfg := filepath.Join(root, "cfg")
	l := Layout{ConfigDir: cfg}
	a := lstNew(main).user("in main", "")
	b := lstNew(wt).user("in the worktree", "")
	lstWrite(t, l.ProjectDir(main), a.id+".jsonl", a.text(), time.Now())
	lstWrite(t, l.ProjectDir(wt), b.id+".jsonl", b.text(), time.Now().Add(-time.Minute))
	ctx := context.Background()
	with, err := l.List(ctx, ListOptions{Dir: main, IncludeWorktrees: true, IncludeProgrammatic: true})
	if err != nil {
		t.Fatal(err)
	}
	without, _ := l.List(ctx, ListOptions{Dir: main, IncludeProgrammatic: true})
	if !reflect.DeepEqual(lstIDs(with), []string{a.id, b.id}) || !reflect.DeepEqual(lstIDs(without), []string{a.id}) {
		t.Errorf("with worktrees %v, without %v", lstIDs(with), lstIDs(without))
	}
	if info, _ := l.Info(ctx, b.id, main); info == nil || info.Cwd != wt {
		t.Errorf("Info via worktree = %+v", info)
	}
	p := peer.Find(t)
	lstCompare(t, p, cfg, lstQueriesFor([]string{main, wt}, map[string]string{a.id: main, b.id: main}))
}

// ---------------------------------------------------------------------------
// Helpers, one rule each

func TestLiteDateParse(t *testing.T) {
	for s, want := range map[string]int64{
		"2026-01-10T11:00:02.267Z":      1768042802267,
		"2026-01-10T11:00:02.2679999Z":  1768042802267,
		"2026-01-10T11:00:02.2Z":        1768042802200,
		"2026-01-10T11:00:02Z":          1768042802000,
		"2026-01-10T11:00Z":             1768042800000,
		"2026-01-10":                    1768003200000,
		"2026-01":                       1767225600000,
		"2026":                          1767225600000,
		"+002026-01-10T11:00:02Z":       1768042802000,
		"2026-01-10T11:00:02+05:30":     1768023002000,
		"2026-01-10T11:00:02+0530":      1768023002000,
		"2026-01-10T24:00:00Z":          1768089600000,
		"2026-02-30T00:00:00Z":          1772409600000,
		"2026-01-10t11:00:02z":          1768042802000,
		"1970-01-01T00:00:00.000Z":      0,
		"-000001-01-01T00:00:00Z":       -62198755200000,
		"2026-01-10 11:00:02Z":          1768042802000,
		"2026-01-10T11:00:02.123+05:30": 1768023002123,
	} {
		if got, ok := liteDateParse(s); !ok || got != want {
			t.Errorf("liteDateParse(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "2026-01-10T25:00:00Z", "2026-01-10T24:30:00Z", "2026-01-32", "2026-13-01",
		"2026-01-10T11:00:60Z", "2026-01-10T11:00:02.Z", "2026-01-10T11Z", "2026-01-10T11:00:02+05",
		" 2026-01-10T11:00:02Z", "2026-01-10T11:00:02.267ZZ", "-000000-01-01T00:00:00Z"} {
		if got, ok := liteDateParse(s); ok {
			t.Errorf("liteDateParse(%q) = %d, want NaN", s, got)
		}
	}
}

func TestLiteMillisRoundsLikeNode(t *testing.T) {
	for _, c := range []struct{ sec, nsec, want int64 }{
		{1700000000, 400000000, 1700000000400},
		{1700000000, 499999999, 1700000000500},
		{1700000000, 999500000, 1700000001000},
		{1700000000, 499999, 1700000000001}, // .499999 ms is .5 in float64
		{1700000000, 400000, 1700000000000},
	} {
		if got := liteMillis(c.sec, c.nsec); got != c.want {
			t.Errorf("liteMillis(%d, %d) = %d, want %d", c.sec, c.nsec, got, c.want)
		}
	}
}

func TestLiteFirstPromptRules(t *testing.T) {
	line := func(content any, extra string) string {
		return fmt.Sprintf(`{%s"type":"user","message":{"role":"user","content":%s},"uuid":"u"}`, extra, lstQ(content))
	}
	for _, c := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"string", []string{line("hello", "")}, "hello"},
		{"trim and newlines", []string{line("\u00a0 a\nb\r\n ", "")}, "a b"},
		{"xml skipped", []string{line("<system-reminder>x</system-reminder>", ""), line("next", "")}, "next"},
		{"not a tag: capital", []string{line("<Foo> bar", "")}, "<Foo> bar"},
		{"not a tag: no close", []string{line("<foo", "")}, "<foo"},
		{"interrupt needs the bracket", []string{line("[Request interrupted by user", "")}, "[Request interrupted by user"},
		{"meta skipped", []string{line("m", `"isMeta":true,`), line("n", "")}, "n"},
		{"spaced meta skipped", []string{line("m", `"isMeta": true,`), line("n", "")}, "n"},
		{"tool_result anywhere skips the line", []string{line([]any{map[string]any{"type": "text", "text": "a"}, map[string]any{"type": "tool_result"}}, ""), line("b", "")}, "b"},
		{"command fallback is the first", []string{line("<command-name>/a</command-name>", ""), line("<command-name>/b</command-name>", "")}, "/a"},
		{"command name across a CR is no match, and looks like a tag", []string{line("<command-name>/a\r</command-name>", "")}, ""},
		{"command name across a CR, then text", []string{line("x <command-name>/a\r</command-name>", "")}, "x <command-name>/a\r</command-name>"},
		{"bash input trimmed", []string{line("<bash-input>  git status </bash-input>", "")}, "! git status"},
		{"bash input not truncated", []string{line("<bash-input>"+strings.Repeat("z", 300)+"</bash-input>", "")}, "! " + strings.Repeat("z", 300)},
		{"unparseable line skipped", []string{`{"type":"user","message":{"content":"broken"`, line("ok", "")}, "ok"},
		{"message null", []string{`{"type":"user","message":null}`, line("ok", "")}, "ok"},
		{"nothing", []string{`{"type":"assistant"}`}, ""},
	} {
		if got := liteFirstPrompt([]byte(strings.Join(c.lines, "\n"))); got != c.want {
			t.Errorf("%s: firstPrompt = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestLiteLastKeyed(t *testing.T) {
	idx := func(win []byte) *liteIdx {
		var x liteIdx
		x.reset(win)
		x.buildAll()
		return &x
	}
	win := []byte(strings.Join([]string{
		`{"type":"tag","tag":"one"}`,
		`{"type": "tag", "tag": "spaced"}`,
		`{"type":"tag","tag":7}`,
		`{"type":"tag","tag":"cut`,
	}, "\n"))
	if v, ok := idx(win).lastKeyed(lkTag, liteTypeTag, true); !ok || v != "spaced" {
		t.Errorf("tag = %q, %v", v, ok)
	}
	if _, ok := idx(win).lastKeyed(lkCustomTitle, liteTypeCustomTitle, true); ok {
		t.Errorf("custom-title found in a window without one")
	}
	// lastPrompt: any row type, but the key must be top-level.
	win = []byte(`{"type":"last-prompt","lastPrompt":"top"}` + "\n" + `{"type":"user","message":{"lastPrompt":"nested"}}`)
	if v, ok := idx(win).lastKeyed(lkLastPrompt, "", false); !ok || v != "top" {
		t.Errorf("lastPrompt = %q, %v", v, ok)
	}
}

func TestLiteRawValues(t *testing.T) {
	win := []byte(`{"a":1,"gitBranch":"fe\"at\u00e9"}` + "\n" + `{"gitBranch": "second"}` + "\n" + `{"gitBranch":"cut`)
	if v, ok := liteFirstValue(win, &liteKeyGitBranch); !ok || v != `fe"até` {
		t.Errorf("first = %q, %v", v, ok)
	}
	var x liteIdx
	x.reset(win)
	x.buildAll()
	if v, ok := x.lastValue(lkGitBranch); !ok || v != "second" {
		t.Errorf("last = %q, %v", v, ok)
	}
	// An unclosed first match falls back to the spaced form.
	if v, ok := liteFirstValue([]byte(`{"cwd": "/spaced"}`+"\n"+`{"cwd":"/cut`), &liteKeyCwd); !ok || v != "/spaced" {
		t.Errorf("cwd = %q, %v", v, ok)
	}
}

func TestLiteCollision(t *testing.T) {
	root := t.TempDir()
	a := filepath.Join(root, "x-y")
	b := filepath.Join(root, "x", "y")
	for _, d := range []string{a, b} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var cw liteCollision
	if !cw.collides(b, a) || !cw.collides(a, b) {
		t.Errorf("existing twins do not collide")
	}
	if cw.collides(a, a) || cw.collides(filepath.Join(root, "x_y"), a) || cw.collides(filepath.Join(root, "other"), a) {
		t.Errorf("false collision")
	}
}

func TestLiteOffsetFromEnd(t *testing.T) {
	ascii := bytes.Repeat([]byte("a"), 100)
	if got := liteOffsetFromEnd(ascii, 10); got != 90 {
		t.Errorf("ascii: %d", got)
	}
	mixed := []byte("ab😀cdé") // a b (😀=2 units) c d é
	if got := liteOffsetFromEnd(mixed, 3); got != len("ab😀") {
		t.Errorf("3 units: %d", got)
	}
	if got := liteOffsetFromEnd(mixed, 4); got != len("ab😀") {
		t.Errorf("4 units (inside the pair): %d", got)
	}
	if got := liteOffsetFromEnd(mixed, 5); got != len("ab") {
		t.Errorf("5 units: %d", got)
	}
}

// TestListMatchesSDKOnRandomSessions compares with the SDK on generated
// sessions that mix every feature the lite read looks at, at random places
// and sizes (so that lines fall on both sides of, and across, the window
// edges).
func TestListMatchesSDKOnRandomSessions(t *testing.T) {
	p := peer.Find(t)
	root := t.TempDir()
	cfg := filepath.Join(root, "cfg")
	l := Layout{ConfigDir: cfg}
	projA := filepath.Join(root, "proj-a")
	projB := filepath.Join(root, "proj", "a") // same folder name as proj-a
	for _, d := range []string{projA, projB} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	seed := uint64(20260301)
	if v := os.Getenv("LST_SEED"); v != "" {
		fmt.Sscan(v, &seed)
	}
	r := lstRand(seed)
	prompts := []any{
		"plain prompt", "  padded\nmulti\nline  ", "<command-name>/review</command-name>\n<command-args>x</command-args>",
		"<bash-input>git log</bash-input>", "<system-reminder>hidden</system-reminder>", "[Request interrupted by user]",
		strings.Repeat("long ", 60), strings.Repeat("é", 199) + "😀tail", "emoji 😀 prompt", "",
		[]any{map[string]any{"type": "text", "text": "block prompt"}},
		[]any{map[string]any{"type": "image", "source": map[string]any{"type": "base64", "data": "AA=="}}},
		[]any{map[string]any{"type": "tool_result", "tool_use_id": "t", "content": "r"}},
		[]any{map[string]any{"type": "document", "source": map[string]any{"type": "text", "data": "d"}}, map[string]any{"type": "text", "text": "with doc"}},
	}
	metas := []func(s *lstSession){
		func(s *lstSession) { s.meta("custom-title", "customTitle", fmt.Sprintf("Title %d", r.n(1000))) },
		func(s *lstSession) { s.meta("ai-title", "aiTitle", fmt.Sprintf("AI %d", r.n(1000))) },
		func(s *lstSession) { s.meta("tag", "tag", []string{"", "docs", "work"}[r.n(3)]) },
		func(s *lstSession) { s.meta("last-prompt", "lastPrompt", fmt.Sprintf("Last %d", r.n(1000))) },
		func(s *lstSession) { s.meta("summary", "summary", fmt.Sprintf("Summary %d", r.n(1000))) },
		func(s *lstSession) {
			s.raw(`{"type":"relocated","relocatedCwd":` + lstQ([]string{projA, projB, "/gone"}[r.n(3)]) + `}`)
		},
		func(s *lstSession) { s.raw(`{"type":"custom-title","customTitle":"glued`) }, // torn, then glued to the next row
		func(s *lstSession) { s.user("meta", `"isMeta":true,`) },
		func(s *lstSession) { s.user("summary of before", `"isCompactSummary":true,`) },
	}
	var ids []string
	idDir := map[string]string{}
	var sessions []*lstSession
	for n := 0; n < 120; n++ {
		proj := []string{projA, projB}[r.n(2)]
		s := lstNew(proj)
		if r.n(10) == 0 {
			s.entry = []string{"sdk-ts", "sdk-py", "cli"}[r.n(3)]
		}
		if r.n(15) == 0 {
			s.branch = "feature/" + fmt.Sprint(r.n(9))
		}
		target := []int{0, 2 << 10, 60 << 10, 70 << 10, 130 << 10, 300 << 10}[r.n(6)]
		size := 0
		for size < target || len(s.lines) < 2 {
			switch k := r.n(12); {
			case k < 4:
				s.user(prompts[r.n(len(prompts))], "")
			case k < 8:
				s.assistant(strings.Repeat("word ", 10+r.n(3000)))
			default:
				metas[r.n(len(metas))](s)
			}
			size += len(s.lines[len(s.lines)-1]) + 1
			if r.n(4) == 0 {
				s.branch = fmt.Sprint("b", r.n(5))
			}
		}
		for k := r.n(4); k > 0; k-- {
			metas[r.n(len(metas))](s)
		}
		text := s.text()
		if r.n(10) == 0 {
			text = strings.TrimSuffix(text, "\n") // torn tail
		}
		if r.n(12) == 0 && len(sessions) > 0 {
			other := sessions[r.n(len(sessions))]
			text += `{"type":"continued-in","continuedInSessionId":"` + other.id + "\"}\n"
		}
		dir := l.ProjectDir(proj)
		mt := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.n(1_000_000)) * time.Millisecond)
		lstWrite(t, dir, s.id+".jsonl", text, mt)
		if r.n(8) == 0 {
			lstWrite(t, filepath.Join(dir, s.id), "custom-title.json", `{"customTitle":"Side `+fmt.Sprint(r.n(99))+`"}`, mt)
		}
		if r.n(8) == 0 {
			at := time.Date(2026, 3, 1, 10, 0, r.n(120), 0, time.UTC).Format(time.RFC3339)
			lstWrite(t, filepath.Join(dir, s.id), "archived.json", fmt.Sprintf(`{"archived":%v,"at":%q}`, r.n(4) > 0, at), mt)
		}
		ids = append(ids, s.id)
		idDir[s.id] = proj
		sessions = append(sessions, s)
	}
	qs := []lstQuery{{Op: "list"}, {Op: "list", NoProgrammatic: true}, {Op: "list", Limit: 10, Offset: 7},
		{Op: "list", Dir: projA}, {Op: "list", Dir: projB}, {Op: "list", Dir: projB, Limit: 5, Offset: 3}}
	for _, id := range ids {
		qs = append(qs, lstQuery{Op: "info", Session: id, Dir: idDir[id]})
	}
	all, err := l.List(context.Background(), ListOptions{IncludeProgrammatic: true})
	if err != nil {
		t.Fatal(err)
	}
	var titled, tagged, archived, prompted, relocated int
	for _, si := range all {
		if si.CustomTitle != "" {
			titled++
		}
		if si.Tag != "" {
			tagged++
		}
		if si.Archived != nil {
			archived++
		}
		if si.FirstPrompt != "" {
			prompted++
		}
		if si.Cwd != idDir[si.SessionID] {
			relocated++
		}
	}
	t.Logf("%d of %d sessions listed: %d titled, %d tagged, %d with archived, %d with a first prompt, %d relocated",
		len(all), len(ids), titled, tagged, archived, prompted, relocated)
	lstCompare(t, p, cfg, qs)
}

// lstRand is a small deterministic generator.
type lstRand uint64

func (r *lstRand) n(k int) int {
	*r = *r*6364136223846793005 + 1442695040888963407
	return int(uint64(*r)>>33) % k
}

// BenchmarkListBulk lists 2,000 sessions of 200 KB (the SDK needs about
// 2 s for this on two cores; see the timing in the package notes).
func BenchmarkListBulk(b *testing.B) {
	p := peer.Find(b)
	root := b.TempDir()
	cfg := filepath.Join(root, "cfg")
	cwd := filepath.Join(root, "proj")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		b.Fatal(err)
	}
	p.GenBulk(b, cfg, cwd, 2000, 200_000, 1)
	l := Layout{ConfigDir: cfg}
	for _, opt := range []ListOptions{
		{Dir: cwd, IncludeWorktrees: true, IncludeProgrammatic: true},
		{IncludeProgrammatic: true},
		{Dir: cwd, Limit: 50, IncludeProgrammatic: true},
	} {
		b.Run(fmt.Sprintf("dir=%v,limit=%d", opt.Dir != "", opt.Limit), func(b *testing.B) {
			for b.Loop() {
				if _, err := l.List(context.Background(), opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestLiteIsUUID(t *testing.T) {
	for _, s := range []string{"0565a1b2-c3d4-4e5f-8a9b-0c1d2e3f4a5b", "0565A1B2-C3D4-4E5F-8A9B-0C1D2E3F4A5B",
		"0565a1b2-c3d4-4e5f-8a9b-0c1d2e3f4a5", "0565a1b2c3d4-4e5f-8a9b-0c1d2e3f4a5b-", "agent-a1b2c3d4", "",
		"0565a1b2-c3d4-4e5f-8a9b-0c1d2e3f4a5g", "0565a1b2-c3d4-4e5f-8a9b_0c1d2e3f4a5b"} {
		if liteIsUUID(s) != IsSessionID(s) {
			t.Errorf("liteIsUUID(%q) = %v, IsSessionID says %v", s, liteIsUUID(s), IsSessionID(s))
		}
	}
}
