package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/transcript/fork"
)

// ---------------------------------------------------------------------------
// Without the SDK

func forkWrite(t *testing.T, path string, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

const (
	forkSrcID = "11111111-1111-4111-8111-111111111111"
	forkCwd   = "/home/alice/src/shop"
)

func forkRow(typ, id, parent, text string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	role := typ
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":%q,"message":{"role":%q,"content":%q},"uuid":%q,"timestamp":"2026-01-10T11:00:0%d.000Z","userType":"external","cwd":%q,"sessionId":%q,"version":"2.1.332","gitBranch":"main"}`,
		p, typ, role, text, id, len(text)%10, forkCwd, forkSrcID)
}

func TestForkSessionWritesNewFile(t *testing.T) {
	cfg := t.TempDir()
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	dir := l.ProjectDir(forkCwd)
	src := claudedir.MainFile(dir, forkSrcID)
	u1, u2, u3 := "aaaaaaaa-0000-4000-8000-000000000001", "aaaaaaaa-0000-4000-8000-000000000002", "aaaaaaaa-0000-4000-8000-000000000003"
	data := forkRow("user", u1, "", "Fix the login bug") + "\n" +
		"not json at all\n" +
		"   \n" +
		forkRow("assistant", u2, u1, "Done.") + "\n" +
		`{"type":"tag","tag":"x","sessionId":"` + forkSrcID + `"}` + "\n" +
		forkRow("user", u3, u2, "Thanks") // torn tail: no newline
	forkWrite(t, src, data)
	// A sidecar title beats the first prompt when the file has no title.
	forkWrite(t, filepath.Join(dir, forkSrcID, "custom-title.json"), `{"customTitle":"  Login\u0007work  "}`)

	now := time.Date(2026, 2, 3, 4, 5, 6, 789e6, time.UTC)
	id, path, err := l.ForkSession(context.Background(), forkSrcID, "", fork.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || filepath.Base(path) != id+".jsonl" || !claudedir.IsSessionID(id) {
		t.Fatalf("fork written to %s (id %s), want %s/<id>.jsonl", path, id, dir)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if len(lines) != 5 || !strings.HasSuffix(string(got), "\n") {
		t.Fatalf("fork has %d lines, want the route header, 3 rows and a title:\n%s", len(lines), got)
	}
	// SDK 0.3.337: a source that records no route gets the unrecorded one.
	if want := `{"type":"api-request-route","provider":"unrecorded","credential":"unrecorded","sessionId":"` + id + `"}`; lines[0] != want {
		t.Errorf("first line %s, want %s", lines[0], want)
	}
	lines = lines[1:]
	for _, ln := range lines[:3] {
		if !strings.Contains(ln, `"sessionId":"`+id+`"`) || !strings.Contains(ln, `"forkedFrom":{"sessionId":"`+forkSrcID+`"`) {
			t.Errorf("row not rewritten: %s", ln)
		}
	}
	if !strings.Contains(lines[2], `"timestamp":"2026-02-03T04:05:06.789Z"`) {
		t.Errorf("last row does not carry the fork time: %s", lines[2])
	}
	if want := `"customTitle":"Login work (fork)"`; !strings.Contains(lines[3], want) {
		t.Errorf("title line %s, want %s", lines[3], want)
	}
	// No temp files left behind.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left %s behind", e.Name())
		}
	}
}

func TestForkSessionNeverOverwrites(t *testing.T) {
	cfg := t.TempDir()
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	u1 := "aaaaaaaa-0000-4000-8000-000000000001"
	src := claudedir.MainFile(l.ProjectDir(forkCwd), forkSrcID)
	forkWrite(t, src, forkRow("user", u1, "", "hello")+"\n")
	other := "22222222-2222-4222-8222-222222222222"
	otherPath := claudedir.MainFile(l.ProjectDir("/elsewhere"), other)
	forkWrite(t, otherPath, "keep me\n")
	for _, id := range []string{forkSrcID, other} {
		_, _, err := l.ForkSession(context.Background(), forkSrcID, "", fork.Options{NewSessionID: id})
		if !errors.Is(err, ErrSessionExists) {
			t.Errorf("fork onto %s: %v, want ErrSessionExists", id, err)
		}
	}
	if b, _ := os.ReadFile(otherPath); string(b) != "keep me\n" {
		t.Errorf("existing session changed: %q", b)
	}
	// The write itself refuses an existing name.
	if err := forkWriteNew(otherPath, nil); !errors.Is(err, ErrSessionExists) {
		t.Errorf("forkWriteNew over a file: %v", err)
	}
}

func TestForkSessionErrors(t *testing.T) {
	cfg := t.TempDir()
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	ctx := context.Background()
	if _, _, err := l.ForkSession(ctx, "nope", "", fork.Options{}); !errors.Is(err, layout.ErrBadID) {
		t.Errorf("bad id: %v", err)
	}
	if _, _, err := l.ForkSession(ctx, forkSrcID, "", fork.Options{}); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("missing session: %v", err)
	}
	u1 := "aaaaaaaa-0000-4000-8000-000000000001"
	forkWrite(t, claudedir.MainFile(l.ProjectDir(forkCwd), forkSrcID), forkRow("user", u1, "", "hello")+"\n")
	_, _, err := l.ForkSession(ctx, forkSrcID, "", fork.Options{UpTo: "bbbbbbbb-0000-4000-8000-000000000009"})
	if !errors.Is(err, core.ErrMessageNotFound) || !strings.Contains(err.Error(), "bbbbbbbb-0000-4000-8000-000000000009") {
		t.Errorf("unknown up-to: %v", err)
	}
	side := `{"parentUuid":null,"isSidechain":true,"agentId":"a1","type":"user","message":{"role":"user","content":"x"},"uuid":"` + u1 + `","timestamp":"2026-01-10T11:00:00.000Z","sessionId":"` + forkSrcID + `"}`
	other := "33333333-3333-4333-8333-333333333333"
	forkWrite(t, claudedir.MainFile(l.ProjectDir(forkCwd), other), side+"\n")
	if _, _, err := l.ForkSession(ctx, other, "", fork.Options{}); !errors.Is(err, fork.ErrNoMessages) {
		t.Errorf("sidechain-only: %v", err)
	}
}

// ---------------------------------------------------------------------------
// Against the SDK

// forkCopyTree copies a config folder (modes and mtimes kept).

var forkUUIDRE = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)

// forkPlaceholders replaces the uuids of a fork file that do not occur in
// its source (the fresh ones: rows, session id, metadata rows) by <n>, in
// order of first appearance.
func forkPlaceholders(source, fork []byte) []string {
	names := map[string]string{}
	out := forkUUIDRE.ReplaceAllFunc(fork, func(u []byte) []byte {
		if bytes.Contains(source, u) {
			return u
		}
		n, ok := names[string(u)]
		if !ok {
			n = fmt.Sprintf("<%d>", len(names))
			names[string(u)] = n
		}
		return []byte(n)
	})
	return strings.Split(string(out), "\n")
}

// forkOrigins maps a fork file's row uuids to the source uuids they came
// from, and its session id to "<session>".
func forkOrigins(t *testing.T, fork []byte) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, ln := range bytes.Split(fork, []byte("\n")) {
		var r struct {
			UUID       string `json:"uuid"`
			SessionID  string `json:"sessionId"`
			ForkedFrom *struct {
				MessageUUID string `json:"messageUuid"`
			} `json:"forkedFrom"`
		}
		if len(ln) == 0 || json.Unmarshal(ln, &r) != nil {
			continue
		}
		if r.SessionID != "" {
			m[r.SessionID] = "<session>"
		}
		if r.ForkedFrom != nil {
			m[r.UUID] = r.ForkedFrom.MessageUUID
		}
	}
	return m
}

func forkMapText(s string, m map[string]string) string {
	return forkUUIDRE.ReplaceAllStringFunc(s, func(u string) string {
		if v, ok := m[u]; ok {
			return v
		}
		return u
	})
}

// forkTime is the fork time the SDK wrote (its custom-title row's
// timestamp), so scribe's fork can use the same.
func forkTime(t *testing.T, fork []byte) time.Time {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(fork), []byte("\n"))
	var r struct {
		Type      string `json:"type"`
		Timestamp string `json:"timestamp"`
	}
	if err := json.Unmarshal(lines[len(lines)-1], &r); err != nil || r.Type != "custom-title" {
		t.Fatalf("SDK fork does not end with its title: %s", lines[len(lines)-1])
	}
	ts, err := time.Parse(time.RFC3339Nano, r.Timestamp)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// forkCase is one fork made by both the SDK and scribe.
type forkCase struct {
	name, source, upTo, title string
	sdkID, ourID              string
	sdkErr, ourErr            string // a fork that failed
	srcBytes                  []byte
}

// forkOurs makes scribe's side of a case in ourCfg, after the SDK's, with
// the SDK's fork time.
func forkOurs(t *testing.T, sdkCfg, ourCfg string, c *forkCase) {
	t.Helper()
	c.srcBytes = forkFile(t, ourCfg, c.source)
	opt := fork.Options{UpTo: c.upTo, Title: c.title}
	if c.sdkErr == "" {
		opt.Now = forkTime(t, forkFile(t, sdkCfg, c.sdkID))
	}
	id, _, err := Layout{Layout: layout.Layout{ConfigDir: ourCfg}}.ForkSession(context.Background(), c.source, "", opt)
	if err != nil {
		c.ourErr = err.Error()
		return
	}
	c.ourID = id
}

func forkFile(t *testing.T, cfg, id string) []byte {
	t.Helper()
	path, _, err := Layout{Layout: layout.Layout{ConfigDir: cfg}}.reader().FindMain(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var forkTSRE = regexp.MustCompile(`"ts":"[^"]*"`)

// forkCompare checks one case: that both forks failed or both succeeded;
// the files line by line with fresh uuids replaced by placeholders (this
// pins key order and bytes; a history-suppression row's own clock reading
// "ts" is masked); the listing entries but sessionId and lastModified
// (nil: not listed); and the messages the SDK reads from both forks, with
// each fork's uuids mapped back to the source's.
func forkCompare(t *testing.T, sdkCfg, ourCfg string, c *forkCase, sdkInfo, ourInfo map[string]any, sm, om []json.RawMessage) {
	t.Helper()
	if (c.sdkErr == "") != (c.ourErr == "") {
		t.Errorf("%s: SDK error %q, scribe error %q", c.name, c.sdkErr, c.ourErr)
		return
	}
	if c.sdkErr != "" {
		// The same refusal: the SDK's message and scribe's error kind.
		kinds := []struct {
			sdk string
			our error
		}{{"not found in session", core.ErrMessageNotFound}, {"has no messages to fork", fork.ErrNoMessages}}
		for _, k := range kinds {
			if strings.Contains(c.sdkErr, k.sdk) != strings.Contains(c.ourErr, k.our.Error()) {
				t.Errorf("%s: SDK error %q, scribe error %q", c.name, c.sdkErr, c.ourErr)
			}
		}
		return
	}
	sdkFile, ourFile := forkFile(t, sdkCfg, c.sdkID), forkFile(t, ourCfg, c.ourID)
	a := forkPlaceholders(c.srcBytes, forkTSRE.ReplaceAll(sdkFile, []byte(`"ts":"<ts>"`)))
	b := forkPlaceholders(c.srcBytes, forkTSRE.ReplaceAll(ourFile, []byte(`"ts":"<ts>"`)))
	if len(a) != len(b) {
		t.Errorf("%s: SDK fork has %d lines, scribe's %d", c.name, len(a), len(b))
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			t.Errorf("%s: line %d differs\n sdk:    %.1500s\n scribe: %.1500s", c.name, i+1, a[i], b[i])
			break
		}
	}
	if (sdkInfo == nil) != (ourInfo == nil) {
		t.Errorf("%s: listed by the SDK: sdk fork %v, scribe fork %v", c.name, sdkInfo != nil, ourInfo != nil)
	} else if sdkInfo != nil {
		for _, k := range []string{"sessionId", "lastModified"} {
			delete(sdkInfo, k)
			delete(ourInfo, k)
		}
		sj, _ := json.Marshal(sdkInfo)
		oj, _ := json.Marshal(ourInfo)
		if !bytes.Equal(sj, oj) {
			t.Errorf("%s: listing differs\n sdk:    %s\n scribe: %s", c.name, sj, oj)
		}
	}
	smap, omap := forkOrigins(t, sdkFile), forkOrigins(t, ourFile)
	if len(sm) != len(om) {
		t.Errorf("%s: SDK reads %d messages from its fork, %d from scribe's", c.name, len(sm), len(om))
		return
	}
	for i := range sm {
		x, y := forkMapText(string(sm[i]), smap), forkMapText(string(om[i]), omap)
		if x != y {
			t.Errorf("%s: message %d differs\n sdk:    %.800s\n scribe: %.800s", c.name, i, x, y)
			return
		}
	}
}

// viewListing is a view's listing by session id.
func viewListing(v peer.View) map[string]peer.SessionInfo {
	m := map[string]peer.SessionInfo{}
	for _, si := range v.List {
		m[si.SessionID] = si
	}
	return m
}

// forkChainRows are the uuids of a file's non-sidechain chain rows, in
// file order.
func forkChainRows(src []byte) []string {
	var out []string
	for _, ln := range bytes.Split(src, []byte("\n")) {
		e, err := core.ParseEntry(ln)
		if err != nil || e.UUID == "" || !e.IsChain() || e.IsSidechain {
			continue
		}
		out = append(out, e.UUID)
	}
	return out
}

func TestForkMatchesSDKOnFixture(t *testing.T) {
	p := peer.Find(t)
	start := time.Now()
	base := t.TempDir()
	ids := p.GenFixture(t, base, forkCwd)
	sdkCfg, ourCfg, keepCfg := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{sdkCfg, ourCfg, keepCfg} {
		jsonltest.CopyTree(t, base, d)
	}
	var sources []string
	for role, id := range ids {
		if role != "projectDir" && role != "subagentId" && role != "sidechainOnly" {
			sources = append(sources, id)
		}
	}
	sort.Strings(sources)
	// The sidechain-only session: the SDK throws "no messages to fork".
	if _, _, err := (Layout{Layout: layout.Layout{ConfigDir: ourCfg}}).ForkSession(context.Background(), ids["sidechainOnly"], "", fork.Options{}); !errors.Is(err, fork.ErrNoMessages) {
		t.Errorf("sidechain-only session: %v, want fork.ErrNoMessages", err)
	}

	var cases []*forkCase
	srcMsgs := map[string][]string{}
	srcView := p.Views(t, []peer.ViewGroup{{Dirs: []string{base}, Sids: sources}})[0][0]
	for _, id := range sources {
		src := forkFile(t, base, id)
		rows := forkChainRows(src)
		msgs := peer.UUIDs(jsonltest.WithoutSystem(t, srcView.Messages[id]))
		srcMsgs[id] = msgs
		cases = append(cases,
			&forkCase{name: id + "/whole", source: id},
			&forkCase{name: id + "/title", source: id, title: "  Pick up here \t"},
			&forkCase{name: id + "/mid-row", source: id, upTo: rows[len(rows)/2]})
		if len(msgs) > 0 && msgs[len(msgs)/2] != rows[len(rows)/2] {
			cases = append(cases, &forkCase{name: id + "/mid-message", source: id, upTo: msgs[len(msgs)/2]})
		}
		if len(rows) > 1 {
			cases = append(cases, &forkCase{name: id + "/first-row", source: id, upTo: rows[0]})
		}
	}
	reqs := make([]peer.ForkRequest, len(cases))
	for i, c := range cases {
		reqs[i] = peer.ForkRequest{Session: c.source, UpTo: c.upTo, Title: c.title}
	}
	for i, id := range p.ForkMany(t, sdkCfg, reqs) {
		cases[i].sdkID = id
		forkOurs(t, sdkCfg, ourCfg, cases[i])
	}

	// --keep-uuids: listed and read by the SDK, with the source's message
	// uuids up to the cut.
	keep := Layout{Layout: layout.Layout{ConfigDir: keepCfg}}
	type kept struct {
		name, id, title string
		want            []string
	}
	var ks []kept
	for _, id := range sources {
		msgs := srcMsgs[id]
		fid, _, err := keep.ForkSession(context.Background(), id, "", fork.Options{KeepUUIDs: true, Title: "kept"})
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, kept{id + "/keep-whole", fid, "kept", msgs})
		if len(msgs) > 1 {
			cut := len(msgs) / 2
			fid, _, err := keep.ForkSession(context.Background(), id, "", fork.Options{KeepUUIDs: true, UpTo: msgs[cut]})
			if err != nil {
				t.Fatal(err)
			}
			ks = append(ks, kept{id + "/keep-cut", fid, "", msgs[:cut+1]})
		}
	}
	// What the SDK sees of all three folders, in one process.
	var sdkIDs, ourIDs, keepIDs []string
	for _, c := range cases {
		sdkIDs, ourIDs = append(sdkIDs, c.sdkID), append(ourIDs, c.ourID)
	}
	for _, k := range ks {
		keepIDs = append(keepIDs, k.id)
	}
	views := p.Views(t, []peer.ViewGroup{{Dirs: []string{sdkCfg}, Sids: sdkIDs}, {Dirs: []string{ourCfg}, Sids: ourIDs},
		{Dirs: []string{keepCfg}, Sids: keepIDs}})
	sdkView, ourView, keepView := views[0][0], views[1][0], views[2][0]
	sdkList, ourList, keepList := viewListing(sdkView), viewListing(ourView), viewListing(keepView)
	for _, c := range cases {
		var sm, om []json.RawMessage
		if c.ourErr == "" {
			sm, om = sdkView.Messages[c.sdkID], ourView.Messages[c.ourID]
		}
		forkCompare(t, sdkCfg, ourCfg, c, sdkList[c.sdkID].Raw, ourList[c.ourID].Raw, sm, om)
	}
	for _, k := range ks {
		si, ok := keepList[k.id]
		if !ok {
			t.Errorf("%s: the SDK does not list the --keep-uuids fork", k.name)
			continue
		}
		if k.title != "" && si.CustomTitle != k.title {
			t.Errorf("%s: listed with title %q, want %q", k.name, si.CustomTitle, k.title)
		}
		got := peer.UUIDs(jsonltest.WithoutSystem(t, keepView.Messages[k.id]))
		if strings.Join(got, " ") != strings.Join(k.want, " ") {
			t.Errorf("%s: SDK reads uuids\n %v\nwant\n %v", k.name, got, k.want)
		}
	}
	t.Logf("%d SDK/scribe fork pairs and %d --keep-uuids forks compared in %v", len(cases), len(ks), time.Since(start).Round(time.Millisecond))
}
