package main_test

// The team server's commands say what happened and what to do next (the
// helpers of cloud_test.go and remote_test.go):
//
//   - TestPushHeadlineSaysWhatHappened: push to a server that is not there,
//     or that refuses the token, never headlines "pushed N sessions".
//   - TestResumeFromBuiltinCloudLoader: resume --from cloud/team works with
//     the built-in declaration (resume.loaders left as built in), prints the
//     command that continues the session in Claude Code, and an undeclared
//     --from says where to declare and list it.
//   - TestLsRemoteListsAsLs: ls --remote gives the titles, last activity,
//     project and --json that ls gives for the same sessions.
//   - TestContinueOnAnotherMachine: push on machine A, pull --cwd on
//     machine B puts the session where Claude Code's /resume finds it for
//     that checkout and prints the command that continues it.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestPushHeadlineSaysWhatHappened(t *testing.T) {
	const sid = "4ead0000-0000-4000-8000-000000000001"
	// Nothing listens there.
	addr := cloudFreeAddr(t)
	cfg, dir := cloudMachine(t, "http://"+addr, "jsonl/local")
	remoteSession(t, dir, sid)
	out, errOut, code := cloudRun(t, "", "push", "--all", "--config", cfg)
	if code != 1 || !strings.HasPrefix(out, "pushed 0 of 1 sessions (1 files) to http://"+addr+" (events/team): server unreachable at http://"+addr+"\n") {
		t.Errorf("push to a dead server: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	// A server that refuses the token.
	srv := startCloudServer(t)
	cfg, dir = cloudMachine(t, srv.url(), "jsonl/local")
	hcl, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(string(hcl), cloudToken, "not-the-token")), 0o600); err != nil {
		t.Fatal(err)
	}
	remoteSession(t, dir, sid)
	out, errOut, code = cloudRun(t, "", "push", "--all", "--config", cfg)
	if code != 1 || !strings.HasPrefix(out, "pushed 0 of 1 sessions (1 files) to "+srv.url()+" (events/team): token refused (401); check token or token_file of events/team\n") {
		t.Errorf("push with a refused token: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	out, errOut, code = cloudRun(t, "", "push", "--all", "--json", "--config", cfg)
	var rep struct {
		Sessions     int  `json:"sessions"`
		Complete     int  `json:"complete"`
		TokenRefused bool `json:"token_refused"`
		TokenStatus  int  `json:"token_status"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 1 || err != nil || rep.Sessions != 1 || rep.Complete != 0 ||
		!rep.TokenRefused || rep.TokenStatus != 401 {
		t.Errorf("push --json with a refused token: exit %d, %v, %+v\n%s\n%s", code, err, rep, out, errOut)
	}

	// With the right token, the headline counts what went.
	cfg, dir = cloudMachine(t, srv.url(), "jsonl/local")
	remoteSession(t, dir, sid)
	out, errOut, code = cloudRun(t, "", "push", "--all", "--config", cfg)
	if code != 0 || !strings.HasPrefix(out, "pushed 1 sessions (1 files) to "+srv.url()+" (events/team) in ") {
		t.Errorf("push: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// builtinCloudMachine writes a client configuration that declares nothing
// of its own but the Claude folder and the built-in cloud/team loader's
// address and token: resume.loaders is the built-in one, which leaves the
// loader out.
func builtinCloudMachine(t *testing.T, base string) (cfgPath, configDir string) {
	t.Helper()
	root := t.TempDir()
	configDir = filepath.Join(root, "claude")
	if err := os.Mkdir(configDir, 0o700); err != nil {
		t.Fatal(err)
	}
	hcl := fmt.Sprintf(`config_dir = %q
log_level  = "warn"
loader "cloud" "team" {
  base_url = %q
  token    = %q
}
`, configDir, base, cloudToken)
	cfgPath = filepath.Join(root, "scribe.hcl")
	if err := os.WriteFile(cfgPath, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath, configDir
}

// quotedCwdSession lays out a session whose cwd has a space (and a quote),
// so that the continue command must quote it.
func quotedCwdSession(t *testing.T, configDir, sid, cwd string) {
	t.Helper()
	var lines []string
	parent := "null"
	for i, text := range []string{"hello from a spaced folder", "and more"} {
		u := fmt.Sprintf("%s-0000-4000-8000-%012d", sid[:8], i+1)
		lines = append(lines, fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":"user","message":{"role":"user","content":%q},"uuid":%q,"timestamp":"2026-01-10T11:00:0%d.000Z","cwd":%q,"sessionId":%q}`,
			parent, text, u, i, cwd, sid))
		parent = `"` + u + `"`
	}
	layTranscript(t, configDir, cwd, sid, lines, time.Time{})
}

// layTranscript writes a session's transcript into the project folder of
// cwd; a non-zero mtime is given to the file.
func layTranscript(t *testing.T, configDir, cwd, sid string, lines []string, mtime time.Time) {
	t.Helper()
	dir := filepath.Join(configDir, "projects", sanitizedPath(cwd))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, sid+".jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

// sanitizedPath is Claude Code's project folder name for a short path.
func sanitizedPath(p string) string {
	return regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString(p, "-")
}

func TestResumeFromBuiltinCloudLoader(t *testing.T) {
	srv := startCloudServer(t)
	cfgA, dirA := cloudMachine(t, srv.url(), "jsonl/local")
	const sid = "4e5a0000-0000-4000-8000-000000000001"
	const cwd = "/home/alice/src/my storm's"
	quotedCwdSession(t, dirA, sid, cwd)
	if rep, code, out := cloudPush(t, cfgA, sid); code != 0 || rep.Stored != 2 {
		t.Fatalf("push: exit %d\n%s", code, out)
	}
	wantCmd := `cd '/home/alice/src/my storm'\''s' && claude --resume ` + sid

	cfgB, dirB := builtinCloudMachine(t, srv.url())
	// A dry run copies nothing: it says Claude Code cannot list it yet.
	out, errOut, code := cloudRun(t, "", "resume", "--from", "cloud/team", sid, "--config", cfgB, "--dry-run")
	if code != 0 || !strings.Contains(errOut, "session "+sid+" is not in the local store") || !strings.HasSuffix(out, wantCmd+"\n") {
		t.Errorf("resume --dry-run --from cloud/team: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = cloudRun(t, "", "resume", "--from", "cloud/team", sid, "--config", cfgB, "--json")
	var rep struct {
		ServedBy        string `json:"served_by"`
		Copied          int    `json:"copied"`
		ContinueCommand string `json:"continue_command"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.ServedBy != "cloud/team" || rep.Copied != 2 ||
		rep.ContinueCommand != wantCmd {
		t.Fatalf("resume --from cloud/team with the built-in declaration: exit %d, %v, %+v\n%.2000s\n%s", code, err, rep, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dirB, "projects", sanitizedPath(cwd), sid+".jsonl")); err != nil {
		t.Errorf("resume --from cloud/team did not copy the session where Claude Code looks for it: %v", err)
	}
	// The text ends with the command; a prefix is resolved through the
	// loader of --from too.
	out, errOut, code = cloudRun(t, "", "resume", "--from", "cloud/team", "4e5a", "--config", cfgB, "--dry-run")
	if code != 0 || !strings.HasSuffix(out, "continue in Claude Code:\n  "+wantCmd+"\n") || strings.Contains(errOut, "not in the local store") {
		t.Errorf("resume: exit %d, want it to end with %q\n%s\n%s", code, wantCmd, out, errOut)
	}

	// A name declared nowhere: exit 2, saying where to declare and list it.
	_, errOut, code = cloudRun(t, "", "resume", "--from", "cloud/elsewhere", sid, "--config", cfgB)
	if code != 2 || !strings.Contains(errOut, cfgB) || !strings.Contains(errOut, "resume { loaders") || !strings.Contains(errOut, `"cloud" "elsewhere"`) {
		t.Errorf("resume --from an undeclared loader: exit %d\n%s", code, errOut)
	}
}

// listedSession is a transcript for TestLsRemoteListsAsLs: a chain of
// prompts with their own timestamps, then the metadata lines.
func listedSession(t *testing.T, configDir, sid, cwd string, last time.Time, meta ...string) {
	t.Helper()
	var lines []string
	parent := "null"
	for i, text := range []string{"<command-name>/clear</command-name>", "the first real prompt of " + sid[:8], "a later one"} {
		u := fmt.Sprintf("%s-0000-4000-8000-%012d", sid[:8], i+1)
		at := last.Add(time.Duration(i-2) * time.Minute).UTC().Format("2006-01-02T15:04:05.000Z")
		lines = append(lines, fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":"user","message":{"role":"user","content":%q},"uuid":%q,"timestamp":%q,"cwd":%q,"gitBranch":"main","sessionId":%q}`,
			parent, text, u, at, cwd, sid))
		parent = `"` + u + `"`
	}
	lines = append(lines, meta...)
	// As Claude Code leaves it: last written when the last row was.
	layTranscript(t, configDir, cwd, sid, lines, last)
}

func TestLsRemoteListsAsLs(t *testing.T) {
	srv := startCloudServer(t)
	cfgA, dirA := cloudMachine(t, srv.url(), "jsonl/local")
	base := time.Date(2025, 6, 1, 9, 30, 0, 0, time.UTC) // long before the push
	sessions := []struct {
		sid, cwd string
		meta     []string
	}{
		{"1a5e0000-0000-4000-8000-000000000001", "/home/alice/src/storm", []string{`{"type":"custom-title","customTitle":"Fix the login bug","sessionId":"1a5e0000-0000-4000-8000-000000000001"}`}},
		{"1a5e0000-0000-4000-8000-000000000002", "/home/alice/src/storm", []string{`{"type":"ai-title","aiTitle":"Speed up the parser","sessionId":"1a5e0000-0000-4000-8000-000000000002"}`}},
		{"1a5e0000-0000-4000-8000-000000000003", "/home/alice/src/other", []string{`{"type":"summary","summary":"Parser speed-up","leafUuid":"1a5e0000-0000-4000-8000-000000000003"}`}},
		{"1a5e0000-0000-4000-8000-000000000004", "/home/alice/src/other", []string{`{"type":"last-prompt","lastPrompt":"what about tests?","sessionId":"1a5e0000-0000-4000-8000-000000000004"}`}},
		{"1a5e0000-0000-4000-8000-000000000005", "/home/alice/src/third", nil},
	}
	for i, s := range sessions {
		listedSession(t, dirA, s.sid, s.cwd, base.Add(time.Duration(i)*time.Hour), s.meta...)
	}
	if rep, code, out := cloudPush(t, cfgA, "--all"); code != 0 || rep.Sessions != len(sessions) {
		t.Fatalf("push: exit %d\n%s", code, out)
	}
	// A session ls would not list (its first line a sidechain's): said, not
	// listed.
	const hidden = "1a5e0000-0000-4000-8000-0000000000ff"
	if !postBatch(srv, hidden, []string{`{"parentUuid":null,"isSidechain":true,"type":"user","message":{"role":"user","content":"side"},"uuid":"1a5e00ff-0000-4000-8000-000000000001","timestamp":"2025-06-01T09:00:00.000Z","cwd":"/home/alice/src/storm","sessionId":"` + hidden + `"}`}) {
		t.Fatal("post the hidden session")
	}
	local, errOut, code := cloudRun(t, "", "ls", "--all", "--json", "--config", cfgA)
	if code != 0 {
		t.Fatalf("ls --all --json: exit %d\n%s", code, errOut)
	}
	cfgB, _ := cloudMachine(t, srv.url(), "jsonl/local")
	remote, errOut, code := cloudRun(t, "", "ls", "--remote", "--json", "--config", cfgB)
	if code != 0 {
		t.Fatalf("ls --remote --json: exit %d\n%s", code, errOut)
	}
	var want, got []map[string]any
	if err := json.Unmarshal([]byte(local), &want); err != nil || len(want) != len(sessions) {
		t.Fatalf("ls --all --json: %v\n%s", err, local)
	}
	if err := json.Unmarshal([]byte(remote), &got); err != nil {
		t.Fatalf("ls --remote --json: %v\n%s", err, remote)
	}
	if !strings.Contains(errOut, "scribe: 1 sessions on "+srv.url()+" are not listed, as ls would not list them") {
		t.Errorf("ls --remote does not say it left a session out:\n%s", errOut)
	}
	// Same sessions, same order (by last activity), same fields: the
	// titles, the project (cwd), lastModified from the rows' timestamps.
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ls --remote --json differs from ls --all --json:\n got %s\nwant %s", remote, local)
	}
	titles := map[string]string{}
	for _, s := range got {
		titles[s["sessionId"].(string)], _ = s["summary"].(string)
		if lm, _ := s["lastModified"].(float64); time.UnixMilli(int64(lm)).After(base.Add(5 * time.Hour)) {
			t.Errorf("session %v: last activity %v is the push's time, not the session's", s["sessionId"], time.UnixMilli(int64(lm)))
		}
	}
	for sid, title := range map[string]string{
		sessions[0].sid: "Fix the login bug", sessions[1].sid: "Speed up the parser", sessions[2].sid: "Parser speed-up",
		sessions[3].sid: "what about tests?", sessions[4].sid: "the first real prompt of 1a5e0000",
	} {
		if titles[sid] != title {
			t.Errorf("ls --remote: session %s titled %q, want %q", sid, titles[sid], title)
		}
	}

	// The table is ls's table, with the same titles and times.
	tableA, _, codeA := cloudRun(t, "", "ls", "--all", "--config", cfgA)
	tableB, errOut, codeB := cloudRun(t, "", "ls", "--remote", "--config", cfgB)
	if codeA != 0 || codeB != 0 || tableA != tableB {
		t.Errorf("ls --remote (exit %d) differs from ls --all (exit %d):\n%s\nwant:\n%s\n%s", codeB, codeA, tableB, tableA, errOut)
	}
	// --project and --status filter it as ls does.
	for _, args := range [][]string{{"--project", "/home/alice/src/other"}, {"--status", "interrupted"}} {
		local := append([]string{"ls", "--json", "--config", cfgA}, args...)
		if args[0] == "--status" {
			local = append(local, "--all")
		}
		a, _, codeA := cloudRun(t, "", local...)
		b, errOut, codeB := cloudRun(t, "", append([]string{"ls", "--remote", "--json", "--config", cfgB}, args...)...)
		if codeA != 0 || codeB != 0 || a != b || a == "[]\n" {
			t.Errorf("ls --remote %s (exit %d) differs from ls (exit %d):\n%s\nwant:\n%s\n%s", args, codeB, codeA, b, a, errOut)
		}
	}
	// --limit and --offset page it as ls does.
	page, _, code := cloudRun(t, "", "ls", "--remote", "--json", "--limit", "2", "--offset", "1", "--config", cfgB)
	var paged []map[string]any
	if err := json.Unmarshal([]byte(page), &paged); code != 0 || err != nil || !reflect.DeepEqual(paged, want[1:3]) {
		t.Errorf("ls --remote --limit 2 --offset 1: exit %d, %v\n%s", code, err, page)
	}
	// The server is a store like any other (read only): ls, show and info
	// --from its cloud loader give what they give for the local files.
	if b, errOut, code := cloudRun(t, "", "ls", "--all", "--json", "--from", "cloud/team", "--config", cfgB); code != 0 || b != local {
		t.Errorf("ls --from cloud/team (exit %d) differs from ls --all:\n%s\nwant:\n%s\n%s", code, b, local, errOut)
	}
	for _, args := range [][]string{{"show", sessions[0].sid, "--json"}, {"show", sessions[1].sid}, {"info", sessions[2].sid, "--json"}} {
		a, _, codeA := cloudRun(t, "", append(args, "--config", cfgA)...)
		b, errOut, codeB := cloudRun(t, "", append(args, "--from", "cloud/team", "--config", cfgB)...)
		if args[0] == "info" {
			// The file is where each store keeps it.
			a, b = dropPathLine(a), dropPathLine(b)
		}
		if codeA != 0 || codeB != 0 || a != b || len(a) < 50 {
			t.Errorf("%v --from cloud/team (exit %d) differs from the local files (exit %d):\n%s\nwant:\n%s\n%s", args, codeB, codeA, b, a, errOut)
		}
	}
	if _, errOut, code := cloudRun(t, "", "rename", sessions[0].sid, "x", "--from", "cloud/team", "--config", cfgB); code != 1 || !strings.Contains(errOut, "cannot rename") {
		t.Errorf("rename --from the server: exit %d, %s", code, errOut)
	}
}

// dropPathLine leaves out of info --json the "path" member, which names
// where each store keeps the file.
func dropPathLine(s string) string {
	var m map[string]any
	if json.Unmarshal([]byte(s), &m) != nil {
		return s
	}
	delete(m, "path")
	b, _ := json.Marshal(m)
	return string(b)
}

func TestContinueOnAnotherMachine(t *testing.T) {
	srv := startCloudServer(t)
	cfgA, dirA := cloudMachine(t, srv.url(), "jsonl/local")
	const sid = "c0de0000-0000-4000-8000-000000000001"
	listedSession(t, dirA, sid, "/home/alice/src/storm", time.Date(2025, 6, 1, 9, 30, 0, 0, time.UTC))
	if rep, code, out := cloudPush(t, cfgA, sid); code != 0 || rep.Stored != 3 {
		t.Fatalf("push on A: exit %d\n%s", code, out)
	}

	// Machine B: another config folder, the same checkout elsewhere.
	cfgB, dirB := cloudMachine(t, srv.url(), "jsonl/local")
	checkout := filepath.Join(t.TempDir(), "bob's storm")
	if err := os.Mkdir(checkout, 0o700); err != nil {
		t.Fatal(err)
	}
	wantCmd := "cd " + strings.ReplaceAll("'"+checkout+"'", "'s", `'\''s`) + " && claude --resume " + sid
	out, errOut, code := cloudRun(t, "", "pull", sid, "--cwd", checkout, "--config", cfgB)
	if code != 0 || !strings.HasSuffix(out, "continue in Claude Code:\n  "+wantCmd+"\n") {
		t.Fatalf("pull --cwd on B: exit %d, want it to end with %q\n%s\n%s", code, wantCmd, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dirB, "projects", sanitizedPath(checkout), sid+".jsonl")); err != nil {
		t.Errorf("pull --cwd did not write into the checkout's project folder: %v", err)
	}
	// Claude Code's /resume in the checkout lists the project folder of
	// its cwd: so does the SDK's listSessions for that dir (ls --project).
	list, errOut, code := cloudRun(t, "", "ls", "--project", checkout, "--json", "--config", cfgB)
	if code != 0 || !strings.Contains(list, `"sessionId": "`+sid+`"`) {
		t.Errorf("ls --project CHECKOUT on B does not list the pulled session: exit %d\n%s\n%s", code, list, errOut)
	}
	out, errOut, code = cloudRun(t, "", "pull", sid, "--cwd", checkout, "--config", cfgB, "--json")
	var rep struct {
		ContinueCommand string `json:"continue_command"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.ContinueCommand != wantCmd {
		t.Errorf("pull --json: exit %d, %v, continue_command %q, want %q\n%s", code, err, rep.ContinueCommand, wantCmd, errOut)
	}
}
