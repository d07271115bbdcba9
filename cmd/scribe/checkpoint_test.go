package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testenv"
)

const cpSession = "c4ec0000-0000-4000-8000-000000000001"

func cpUUID(n int) string { return fmt.Sprintf("c4ec0000-1111-4000-8000-%012d", n) }

// cpRow is a user or assistant row of cpSession in cwd, in Claude Code's
// key order; n names its uuid, parent (0: none) its parent's.
func cpRow(typ string, n, parent int, text, cwd string) string {
	p := "null"
	if parent > 0 {
		p = fmt.Sprintf("%q", cpUUID(parent))
	}
	msg := fmt.Sprintf(`{"role":"user","content":%q}`, text)
	if typ == "assistant" {
		msg = fmt.Sprintf(`{"model":"m","id":"msg_%d","type":"message","role":"assistant","content":[{"type":"text","text":%q}],"stop_reason":"end_turn","stop_sequence":null}`, n, text)
	}
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":%q,"message":%s,"uuid":%q,"timestamp":"2026-01-10T11:00:%02d.000Z","userType":"external","cwd":%q,"sessionId":%q,"version":"2.1.332","gitBranch":"main"}`,
		p, typ, msg, cpUUID(n), n, cwd, cpSession)
}

// cpRun runs scribe on stdin with resume's age limit off.
func cpRun(stdin string) runOpts {
	return runOpts{env: []string{"SCRIBE_RESUME_MAX_AGE=0s"}, stdin: stdin}
}

// cpScribe runs scribe and returns stdout, stderr and the exit code.
func cpScribe(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return runScribe(t, cpRun(stdin), args...)
}

// cpOK runs scribe, fails the test on a non-zero exit, and decodes JSON
// output into v (when v is not nil).
func cpOK(t *testing.T, v any, stdin string, args ...string) string {
	t.Helper()
	if v == nil {
		return mustScribe(t, cpRun(stdin), args...)
	}
	return scribeJSON(t, cpRun(stdin), v, args...)
}

type cpResume struct {
	Classification string            `json:"classification"`
	Persisted      int               `json:"persisted"`
	Conversation   []json.RawMessage `json:"conversation"`
	Checkpoint     *core.Checkpoint  `json:"checkpoint"`
}

func cpConvUUIDs(t *testing.T, rows []json.RawMessage) []string {
	t.Helper()
	var out []string
	for _, r := range rows {
		var v struct {
			UUID string `json:"uuid"`
		}
		if err := json.Unmarshal(r, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v.UUID)
	}
	return out
}

// cpGitFixture is a git repository, a config folder with cpSession
// recorded in the repository, and the checkpoints taken so far.
type cpGitFixture struct {
	repo, dir  string
	head       string // the commit of the first checkpoint
	head2      string // the commit of the second
	transcript string
	cp         core.Checkpoint   // the first checkpoint, "main added"
	cps        []core.Checkpoint // both checkpoints, as listed
}

// A checkpoint taken in a git repository records its commit; resume and
// fork at it give the conversation up to its message and print the
// commit; the SDK lists and reads the fork.
func TestCheckpointInAGitRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	f := cpNewGitRepo(t)
	cpFirstCheckpoint(t, f)
	cpSecondCheckpoint(t, f)
	cpCheckResumeAt(t, f)
	fork := cpCheckForkAt(t, f)
	cpCheckShowSystem(t, f)
	cpCheckErrors(t, f)
	// Last: without the SDK, the test ends there as skipped.
	cpCheckSDKReadsFork(t, f, fork)
}

// cpNewGitRepo makes a git repository with one commit and an empty config
// folder.
func cpNewGitRepo(t *testing.T) *cpGitFixture {
	t.Helper()
	repo := t.TempDir()
	testenv.Git(t, repo, "init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	testenv.Git(t, repo, "add", ".")
	testenv.Git(t, repo, "commit", "-q", "-m", "first")
	return &cpGitFixture{repo: repo, dir: t.TempDir(), head: testenv.Git(t, repo, "rev-parse", "HEAD")}
}

// cpFirstCheckpoint records a session in the repository, then takes a
// checkpoint, which records the commit and stays out of the transcript.
func cpFirstCheckpoint(t *testing.T, f *cpGitFixture) {
	repo, dir := f.repo, f.dir
	start, err := core.LifecycleEntry(core.LifecycleMeta{SessionID: cpSession, CWD: repo, At: time.Date(2026, 1, 10, 11, 0, 0, 0, time.UTC)},
		core.SessionStart{Model: "claude-sonnet-4-5", Tools: []string{"Bash", "Edit"}, Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	first := strings.Join([]string{string(start.Raw), cpRow("user", 1, 0, "Add a main package", repo), cpRow("assistant", 2, 1, "Added main.go", repo)}, "\n") + "\n"
	cpOK(t, nil, first, "record", "--config-dir", dir)
	f.transcript = filepath.Join(dir, "projects", strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, repo), cpSession+".jsonl")
	if b, err := os.ReadFile(f.transcript); err != nil || bytes.Contains(b, []byte("scribe-")) {
		t.Fatalf("transcript %s: %v\n%s", f.transcript, err, b)
	}
	cp := &f.cp
	cpOK(t, cp, "", "checkpoint", "--config-dir", dir, cpSession[:8], "--label", "main added", "--json")
	if cp.Commit != f.head || cp.MessageUUID != cpUUID(2) || cp.CWD != repo || cp.Label != "main added" || cp.SessionID != cpSession || cp.ID == "" {
		t.Fatalf("checkpoint %+v, want commit %s after %s", *cp, f.head, cpUUID(2))
	}
}

// cpSecondCheckpoint goes on with the work (a new commit, a new turn) and
// takes a second checkpoint; checkpoints lists both, and neither went into
// the transcript.
func cpSecondCheckpoint(t *testing.T, f *cpGitFixture) {
	repo, dir, cp := f.repo, f.dir, f.cp
	testenv.Git(t, repo, "commit", "-q", "--allow-empty", "-m", "second")
	f.head2 = testenv.Git(t, repo, "rev-parse", "HEAD")
	head2 := f.head2
	more := cpRow("user", 3, 2, "Now add tests", repo) + "\n" + cpRow("assistant", 4, 3, "Tests added", repo) + "\n"
	cpOK(t, nil, more, "record", "--config-dir", dir)
	out := cpOK(t, nil, "", "checkpoint", "--config-dir", dir, cpSession, "--label", "tests added")
	if !strings.Contains(out, head2) || !strings.Contains(out, "checkout "+head2) || !strings.Contains(out, cpUUID(4)) {
		t.Fatalf("checkpoint printed:\n%s", out)
	}
	cpOK(t, &f.cps, "", "checkpoints", "--config-dir", dir, cpSession, "--json")
	if cps := f.cps; len(cps) != 2 || cps[0] != cp || cps[1].Commit != head2 || cps[1].MessageUUID != cpUUID(4) {
		t.Fatalf("checkpoints %+v", cps)
	}
	out = cpOK(t, nil, "", "checkpoints", "--config-dir", dir, cpSession)
	if !strings.Contains(out, "main added") || !strings.Contains(out, f.head[:12]) || !strings.Contains(out, cp.ID) {
		t.Fatalf("checkpoints printed:\n%s", out)
	}
	if b, _ := os.ReadFile(f.transcript); bytes.Contains(b, []byte("scribe-")) {
		t.Fatalf("a checkpoint went into the transcript:\n%s", b)
	}
}

// cpCheckResumeAt wants resume --at (by label, id and id prefix) to give
// the conversation up to the checkpoint and its commit, plain resume the
// whole conversation, and neither to change the transcript.
func cpCheckResumeAt(t *testing.T, f *cpGitFixture) {
	dir, cp, head := f.dir, f.cp, f.head
	before, _ := os.ReadFile(f.transcript)
	for _, name := range []string{"main added", cp.ID, cp.ID[:6]} {
		var r cpResume
		cpOK(t, &r, "", "resume", "--config-dir", dir, cpSession, "--at", name, "--json")
		if got := cpConvUUIDs(t, r.Conversation); !reflect.DeepEqual(got, []string{cpUUID(1), cpUUID(2)}) ||
			r.Classification != "none" || r.Persisted != 0 || r.Checkpoint == nil || r.Checkpoint.Commit != head {
			t.Fatalf("resume --at %q: %v, class %s, checkpoint %+v", name, got, r.Classification, r.Checkpoint)
		}
	}
	out := cpOK(t, nil, "", "resume", "--config-dir", dir, cpSession, "--at", "main added")
	if !strings.Contains(out, "git -C "+f.repo+" checkout "+head) || strings.Contains(out, "Tests added") || !strings.Contains(out, "Added main.go") {
		t.Fatalf("resume --at printed:\n%s", out)
	}
	var plain cpResume
	cpOK(t, &plain, "", "resume", "--config-dir", dir, cpSession, "--json")
	if got := cpConvUUIDs(t, plain.Conversation); len(got) != 4 || plain.Checkpoint != nil {
		t.Fatalf("plain resume: %v %+v", got, plain.Checkpoint)
	}
	if after, _ := os.ReadFile(f.transcript); !bytes.Equal(before, after) {
		t.Fatal("resume --at a finished turn changed the transcript")
	}
}

// cpCheckForkAt forks at the first checkpoint, wanting its commit named,
// and at the second by an id prefix; it returns the first fork's session.
func cpCheckForkAt(t *testing.T, f *cpGitFixture) string {
	var fk struct {
		SessionID  string           `json:"sessionId"`
		ForkedFrom string           `json:"forkedFrom"`
		Checkpoint *core.Checkpoint `json:"checkpoint"`
	}
	cpOK(t, &fk, "", "fork", "--config-dir", f.dir, cpSession, "--at", "main added", "--json")
	if fk.ForkedFrom != cpSession || fk.SessionID == "" || fk.Checkpoint == nil || fk.Checkpoint.Commit != f.head {
		t.Fatalf("fork --at: %+v", fk)
	}
	out := cpOK(t, nil, "", "fork", "--config-dir", f.dir, cpSession, "--at", f.cps[1].ID[:8])
	if !strings.Contains(out, "checkout "+f.head2) {
		t.Fatalf("fork --at printed:\n%s", out)
	}
	return fk.SessionID
}

// cpCheckShowSystem wants show --system to list the lifecycle records and
// checkpoints after the conversation, in text and markdown, while plain
// show leaves them out and --json stays the SDK's answer.
func cpCheckShowSystem(t *testing.T, f *cpGitFixture) {
	dir, cp := f.dir, f.cp
	out := cpOK(t, nil, "", "show", "--config-dir", dir, cpSession, "--system")
	i := strings.Index(out, "scribe lifecycle")
	if i < 0 || i < strings.Index(out, "Tests added") || !strings.Contains(out[i:], "session_start model=claude-sonnet-4-5 tools=Bash,Edit cwd="+f.repo+" branch=main") ||
		!strings.Contains(out[i:], `checkpoint `+cp.ID+` "main added" after `+cpUUID(2)+` commit `+f.head) {
		t.Fatalf("show --system printed:\n%s", out)
	}
	if out = cpOK(t, nil, "", "show", "--config-dir", dir, cpSession); strings.Contains(out, "scribe lifecycle") {
		t.Fatalf("show without --system printed the lifecycle:\n%s", out)
	}
	if out = cpOK(t, nil, "", "show", "--config-dir", dir, cpSession, "--system", "--format", "md"); !strings.Contains(out, "## Scribe lifecycle") {
		t.Fatalf("show --system --format md printed:\n%s", out)
	}
	var sys []json.RawMessage
	cpOK(t, &sys, "", "show", "--config-dir", dir, cpSession, "--system", "--json")
	if len(sys) != 4 {
		t.Fatalf("show --system --json: %d messages", len(sys))
	}
}

// cpCheckErrors wants an unknown checkpoint, an ambiguous label (made
// here by a second "main added"), --at with --up-to and an unknown
// session refused.
func cpCheckErrors(t *testing.T, f *cpGitFixture) {
	dir := f.dir
	if _, errs, code := cpScribe(t, "", "resume", "--config-dir", dir, cpSession, "--at", "nope", "--json"); code != 1 || !strings.Contains(errs, "no such checkpoint") {
		t.Fatalf("unknown checkpoint: exit %d %s", code, errs)
	}
	cpOK(t, nil, "", "checkpoint", "--config-dir", dir, cpSession, "--label", "main added")
	if _, errs, code := cpScribe(t, "", "fork", "--config-dir", dir, cpSession, "--at", "main added"); code != 2 || !strings.Contains(errs, "ambiguous") {
		t.Fatalf("ambiguous label: exit %d %s", code, errs)
	}
	if _, errs, code := cpScribe(t, "", "fork", "--config-dir", dir, cpSession, "--at", f.cp.ID, "--up-to", cpUUID(1)); code != 2 {
		t.Fatalf("--at with --up-to: exit %d %s", code, errs)
	}
	if _, errs, code := cpScribe(t, "", "checkpoints", "--config-dir", dir, "ffffffff"); code == 0 {
		t.Fatalf("checkpoints of an unknown session: %s", errs)
	}
}

// cpCheckSDKReadsFork wants the SDK to list the fork and read it as the
// source's first two messages; without the SDK the test is skipped here.
func cpCheckSDKReadsFork(t *testing.T, f *cpGitFixture, fork string) {
	dir := f.dir
	p := peer.Find(t)
	var listed *peer.SessionInfo
	for _, s := range p.List(t, dir, "") {
		if s.SessionID == fork {
			s := s
			listed = &s
		}
	}
	if listed == nil || listed.Summary != "Add a main package (fork)" || listed.Cwd != f.repo {
		t.Fatalf("the SDK lists the fork as %+v", listed)
	}
	msgs := p.Messages(t, dir, fork, "", false)
	src := p.Messages(t, dir, cpSession, "", false)
	if len(msgs) != 2 || len(src) != 4 {
		t.Fatalf("fork has %d messages, source %d", len(msgs), len(src))
	}
	for i := range msgs {
		var a, b struct {
			Type    string          `json:"type"`
			Message json.RawMessage `json:"message"`
		}
		_ = json.Unmarshal(src[i], &a)
		_ = json.Unmarshal(msgs[i], &b)
		if a.Type != b.Type || !bytes.Equal(a.Message, b.Message) {
			t.Fatalf("fork message %d: %s %s, source %s %s", i, b.Type, b.Message, a.Type, a.Message)
		}
	}
}

// A second writer holds the session: checkpoint fails at once, naming it,
// or waits with --lock-wait.
func TestCheckpointTakesTheSessionLock(t *testing.T) {
	dir := t.TempDir()
	cpOK(t, nil, cpRow("user", 1, 0, "hi", "/home/alice/src/shop")+"\n"+cpRow("assistant", 2, 1, "hello", "/home/alice/src/shop")+"\n", "record", "--config-dir", dir)
	// A live `scribe record` keeps the session's lock while it reads stdin.
	rec := exec.Command(testenv.BuildScribe(t), "record", "--config-dir", dir)
	rec.Env = cleanEnv()
	stdin, err := rec.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rec.Process.Kill(); _ = rec.Wait() }()
	if _, err := stdin.Write([]byte(cpRow("user", 3, 2, "more", "/home/alice/src/shop") + "\n")); err != nil {
		t.Fatal(err)
	}
	// Wait until the recorder holds the lock (it writes its pid there).
	lock := filepath.Join(dir, "scribe", "locks", cpSession+".lock")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(lock); strings.TrimSpace(string(b)) == fmt.Sprint(rec.Process.Pid) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the recorder never took the session's lock")
		}
	}
	_, errs, code := cpScribe(t, "", "checkpoint", "--config-dir", dir, cpSession, "--label", "x")
	if code == 0 || !strings.Contains(errs, "being written by another process") || !strings.Contains(errs, fmt.Sprint(rec.Process.Pid)) {
		t.Fatalf("checkpoint while a recorder holds the session: exit %d %s", code, errs)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = stdin.Close()
	}()
	var cp core.Checkpoint
	cpOK(t, &cp, "", "checkpoint", "--config-dir", dir, cpSession, "--label", "after", "--lock-wait", "20s", "--json")
	if cp.MessageUUID != cpUUID(3) || cp.Commit != "" {
		t.Fatalf("checkpoint after the recorder: %+v (want after %s, no commit)", cp, cpUUID(3))
	}
}

// The compatibility of the earlier issues holds on sessions that carry
// lifecycle records and checkpoints: the SDK lists and reads them exactly as
// without, and scribe's read commands still match the SDK on them.
func TestCheckpointAndLifecycleKeepTheSDKView(t *testing.T) {
	p := peer.Find(t)
	const project = "/home/alice/src/shop"
	plain, with := t.TempDir(), t.TempDir()
	ids := p.GenFixture(t, plain, project)
	p.GenFixture(t, with, project)
	mtimes := func(dir string) map[string]time.Time {
		out := map[string]time.Time{}
		files, _ := filepath.Glob(filepath.Join(dir, "projects", "*", "*.jsonl"))
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil {
				out[filepath.Base(f)] = fi.ModTime()
			}
		}
		return out
	}
	was := mtimes(with)
	var input strings.Builder
	var sessions []string
	for role, id := range ids {
		if role == "projectDir" || role == "subagentId" || role == "sidechainOnly" {
			continue
		}
		sessions = append(sessions, id)
		at := time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)
		for _, d := range []core.LifecycleData{
			core.SessionStart{Model: "m", Tools: []string{"Bash"}, Branch: "elsewhere-branch"},
			core.CostUpdate{TotalCostUSD: 1.5},
			core.TurnInterrupted{Kind: core.InterruptedPrompt, Detail: "A prompt-like text"},
			core.SessionEnd{Reason: core.EndInterrupted},
		} {
			e, err := core.LifecycleEntry(core.LifecycleMeta{SessionID: id, CWD: "/elsewhere", At: at}, d)
			if err != nil {
				t.Fatal(err)
			}
			input.Write(e.Raw)
			input.WriteByte('\n')
			at = at.Add(time.Second)
		}
	}
	r, errs, code := runRecord(t, nil, input.String(), "--config-dir", with)
	if code != 0 || r.Accepted != int64(4*len(sessions)) {
		t.Fatalf("record lifecycle: exit %d %+v %s", code, r, errs)
	}
	for _, id := range sessions {
		cpOK(t, nil, "", "checkpoint", "--config-dir", with, id, "--label", "cp")
	}
	if got := mtimes(with); !reflect.DeepEqual(got, was) {
		t.Fatalf("lifecycle records or checkpoints touched a transcript: %v, was %v", got, was)
	}
	a, b := p.List(t, plain, ""), p.List(t, with, "")
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("the SDK lists %d sessions without, %d with", len(a), len(b))
	}
	for i := range a {
		if !reflect.DeepEqual(a[i].Raw, b[i].Raw) {
			t.Fatalf("the SDK lists session %d\nwithout %v\nwith    %v", i, a[i].Raw, b[i].Raw)
		}
	}
	for _, id := range sessions {
		ma, _ := json.Marshal(p.Messages(t, plain, id, "", true))
		mb, _ := json.Marshal(p.Messages(t, with, id, "", true))
		if !bytes.Equal(ma, mb) {
			t.Fatalf("the SDK reads %s differently:\n%s\n%s", id, ma, mb)
		}
	}
	compareReadCommands(t, p, with, project)
}
