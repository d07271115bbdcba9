package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/e0dc0000/scribe/internal/testbackend"
	"github.com/e0dc0000/scribe/internal/testenv"
)

func TestMain(m *testing.M) {
	code := testbackend.Main(m)
	removeTestHome()
	os.Exit(code)
}

// backends starts (once per process) the real PostgreSQL and S3 servers
// and writes a config with a postgres/team and an s3/archive block on
// fresh storage, the pipeline's sinks as given. It returns the config file
// and the environment the S3 credentials come from.
func backends(t *testing.T, sinks string) (string, []string) {
	t.Helper()
	cfg, env, _ := backendsWithURL(t, sinks)
	return cfg, env
}

// backendsWithURL is backends, also returning the database's URL.
func backendsWithURL(t *testing.T, sinks string) (string, []string, string) {
	t.Helper()
	pg := testbackend.Postgres(t)
	srv := testbackend.S3(t)
	hcl := fmt.Sprintf(`pipeline {
  sinks = [%s]
}
sink "postgres" "team" {
  url = %q
}
sink "s3" "archive" {
  bucket     = %q
  endpoint   = %q
  region     = %q
  prefix     = "claude/"
  path_style = true
}
`, sinks, pg, srv.Bucket, srv.Endpoint, srv.Region)
	p := filepath.Join(t.TempDir(), "scribe.hcl")
	if err := os.WriteFile(p, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, []string{"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey}, pg
}

const sampleSession = "7b3c2a10-5d4e-4f6a-9b8c-1d2e3f4a5b6c"

// Recorded into postgres (beside the local files), a session is listed and
// shown --from postgres exactly as from the local files; it resumes from
// there and forks into it.
func TestRecordIntoPostgresListsShowsResumesAndForks(t *testing.T) {
	cfg, env, url := backendsWithURL(t, `"jsonl/local", "postgres/team"`)
	dir := t.TempDir()
	sample := filepath.Join(testenv.RepoRoot(t), "cmd", "scribe", "testdata", "sample.jsonl")
	mustScribe(t, runOpts{env: env}, "record", "--config", cfg, "--config-dir", dir, sample)

	// The SDK's reference adapter's load query returns the transcript
	// Claude Code's file holds, deep-equal.
	local, err := os.ReadFile(filepath.Join(dir, "projects", "-home-alice-src-shop", sampleSession+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var want []any
	for _, l := range strings.Split(strings.TrimSpace(string(local)), "\n") {
		var v any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		want = append(want, v)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT entry FROM claude_session_entries WHERE project_key=$1 AND session_id=$2 AND subpath IS NULL ORDER BY id`,
		"-home-alice-src-shop", sampleSession)
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	for rows.Next() {
		var v any
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	rows.Close()
	if !reflect.DeepEqual(got, want) || len(got) < 3 {
		t.Fatalf("the reference adapter's query loads %d entries, the local file holds %d (or they differ)", len(got), len(want))
	}
	base := []string{"--config", cfg, "--config-dir", dir}
	from := append(append([]string{}, base...), "--from", "postgres/team")

	for _, show := range [][]string{{"show", sampleSession, "--json"}, {"show", sampleSession}, {"show", sampleSession[:8], "--format", "md", "--subagents"}} {
		local := mustScribe(t, runOpts{env: env}, append(show, base...)...)
		remote := mustScribe(t, runOpts{env: env}, append(show, from...)...)
		if local != remote || len(local) < 100 {
			t.Fatalf("%v --from postgres/team differs from the local files:\n%s\n---\n%s", show, remote, local)
		}
	}
	ls := func(args []string) []map[string]any {
		var v []map[string]any
		out := mustScribe(t, runOpts{env: env}, append([]string{"ls", "--all", "--json"}, args...)...)
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("ls printed %s: %v", out, err)
		}
		for _, s := range v {
			delete(s, "lastModified") // the file's mtime here, the row's created_at there
		}
		return v
	}
	if l, r := ls(base), ls(from); !reflect.DeepEqual(l, r) || len(l) != 1 {
		t.Fatalf("ls --from postgres/team:\n%v\nlocal:\n%v", r, l)
	}
	if out := mustScribe(t, runOpts{env: env}, append([]string{"ls", "--project", "/home/alice/src/shop"}, from...)...); !strings.Contains(out, sampleSession) {
		t.Fatalf("ls --project --from lists:\n%s", out)
	}
	if out := mustScribe(t, runOpts{env: env}, append([]string{"ls", "--project", "/nowhere"}, from...)...); !strings.Contains(out, "no sessions for /nowhere in postgres/team") {
		t.Fatalf("an empty listing says: %s", out)
	}

	// resume --from a store resume.loaders does not list.
	var res struct {
		ServedBy string `json:"served_by"`
	}
	out := mustScribe(t, runOpts{env: env}, append([]string{"resume", sampleSession[:8], "--dry-run", "--json"}, from...)...)
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.ServedBy != "postgres/team" {
		t.Fatalf("resume --from postgres/team: %s (%v)", out, err)
	}

	// A resume through the pipeline records its lifecycle record in both
	// stores; show --system prints it from either.
	mustScribe(t, runOpts{env: env}, append([]string{"resume", sampleSession}, base...)...)
	sys := []string{"show", sampleSession, "--system"}
	if l, r := mustScribe(t, runOpts{env: env}, append(sys, base...)...), mustScribe(t, runOpts{env: env}, append(sys, from...)...); l != r || !strings.Contains(l, "resumed") {
		t.Fatalf("show --system --from postgres/team:\n%s\nlocal:\n%s", r, l)
	}

	// fork --from writes the fork into the store.
	var fork struct {
		SessionID, ForkedFrom, Path string
	}
	out = mustScribe(t, runOpts{env: env}, append([]string{"fork", sampleSession, "--json"}, from...)...)
	if err := json.Unmarshal([]byte(out), &fork); err != nil || fork.ForkedFrom != sampleSession || fork.Path != "postgres/team" {
		t.Fatalf("fork --from: %s (%v)", out, err)
	}
	var src, forked []json.RawMessage
	json.Unmarshal([]byte(mustScribe(t, runOpts{env: env}, append([]string{"show", sampleSession, "--json"}, from...)...)), &src)
	json.Unmarshal([]byte(mustScribe(t, runOpts{env: env}, append([]string{"show", fork.SessionID, "--json"}, from...)...)), &forked)
	if len(src) == 0 || len(forked) != len(src) {
		t.Fatalf("the fork in postgres has %d messages, its source %d", len(forked), len(src))
	}
	if _, errs, code := runScribe(t, runOpts{env: env}, append([]string{"show", "0000dead"}, from...)...); code != 1 || !strings.Contains(errs, "postgres/team") {
		t.Fatalf("show of a missing id: exit %d, %s", code, errs)
	}
	if _, errs, code := runScribe(t, runOpts{env: env}, append([]string{"ls"}, append(base, "--from", "postgres/nope")...)...); code != 2 || !strings.Contains(errs, "postgres/nope") {
		t.Fatalf("ls --from an undeclared block: exit %d, %s", code, errs)
	}
}

// transcripts returns every transcript file under a config folder's
// projects/ (main, subagents, their meta files, the lifecycle sidecars) by
// its path there, with its bytes.
func transcripts(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	root := filepath.Join(dir, "projects")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".meta.json")) {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// jsonl → s3 → postgres → jsonl gives back every transcript byte for byte;
// copying again copies nothing (idempotent), and a copy cut short is
// finished by the next one (resumable).
func TestCopyRoundTripIsByteIdentical(t *testing.T) {
	cfg, env := backends(t, `"jsonl/local"`)
	src, dst := t.TempDir(), t.TempDir()
	root := testenv.RepoRoot(t)
	inputs := []string{filepath.Join(root, "cmd", "scribe", "testdata", "sample.jsonl")}
	for _, g := range []string{
		"testdata/corpus/real/d-kimuson__claude-code-viewer/*.jsonl",
		"testdata/corpus/real/moredip__session-share/claude-code-projects/*.jsonl",
		"testdata/corpus/real/moredip__session-share/claude-code-projects/*/subagents/*.jsonl",
		"testdata/corpus/real/daaain__claude-code-log/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl",
		"testdata/corpus/real/daaain__claude-code-log/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/*.jsonl",
	} {
		m, _ := filepath.Glob(filepath.Join(root, g))
		inputs = append(inputs, m...)
	}
	mustScribe(t, runOpts{env: env}, append([]string{"record", "--config", cfg, "--config-dir", src}, inputs...)...)
	// A subagent's meta file travels as the SDK's agent_metadata entry.
	metas, _ := filepath.Glob(filepath.Join(src, "projects", "*", "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68", "subagents", "agent-a5bdbc1.jsonl"))
	if len(metas) != 1 {
		t.Fatalf("no subagent a5bdbc1 in the source: %v", metas)
	}
	meta := `{"agentType":"general-purpose","toolUseId":"toolu_01Sx4kfRZr5sPZdu4PjvBTnq","parentAgentId":"x"}`
	if err := os.WriteFile(strings.TrimSuffix(metas[0], ".jsonl")+".meta.json", []byte(meta), 0o600); err != nil {
		t.Fatal(err)
	}
	// Checkpoints (lifecycle records in the sidecar) travel too.
	mustScribe(t, runOpts{env: env}, "checkpoint", sampleSession, "--label", "before the fix", "--config", cfg, "--config-dir", src)
	want := transcripts(t, src)
	if _, ok := want["-home-alice-src-shop/"+sampleSession+"/scribe-lifecycle.jsonl"]; !ok {
		t.Fatalf("no sidecar in the source: %v", keys(want))
	}
	if len(want) < 4 {
		t.Fatalf("the source holds %d transcripts: %v", len(want), want)
	}
	var subagents int
	for p := range want {
		if strings.Contains(p, "/subagents/") && strings.HasSuffix(p, ".jsonl") {
			subagents++
		}
	}
	if subagents == 0 {
		t.Fatal("no subagent in the source: the test would prove nothing about them")
	}

	hop := func(from, to, dir string, wantCopied bool) copyReportT {
		t.Helper()
		out := mustScribe(t, runOpts{env: env}, "copy", "--config", cfg, "--config-dir", dir, "--from", from, "--to", to, "--all", "--json")
		var r copyReportT
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("copy printed %s: %v", out, err)
		}
		if (r.Copied > 0) != wantCopied || len(r.Failed) != 0 {
			t.Fatalf("copy %s → %s: %+v", from, to, r)
		}
		return r
	}
	first := hop("jsonl/local", "s3/archive", src, true)
	if first.Sessions != len(want)-subagents-2 || first.Subagents != subagents {
		t.Fatalf("copy into s3: %+v, want %d sessions and %d subagents", first, len(want)-subagents-2, subagents)
	}
	// What s3 now holds lists and shows as the local files do.
	base := []string{"--config", cfg, "--config-dir", src}
	lsJSON := func(extra ...string) []map[string]any {
		var v []map[string]any
		out := mustScribe(t, runOpts{env: env}, append(append([]string{"ls", "--all", "--json"}, base...), extra...)...)
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("ls printed %s: %v", out, err)
		}
		for _, s := range v {
			delete(s, "lastModified")
		}
		// Newest first: by the files' mtimes here, by the parts' there.
		sort.Slice(v, func(i, j int) bool { return v[i]["sessionId"].(string) < v[j]["sessionId"].(string) })
		return v
	}
	if l, r := lsJSON(), lsJSON("--from", "s3/archive"); !reflect.DeepEqual(l, r) || len(l) != first.Sessions {
		t.Fatalf("ls --from s3/archive:\n%v\nlocal:\n%v", r, l)
	}
	show := []string{"show", "0ccf1a04", "--json", "--subagents"}
	if l, r := mustScribe(t, runOpts{env: env}, append(show, base...)...), mustScribe(t, runOpts{env: env}, append(show, append(base, "--from", "s3/archive")...)...); l != r {
		t.Fatalf("show --from s3/archive differs from the local files")
	}
	again := hop("jsonl/local", "s3/archive", src, false)
	if again.Already != first.Copied {
		t.Fatalf("a second copy: %+v, want every entry already there (%d)", again, first.Copied)
	}
	hop("s3/archive", "postgres/team", src, true)
	hop("postgres/team", "jsonl/local", dst, true)
	got := transcripts(t, dst)
	if len(got) != len(want) {
		t.Fatalf("after the round trip: %d transcripts, want %d\n%v", len(got), len(want), keys(got))
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s differs after jsonl → s3 → postgres → jsonl (%d bytes, want %d)", p, len(got[p]), len(w))
		}
	}
	// A copy into a store that holds only part of a session (a copy cut
	// short) writes only the rest.
	part := t.TempDir()
	mustScribe(t, runOpts{env: env}, "record", "--config", cfg, "--config-dir", part, inputs[0])
	r := hop("postgres/team", "jsonl/local", part, true)
	if r.Already == 0 {
		t.Fatalf("a resumed copy: %+v", r)
	}
	if got := transcripts(t, part); !reflect.DeepEqual(got, want) {
		t.Fatalf("a resumed copy left %v, want %v", keys(got), keys(want))
	}
}

type copyReportT struct {
	Sessions  int      `json:"sessions"`
	Subagents int      `json:"subagents"`
	Copied    int64    `json:"copied"`
	Already   int64    `json:"alreadyThere"`
	Failed    []string `json:"failed"`
	Notes     []string `json:"notes"`
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestCopyUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"copy", "--from", "jsonl/local", "--all"},
		{"copy", "--from", "jsonl/local", "--to", "jsonl/local", "--all"},
		{"copy", "--from", "jsonl/local", "--to", "postgres/team"},
		{"copy", "--from", "jsonl/local", "--to", "summary/default", "--all"},
	} {
		if _, errs, code := runScribe(t, runOpts{}, append(args, "--config-dir", t.TempDir())...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errs)
		}
	}
}

// Sessions recorded into s3 in several runs have several parts; scribe s3
// compact merges them, and the session shows as before.
func TestS3CompactCommand(t *testing.T) {
	cfg, env := backends(t, `"jsonl/local", "s3/archive"`)
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "cmd", "scribe", "testdata", "sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	half := filepath.Join(t.TempDir(), "a.jsonl")
	rest := filepath.Join(t.TempDir(), "b.jsonl")
	os.WriteFile(half, []byte(strings.Join(lines[:len(lines)/2], "")), 0o600)
	os.WriteFile(rest, []byte(strings.Join(lines[len(lines)/2:], "")+"\n"), 0o600)
	base := []string{"--config", cfg, "--config-dir", dir}
	mustScribe(t, runOpts{env: env}, append([]string{"record", half}, base...)...)
	mustScribe(t, runOpts{env: env}, append([]string{"record", rest}, base...)...)
	show := []string{"show", sampleSession, "--json", "--subagents"}
	before := mustScribe(t, runOpts{env: env}, append(show, append(base, "--from", "s3/archive")...)...)
	if local := mustScribe(t, runOpts{env: env}, append(show, base...)...); before != local {
		t.Fatal("show --from s3/archive differs from the local files")
	}
	var res []struct {
		Session string `json:"sessionId"`
		Agent   string `json:"agentId"`
		Parts   int    `json:"parts"`
	}
	out := mustScribe(t, runOpts{env: env}, append([]string{"s3", "compact", "--store", "s3/archive", "--all", "--json"}, base...)...)
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) == 0 || res[0].Parts != 2 {
		t.Fatalf("compact: %s (%v)", out, err)
	}
	if after := mustScribe(t, runOpts{env: env}, append(show, append(base, "--from", "s3/archive")...)...); after != before {
		t.Fatal("show --from s3/archive changed with the compaction")
	}
	out = mustScribe(t, runOpts{env: env}, append([]string{"s3", "compact", "--store", "s3/archive", sampleSession[:8]}, base...)...)
	if !strings.Contains(out, "compacted 0 of") {
		t.Fatalf("a second compact: %s", out)
	}
	if _, errs, code := runScribe(t, runOpts{env: env}, append([]string{"s3", "compact", "--store", "postgres/team", "--all"}, base...)...); code != 2 {
		t.Fatalf("compact of a postgres block: exit %d %s", code, errs)
	}
}

// With postgres as the only store, it seeds dedup: recording the same
// input twice adds no row, and s3 alone the same.
func TestRecordTwiceIntoABackendAddsNothing(t *testing.T) {
	sample := filepath.Join(testenv.RepoRoot(t), "cmd", "scribe", "testdata", "sample.jsonl")
	for _, sink := range []string{"postgres/team", "s3/archive"} {
		cfg, env := backends(t, `"`+sink+`"`)
		dir := t.TempDir()
		var first, second report
		for i, r := range []*report{&first, &second} {
			out := mustScribe(t, runOpts{env: env}, "record", "--json", "--config", cfg, "--config-dir", dir, sample)
			if err := json.Unmarshal([]byte(out), r); err != nil {
				t.Fatalf("%s run %d: %s: %v", sink, i, out, err)
			}
		}
		if first.Accepted == 0 || second.Accepted != 0 || second.Duplicates != first.Accepted {
			t.Fatalf("%s: first run accepted %d, second accepted %d with %d duplicates", sink, first.Accepted, second.Accepted, second.Duplicates)
		}
		if _, err := os.Stat(filepath.Join(dir, "projects")); err == nil {
			t.Fatalf("%s: the local store was written though the pipeline does not list it", sink)
		}
		// What it holds shows as the input does when recorded locally.
		local := t.TempDir()
		mustScribe(t, runOpts{}, "record", "--config-dir", local, sample)
		want := mustScribe(t, runOpts{}, "show", sampleSession, "--json", "--config-dir", local)
		if got := mustScribe(t, runOpts{env: env}, "show", sampleSession, "--json", "--config", cfg, "--config-dir", dir, "--from", sink); got != want {
			t.Fatalf("%s: show --from differs from the input recorded locally", sink)
		}
	}
}

// A secret written in an s3 block is a configuration error at its line.
func TestInlineS3SecretIsAConfigError(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.hcl")
	hcl := "sink \"s3\" \"archive\" {\n  bucket = \"b\"\n  secret_access_key = \"abc\"\n}\n"
	if err := os.WriteFile(p, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runScribe(t, runOpts{}, "config", "check", "--config", p)
	if code != 2 || !strings.Contains(out+errs, "bad.hcl:3:3") || !strings.Contains(out+errs, "secrets are never written") {
		t.Fatalf("config check: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := runScribe(t, runOpts{}, "ls", "--from", "s3/archive", "--config", p); code != 2 || !strings.Contains(errs, "secret_access_key") {
		t.Fatalf("ls --from a block with a secret: exit %d %s", code, errs)
	}
}

// A local transcript is copied whole: a file over 5 MiB with a compact
// boundary in the middle (which resume reads from the boundary on) comes
// back byte for byte, and copying it again finds everything there. A
// malformed line cannot travel: the summary says so.
func TestCopyTakesLargeCompactedFilesWhole(t *testing.T) {
	cfg, env := backends(t, `"jsonl/local"`)
	src, dst := t.TempDir(), t.TempDir()
	const sid = "0565a3a4-0000-4000-8000-00000000c0de"
	var b strings.Builder
	parent := ""
	pad := strings.Repeat("x", 2200)
	for i := range 2600 {
		u := fmt.Sprintf("7b000000-0000-4000-8000-%012d", i)
		if i == 1300 {
			fmt.Fprintf(&b, `{"parentUuid":null,"logicalParentUuid":%q,"isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"timestamp":"2026-01-10T12:00:00.000Z","uuid":%q,"level":"info","userType":"external","cwd":"/home/alice/src/shop","sessionId":%q}`+"\n", parent, u, sid)
			parent = u
			continue
		}
		typ := "user"
		if i%2 == 1 {
			typ = "assistant"
		}
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		fmt.Fprintf(&b, `{"parentUuid":%s,"isSidechain":false,"type":%q,"message":{"role":%q,"content":"%s %d"},"uuid":%q,"timestamp":"2026-01-10T11:00:02.267Z","userType":"external","cwd":"/home/alice/src/shop","sessionId":%q}`+"\n", p, typ, typ, pad, i, u, sid)
		parent = u
	}
	big := b.String()
	if len(big) < 5<<20 {
		t.Fatalf("the session is %d bytes: not over 5 MiB", len(big))
	}
	rel := filepath.Join("-home-alice-src-shop", sid+".jsonl")
	put := func(dir, body string) {
		p := filepath.Join(dir, "projects", rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	put(src, big)
	run := func(from, to, dir string) copyReportT {
		out := mustScribe(t, runOpts{env: env}, "copy", "--config", cfg, "--config-dir", dir, "--from", from, "--to", to, "--all", "--json")
		var r copyReportT
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("copy printed %s: %v", out, err)
		}
		return r
	}
	if r := run("jsonl/local", "s3/archive", src); r.Copied != 2600 {
		t.Fatalf("copy into s3: %+v, want all 2600 entries", r)
	}
	run("s3/archive", "jsonl/local", dst)
	if got := transcripts(t, dst)[rel]; got != big {
		t.Fatalf("the large session came back as %d bytes, want %d", len(got), len(big))
	}
	if r := run("s3/archive", "jsonl/local", dst); r.Copied != 0 || r.Already != 2600 {
		t.Fatalf("copying again into the local store: %+v", r)
	}

	bad := t.TempDir()
	lines := strings.SplitAfter(big, "\n")
	put(bad, lines[0]+"{not json\n"+lines[1])
	r := run("jsonl/local", "postgres/team", bad)
	if r.Copied != 2 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "1 malformed lines") {
		t.Fatalf("a file with a malformed line: %+v", r)
	}
}
