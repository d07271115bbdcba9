package listing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

func TestListRules(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "cfg")
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
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
	if claudedir.SanitizePath(collA) != claudedir.SanitizePath(collB) {
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

	r := &ruleSet{t: t, root: root, cfg: cfg, l: l, proj: proj, collA: collA, collB: collB, longProj: longProj, big: big, ts: ts,
		longPrompt: longPrompt, surrogateCut: surrogateCut, surrogateKept: surrogateKept, hugeText: hugeText}
	r.titleCases()
	r.promptCases()
	r.parsingCases()
	r.filterCases()
	cases, target := r.cases, r.target

	ids, byID := r.write()
	// A symlinked transcript is not followed.
	linked := jsonltest.NewSession(proj).User("via a symlink", "")
	lp := jsonltest.WriteFile(t, filepath.Join(root, "elsewhere"), linked.ID+".jsonl", linked.Text(), time.Now())
	if err := os.Symlink(lp, filepath.Join(l.ProjectDir(proj), linked.ID+".jsonl")); err != nil {
		t.Fatal(err)
	}
	ids[linked.ID] = proj

	ctx := context.Background()
	all, err := l.List(ctx, sessions.ListOptions{IncludeWorktrees: true, IncludeProgrammatic: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for _, si := range all {
		b, _ := json.Marshal(si)
		got[si.SessionID] = decodeAnswer(t, b).(map[string]any)
	}
	checkCases(t, cases, got)
	if _, ok := got[linked.ID]; ok {
		t.Errorf("a symlinked transcript was listed")
	}

	r.checkFilters(ctx, all, byID)
	// Info: the sidechain-first, empty and unknown files give nil; the
	// listing's filters do not apply.
	for i := range cases {
		c := &cases[i]
		if c.s == nil || !strings.HasPrefix(c.name, "skip: sidechain") && !strings.HasPrefix(c.name, "continued-in: hidden") {
			continue
		}
		info, err := l.Info(ctx, c.s.ID, proj)
		if err != nil {
			t.Fatal(err)
		}
		if (info != nil) != strings.HasPrefix(c.name, "continued-in") {
			t.Errorf("Info(%s) = %+v", c.name, info)
		}
	}
	if info, _ := l.Info(ctx, jsonltest.NewSessionID(), ""); info != nil {
		t.Errorf("Info(unknown) = %+v", info)
	}
	if info, _ := l.Info(ctx, "not-a-uuid", ""); info != nil {
		t.Errorf("Info(not-a-uuid) = %+v", info)
	}

	// ReadInfo on one file, and the scribe-only fields.
	rl, ok, err := ReadInfo(filepath.Join(l.ProjectDir(proj), target.ID+".jsonl"), proj)
	if err != nil || !ok || rl.Summary != "the continuation" || rl.Entrypoint != "cli" || rl.ProjectDir != l.ProjectDir(proj) {
		t.Errorf("ReadInfo = %+v, %v, %v", rl, ok, err)
	}
	if !bytes.Contains(rl.LastEntryTail, []byte(`"the continuation"`)) {
		t.Errorf("LastEntryTail = %s", rl.LastEntryTail)
	}
	if _, ok, err := ReadInfo(filepath.Join(l.ProjectDir(proj), "agent-1234abcd.jsonl"), proj); ok || err != nil {
		t.Errorf("ReadInfo(non-UUID) ok=%v err=%v", ok, err)
	}

	// And the SDK agrees on all of it.
	p := peer.Find(t)
	compareWithSDK(t, p, cfg, queriesFor([]string{proj, collA, collB, longProj}, ids))
}

// checkFilters checks the listing's filters and pages against all, the
// listing with every session.
func (r *ruleSet) checkFilters(ctx context.Context, all []sessions.Info, byID map[string]*ruleCase) {
	t, l, proj, collA, collB, longProj := r.t, r.l, r.proj, r.collA, r.collB, r.longProj
	// Filters.
	noProg, err := l.List(ctx, sessions.ListOptions{IncludeProgrammatic: false})
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
		ls, err := l.List(ctx, sessions.ListOptions{Dir: dir, IncludeWorktrees: true, IncludeProgrammatic: true})
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
	full, _ := l.List(ctx, sessions.ListOptions{Dir: proj, IncludeProgrammatic: true})
	page, _ := l.List(ctx, sessions.ListOptions{Dir: proj, IncludeProgrammatic: true, Limit: 5, Offset: 3})
	if len(full) < 8 || !reflect.DeepEqual(jsonltest.SessionIDs(page), jsonltest.SessionIDs(full[3:8])) {
		t.Errorf("page 3..8 = %v, want %v", jsonltest.SessionIDs(page), jsonltest.SessionIDs(full[min(3, len(full)):min(8, len(full))]))
	}
}

// write writes every case's transcript (and sidecars) and returns the
// project path of each id and its case.
func (r *ruleSet) write() (ids map[string]string, byID map[string]*ruleCase) {
	t, l, proj, cases := r.t, r.l, r.proj, r.cases
	ids = map[string]string{}
	byID = map[string]*ruleCase{}
	for i := range cases {
		c := &cases[i]
		pp := c.proj
		if pp == "" {
			pp = proj
		}
		dir := l.ProjectDir(pp)
		if base, ok := strings.CutSuffix(pp, "\x00other"); ok {
			dir = filepath.Join(l.ProjectsDir(), claudedir.SanitizePath(base)[:claudedir.MaxProjectName]+"-otherhash")
			pp = base
		}
		data := c.file
		id := c.id
		if c.s != nil {
			if data == "" {
				data = c.s.Text()
			}
			if id == "" {
				id = c.s.ID
			}
		}
		mt := c.mtime
		if mt.IsZero() {
			mt = time.Date(2026, 3, 2, 0, 0, i, i*1_000_123, time.UTC)
		}
		jsonltest.WriteFile(t, dir, id+".jsonl", data, mt)
		for name, content := range c.side {
			jsonltest.WriteFile(t, filepath.Join(dir, id), name, content.(string), time.Now())
		}
		ids[id] = pp
		byID[id] = c
	}
	return ids, byID
}

// checkCases checks the listing (got, by id) against each case.
func checkCases(t *testing.T, cases []ruleCase, got map[string]map[string]any) {
	t.Helper()
	for i := range cases {
		c := &cases[i]
		id := c.id
		if id == "" && c.s != nil {
			id = c.s.ID
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
}

// ruleSet is TestListRules's world: its folders, the shared texts and
// the cases, in the order they are written (their mtimes follow it).
type ruleSet struct {
	t                                       *testing.T
	root, cfg                               string
	l                                       Layout
	proj, collA, collB, longProj            string
	big                                     int
	ts                                      func(string) int64
	longPrompt, surrogateCut, surrogateKept string
	hugeText                                string
	cases                                   []ruleCase
	target                                  *jsonltest.Session // the continued-in target
}

func (r *ruleSet) add(c ruleCase) { r.cases = append(r.cases, c) }

// titleCases adds the cases of titles and summaries.
func (r *ruleSet) titleCases() {
	proj, big, add := r.proj, r.big, r.add
	var s *jsonltest.Session
	// Title precedence: tail custom-title ‖ sidecar ‖ head custom-title ‖ tail ai-title ‖ head ai-title.
	s = jsonltest.NewSession(proj).User("first prompt", "").Meta("custom-title", "customTitle", "Head title").Meta("ai-title", "aiTitle", "Head AI").Filler(big).
		Meta("ai-title", "aiTitle", "Tail AI").Meta("custom-title", "customTitle", "Tail title")
	add(ruleCase{name: "title: tail custom-title wins", s: s, listed: true, side: map[string]any{"custom-title.json": `{"customTitle":"Sidecar"}`},
		want: map[string]any{"customTitle": "Tail title", "summary": "Tail title", "firstPrompt": "first prompt"}})
	s = jsonltest.NewSession(proj).User("first prompt", "").Meta("custom-title", "customTitle", "Head title").Filler(big).Meta("ai-title", "aiTitle", "Tail AI")
	add(ruleCase{name: "title: sidecar beats head custom-title", s: s, listed: true,
		side: map[string]any{"custom-title.json": `{"customTitle":"  Side\u0007car\u200b\u200b title  ","by":"user"}`},
		want: map[string]any{"customTitle": "Side car  title", "summary": "Side car  title"}})
	s = jsonltest.NewSession(proj).User("first prompt", "").Meta("custom-title", "customTitle", "Head title").Filler(big).Meta("ai-title", "aiTitle", "Tail AI")
	add(ruleCase{name: "title: head custom-title beats tail ai-title", s: s, listed: true,
		want: map[string]any{"customTitle": "Head title", "summary": "Head title"}})
	s = jsonltest.NewSession(proj).User("first prompt", "").Meta("ai-title", "aiTitle", "Head AI").Filler(big).Meta("ai-title", "aiTitle", "Tail AI")
	add(ruleCase{name: "title: tail ai-title beats head ai-title", s: s, listed: true,
		want: map[string]any{"customTitle": "Tail AI"}})
	s = jsonltest.NewSession(proj).User("first prompt", "").Meta("ai-title", "aiTitle", "Head AI").Filler(big)
	add(ruleCase{name: "title: head ai-title", s: s, listed: true, want: map[string]any{"customTitle": "Head AI"}})
	s = jsonltest.NewSession(proj).User("first prompt", "").Meta("custom-title", "customTitle", "Head title").Filler(big).Meta("custom-title", "customTitle", "")
	add(ruleCase{name: "title: empty tail custom-title skips the sidecar", s: s, listed: true,
		side: map[string]any{"custom-title.json": `{"customTitle":"Sidecar"}`},
		want: map[string]any{"customTitle": "Head title"}})
	s = jsonltest.NewSession(proj).User("first prompt", "").Meta("custom-title", "customTitle", "Old").Meta("custom-title", "customTitle", "New")
	add(ruleCase{name: "title: last custom-title wins", s: s, listed: true, want: map[string]any{"customTitle": "New"}})
	s = jsonltest.NewSession(proj).User("first prompt", "").Filler(big).Meta("custom-title", "customTitle", "Far away").Filler(big)
	add(ruleCase{name: "title: custom-title in neither window is invisible", s: s,
		listed: true, want: map[string]any{"customTitle": nil, "summary": "first prompt"}})

	// Summary precedence: customTitle ‖ tail lastPrompt ‖ tail summary ‖ firstPrompt ‖ Image/Document.
	s = jsonltest.NewSession(proj).User("first prompt", "").Meta("summary", "summary", "Summary text").Meta("last-prompt", "lastPrompt", "Last prompt")
	add(ruleCase{name: "summary: lastPrompt beats summary", s: s, listed: true,
		want: map[string]any{"summary": "Last prompt", "firstPrompt": "first prompt", "customTitle": nil}})
	s = jsonltest.NewSession(proj).User("first prompt", "").Meta("summary", "summary", "Summary text")
	add(ruleCase{name: "summary: summary beats firstPrompt", s: s, listed: true, want: map[string]any{"summary": "Summary text"}})
	s = jsonltest.NewSession(proj).User("first prompt", "").Meta("last-prompt", "lastPrompt", "Only in head").Filler(big)
	add(ruleCase{name: "summary: lastPrompt outside the tail", s: s, listed: true, want: map[string]any{"summary": "first prompt"}})
	s = jsonltest.NewSession(proj).User([]any{map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}}, "").Assistant("a picture")
	add(ruleCase{name: "summary: Image placeholder", s: s, listed: true, want: map[string]any{"summary": "Image", "firstPrompt": nil}})
	s = jsonltest.NewSession(proj).User([]any{map[string]any{"type": "document", "source": map[string]any{"type": "text", "data": "x"}}}, "")
	add(ruleCase{name: "summary: Document placeholder", s: s, listed: true, want: map[string]any{"summary": "Document"}})
	s = jsonltest.NewSession(proj).Assistant("nobody asked")
	add(ruleCase{name: "summary: assistant-only file is omitted", s: s, listed: false})
	s = jsonltest.NewSession(proj).Filler(big).User("late prompt", "")
	add(ruleCase{name: "summary: first prompt past the head is omitted", s: s, listed: false})

}

// promptCases adds the cases of first prompts and tags.
func (r *ruleSet) promptCases() {
	proj, add, longPrompt, surrogateCut, surrogateKept := r.proj, r.add, r.longPrompt, r.surrogateCut, r.surrogateKept
	var s *jsonltest.Session
	// firstPrompt.
	s = jsonltest.NewSession(proj).User("<local-command-caveat>Caveat</local-command-caveat>", "").
		User("meta prompt", `"isMeta":true,`).
		User("This session is being continued", `"isCompactSummary":true,`).
		User([]any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}}, "").
		User("[Request interrupted by user for tool use]", "").
		User("  the\nreal  prompt\n ", "")
	add(ruleCase{name: "firstPrompt: skips meta, compact, tool_result, tags, interrupts", s: s, listed: true,
		want: map[string]any{"firstPrompt": "the real  prompt"}})
	s = jsonltest.NewSession(proj).User("<command-name>/init</command-name>\n<command-message>init</command-message>\n<command-args></command-args>", "").Assistant("done")
	add(ruleCase{name: "firstPrompt: command-name fallback", s: s, listed: true, want: map[string]any{"firstPrompt": "/init", "summary": "/init"}})
	s = jsonltest.NewSession(proj).User("<command-name>/init</command-name>", "").User("a later prompt", "")
	add(ruleCase{name: "firstPrompt: a real prompt beats the command fallback", s: s, listed: true, want: map[string]any{"firstPrompt": "a later prompt"}})
	s = jsonltest.NewSession(proj).User("<bash-input>ls -la</bash-input>", "").User("<bash-stdout>total 0</bash-stdout><bash-stderr></bash-stderr>", "")
	add(ruleCase{name: "firstPrompt: bash input", s: s, listed: true, want: map[string]any{"firstPrompt": "! ls -la"}})
	s = jsonltest.NewSession(proj).User(longPrompt, "")
	add(ruleCase{name: "firstPrompt: 250 characters", s: s, listed: true, want: map[string]any{"firstPrompt": longPrompt[:200] + "…"}})
	s = jsonltest.NewSession(proj).User(surrogateCut, "")
	add(ruleCase{name: "firstPrompt: surrogate pair at the cut", s: s, listed: true, want: map[string]any{"firstPrompt": strings.Repeat("x", 199) + "…"}})
	s = jsonltest.NewSession(proj).User(surrogateKept, "")
	add(ruleCase{name: "firstPrompt: surrogate pair before the cut", s: s, listed: true, want: map[string]any{"firstPrompt": strings.Repeat("x", 198) + "😀…"}})
	s = jsonltest.NewSession(proj).User([]any{map[string]any{"type": "text", "text": "   "}, map[string]any{"type": "image", "source": map[string]any{}}, map[string]any{"type": "text", "text": "second block"}}, "")
	add(ruleCase{name: "firstPrompt: first non-empty text block", s: s, listed: true, want: map[string]any{"firstPrompt": "second block"}})
	s = jsonltest.NewSession(proj).User("see this:\n<pasted_content id=\"0a1f\">\n<b>pasted</b> text\n</pasted_content id=\"0a1f\">\n\nthanks", "")
	add(ruleCase{name: "firstPrompt: pasted content unwrapped", s: s, listed: true, want: map[string]any{"firstPrompt": "see this:<b>pasted</b> textthanks"}})
	s = jsonltest.NewSession(proj).Raw(`{"parentUuid": null, "type": "user", "message": {"role": "user", "content": "spaced json"}, "uuid": "u1", "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/spaced/cwd", "sessionId": "x", "gitBranch": "spaced"}`)
	add(ruleCase{name: "firstPrompt: spaced JSON", s: s, listed: true, want: map[string]any{"firstPrompt": "spaced json", "cwd": "/spaced/cwd", "gitBranch": "spaced"}})

	// Tag.
	s = jsonltest.NewSession(proj).User("tagged", "").Meta("tag", "tag", "docs").Meta("tag", "tag", "")
	add(ruleCase{name: "tag: empty clears", s: s, listed: true, want: map[string]any{"tag": nil}})
	s = jsonltest.NewSession(proj).User("tagged", "").Meta("tag", "tag", "").Meta("tag", "tag", "work")
	add(ruleCase{name: "tag: last wins", s: s, listed: true, want: map[string]any{"tag": "work"}})
	s = jsonltest.NewSession(proj).User("tagged", "").Meta("tag", "tag", "old").
		Raw(`{"parentUuid":null,"type":"user","message":{"role":"user","content":"torn wri{"type":"tag","tag":"glued","sessionId":"x"}`)
	add(ruleCase{name: "tag: two rows glued by a torn write", s: s, listed: true, want: map[string]any{"tag": "glued"}})

}

// parsingCases adds the cases of parsing nuances, skips, torn and huge lines, and the recorded fields.
func (r *ruleSet) parsingCases() {
	proj, big, add, ts, hugeText := r.proj, r.big, r.add, r.ts, r.hugeText
	var s *jsonltest.Session
	// Parsing nuances.
	s = jsonltest.NewSession(proj).User("spaced relocated", "").Raw(`{"type": "relocated", "relocatedCwd": "/not/used", "sessionId": "x"}`)
	add(ruleCase{name: "relocated: only the compact type form counts", s: s, listed: true, want: map[string]any{"cwd": s.Cwd}})
	s = jsonltest.NewSession(proj).User("first prompt", "").Meta("summary", "summary", "Summary text").
		Meta("last-prompt", "lastPrompt", "Earlier").Meta("last-prompt", "lastPrompt", "")
	add(ruleCase{name: "summary: an empty last lastPrompt does not fall back to an earlier one", s: s, listed: true,
		want: map[string]any{"summary": "Summary text"}})
	s = jsonltest.NewSession(proj).User("first prompt", "").Meta("custom-title", "customTitle", "Good").
		Raw(`{"type":"custom-title","customTitle":42,"sessionId":"x"}`)
	add(ruleCase{name: "title: a non-string title is skipped", s: s, listed: true, want: map[string]any{"customTitle": "Good"}})
	s = jsonltest.NewSession(proj).User("first prompt", "").Raw(`{"type": "custom-title", "customTitle": "Spaced", "sessionId": "x"}`)
	add(ruleCase{name: "title: spaced custom-title", s: s, listed: true, want: map[string]any{"customTitle": "Spaced"}})
	s = jsonltest.NewSession(proj).User("crlf prompt", "").Meta("tag", "tag", "crlf")
	add(ruleCase{name: "CRLF line ends", s: s, file: strings.ReplaceAll(s.Text(), "\n", "\r\n"), listed: true,
		want: map[string]any{"firstPrompt": "crlf prompt", "tag": "crlf"}})
	s = jsonltest.NewSession(proj)
	s.User("spaced sidechain", "")
	s.Lines[0] = strings.Replace(s.Lines[0], `"isSidechain":false`, `"isSidechain": true`, 1)
	add(ruleCase{name: "skip: spaced sidechain first line", s: s, listed: false})
	s = jsonltest.NewSession(proj).User("queued later", "").Assistant("ok").
		Raw(`{"type":"attachment","attachment":{"type":"queued_command","prompt":"do more","origin":{"kind":"human"}},"uuid":"q1","timestamp":"2026-03-01T11:00:00.000Z","parentUuid":null,"isSidechain":false}`)
	add(ruleCase{name: "archived: a queued prompt after it unarchives", s: s, listed: true,
		side: map[string]any{"archived.json": `{"archived":true,"at":"2026-03-01T10:30:00.000Z"}`},
		want: map[string]any{"archived": false}})
	s = jsonltest.NewSession(proj).User("meta later", "").Assistant("ok").User("meta row", `"isMeta":true,`)
	add(ruleCase{name: "archived: a meta row after it does not", s: s, listed: true,
		side: map[string]any{"archived.json": `{"archived":true,"at":"2026-03-01T10:00:02.000Z"}`},
		want: map[string]any{"archived": true}})

	// Skips.
	s = jsonltest.NewSession(proj)
	s.ExtraTop = `"agentId":"deadbeef",`
	s.User("sidechain prompt", "")
	s.Lines[0] = strings.Replace(s.Lines[0], `"isSidechain":false`, `"isSidechain":true`, 1)
	add(ruleCase{name: "skip: sidechain first line", s: s, listed: false})
	add(ruleCase{name: "skip: empty file", file: "", id: jsonltest.NewSessionID(), listed: false})
	add(ruleCase{name: "skip: non-UUID name", s: jsonltest.NewSession(proj).User("agent file", ""), id: "agent-1234abcd", listed: false})
	up := jsonltest.NewSession(proj).User("upper-case name", "")
	up.ID = strings.ToUpper(up.ID)
	add(ruleCase{name: "uppercase UUID name", s: up, listed: true, want: map[string]any{"sessionId": up.ID}})

	// Torn and huge lines.
	s = jsonltest.NewSession(proj).User("torn", "").Meta("custom-title", "customTitle", "Complete").
		Raw(`{"type":"custom-title","customTitle":"Cut off`)
	add(ruleCase{name: "torn last line ignored", file: strings.TrimSuffix(s.Text(), "\n"), s: s, listed: true,
		want: map[string]any{"customTitle": "Complete"}})
	s = jsonltest.NewSession(proj).User("short first", "").Assistant(hugeText).Meta("last-prompt", "lastPrompt", "after huge")
	add(ruleCase{name: "huge line across both windows", s: s, listed: true,
		want: map[string]any{"firstPrompt": "short first", "summary": "after huge"}})
	s = jsonltest.NewSession(proj).User(hugeText, "").Meta("ai-title", "aiTitle", "titled")
	add(ruleCase{name: "huge first prompt cannot be parsed", s: s, listed: true,
		want: map[string]any{"firstPrompt": nil, "summary": "titled"}})

	// createdAt, gitBranch, cwd.
	s = jsonltest.NewSession(proj).Raw(`{"type":"file-history-snapshot","messageId":"m","snapshot":{"messageId":"m","trackedFileBackups":{},"timestamp":"2026-02-03T04:05:06.789+02:00"},"isSnapshotUpdate":false}`).User("dated", "")
	add(ruleCase{name: "createdAt: first timestamp anywhere, with an offset", s: s, listed: true,
		want: map[string]any{"createdAt": json.Number(fmt.Sprint(ts("2026-02-03T04:05:06.789+02:00")))}})
	s = jsonltest.NewSession(proj).Raw(`{"type":"summary","summary":"no timestamps here","leafUuid":"x"}`)
	add(ruleCase{name: "createdAt: absent", s: s, listed: true, want: map[string]any{"createdAt": nil, "cwd": nil}})
	s = jsonltest.NewSession(proj)
	s.Branch = "head-branch"
	s.User("branches", "")
	s.Filler(big)
	s.Branch = "tail-branch"
	s.Assistant("on another branch")
	s.Branch = "last"
	s.Raw(`{"type":"last-prompt","lastPrompt":"x","sessionId":"y"}`)
	add(ruleCase{name: "gitBranch: last in tail", s: s, listed: true, want: map[string]any{"gitBranch": "tail-branch"}})
	s = jsonltest.NewSession(proj).User("relocated", "").Raw(`{"type":"relocated","relocatedCwd":"/moved/here","sessionId":"x"}`)
	add(ruleCase{name: "cwd: relocated beats head cwd", s: s, listed: true, want: map[string]any{"cwd": "/moved/here"}})

}

// filterCases adds the cases of archives and the listing's filters.
func (r *ruleSet) filterCases() {
	proj, longProj, collA, collB, add := r.proj, r.longProj, r.collA, r.collB, r.add
	var s *jsonltest.Session
	// Archive.
	s = jsonltest.NewSession(proj).User("archived", "").Assistant("reply")
	add(ruleCase{name: "archived: after the last prompt", s: s, listed: true,
		side: map[string]any{"archived.json": `{"archived":true,"at":"2026-03-02T00:00:00.000Z","by":"sdk"}`},
		want: map[string]any{"archived": true}})
	s = jsonltest.NewSession(proj).User("archived", "").Assistant("reply").User("prompt after the archive", "")
	add(ruleCase{name: "archived: a prompt after it unarchives", s: s, listed: true,
		side: map[string]any{"archived.json": `{"archived":true,"at":"2026-03-01T10:00:02Z","by":"sdk"}`},
		want: map[string]any{"archived": false}})
	s = jsonltest.NewSession(proj).User("archived", "").Assistant("reply")
	add(ruleCase{name: "archived: false", s: s, listed: true,
		side: map[string]any{"archived.json": `{"archived":false,"at":"2026-03-02T00:00:00+01:00"}`},
		want: map[string]any{"archived": false}})
	s = jsonltest.NewSession(proj).User("archived", "")
	add(ruleCase{name: "archived: bad date is ignored", s: s, listed: true,
		side: map[string]any{"archived.json": `{"archived":true,"at":"2026-02-30T00:00:00Z"}`},
		want: map[string]any{"archived": nil}})
	s = jsonltest.NewSession(proj).User("archived", "")
	add(ruleCase{name: "archived: over 4096 bytes is ignored", s: s, listed: true,
		side: map[string]any{"archived.json": `{"archived":true,"at":"2026-03-02T00:00:00Z","pad":"` + strings.Repeat("x", 4096) + `"}`},
		want: map[string]any{"archived": nil}})

	// Programmatic sessions (hidden only by includeProgrammatic:false).
	s = jsonltest.NewSession(proj)
	s.Entry = "sdk-ts"
	s.User("from the SDK", "")
	add(ruleCase{name: "programmatic: sdk-ts", s: s, listed: true})
	s = jsonltest.NewSession(proj)
	s.ExtraTop = `"sessionKind":"daemon-worker",`
	s.User("from a daemon", "")
	add(ruleCase{name: "programmatic: daemon-worker", s: s, listed: true})

	// continued-in.
	target := jsonltest.NewSession(proj).User("the continuation", "")
	r.target = target
	add(ruleCase{name: "continued-in: target", s: target, listed: true})
	s = jsonltest.NewSession(proj).User("continued", "").Assistant("bye").Raw(`{"type":"continued-in","continuedInSessionId":"` + target.ID + `"}`)
	add(ruleCase{name: "continued-in: hidden", s: s, listed: false})
	s = jsonltest.NewSession(proj).User("continued", "").Raw(`{"type":"continued-in","continuedInSessionId":"`+target.ID+`"}`).User("but came back", "")
	add(ruleCase{name: "continued-in: a later prompt keeps it", s: s, listed: true})
	s = jsonltest.NewSession(proj).User("continued", "").Raw(`{"type":"continued-in","continuedInSessionId":"` + jsonltest.NewSessionID() + `"}`)
	add(ruleCase{name: "continued-in: missing target keeps it", s: s, listed: true})
	s = jsonltest.NewSession(proj).User("continued", "").Raw(`{"type":"continued-in","continuedInSessionId":"` + target.ID + `"}`).
		Raw(`{"type":"continued-in","continuedInSessionId":"not-a-uuid"}`)
	add(ruleCase{name: "continued-in: the newest one is not a UUID", s: s, listed: true})

	// Collision filter: same folder, recorded cwds differ.
	add(ruleCase{name: "collision: proj-a", s: jsonltest.NewSession(collA).User("from proj-a", ""), proj: collA, listed: true})
	add(ruleCase{name: "collision: proj/a", s: jsonltest.NewSession(collB).User("from proj/a", ""), proj: collA, listed: true})
	add(ruleCase{name: "collision: missing folder kept", s: jsonltest.NewSession(filepath.Join(r.root, "coll", "proj_a")).User("from proj_a", ""), proj: collA, listed: true})

	// A project path over 200 characters: the hashed folder, and another
	// folder with the same prefix that records the path.
	add(ruleCase{name: "long path: hashed folder", s: jsonltest.NewSession(longProj).User("long one", ""), proj: longProj, listed: true})
	other := jsonltest.NewSession(longProj).User("long two", "")
	add(ruleCase{name: "long path: other hash", s: other, proj: longProj + "\x00other", listed: true})

	// Same id in two folders: the newest copy is kept.
	dupOld := jsonltest.NewSession(proj).User("old copy", "")
	dupNew := *dupOld
	dupNew.Lines = nil
	dupNew.Cwd = collA
	dupNew.User("new copy", "")
	add(ruleCase{name: "duplicate: old copy", s: dupOld, listed: true, mtime: time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC), want: map[string]any{"summary": "new copy"}})
	add(ruleCase{name: "duplicate: new copy", s: &dupNew, proj: collA, listed: true, mtime: time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)})

	// Equal mtimes: sessionId descending; sub-millisecond mtimes round.
	tie := time.Date(2026, 3, 5, 0, 0, 0, 500_000, time.UTC)
	add(ruleCase{name: "tie 1", s: jsonltest.NewSession(proj).User("tie one", ""), listed: true, mtime: tie,
		want: map[string]any{"lastModified": json.Number(fmt.Sprint(tie.UnixMilli() + 1))}})
	add(ruleCase{name: "tie 2", s: jsonltest.NewSession(proj).User("tie two", ""), listed: true, mtime: tie})

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
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	a := jsonltest.NewSession(main).User("in main", "")
	b := jsonltest.NewSession(wt).User("in the worktree", "")
	jsonltest.WriteFile(t, l.ProjectDir(main), a.ID+".jsonl", a.Text(), time.Now())
	jsonltest.WriteFile(t, l.ProjectDir(wt), b.ID+".jsonl", b.Text(), time.Now().Add(-time.Minute))
	ctx := context.Background()
	with, err := l.List(ctx, sessions.ListOptions{Dir: main, IncludeWorktrees: true, IncludeProgrammatic: true})
	if err != nil {
		t.Fatal(err)
	}
	without, _ := l.List(ctx, sessions.ListOptions{Dir: main, IncludeProgrammatic: true})
	if !reflect.DeepEqual(jsonltest.SessionIDs(with), []string{a.ID, b.ID}) || !reflect.DeepEqual(jsonltest.SessionIDs(without), []string{a.ID}) {
		t.Errorf("with worktrees %v, without %v", jsonltest.SessionIDs(with), jsonltest.SessionIDs(without))
	}
	if info, _ := l.Info(ctx, b.ID, main); info == nil || info.Cwd != wt {
		t.Errorf("Info via worktree = %+v", info)
	}
	p := peer.Find(t)
	compareWithSDK(t, p, cfg, queriesFor([]string{main, wt}, map[string]string{a.ID: main, b.ID: main}))
}

// ---------------------------------------------------------------------------
// Helpers, one rule each
