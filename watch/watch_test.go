package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

const (
	sid = "0565aaaa-1111-4222-8333-444455556666"
	cwd = "/home/alice/src/shop"
)

// rig is a followed projects folder, an archive (a real jsonl store) and
// a checkpoint folder.
type rig struct {
	t        *testing.T
	projects string
	archive  string
	state    string
	extra    []core.NamedSink
	// server, when set, is a second jsonl store with a pipeline of its
	// own, as scribe watch gives each durable sink (a team server).
	server string
}

func newRig(t *testing.T) *rig {
	dir := t.TempDir()
	r := &rig{t: t, projects: filepath.Join(dir, "claude", "projects"), archive: filepath.Join(dir, "archive"), state: filepath.Join(dir, "state")}
	if err := os.MkdirAll(filepath.Join(r.projects, claudedir.SanitizePath(cwd)), 0o700); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) mainPath() string {
	return filepath.Join(r.projects, claudedir.SanitizePath(cwd), sid+".jsonl")
}

func (r *rig) archived(rel ...string) string {
	return filepath.Join(append([]string{r.archive, "projects", claudedir.SanitizePath(cwd)}, rel...)...)
}

// pipeline starts a pipeline over a fresh archive sink (and r.extra).
func (r *rig) pipeline() *core.Pipeline { return r.pipelineOver(r.archive, r.extra) }

// pipelineOver starts a pipeline over a fresh jsonl sink in dir (and
// extra), which seeds its dedup.
func (r *rig) pipelineOver(dir string, extra []core.NamedSink) *core.Pipeline {
	s, err := jsonl.New(jsonl.Options{ConfigDir: dir, DrainInterval: 10 * time.Millisecond, ID: core.ID{Type: "jsonl", Name: filepath.Base(dir)}})
	if err != nil {
		r.t.Fatal(err)
	}
	sinks := append([]core.NamedSink{{ID: core.ID{Type: "jsonl", Name: filepath.Base(dir)}, Sink: s}}, extra...)
	p, err := core.NewPipeline(core.PipelineOptions{Sinks: sinks, Seeder: s, RetryFor: 200 * time.Millisecond})
	if err != nil {
		r.t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// once runs one catch-up in a fresh process's worth of state (a new
// pipeline, a new watcher over the saved checkpoints) and returns its
// counters.
func (r *rig) once() (*Stats, error) {
	r.t.Helper()
	st, err := OpenStore(r.state, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	defer st.Close()
	p := r.pipeline()
	defer p.Shutdown(context.Background())
	var more []*core.Pipeline
	if r.server != "" {
		sp := r.pipelineOver(r.server, nil)
		defer sp.Shutdown(context.Background())
		more = append(more, sp)
	}
	w, err := New(Options{Roots: []string{r.projects}, Store: st, Pipeline: p, Pipelines: more, Archives: []string{r.archive}, Inbox: filepath.Join(r.state, "inbox")})
	if err != nil {
		r.t.Fatal(err)
	}
	err = w.CatchUp(context.Background())
	return &w.Stats, err
}

func (r *rig) mustOnce() *Stats {
	r.t.Helper()
	s, err := r.once()
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

var lineN int

func userLine(text string) string {
	lineN++
	return fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":%q},"uuid":"00000000-0000-4000-8000-%012d","timestamp":"2026-01-10T11:00:02.267Z","userType":"external","entrypoint":"cli","cwd":%q,"sessionId":%q,"version":"2.1.332"}`, text, lineN, cwd, sid)
}

const titleLine = `{"type":"custom-title","customTitle":"Shop","sessionId":"` + sid + `"}`

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// count says how many times each line is in the file.
func count(t *testing.T, path string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	m := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			m[l]++
		}
	}
	return m
}

func wantOnce(t *testing.T, path string, lines ...string) {
	t.Helper()
	have := count(t, path)
	for _, l := range lines {
		if have[l] != 1 {
			t.Fatalf("%s holds %.60s... %d times, want once\nfile: %v", path, l, have[l], have)
		}
	}
}

func TestAppendsAreMirroredOnce(t *testing.T) {
	r := newRig(t)
	a, b, c := userLine("a"), userLine("b"), userLine("c")
	appendFile(t, r.mainPath(), a+"\n"+titleLine+"\n")
	r.mustOnce()
	appendFile(t, r.mainPath(), b+"\n"+c+"\n")
	s := r.mustOnce()
	wantOnce(t, r.archived(sid+".jsonl"), a, titleLine, b, c)
	if s.Lines.Load() != 2 || s.Duplicates.Load() != 0 {
		t.Fatalf("the second run read %d lines (%d duplicates), want only the 2 new ones", s.Lines.Load(), s.Duplicates.Load())
	}
}

func TestTornLastLineWaitsForItsEnd(t *testing.T) {
	r := newRig(t)
	a, b := userLine("a"), userLine("b")
	appendFile(t, r.mainPath(), a+"\n"+b[:len(b)/2])
	r.mustOnce()
	if n := count(t, r.archived(sid+".jsonl")); len(n) != 1 {
		t.Fatalf("archive holds %d lines after a torn write, want 1 (the torn half waits): %v", len(n), n)
	}
	appendFile(t, r.mainPath(), b[len(b)/2:]+"\n")
	r.mustOnce()
	wantOnce(t, r.archived(sid+".jsonl"), a, b)
}

func TestReplacedWholeSendsOnlyWhatIsNew(t *testing.T) {
	r := newRig(t)
	a, b := userLine("a"), userLine("b")
	appendFile(t, r.mainPath(), a+"\n"+titleLine+"\n")
	r.mustOnce()
	tmp := r.mainPath() + ".hydrate"
	if err := os.WriteFile(tmp, []byte(a+"\n"+titleLine+"\n"+b+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, r.mainPath()); err != nil {
		t.Fatal(err)
	}
	s := r.mustOnce()
	wantOnce(t, r.archived(sid+".jsonl"), a, titleLine, b)
	if s.Rewrites.Load() != 1 || s.MetaSkipped.Load() != 1 || s.Duplicates.Load() != 1 {
		t.Fatalf("rewrites %d, metadata lines the archive had %d, duplicates %d; want 1, 1, 1", s.Rewrites.Load(), s.MetaSkipped.Load(), s.Duplicates.Load())
	}
}

func TestTruncationIsReadFromTheStart(t *testing.T) {
	r := newRig(t)
	a, b, c := userLine(strings.Repeat("a", 200)), userLine("b"), userLine("c")
	appendFile(t, r.mainPath(), a+"\n"+b+"\n")
	r.mustOnce()
	if err := os.Truncate(r.mainPath(), 0); err != nil {
		t.Fatal(err)
	}
	appendFile(t, r.mainPath(), c+"\n")
	s := r.mustOnce()
	wantOnce(t, r.archived(sid+".jsonl"), a, b, c)
	if s.Truncations.Load() != 1 {
		t.Fatalf("truncations %d, want 1", s.Truncations.Load())
	}
}

func TestRewriteWithOtherFirstBytesIsReadAgain(t *testing.T) {
	r := newRig(t)
	a, b, c := userLine("a"), userLine("b"), userLine(strings.Repeat("c", 400))
	appendFile(t, r.mainPath(), a+"\n")
	r.mustOnce()
	// The same inode, longer than the checkpoint, other first bytes.
	f, err := os.OpenFile(r.mainPath(), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(b + "\n" + c + "\n")
	f.Close()
	s := r.mustOnce()
	wantOnce(t, r.archived(sid+".jsonl"), a, b, c)
	if s.Rewrites.Load() != 1 {
		t.Fatalf("rewrites %d, want 1", s.Rewrites.Load())
	}
}

func TestMtimeOnlyTouchSendsNothing(t *testing.T) {
	r := newRig(t)
	appendFile(t, r.mainPath(), userLine("a")+"\n")
	r.mustOnce()
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(r.mainPath(), later, later); err != nil {
		t.Fatal(err)
	}
	s := r.mustOnce()
	if s.Lines.Load() != 0 || s.Touches.Load() != 1 {
		t.Fatalf("after a touch: %d lines read, %d touches; want 0 and 1", s.Lines.Load(), s.Touches.Load())
	}
}

func TestDeletionKeepsWhatWasMirroredAndIsRecorded(t *testing.T) {
	r := newRig(t)
	a := userLine("a")
	appendFile(t, r.mainPath(), a+"\n")
	r.mustOnce()
	if err := os.Remove(r.mainPath()); err != nil {
		t.Fatal(err)
	}
	s := r.mustOnce()
	wantOnce(t, r.archived(sid+".jsonl"), a)
	side, _ := os.ReadFile(r.archived(sid, "scribe-lifecycle.jsonl"))
	if s.Deletions.Load() != 1 || !bytes.Contains(side, []byte(`"event":"transcript_deleted"`)) {
		t.Fatalf("deletions %d; lifecycle sidecar: %s", s.Deletions.Load(), side)
	}
	// Seen again (a restart before the checkpoint was saved): recorded once.
	st := r.mustOnce()
	if st.Deletions.Load() != 0 || bytes.Count(mustRead(t, r.archived(sid, "scribe-lifecycle.jsonl")), []byte("transcript_deleted")) != 1 {
		t.Fatal("the deletion was recorded twice")
	}
}

// A run killed after the archive wrote lines and before the server got
// them, then the transcript deleted before the next run read them again:
// the next run replays the archive's copy past its checkpoint, and the
// server gets exactly what it lacked; the archive doubles nothing (a
// uuid-less line is not replayed).
func TestDeletionReplaysWhatOnlyTheArchiveGot(t *testing.T) {
	r := newRig(t)
	r.server = filepath.Join(filepath.Dir(r.archive), "server")
	serverMain := filepath.Join(r.server, "projects", claudedir.SanitizePath(cwd), sid+".jsonl")
	one, two := userLine("one"), userLine("two")
	appendFile(t, r.mainPath(), one+"\n"+two+"\n")
	r.mustOnce()
	wantOnce(t, serverMain, one, two)
	// The killed run: two more lines and a title read, written by the
	// archive, not by the server; the checkpoint stayed before them.
	three, four := userLine("three"), userLine("four")
	appendFile(t, r.mainPath(), three+"\n"+titleLine+"\n"+four+"\n")
	appendFile(t, r.archived(sid+".jsonl"), three+"\n"+titleLine+"\n"+four+"\n")
	if err := os.Remove(r.mainPath()); err != nil {
		t.Fatal(err)
	}
	s := r.mustOnce()
	if got := s.Replayed.Load(); got != 2 {
		t.Fatalf("replayed %d lines, want 2 (the uuid lines past the checkpoint)", got)
	}
	wantOnce(t, serverMain, one, two, three, four)
	wantOnce(t, r.archived(sid+".jsonl"), one, two, three, titleLine, four)
	if s.Deletions.Load() != 1 {
		t.Fatalf("deletions %d, want 1", s.Deletions.Load())
	}
	// Nothing more on a run after that.
	if s := r.mustOnce(); s.Replayed.Load() != 0 {
		t.Fatalf("replayed %d lines again", s.Replayed.Load())
	}
}

// The same for a subagent's transcript deleted with its session (the main
// transcript forgotten first): its archive copy is replayed too.
func TestDeletedSessionReplaysItsSubagents(t *testing.T) {
	r := newRig(t)
	r.server = filepath.Join(filepath.Dir(r.archive), "server")
	agentRow := func(n int) string {
		return fmt.Sprintf(`{"parentUuid":null,"isSidechain":true,"agentId":"a1b2","type":"user","message":{"role":"user","content":"search"},"uuid":"00000000-0000-4000-8000-0000000000a%d","timestamp":"2026-01-10T11:00:02.267Z","cwd":%q,"sessionId":%q}`, n, cwd, sid)
	}
	agentPath := filepath.Join(filepath.Dir(r.mainPath()), sid, "subagents", "agent-a1b2.jsonl")
	appendFile(t, r.mainPath(), userLine("a")+"\n")
	appendFile(t, agentPath, agentRow(1)+"\n")
	r.mustOnce()
	appendFile(t, agentPath, agentRow(2)+"\n")
	appendFile(t, r.archived(sid, "subagents", "agent-a1b2.jsonl"), agentRow(2)+"\n")
	if err := os.RemoveAll(filepath.Join(filepath.Dir(r.mainPath()), sid)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(r.mainPath()); err != nil {
		t.Fatal(err)
	}
	if s := r.mustOnce(); s.Replayed.Load() != 1 {
		t.Fatalf("replayed %d lines, want 1", s.Replayed.Load())
	}
	serverAgent := filepath.Join(r.server, "projects", claudedir.SanitizePath(cwd), sid, "subagents", "agent-a1b2.jsonl")
	wantOnce(t, serverAgent, agentRow(1), agentRow(2))
	wantOnce(t, r.archived(sid, "subagents", "agent-a1b2.jsonl"), agentRow(1), agentRow(2))
}

// A subagent file a killed run put in the archive before it saved its
// checkpoint, deleted before the next run listed it, is known by its
// archive copy alone: the deletion of its session replays that copy to
// every sink.
func TestDeletedSessionReplaysSubagentsItNeverFollowed(t *testing.T) {
	r := newRig(t)
	r.server = filepath.Join(filepath.Dir(r.archive), "server")
	row := func(n int) string {
		return fmt.Sprintf(`{"parentUuid":null,"isSidechain":true,"agentId":"c3d4","type":"user","message":{"role":"user","content":"look"},"uuid":"00000000-0000-4000-8000-0000000000c%d","timestamp":"2026-01-10T11:00:02.267Z","cwd":%q,"sessionId":%q}`, n, cwd, sid)
	}
	appendFile(t, r.mainPath(), userLine("a")+"\n")
	r.mustOnce()
	// What the killed run gave the archive only; the source is gone.
	appendFile(t, r.archived(sid, "subagents", "agent-c3d4.jsonl"), row(1)+"\n"+row(2)+"\n")
	if err := os.Remove(r.mainPath()); err != nil {
		t.Fatal(err)
	}
	if s := r.mustOnce(); s.Replayed.Load() != 2 {
		t.Fatalf("replayed %d lines, want 2", s.Replayed.Load())
	}
	serverAgent := filepath.Join(r.server, "projects", claudedir.SanitizePath(cwd), sid, "subagents", "agent-c3d4.jsonl")
	wantOnce(t, serverAgent, row(1), row(2))
	wantOnce(t, r.archived(sid, "subagents", "agent-c3d4.jsonl"), row(1), row(2))
}

// A deletion after everything was acknowledged replays nothing.
func TestDeletionAfterAcknowledgementReplaysNothing(t *testing.T) {
	r := newRig(t)
	r.server = filepath.Join(filepath.Dir(r.archive), "server")
	one := userLine("one")
	appendFile(t, r.mainPath(), one+"\n"+titleLine+"\n")
	r.mustOnce()
	if err := os.Remove(r.mainPath()); err != nil {
		t.Fatal(err)
	}
	if s := r.mustOnce(); s.Replayed.Load() != 0 || s.Deletions.Load() != 1 {
		t.Fatalf("replayed %d, deletions %d; want 0 and 1", s.Replayed.Load(), s.Deletions.Load())
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSubagentsAndSidecarFilesAreMirrored(t *testing.T) {
	r := newRig(t)
	appendFile(t, r.mainPath(), userLine("a")+"\n")
	agentDir := filepath.Join(filepath.Dir(r.mainPath()), sid, "subagents")
	row := `{"parentUuid":null,"isSidechain":true,"agentId":"a1b2","type":"user","message":{"role":"user","content":"search"},"uuid":"00000000-0000-4000-8000-0000000000aa","timestamp":"2026-01-10T11:00:02.267Z","cwd":"` + cwd + `","sessionId":"` + sid + `"}`
	appendFile(t, filepath.Join(agentDir, "agent-a1b2.jsonl"), row+"\n")
	appendFile(t, filepath.Join(agentDir, "agent-a1b2.meta.json"), `{"agentType":"Explore","toolUseId":"toolu_1"}`)
	appendFile(t, filepath.Join(filepath.Dir(r.mainPath()), sid, "tool-results", "toolu_1.txt"), "big output\n")
	s := r.mustOnce()
	wantOnce(t, r.archived(sid, "subagents", "agent-a1b2.jsonl"), row)
	if got := string(mustRead(t, r.archived(sid, "subagents", "agent-a1b2.meta.json"))); got != `{"agentType":"Explore","toolUseId":"toolu_1"}` {
		t.Fatalf("meta.json in the archive: %q", got)
	}
	if got := string(mustRead(t, r.archived(sid, "tool-results", "toolu_1.txt"))); got != "big output\n" {
		t.Fatalf("tool result in the archive: %q", got)
	}
	if s.SidecarsCopied.Load() != 2 {
		t.Fatalf("sidecars copied %d, want 2", s.SidecarsCopied.Load())
	}
}

func TestLinesBeforeTheFirstMessageWait(t *testing.T) {
	r := newRig(t)
	appendFile(t, r.mainPath(), titleLine+"\n")
	r.mustOnce()
	if n := count(t, r.archived(sid+".jsonl")); len(n) != 0 {
		t.Fatalf("a title alone reached the archive: %v", n)
	}
	a := userLine("a")
	appendFile(t, r.mainPath(), a+"\n")
	r.mustOnce()
	wantOnce(t, r.archived(sid+".jsonl"), titleLine, a)
}

// failingFlush is a sink whose Flush fails while fail is set.
type failingFlush struct{ fail atomic.Bool }

func (f *failingFlush) Start(context.Context) error               { return nil }
func (f *failingFlush) Write(context.Context, []core.Entry) error { return nil }
func (f *failingFlush) Shutdown(context.Context) error            { return nil }
func (f *failingFlush) Flush(context.Context) error {
	if f.fail.Load() {
		return errors.New("disk on fire")
	}
	return nil
}

func TestCheckpointMovesOnlyAfterEverySinkFlushed(t *testing.T) {
	r := newRig(t)
	bad := &failingFlush{}
	bad.fail.Store(true)
	r.extra = []core.NamedSink{{ID: core.ID{Type: "test", Name: "bad"}, Sink: bad}}
	appendFile(t, r.mainPath(), userLine("a")+"\n")
	if _, err := r.once(); err == nil {
		t.Fatal("a failed flush was not reported")
	}
	st, err := OpenStore(r.state, 0)
	if err != nil {
		t.Fatal(err)
	}
	files, _, err := st.Load()
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if f := files[r.mainPath()]; f != nil && f.Offset != 0 {
		t.Fatalf("checkpoint moved to %d although a sink could not flush", f.Offset)
	}
	bad.fail.Store(false)
	s := r.mustOnce()
	if s.Lines.Load() != 1 {
		t.Fatalf("after the sink recovered, %d lines were read again, want 1", s.Lines.Load())
	}
	files2 := loadCheckpoints(t, r.state)
	if f := files2[r.mainPath()]; f == nil || f.Offset == 0 {
		t.Fatal("checkpoint did not move after a good flush")
	}
}

// A deletion whose replay cannot be flushed (a sink is down) keeps the
// checkpoint and is handled again once the sink flushes; an archive copy
// shorter than the checkpoint says (rewritten meanwhile) is replayed whole.
func TestDeletionWaitsForItsReplayToFlush(t *testing.T) {
	r := newRig(t)
	r.server = filepath.Join(filepath.Dir(r.archive), "server")
	serverMain := filepath.Join(r.server, "projects", claudedir.SanitizePath(cwd), sid+".jsonl")
	bad := &failingFlush{}
	r.extra = []core.NamedSink{{ID: core.ID{Type: "test", Name: "bad"}, Sink: bad}}
	one, two := userLine("one, longer than the second"), userLine("two")
	appendFile(t, r.mainPath(), one+"\n")
	r.mustOnce()
	appendFile(t, r.mainPath(), two+"\n")
	appendFile(t, r.archived(sid+".jsonl"), two+"\n")
	if err := os.Remove(r.mainPath()); err != nil {
		t.Fatal(err)
	}
	bad.fail.Store(true)
	s, err := r.once()
	if err == nil || s.Deletions.Load() != 0 {
		t.Fatalf("deletion recorded (%d) although its replay could not be flushed; error %v", s.Deletions.Load(), err)
	}
	if f := loadCheckpoints(t, r.state)[r.mainPath()]; f == nil {
		t.Fatal("the checkpoint of the deleted file went before its replay was flushed")
	}
	// The archive copy rewritten shorter than the checkpoint's size: all of
	// it is replayed.
	if err := os.WriteFile(r.archived(sid+".jsonl"), []byte(two+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad.fail.Store(false)
	s = r.mustOnce()
	if s.Deletions.Load() != 1 || s.Replayed.Load() != 1 {
		t.Fatalf("deletions %d, replayed %d; want 1 and 1", s.Deletions.Load(), s.Replayed.Load())
	}
	wantOnce(t, serverMain, one, two)
}

func loadCheckpoints(t *testing.T, dir string) map[string]*FileState {
	st, err := OpenStore(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	files, _, err := st.Load()
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestSecondWatcherOnTheSameCheckpointsIsRefused(t *testing.T) {
	dir := t.TempDir()
	a, err := OpenStore(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := OpenStore(dir, 0); !errors.Is(err, ErrBusy) {
		t.Fatalf("second OpenStore: %v, want ErrBusy", err)
	}
}

// TestLiveAppendsArrive runs the event loop: appends reach the archive
// without a restart.
func TestLiveAppendsArrive(t *testing.T) {
	r := newRig(t)
	st, err := OpenStore(r.state, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p := r.pipeline()
	defer p.Shutdown(context.Background())
	w, err := New(Options{Roots: []string{r.projects}, Store: st, Pipeline: p, Archives: []string{r.archive}, Rescan: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var lines []string
	for i := 0; i < 5; i++ {
		l := userLine(fmt.Sprintf("live %d", i))
		lines = append(lines, l)
		appendFile(t, r.mainPath(), l+"\n")
		waitFor(t, func() bool { return count(t, r.archived(sid+".jsonl"))[l] == 1 })
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantOnce(t, r.archived(sid+".jsonl"), lines...)
	if f := loadCheckpointsLocked(t, st)[r.mainPath()]; f == nil || f.Offset != fileSize(t, r.mainPath()) {
		t.Fatalf("checkpoint after a clean stop: %+v, want the whole file", f)
	}
}

func loadCheckpointsLocked(t *testing.T, st *Store) map[string]*FileState {
	files, _, err := st.Load()
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func fileSize(t *testing.T, p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRescanCatchesMissedEvents: with the folder's file events gone (as
// after an inotify overflow or a folder watch that failed), the periodic
// listing still finds the append.
func TestRescanCatchesMissedEvents(t *testing.T) {
	r := newRig(t)
	a := userLine("a")
	appendFile(t, r.mainPath(), a+"\n")
	st, err := OpenStore(r.state, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p := r.pipeline()
	defer p.Shutdown(context.Background())
	w, err := New(Options{Roots: []string{r.projects}, Store: st, Pipeline: p, Rescan: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	waitFor(t, func() bool { return count(t, r.archived(sid+".jsonl"))[a] == 1 })
	// Deaf to the project folder from now on; the next rescan would add
	// the watch again, so the append must land before or after it: either
	// way it is found.
	if err := w.fsw.Remove(filepath.Dir(r.mainPath())); err != nil {
		t.Fatal(err)
	}
	b := userLine("b")
	appendFile(t, r.mainPath(), b+"\n")
	waitFor(t, func() bool { return count(t, r.archived(sid+".jsonl"))[b] == 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w.Stats.Rescans.Load() < 2 {
		t.Fatalf("%d rescans", w.Stats.Rescans.Load())
	}
}

// TestInboxEventWaitsForItsTranscriptThenExpires: a SessionStart whose
// transcript does not exist yet waits in the inbox; one that waited past
// a day is dropped, counted.
func TestInboxEventWaitsForItsTranscriptThenExpires(t *testing.T) {
	r := newRig(t)
	inbox := filepath.Join(r.state, "inbox")
	ev := HookEvent{SessionID: sid, TranscriptPath: r.mainPath(), CWD: cwd, Event: "SessionStart", Source: "startup", ReceivedAt: time.Now()}
	fresh, err := WriteInbox(inbox, ev)
	if err != nil {
		t.Fatal(err)
	}
	ev.ReceivedAt = time.Now().Add(-25 * time.Hour)
	old, err := WriteInbox(inbox, ev)
	if err != nil {
		t.Fatal(err)
	}
	s := r.mustOnce()
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("the fresh event left the inbox before its transcript existed: %v", err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) || s.Errors.Load() != 1 {
		t.Fatalf("the day-old event: %v, errors %d; want it dropped and counted", err, s.Errors.Load())
	}
	appendFile(t, r.mainPath(), userLine("a")+"\n")
	r.mustOnce()
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Fatal("the event stayed in the inbox after its transcript reached the archive")
	}
	if side := mustRead(t, r.archived(sid, "scribe-lifecycle.jsonl")); !bytes.Contains(side, []byte(`"source":"startup"`)) {
		t.Fatalf("no session_start record: %s", side)
	}
}

// TestHookSeesWatchHoldsTheCheckpoints: the lock file names watch, so a
// hook does not wait for it; once watch is gone the lock is free again.
func TestHookSeesWatchHoldsTheCheckpoints(t *testing.T) {
	dir := t.TempDir()
	w, err := OpenStoreAs(dir, 0, "watch")
	if err != nil {
		t.Fatal(err)
	}
	if !HeldByWatch(dir) {
		t.Fatal("the lock file does not name watch")
	}
	if _, err := OpenStoreAs(dir, 0, "hook"); !errors.Is(err, ErrBusy) {
		t.Fatalf("a hook took the checkpoints from a running watch: %v", err)
	}
	w.Close()
	h, err := OpenStoreAs(dir, 0, "hook")
	if err != nil {
		t.Fatalf("the lock of a stopped watch is not free: %v", err)
	}
	defer h.Close()
	if HeldByWatch(dir) {
		t.Fatal("the hook's lock still names watch")
	}
}

// TestCatchUpFailsWhileSomethingCannotBeRead: a pipe where a transcript is
// makes CatchUp fail, naming it, and count it; once a regular file
// replaces it, the next catch-up reads it and succeeds.
func TestCatchUpFailsWhileSomethingCannotBeRead(t *testing.T) {
	r := newRig(t)
	if err := syscall.Mkfifo(r.mainPath(), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := r.once()
	if err == nil || !strings.Contains(err.Error(), r.mainPath()) || s.Unreadable.Load() != 1 {
		t.Fatalf("catch-up over a pipe: %v, %d unreadable", err, s.Unreadable.Load())
	}
	if err := os.Remove(r.mainPath()); err != nil {
		t.Fatal(err)
	}
	appendFile(t, r.mainPath(), userLine("now a file")+"\n")
	if s := r.mustOnce(); s.Unreadable.Load() != 0 || s.Accepted.Load() != 1 {
		t.Fatalf("after the pipe became a file: %d unreadable, %d accepted", s.Unreadable.Load(), s.Accepted.Load())
	}
}
