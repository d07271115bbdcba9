package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testenv"
	"github.com/e0dc0000/scribe/transcript"
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
	l := Layout{ConfigDir: cfg}
	dir := l.ProjectDir(forkCwd)
	src := MainFile(dir, forkSrcID)
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
	id, path, err := l.ForkSession(context.Background(), forkSrcID, "", transcript.ForkOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || filepath.Base(path) != id+".jsonl" || !IsSessionID(id) {
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
	if len(lines) != 4 || !strings.HasSuffix(string(got), "\n") {
		t.Fatalf("fork has %d lines, want 3 rows and a title:\n%s", len(lines), got)
	}
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
	l := Layout{ConfigDir: cfg}
	u1 := "aaaaaaaa-0000-4000-8000-000000000001"
	src := MainFile(l.ProjectDir(forkCwd), forkSrcID)
	forkWrite(t, src, forkRow("user", u1, "", "hello")+"\n")
	other := "22222222-2222-4222-8222-222222222222"
	otherPath := MainFile(l.ProjectDir("/elsewhere"), other)
	forkWrite(t, otherPath, "keep me\n")
	for _, id := range []string{forkSrcID, other} {
		_, _, err := l.ForkSession(context.Background(), forkSrcID, "", transcript.ForkOptions{NewSessionID: id})
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
	l := Layout{ConfigDir: cfg}
	ctx := context.Background()
	if _, _, err := l.ForkSession(ctx, "nope", "", transcript.ForkOptions{}); !errors.Is(err, ErrBadID) {
		t.Errorf("bad id: %v", err)
	}
	if _, _, err := l.ForkSession(ctx, forkSrcID, "", transcript.ForkOptions{}); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("missing session: %v", err)
	}
	u1 := "aaaaaaaa-0000-4000-8000-000000000001"
	forkWrite(t, MainFile(l.ProjectDir(forkCwd), forkSrcID), forkRow("user", u1, "", "hello")+"\n")
	_, _, err := l.ForkSession(ctx, forkSrcID, "", transcript.ForkOptions{UpTo: "bbbbbbbb-0000-4000-8000-000000000009"})
	if !errors.Is(err, core.ErrMessageNotFound) || !strings.Contains(err.Error(), "bbbbbbbb-0000-4000-8000-000000000009") {
		t.Errorf("unknown up-to: %v", err)
	}
	side := `{"parentUuid":null,"isSidechain":true,"agentId":"a1","type":"user","message":{"role":"user","content":"x"},"uuid":"` + u1 + `","timestamp":"2026-01-10T11:00:00.000Z","sessionId":"` + forkSrcID + `"}`
	other := "33333333-3333-4333-8333-333333333333"
	forkWrite(t, MainFile(l.ProjectDir(forkCwd), other), side+"\n")
	if _, _, err := l.ForkSession(ctx, other, "", transcript.ForkOptions{}); !errors.Is(err, transcript.ErrNothingToFork) {
		t.Errorf("sidechain-only: %v", err)
	}
}

func TestForkCleanTitle(t *testing.T) {
	for in, want := range map[string]string{
		"  a\u0007\u0008b  ":              "a b",
		"x\u200b\u200by":                  "x y",
		"\u00a0t\u2028u\ufeff":            "t u",
		strings.Repeat("é", 250):          strings.Repeat("é", 200),
		" \u0085keep\u0085":               "keep",
		"tab\tsep":                        "tab sep",
		"\u3000wide\u3000":                "wide",
		"end " + strings.Repeat("z", 198): "end " + strings.Repeat("z", 196),
	} {
		if got := forkCleanTitle(in); got != want {
			t.Errorf("forkCleanTitle(%q) = %q, want %q", in, got, want)
		}
	}
}

// ---------------------------------------------------------------------------
// Against the SDK

// forkCopyTree copies a config folder (modes and mtimes kept).
func forkCopyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(to, fi.Mode().Perm())
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, b, fi.Mode().Perm()); err != nil {
			return err
		}
		return os.Chtimes(to, fi.ModTime(), fi.ModTime())
	})
	if err != nil {
		t.Fatal(err)
	}
}

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
	opt := transcript.ForkOptions{UpTo: c.upTo, Title: c.title}
	if c.sdkErr == "" {
		opt.Now = forkTime(t, forkFile(t, sdkCfg, c.sdkID))
	}
	id, _, err := Layout{ConfigDir: ourCfg}.ForkSession(context.Background(), c.source, "", opt)
	if err != nil {
		c.ourErr = err.Error()
		return
	}
	c.ourID = id
}

func forkFile(t *testing.T, cfg, id string) []byte {
	t.Helper()
	path, _, err := Layout{ConfigDir: cfg}.findMain(context.Background(), id, "")
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
		}{{"not found in session", core.ErrMessageNotFound}, {"has no messages to fork", transcript.ErrNothingToFork}}
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

func forkListing(t *testing.T, p *peer.Peer, cfg string) map[string]peer.SessionInfo {
	t.Helper()
	m := map[string]peer.SessionInfo{}
	for _, si := range p.List(t, cfg, "") {
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
		forkCopyTree(t, base, d)
	}
	var sources []string
	for role, id := range ids {
		if role != "projectDir" && role != "subagentId" && role != "sidechainOnly" {
			sources = append(sources, id)
		}
	}
	sort.Strings(sources)
	// The sidechain-only session: the SDK throws "no messages to fork".
	if _, _, err := (Layout{ConfigDir: ourCfg}).ForkSession(context.Background(), ids["sidechainOnly"], "", transcript.ForkOptions{}); !errors.Is(err, transcript.ErrNothingToFork) {
		t.Errorf("sidechain-only session: %v, want ErrNothingToFork", err)
	}

	var cases []*forkCase
	srcMsgs := map[string][]string{}
	srcView := p.Views(t, []peer.ViewGroup{{Dirs: []string{base}, Sids: sources}})[0][0]
	for _, id := range sources {
		src := forkFile(t, base, id)
		rows := forkChainRows(src)
		msgs := peer.UUIDs(withoutSystem(t, srcView.Messages[id]))
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
	keep := Layout{ConfigDir: keepCfg}
	type kept struct {
		name, id, title string
		want            []string
	}
	var ks []kept
	for _, id := range sources {
		msgs := srcMsgs[id]
		fid, _, err := keep.ForkSession(context.Background(), id, "", transcript.ForkOptions{KeepUUIDs: true, Title: "kept"})
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, kept{id + "/keep-whole", fid, "kept", msgs})
		if len(msgs) > 1 {
			cut := len(msgs) / 2
			fid, _, err := keep.ForkSession(context.Background(), id, "", transcript.ForkOptions{KeepUUIDs: true, UpTo: msgs[cut]})
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
		got := peer.UUIDs(withoutSystem(t, keepView.Messages[k.id]))
		if strings.Join(got, " ") != strings.Join(k.want, " ") {
			t.Errorf("%s: SDK reads uuids\n %v\nwant\n %v", k.name, got, k.want)
		}
	}
	t.Logf("%d SDK/scribe fork pairs and %d --keep-uuids forks compared in %v", len(cases), len(ks), time.Since(start).Round(time.Millisecond))
}

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
		if !IsSessionID(id) {
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
		forkWrite(t, MainFile(Layout{ConfigDir: cfg}.ProjectDir(cwd), id), string(raw))
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
const qs = JSON.parse(fs.readFileSync(process.env.SCRIBE_FORK_QUERIES, 'utf8'));
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
	in, err := json.Marshal(qs)
	if err != nil {
		t.Fatal(err)
	}
	qfile := filepath.Join(t.TempDir(), "queries.json")
	if err := os.WriteFile(qfile, in, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Node, "--input-type=module", "-e", forkBatchScript)
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
	cmd.Env = append(cmd.Env, "CLAUDE_CONFIG_DIR="+cfg, "SCRIBE_SDK_MJS="+filepath.Join(p.SDKDir, "sdk.mjs"),
		"SCRIBE_FORK_QUERIES="+qfile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sdk batch: %v\n%s", err, stderr.String())
	}
	var out []forkAnswer
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out) != len(qs) {
		t.Fatalf("sdk batch: %d answers for %d queries: %v", len(out), len(qs), err)
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
