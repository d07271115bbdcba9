package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testenv"
)

// TestLsJSONWithAndWithoutIndexMatchesTheSDK: the index must not change a
// byte of what ls --json says, cold, warm, or after the files changed.
func TestLsJSONWithAndWithoutIndexMatchesTheSDK(t *testing.T) {
	p := peer.Find(t)
	root := t.TempDir()
	dir := filepath.Join(root, "cfg")
	cwd := filepath.Join(root, "proj")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	p.GenFixture(t, dir, cwd)
	p.GenBulk(t, dir, cwd, 40, 20_000, 7)
	index := filepath.Join(dir, "scribe", "index", "sessions.idx")

	check := func(what string) {
		t.Helper()
		var want []any
		for _, w := range p.List(t, dir, "") {
			want = append(want, w.Raw)
		}
		for _, mode := range [][]string{nil, nil, {"--no-index"}} { // cold (or refreshed), warm, direct
			var got []json.RawMessage
			scribeJSON(t, runOpts{}, &got, append([]string{"ls", "--config-dir", dir, "--all", "--json"}, mode...)...)
			sameJSON(t, fmt.Sprintf("%s: ls --all --json %v", what, mode), got, want)
		}
		var wantP []any
		for _, w := range p.List(t, dir, cwd, "--limit", "5", "--offset", "3") {
			wantP = append(wantP, w.Raw)
		}
		for _, mode := range [][]string{nil, {"--no-index"}} {
			var got []json.RawMessage
			scribeJSON(t, runOpts{}, &got, append([]string{"ls", "--config-dir", dir, "--project", cwd, "--json", "--limit", "5", "--offset", "3"}, mode...)...)
			sameJSON(t, fmt.Sprintf("%s: ls --project --limit 5 --offset 3 --json %v", what, mode), got, wantP)
		}
		if _, err := os.Stat(index); err != nil {
			t.Fatalf("%s: no index written: %v", what, err)
		}
	}
	check("fresh")

	// Change the files under the index: a rename, a deletion, a new
	// session, a damaged index.
	proj, _ := filepath.Glob(filepath.Join(dir, "projects", "*"))
	var files []string
	for _, pd := range proj {
		fs, _ := filepath.Glob(filepath.Join(pd, "*.jsonl"))
		files = append(files, fs...)
	}
	if len(files) < 10 {
		t.Fatalf("only %d files", len(files))
	}
	f, err := os.OpenFile(files[3], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `{"type":"custom-title","customTitle":"Renamed while indexed","sessionId":%q}`+"\n", strings.TrimSuffix(filepath.Base(files[3]), ".jsonl"))
	f.Close()
	if err := os.Remove(files[5]); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(files[7])
	fresh := filepath.Join(filepath.Dir(files[7]), "0badc0de-0000-4000-8000-000000000001.jsonl")
	if err := os.WriteFile(fresh, bytes.ReplaceAll(data, []byte(strings.TrimSuffix(filepath.Base(files[7]), ".jsonl")), []byte("0badc0de-0000-4000-8000-000000000001")), 0o600); err != nil {
		t.Fatal(err)
	}
	check("changed")

	raw, _ := os.ReadFile(index)
	raw[70] ^= 0xff // in the listing section, which ls --json reads
	if err := os.WriteFile(index, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runScribe(t, runOpts{}, "ls", "--config-dir", dir, "--all", "--json")
	if code != 0 || !strings.Contains(stderr, "sessions index discarded") {
		t.Fatalf("damaged index: exit %d, stderr %q", code, stderr)
	}
	check("damaged index")
	if err := os.Remove(index); err != nil {
		t.Fatal(err)
	}
	check("deleted index")
}

// indexTestSession writes a transcript whose last row is the given kind.
func indexTestSession(t *testing.T, dir, cwd, id, ending string, mtime time.Time) {
	t.Helper()
	rows := []string{
		fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"Task for %s"},"uuid":"%s-u1","timestamp":"2026-01-10T11:00:00.000Z","cwd":%q,"sessionId":%q}`, ending, id[:8], cwd, id),
	}
	asst := func(content string) string {
		return fmt.Sprintf(`{"parentUuid":"%s-u1","isSidechain":false,"message":{"model":"claude-opus-4-1","id":"msg_%s","type":"message","role":"assistant","content":%s,"stop_reason":"end_turn"},"type":"assistant","uuid":"%s-a1","timestamp":"2026-01-10T11:00:05.000Z","cwd":%q,"sessionId":%q}`, id[:8], id[:8], content, id[:8], cwd, id)
	}
	switch ending {
	case "reply":
		rows = append(rows, asst(`[{"type":"text","text":"done"}]`))
	case "tool":
		rows = append(rows, asst(`[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]`))
	case "prompt":
	}
	proj := filepath.Join(dir, "projects", strings.NewReplacer("/", "-", ".", "-", "_", "-").Replace(cwd))
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(proj, id+".jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(rows, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func TestLsStatusColumnAndFilter(t *testing.T) {
	dir := t.TempDir()
	cwd := "/home/alice/src/shop"
	base := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	ids := map[string]string{
		"reply":  "11111111-0000-4000-8000-000000000001",
		"tool":   "22222222-0000-4000-8000-000000000002",
		"prompt": "33333333-0000-4000-8000-000000000003",
		"held":   "44444444-0000-4000-8000-000000000004",
	}
	indexTestSession(t, dir, cwd, ids["reply"], "reply", base.Add(time.Minute))
	indexTestSession(t, dir, cwd, ids["tool"], "tool", base.Add(2*time.Minute))
	indexTestSession(t, dir, cwd, ids["prompt"], "prompt", base.Add(3*time.Minute))
	indexTestSession(t, dir, cwd, ids["held"], "reply", base.Add(4*time.Minute))

	// A live writer holds one session.
	locks := filepath.Join(dir, "scribe", "locks")
	if err := os.MkdirAll(locks, 0o700); err != nil {
		t.Fatal(err)
	}
	lf, err := os.OpenFile(filepath.Join(locks, ids["held"]+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	// A stale lock file: no holder.
	if err := os.WriteFile(filepath.Join(locks, ids["reply"]+".lock"), []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	want := map[string]string{ids["reply"]: "completed", ids["tool"]: "interrupted", ids["prompt"]: "interrupted", ids["held"]: "active"}
	for _, mode := range [][]string{nil, nil, {"--no-index"}} {
		out, stderr, code := runScribe(t, runOpts{}, append([]string{"ls", "--config-dir", dir, "--all"}, mode...)...)
		if code != 0 {
			t.Fatalf("ls %v: exit %d: %s", mode, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 5 || !strings.Contains(lines[0], "STATUS") {
			t.Fatalf("ls %v:\n%s", mode, out)
		}
		col := strings.Index(lines[0], "STATUS")
		for _, l := range lines[1:] {
			id := strings.Fields(l)[0]
			if got := strings.Fields(l[col:])[0]; got != want[id] {
				t.Errorf("ls %v: %s has status %s, want %s\n%s", mode, id, got, want[id], out)
			}
		}
		for _, st := range []string{"active", "interrupted", "completed"} {
			var got []map[string]any
			scribeJSON(t, runOpts{}, &got, append([]string{"ls", "--config-dir", dir, "--all", "--json", "--status", st}, mode...)...)
			var gotIDs, wantIDs []string
			for _, g := range got {
				gotIDs = append(gotIDs, g["sessionId"].(string))
			}
			for _, id := range []string{ids["held"], ids["prompt"], ids["tool"], ids["reply"]} { // newest first
				if want[id] == st {
					wantIDs = append(wantIDs, id)
				}
			}
			if fmt.Sprint(gotIDs) != fmt.Sprint(wantIDs) {
				t.Errorf("ls --status %s %v: %v, want %v", st, mode, gotIDs, wantIDs)
			}
		}
		// The filter applies before the page.
		var page []map[string]any
		scribeJSON(t, runOpts{}, &page, append([]string{"ls", "--config-dir", dir, "--all", "--json", "--status", "interrupted", "--limit", "1", "--offset", "1"}, mode...)...)
		if len(page) != 1 || page[0]["sessionId"] != ids["tool"] {
			t.Errorf("ls --status interrupted --limit 1 --offset 1 %v: %v", mode, page)
		}
	}
	if _, stderr, code := runScribe(t, runOpts{}, "ls", "--config-dir", dir, "--all", "--status", "paused"); code != 2 || !strings.Contains(stderr, "--status") {
		t.Fatalf("bad --status: exit %d %s", code, stderr)
	}

	// The writer lets go.
	unix.Flock(int(lf.Fd()), unix.LOCK_UN)
	var got []map[string]any
	scribeJSON(t, runOpts{}, &got, "ls", "--config-dir", dir, "--all", "--json", "--status", "active")
	if len(got) != 0 {
		t.Fatalf("still active after the lock was released: %v", got)
	}
}

func TestIndexRebuildAndExportCommands(t *testing.T) {
	dir := t.TempDir()
	cwd := "/home/alice/src/shop"
	base := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	indexTestSession(t, dir, cwd, "11111111-0000-4000-8000-000000000001", "reply", base)
	indexTestSession(t, dir, cwd, "22222222-0000-4000-8000-000000000002", "tool", base.Add(time.Minute))

	var rep struct {
		Index    string `json:"index"`
		Sessions int    `json:"sessions"`
		Files    int    `json:"files"`
		Misses   int    `json:"misses"`
		Rebuilt  bool   `json:"rebuilt"`
		Saved    bool   `json:"saved"`
	}
	scribeJSON(t, runOpts{}, &rep, "index", "rebuild", "--config-dir", dir, "--json")
	if rep.Sessions != 2 || rep.Files != 2 || rep.Misses != 2 || !rep.Rebuilt || !rep.Saved ||
		rep.Index != filepath.Join(dir, "scribe", "index", "sessions.idx") {
		t.Fatalf("rebuild: %+v", rep)
	}
	if _, err := os.Stat(rep.Index); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runScribe(t, runOpts{}, "index", "rebuild", "--config-dir", dir)
	if code != 0 || !strings.Contains(out, "indexed 2 transcript files") || stderr != "" {
		t.Fatalf("rebuild: exit %d\n%s%s", code, out, stderr)
	}

	stdout, _, code := runScribe(t, runOpts{}, "index", "export", "--config-dir", dir)
	if code != 0 {
		t.Fatalf("export: exit %d", code)
	}
	file := filepath.Join(t.TempDir(), "sessions.json")
	if _, stderr, code := runScribe(t, runOpts{}, "index", "export", "--config-dir", dir, "--out", file); code != 0 {
		t.Fatalf("export --out: exit %d %s", code, stderr)
	}
	saved, err := os.ReadFile(file)
	if err != nil || string(saved) != stdout {
		t.Fatalf("export --out wrote %q (%v), stdout was %q", saved, err, stdout)
	}
	var recs []struct {
		ID, Name, Status, CreatedAt, UpdatedAt, CompletedAt, ProjectPath, TranscriptPath string
		Metadata                                                                         struct {
			Model         string   `json:"model"`
			Tools         []string `json:"tools"`
			LastMessageID string   `json:"lastMessageId"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(saved, &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("export: %s", saved)
	}
	tool, reply := recs[0], recs[1]
	if tool.Status != "interrupted" || tool.CompletedAt != "" || fmt.Sprint(tool.Metadata.Tools) != "[Bash]" ||
		reply.Status != "completed" || reply.CompletedAt != "2026-01-10T11:00:05.000Z" || reply.CreatedAt != "2026-01-10T11:00:00.000Z" ||
		reply.Metadata.Model != "claude-opus-4-1" || reply.Metadata.LastMessageID != "11111111-a1" || reply.Name != "Task for reply" ||
		reply.ProjectPath != cwd || !strings.HasSuffix(reply.TranscriptPath, "11111111-0000-4000-8000-000000000001.jsonl") {
		t.Fatalf("export: %s", saved)
	}
}

// TestIndexConcurrentLsProcesses: scribe processes listing at once, while
// sessions are added, never leave a damaged index behind.
func TestIndexConcurrentLsProcesses(t *testing.T) {
	dir := t.TempDir()
	cwd := "/home/alice/src/shop"
	base := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	for i := range 30 {
		indexTestSession(t, dir, cwd, fmt.Sprintf("%08x-0000-4000-8000-000000000000", i+1), []string{"reply", "tool", "prompt"}[i%3], base.Add(time.Duration(i)*time.Minute))
	}
	bin := testenv.BuildScribe(t)
	proj := filepath.Join(dir, "projects", "-home-alice-src-shop")
	tmplID := "00000001-0000-4000-8000-000000000000"
	tmpl, err := os.ReadFile(filepath.Join(proj, tmplID+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	for p := range 4 {
		go func() {
			for i := range 8 {
				if p == 0 { // a writer adding sessions meanwhile
					id := fmt.Sprintf("%08x-0000-4000-8000-000000000001", 100+i)
					if err := os.WriteFile(filepath.Join(proj, id+".jsonl"), bytes.ReplaceAll(tmpl, []byte(tmplID), []byte(id)), 0o600); err != nil {
						done <- err
						return
					}
				}
				cmd := exec.Command(bin, "ls", "--config-dir", dir, "--all", "--json")
				cmd.Env = cleanEnv()
				var errb bytes.Buffer
				cmd.Stderr = &errb
				if err := cmd.Run(); err != nil || errb.Len() > 0 {
					done <- fmt.Errorf("ls: %v %s", err, errb.String())
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	_, stderr, code := runScribe(t, runOpts{}, "ls", "--config-dir", dir, "--all", "--json", "--log-level", "debug")
	if code != 0 || strings.Contains(stderr, "discarded") || !strings.Contains(stderr, "hits=") {
		t.Fatalf("after the race: exit %d\n%s", code, stderr)
	}
	var got, want []json.RawMessage
	scribeJSON(t, runOpts{}, &got, "ls", "--config-dir", dir, "--all", "--json")
	scribeJSON(t, runOpts{}, &want, "ls", "--config-dir", dir, "--all", "--json", "--no-index")
	if len(got) != 38 || !bytes.Equal(mustJSON(t, got), mustJSON(t, want)) {
		t.Fatalf("%d sessions listed through the index, %d without", len(got), len(want))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
