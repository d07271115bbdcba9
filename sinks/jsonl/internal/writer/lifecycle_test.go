package writer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/internal/gitrev"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testenv"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/reader"
	"github.com/e0dc0000/scribe/transcript"
)

var lcAt = time.Date(2026, 1, 10, 11, 0, 9, 0, time.UTC)

// lcPipeline runs entries through a pipeline whose only sink (and seeder)
// is a jsonl sink on dir, and shuts it down.
func lcPipeline(t *testing.T, dir string, entries ...core.Entry) core.Stats {
	t.Helper()
	ctx := context.Background()
	s := newSink(t, dir, nil)
	p, err := core.NewPipeline(core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.MustParseID("jsonl/local"), Sink: s}}, Seeder: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, err := p.Submit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	st := p.Stats()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

func lcEntry(t *testing.T, session, cwd string, at time.Time, d core.LifecycleData) core.Entry {
	t.Helper()
	e, err := core.LifecycleEntry(core.LifecycleMeta{SessionID: session, CWD: cwd, At: at}, d)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func lcConversation(t *testing.T) []core.Entry {
	t.Helper()
	return []core.Entry{
		coretest.MustEntry(t, coretest.Line("user", sess, "u-1", "")),
		coretest.MustEntry(t, coretest.Line("assistant", sess, "a-1", "u-1")),
		coretest.MustEntry(t, `{"type":"custom-title","customTitle":"Work","sessionId":"`+sess+`"}`),
		coretest.MustEntry(t, coretest.Line("user", sess, "u-2", "a-1")),
		coretest.MustEntry(t, coretest.Line("assistant", sess, "a-2", "u-2")),
	}
}

// Lifecycle events and checkpoints go to the sidecar, in order; the
// transcript is byte for byte what it is without them. A session_start
// that arrives before the first message waits for it, like metadata.
func TestLifecycleGoesToTheSidecar(t *testing.T) {
	conv := lcConversation(t)
	start := lcEntry(t, sess, cwd, lcAt, core.SessionStart{Model: "m", Tools: []string{"Bash"}, Branch: "main"})
	cost := lcEntry(t, sess, cwd, lcAt.Add(time.Second), core.CostUpdate{TotalCostUSD: 0.5})
	_, cpEntry, err := core.NewCheckpoint(core.Checkpoint{SessionID: sess, MessageUUID: "a-1", Label: "first", CWD: cwd}, lcAt.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	end := lcEntry(t, sess, cwd, lcAt.Add(3*time.Second), core.SessionEnd{Reason: core.EndCompleted, LastMessageUUID: "a-2"})

	plain, with := t.TempDir(), t.TempDir()
	lcPipeline(t, plain, conv...)
	mixed := []core.Entry{start, conv[0], conv[1], cost, cpEntry, conv[2], conv[3], conv[4], end}
	lcPipeline(t, with, mixed...)

	want, err := os.ReadFile(mainPath(plain))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(mainPath(with))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("transcript with lifecycle records differs:\n%s\nwant\n%s", got, want)
	}
	side := claudedir.SidecarFile(Layout{Layout: layout.Layout{ConfigDir: with}}.ProjectDir(cwd), sess)
	lines := readLines(t, side)
	wantLines := []string{string(start.Raw), string(cost.Raw), string(cpEntry.Raw), string(end.Raw)}
	if !reflect.DeepEqual(lines, wantLines) {
		t.Fatalf("sidecar\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(wantLines, "\n"))
	}
	if _, err := os.Stat(claudedir.SidecarFile(Layout{Layout: layout.Layout{ConfigDir: plain}}.ProjectDir(cwd), sess)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a sidecar without lifecycle records: %v", err)
	}
	for path, mode := range map[string]os.FileMode{side: layout.FileMode, filepath.Dir(side): layout.DirMode | os.ModeDir} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode() != mode {
			t.Fatalf("%s: mode %v (%v), want %v", path, fi.Mode(), err, mode)
		}
	}

	// The read side.
	l := Layout{Layout: layout.Layout{ConfigDir: with}}
	lcs, err := l.reader().Lifecycle(context.Background(), sess, "")
	if err != nil || len(lcs) != 3 || lcs[0].Event != core.LifecycleSessionStart || lcs[2].Event != core.LifecycleSessionEnd {
		t.Fatalf("lifecycle %+v %v", lcs, err)
	}
	cps, err := l.reader().Checkpoints(context.Background(), sess, cwd)
	if err != nil || len(cps) != 1 || cps[0].Label != "first" || cps[0].MessageUUID != "a-1" {
		t.Fatalf("checkpoints %+v %v", cps, err)
	}
	// The session's conversation, as read by scribe, is the same.
	m1, _, err1 := Layout{Layout: layout.Layout{ConfigDir: plain}}.reader().Messages(context.Background(), sess, "", sessions.MessagesOptions{IncludeSystem: true})
	m2, _, err2 := l.reader().Messages(context.Background(), sess, "", sessions.MessagesOptions{IncludeSystem: true})
	j1, _ := json.Marshal(m1)
	j2, _ := json.Marshal(m2)
	if err1 != nil || err2 != nil || !bytes.Equal(j1, j2) {
		t.Fatalf("messages differ: %s\n%s", j1, j2)
	}
	// A session with neither records nor sidecar has none; an unknown one
	// is not found.
	if cps, err := (Layout{Layout: layout.Layout{ConfigDir: plain}}).reader().Checkpoints(context.Background(), sess, ""); err != nil || len(cps) != 0 {
		t.Fatalf("plain: %v %v", cps, err)
	}
	if _, err := l.reader().Checkpoints(context.Background(), "99999999-9999-4999-8999-999999999999", ""); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
}

// A session that never gets a user or assistant entry leaves no files,
// not even a sidecar.
func TestLifecycleWithoutAConversationWritesNothing(t *testing.T) {
	dir := t.TempDir()
	st := lcPipeline(t, dir,
		lcEntry(t, sess, cwd, lcAt, core.SessionStart{Model: "m"}),
		lcEntry(t, sess, cwd, lcAt.Add(time.Second), core.SessionEnd{Reason: core.EndError, Detail: "no network"}))
	if st.Accepted != 2 {
		t.Fatalf("accepted %d", st.Accepted)
	}
	if _, err := os.Stat(filepath.Join(dir, "projects")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("files written for a session that never started: %v", err)
	}
}

// Dedup covers the sidecar: a second run with the same records (and the
// same conversation) writes nothing; a new record is appended.
func TestLifecycleDedupsAgainstTheSidecar(t *testing.T) {
	dir := t.TempDir()
	conv := lcConversation(t)
	start := lcEntry(t, sess, cwd, lcAt, core.SessionStart{Model: "m"})
	all := append([]core.Entry{start}, conv...)
	lcPipeline(t, dir, all...)
	side := claudedir.SidecarFile(Layout{Layout: layout.Layout{ConfigDir: dir}}.ProjectDir(cwd), sess)
	before, _ := os.ReadFile(side)
	mainBefore, _ := os.ReadFile(mainPath(dir))
	st := lcPipeline(t, dir, all...)
	// The title line is uuid-less metadata: a replay of stored input too.
	if st.Accepted != 0 || st.Duplicates != int64(len(all)) {
		t.Fatalf("replay: accepted %d, duplicates %d", st.Accepted, st.Duplicates)
	}
	after, _ := os.ReadFile(side)
	mainAfter, _ := os.ReadFile(mainPath(dir))
	if !bytes.Equal(before, after) || !bytes.Equal(mainBefore, mainAfter) {
		t.Fatalf("replay changed the files:\n%s\n%s", after, mainAfter)
	}
	end := lcEntry(t, sess, cwd, lcAt.Add(time.Minute), core.SessionEnd{Reason: core.EndCompleted})
	if st := lcPipeline(t, dir, start, end); st.Accepted != 1 {
		t.Fatalf("new record: accepted %d", st.Accepted)
	}
	if lines := readLines(t, side); len(lines) != 2 || lines[1] != string(end.Raw) {
		t.Fatalf("sidecar %q", lines)
	}
	if got, _ := os.ReadFile(mainPath(dir)); !bytes.Equal(got, mainBefore) {
		t.Fatal("a lifecycle record changed the transcript")
	}
}

// A sidecar whose last line was torn (a crash mid-write) is sealed before
// the next record, as the transcript is.
func TestLifecycleSealsATornSidecar(t *testing.T) {
	dir := t.TempDir()
	lcPipeline(t, dir, lcConversation(t)...)
	side := claudedir.SidecarFile(Layout{Layout: layout.Layout{ConfigDir: dir}}.ProjectDir(cwd), sess)
	if err := os.MkdirAll(filepath.Dir(side), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(side, []byte(`{"type":"scribe-lifecycle","event":"sess`), 0o600); err != nil {
		t.Fatal(err)
	}
	e := lcEntry(t, sess, cwd, lcAt, core.ModelChange{Model: "b", PreviousModel: "a"})
	lcPipeline(t, dir, e)
	lines := readLines(t, side)
	if len(lines) != 2 || lines[1] != string(e.Raw) {
		t.Fatalf("sidecar %q", lines)
	}
	if lcs, err := (Layout{Layout: layout.Layout{ConfigDir: dir}}).reader().Lifecycle(context.Background(), sess, ""); err != nil || len(lcs) != 1 || lcs[0].Event != core.LifecycleModelChange {
		t.Fatalf("lifecycle %+v %v", lcs, err)
	}
}

// lcRepo makes a git repository with one commit and returns it and HEAD.
func lcRepo(t *testing.T) (string, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	testenv.Git(t, repo, "init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	testenv.Git(t, repo, "add", ".")
	testenv.Git(t, repo, "commit", "-q", "-m", "first")
	return repo, testenv.Git(t, repo, "rev-parse", "HEAD")
}

// AppendCheckpoint: after the current leaf, with the commit of the
// session's cwd, under the session's lock.
func TestCheckpointAppend(t *testing.T) {
	ctx := context.Background()
	repo, head := lcRepo(t)
	dir := t.TempDir()
	line := func(typ, uuid, parent string) core.Entry {
		return coretest.MustEntry(t, strings.ReplaceAll(coretest.Line(typ, sess, uuid, parent), "/home/alice/src/shop", repo))
	}
	lcPipeline(t, dir, line("user", "u-1", ""), line("assistant", "a-1", "u-1"))
	l := Layout{Layout: layout.Layout{ConfigDir: dir}}
	cp, err := l.AppendCheckpoint(ctx, sess, "tests pass", 0, gitrev.Head)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Commit != head || cp.MessageUUID != "a-1" || cp.CWD != repo || cp.Label != "tests pass" || cp.SessionID != sess {
		t.Fatalf("checkpoint %+v, want commit %s after a-1", cp, head)
	}
	// The session goes on; a second checkpoint follows the new leaf.
	testenv.Git(t, repo, "commit", "-q", "--allow-empty", "-m", "second")
	head2 := testenv.Git(t, repo, "rev-parse", "HEAD")
	lcPipeline(t, dir, line("user", "u-2", "a-1"), line("assistant", "a-2", "u-2"))
	cp2, err := l.AppendCheckpoint(ctx, sess, "refactor", 0, gitrev.Head)
	if err != nil || cp2.Commit != head2 || cp2.MessageUUID != "a-2" {
		t.Fatalf("second checkpoint %+v %v", cp2, err)
	}
	cps, err := l.reader().Checkpoints(ctx, sess, repo)
	if err != nil || len(cps) != 2 || cps[0] != cp || cps[1] != cp2 {
		t.Fatalf("checkpoints %+v %v", cps, err)
	}
	if c, err := core.ResolveCheckpoint(cps, "tests pass"); err != nil || c.ID != cp.ID {
		t.Fatalf("resolve: %+v %v", c, err)
	}
	// The transcript holds no checkpoint.
	if b, _ := os.ReadFile(claudedir.MainFile(l.ProjectDir(repo), sess)); bytes.Contains(b, []byte("scribe-")) {
		t.Fatalf("transcript holds scribe records:\n%s", b)
	}
	// Resume at the first checkpoint: the conversation up to a-1.
	r := core.NewResumer([]core.NamedLoader{{ID: core.MustParseID("jsonl/local"), Loader: reader.NewLoader(l.reader())}})
	res, err := core.Resume(ctx, r, nil, core.SessionRef{SessionID: sess}, core.ResumeOptions{Format: transcript.Format{}, UpTo: cp.MessageUUID})
	if err != nil || len(res.Conversation) != 2 || res.Conversation[1].UUID != "a-1" {
		t.Fatalf("resume at checkpoint: %v %+v", err, res)
	}
	// Another writer holds the session: the checkpoint waits, then fails.
	holder := newSink(t, dir, nil)
	if _, err := holder.Seed(ctx, core.SessionRef{SessionID: sess}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendCheckpoint(ctx, sess, "late", 30*time.Millisecond, gitrev.Head); !errors.Is(err, layout.ErrLocked) {
		t.Fatalf("checkpoint while locked: %v", err)
	}
	if err := holder.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendCheckpoint(ctx, sess, "late", 0, gitrev.Head); err != nil {
		t.Fatalf("after the writer left: %v", err)
	}
	// Outside a repository: no commit.
	plain := t.TempDir()
	lcPipeline(t, plain, lcConversation(t)...)
	if cp, err := (Layout{Layout: layout.Layout{ConfigDir: plain}}).AppendCheckpoint(ctx, sess, "x", 0, gitrev.Head); err != nil || cp.Commit != "" || cp.MessageUUID != "a-2" {
		t.Fatalf("outside a repository: %+v %v", cp, err)
	}
	if _, err := l.AppendCheckpoint(ctx, "99999999-9999-4999-8999-999999999999", "x", 0, gitrev.Head); err == nil {
		t.Fatal("checkpoint of an unknown session")
	}
}

// ---------------------------------------------------------------------------
// With the SDK

// lcDecorate adds lifecycle records and a checkpoint to each session, the
// way a host would: through a pipeline into the jsonl sink.
func lcDecorate(t *testing.T, dir string, ids []string) {
	t.Helper()
	var es []core.Entry
	for i, id := range ids {
		at := lcAt.Add(time.Duration(i) * time.Minute)
		for _, d := range []core.LifecycleData{
			core.SessionStart{Model: "claude-sonnet-4-5", Tools: []string{"Bash", "Read"}, Branch: "lifecycle-branch"},
			core.ModelChange{Model: "claude-opus-4", PreviousModel: "claude-sonnet-4-5"},
			core.CostUpdate{TotalCostUSD: 0.25, InputTokens: 100, OutputTokens: 20},
			core.ContextWindow{UsedTokens: 1000, MaxTokens: 200000},
			core.MemoryUpdate{Path: "/elsewhere/CLAUDE.md", Scope: "project", Action: "updated"},
			core.TurnInterrupted{Kind: core.InterruptedTurn, Detail: "Fix the login bug"},
			core.Compaction{Trigger: "manual", PreTokens: 5000},
			core.SessionResumed{From: "jsonl/local", Classification: core.InterruptionNone},
			core.SessionEnd{Reason: core.EndCompleted, Detail: "Make it shorter"},
		} {
			// A cwd that differs from the session's, and text that looks
			// like a prompt: none of it may reach a listing.
			es = append(es, lcEntry(t, id, "/elsewhere", at, d))
			at = at.Add(time.Second)
		}
	}
	lcPipeline(t, dir, es...)
	for _, id := range ids {
		if _, err := (Layout{Layout: layout.Layout{ConfigDir: dir}}).AppendCheckpoint(context.Background(), id, "checkpoint of "+id[:8], 0, gitrev.Head); err != nil {
			t.Fatal(err)
		}
	}
}

func lcMtimes(t *testing.T, dir string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	files, _ := filepath.Glob(filepath.Join(dir, "projects", "*", "*.jsonl"))
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = fi.ModTime()
	}
	return out
}

// The real SDK lists, reads and forks sessions that carry lifecycle
// records and checkpoints exactly as the same sessions without them.
func TestLifecycleSessionsReadByTheSDKAsWithout(t *testing.T) {
	p := peer.Find(t)
	const project = "/home/alice/src/shop"
	plain, with := t.TempDir(), t.TempDir()
	ids := p.GenFixture(t, plain, project)
	if ids2 := p.GenFixture(t, with, project); !reflect.DeepEqual(ids, ids2) {
		t.Fatalf("the fixture is not deterministic: %v / %v", ids, ids2)
	}
	var sessions []string
	for role, id := range ids {
		if role != "projectDir" && role != "subagentId" && role != "sidechainOnly" {
			sessions = append(sessions, id)
		}
	}
	mtimes := lcMtimes(t, with)
	lcDecorate(t, with, sessions)
	if got := lcMtimes(t, with); !reflect.DeepEqual(got, mtimes) {
		t.Fatalf("lifecycle records touched transcripts: %v, was %v", got, mtimes)
	}
	for _, id := range sessions {
		cps, err := (Layout{Layout: layout.Layout{ConfigDir: with}}).reader().Checkpoints(context.Background(), id, project)
		if err != nil || len(cps) != 1 {
			t.Fatalf("%s: checkpoints %+v %v", id, cps, err)
		}
		if lcs, err := (Layout{Layout: layout.Layout{ConfigDir: with}}).reader().Lifecycle(context.Background(), id, ""); err != nil || len(lcs) != 9 {
			t.Fatalf("%s: lifecycle %d %v", id, len(lcs), err)
		}
	}

	for _, args := range [][]string{{""}, {project}, {project, "--no-programmatic"}} {
		a := p.List(t, plain, args[0], args[1:]...)
		b := p.List(t, with, args[0], args[1:]...)
		if len(a) == 0 || len(a) != len(b) {
			t.Fatalf("list %v: %d sessions without, %d with", args, len(a), len(b))
		}
		for i := range a {
			if !reflect.DeepEqual(a[i].Raw, b[i].Raw) {
				t.Fatalf("list %v: session %d\nwithout %v\nwith    %v", args, i, a[i].Raw, b[i].Raw)
			}
		}
	}
	all := append(sessions, ids["sidechainOnly"])
	vs := p.Views(t, []peer.ViewGroup{{Dirs: []string{plain, with}, Sids: all}})[0]
	for _, id := range all {
		for _, system := range []bool{false, true} {
			a, b := vs[0].Messages[id], vs[1].Messages[id]
			if !system {
				a, b = jsonltest.WithoutSystem(t, a), jsonltest.WithoutSystem(t, b)
			}
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if !bytes.Equal(ja, jb) {
				t.Fatalf("messages of %s (system %v) differ:\n%s\n%s", id, system, ja, jb)
			}
		}
		ia, ib := vs[0].Info[id], vs[1].Info[id]
		if (ia == nil) != (ib == nil) || ia != nil && !reflect.DeepEqual(ia.Raw, ib.Raw) {
			t.Fatalf("info of %s: %+v / %+v", id, ia, ib)
		}
	}
	// With a project folder given, as the SDK reads one project.
	id := ids["withSummaryAndSubagent"]
	if a, b := p.Messages(t, plain, id, "", true), p.Messages(t, with, id, project, true); !reflect.DeepEqual(a, b) || len(a) == 0 {
		t.Fatalf("messages of %s in its project differ: %d / %d", id, len(a), len(b))
	}
	sub := ids["withSummaryAndSubagent"]
	if a, b := vs[0].Subagents[sub], vs[1].Subagents[sub]; !reflect.DeepEqual(a, b) || len(a) != 1 {
		t.Fatalf("subagents %v / %v", a, b)
	}
	// The SDK's fork of a session with a sidecar copies what it copies
	// without one, and no scribe record.
	forked := []string{ids["withSummaryAndSubagent"], ids["withCompactBoundary"], ids["branched"]}
	var reqs []peer.ForkRequest
	for _, id := range forked {
		reqs = append(reqs, peer.ForkRequest{Session: id})
	}
	fas, fbs := p.ForkMany(t, plain, reqs), p.ForkMany(t, with, reqs)
	fvs := p.Views(t, []peer.ViewGroup{{Dirs: []string{plain}, Sids: fas}, {Dirs: []string{with}, Sids: fbs}})
	for i, id := range forked {
		fa, fb := fas[i], fbs[i]
		ba, _ := os.ReadFile(claudedir.MainFile(filepath.Join(plain, ids["projectDir"]), fa))
		bb, _ := os.ReadFile(claudedir.MainFile(filepath.Join(with, ids["projectDir"]), fb))
		if bytes.Contains(bb, []byte("scribe-")) {
			t.Fatalf("the SDK's fork of %s copied scribe records", id)
		}
		if na, nb := bytes.Count(ba, []byte("\n")), bytes.Count(bb, []byte("\n")); na != nb {
			t.Fatalf("fork of %s: %d lines without, %d with", id, na, nb)
		}
		ma, mb := jsonltest.WithoutSystem(t, fvs[0][0].Messages[fa]), jsonltest.WithoutSystem(t, fvs[1][0].Messages[fb])
		if len(ma) != len(mb) {
			t.Fatalf("fork of %s: %d messages without, %d with", id, len(ma), len(mb))
		}
		for i := range ma {
			var x, y struct {
				Type    string          `json:"type"`
				Message json.RawMessage `json:"message"`
			}
			_ = json.Unmarshal(ma[i], &x)
			_ = json.Unmarshal(mb[i], &y)
			if x.Type != y.Type || !bytes.Equal(x.Message, y.Message) {
				t.Fatalf("fork of %s, message %d differs", id, i)
			}
		}
	}
}

// Why the sidecar: the same records inside the transcript change what the
// SDK's listSessions reports (and the CLI's picker, which reads the same
// windows), even though getSessionMessages ignores them.
func TestLifecycleInTranscriptChangesTheSDKListing(t *testing.T) {
	p := peer.Find(t)
	const project = "/home/alice/src/shop"
	plain, head, tail := t.TempDir(), t.TempDir(), t.TempDir()
	ids := p.GenFixture(t, plain, project)
	p.GenFixture(t, head, project)
	p.GenFixture(t, tail, project)
	id := ids["withCustomTitleTag"]
	start := lcEntry(t, id, "/elsewhere", time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), core.SessionStart{Model: "m"})
	// A record carrying a gitBranch key, as a naive design would.
	branch := coretest.MustEntry(t, `{"type":"scribe-lifecycle","event":"session_end","gitBranch":"other","sessionId":"`+id+`","uuid":"22222222-2222-4222-8222-222222222222","timestamp":"2030-01-01T00:00:00.000Z"}`)
	put := func(dir string, first bool, es ...core.Entry) {
		path := claudedir.MainFile(filepath.Join(dir, ids["projectDir"]), id)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		var lines []byte
		for _, e := range es {
			lines = append(append(lines, e.Raw...), '\n')
		}
		if first {
			b = append(lines, b...)
		} else {
			b = append(b, lines...)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		// Keep the mtime: only the content differs.
		if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	put(head, true, start)
	put(tail, false, start, branch)
	find := func(dir string) peer.SessionInfo {
		for _, s := range p.List(t, dir, "") {
			if s.SessionID == id {
				return s
			}
		}
		t.Fatalf("%s not listed in %s", id, dir)
		return peer.SessionInfo{}
	}
	a, h, tl := find(plain), find(head), find(tail)
	if h.CreatedAt == a.CreatedAt || h.Cwd != "/elsewhere" || h.FileSize == a.FileSize {
		t.Fatalf("a lifecycle line first in the transcript: createdAt %d→%d, cwd %q→%q, fileSize %d→%d",
			a.CreatedAt, h.CreatedAt, a.Cwd, h.Cwd, a.FileSize, h.FileSize)
	}
	if tl.GitBranch != "other" || tl.FileSize == a.FileSize {
		t.Fatalf("lifecycle lines last in the transcript: gitBranch %q→%q, fileSize %d→%d", a.GitBranch, tl.GitBranch, a.FileSize, tl.FileSize)
	}
	// getSessionMessages ignores them, which is not enough.
	ma, _ := json.Marshal(p.Messages(t, plain, id, "", true))
	mh, _ := json.Marshal(p.Messages(t, head, id, "", true))
	if !bytes.Equal(ma, mh) {
		t.Fatalf("messages differ:\n%s\n%s", ma, mh)
	}
}
