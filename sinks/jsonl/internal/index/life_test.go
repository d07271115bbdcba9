package index

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/testenv"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/writer"
)

// conv writes the rows of a conversation for the status tests.
type conv struct {
	id, cwd string
	last    string
	n       int
	t       time.Time
}

func (c *conv) row(typ, own string) string {
	c.n++
	id := fmt.Sprintf("%08x-0000-4000-8000-%012x", c.n, c.n)
	parent := "null"
	if c.last != "" {
		parent = jsonltest.JSONString(c.last)
	}
	c.last = id
	c.t = c.t.Add(time.Second)
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,%s,"type":%q,"uuid":%q,"timestamp":%q,"userType":"external","entrypoint":"cli","cwd":%s,"sessionId":%q,"version":"2.1.332"}`,
		parent, own, typ, id, c.t.Format("2006-01-02T15:04:05.000Z"), jsonltest.JSONString(c.cwd), c.id)
}

func (c *conv) prompt(text string) string {
	return c.row("user", `"message":{"role":"user","content":`+jsonltest.JSONString(text)+`}`)
}

func (c *conv) reply(text string) string {
	return c.row("assistant", fmt.Sprintf(`"message":{"model":"claude-opus-4-1","id":"msg_%d","type":"message","role":"assistant","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","stop_sequence":null}`, c.n, jsonltest.JSONString(text)))
}

func (c *conv) toolUse(tool, id string) string {
	return c.row("assistant", fmt.Sprintf(`"message":{"model":"claude-sonnet-4-5","id":"msg_%d","type":"message","role":"assistant","content":[{"type":"tool_use","id":%q,"name":%q,"input":{}}],"stop_reason":"tool_use","stop_sequence":null}`, c.n, id, tool))
}

func (c *conv) toolResult(id string) string {
	return c.row("user", fmt.Sprintf(`"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"ok"}]}`, id))
}

// statusOf is the session's record through the index and without it;
// they must agree.
func statusOf(t *testing.T, l Layout, id string) sessions.Record {
	t.Helper()
	ctx := context.Background()
	recs, _, err := l.ListRecords(ctx, everyProject)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := l.listing().List(ctx, everyProject)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := l.Records(ctx, infos)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(recs, direct) {
		t.Fatalf("records through the index differ from the ones read directly:\n%+v\n%+v", recs, direct)
	}
	for _, r := range recs {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("session %s not listed", id)
	return sessions.Record{}
}

func TestIndexStatusTransitions(t *testing.T) {
	noRacy(t)
	dir := t.TempDir()
	l := Layout{Layout: layout.Layout{ConfigDir: dir}}
	ctx := context.Background()
	c := &conv{id: jsonltest.Sess, cwd: jsonltest.Cwd, t: time.Date(2026, 1, 10, 11, 0, 0, 0, time.UTC)}
	record := func(lines ...string) *writer.Sink {
		t.Helper()
		s, err := writer.New(writer.Options{ConfigDir: dir, Fsync: writer.FsyncBatch, DrainInterval: writer.DrainLocal})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, jsonltest.Entries(t, lines...)); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
	check := func(what string, want sessions.Status, class core.Interruption) sessions.Record {
		t.Helper()
		r := statusOf(t, l, jsonltest.Sess)
		if r.Status != want || r.Interruption != class {
			t.Fatalf("%s: status %s (%s), want %s (%s)", what, r.Status, r.Interruption, want, class)
		}
		return r
	}

	// Recorded by a live writer: active until it stops.
	w := record(c.prompt("Fix the login bug"), c.reply("Fixed."))
	check("while recording", sessions.StatusActive, core.InterruptionNone)
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	r := check("recorded", sessions.StatusCompleted, core.InterruptionNone)
	if r.CompletedAt != c.t || r.UpdatedAt.Before(r.CreatedAt) || r.Metadata.Model != "claude-opus-4-1" ||
		r.Metadata.LastMessageID != c.last || r.Name != "Fix the login bug" || r.TranscriptPath != jsonltest.MainPath(dir) || r.ProjectPath != jsonltest.Cwd {
		t.Fatalf("completed record: %+v", r)
	}

	// Held by a live writer (the lock taken here).
	lk, err := layout.AcquireLock(ctx, l.LockFile(jsonltest.Sess), 0)
	if err != nil {
		t.Fatal(err)
	}
	check("locked", sessions.StatusActive, core.InterruptionNone)
	lk.Release()
	check("unlocked", sessions.StatusCompleted, core.InterruptionNone)

	// A tool call cut off, then its result, then the answer.
	w = record(c.prompt("Run the tests"), c.toolUse("Bash", "toolu_1"))
	check("tool call in flight", sessions.StatusActive, core.InterruptedTurn)
	_ = w.Shutdown(ctx)
	r = check("tool call without a result", sessions.StatusInterrupted, core.InterruptedTurn)
	if !r.CompletedAt.IsZero() || r.Metadata.Model != "claude-sonnet-4-5" || !reflect.DeepEqual(r.Metadata.Tools, []string{"Bash"}) {
		t.Fatalf("interrupted record: %+v", r)
	}
	_ = record(c.toolResult("toolu_1")).Shutdown(ctx)
	check("result without an answer", sessions.StatusInterrupted, core.InterruptedTurn)
	_ = record(c.reply("All green.")).Shutdown(ctx)
	check("answered", sessions.StatusCompleted, core.InterruptionNone)
	_ = record(c.prompt("Now the docs")).Shutdown(ctx)
	check("unanswered prompt", sessions.StatusInterrupted, core.InterruptedPrompt)
	_ = record(c.toolUse("Read", "toolu_2"), c.toolResult("toolu_2"), c.reply("Done.")).Shutdown(ctx)
	r = check("resumed and finished", sessions.StatusCompleted, core.InterruptionNone)
	if !reflect.DeepEqual(r.Metadata.Tools, []string{"Bash", "Read"}) {
		t.Fatalf("tools: %v", r.Metadata.Tools)
	}

	// A stale lock file (its writer gone) is not a live writer.
	if _, err := os.Stat(l.LockFile(jsonltest.Sess)); err != nil {
		t.Fatalf("lock file: %v", err)
	}
	check("stale lock file", sessions.StatusCompleted, core.InterruptionNone)
}

func TestIndexExportSessionsJSON(t *testing.T) {
	noRacy(t)
	l, _ := layRules(t, t.TempDir())
	var b bytes.Buffer
	if err := l.ExportSessionsJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc []map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	infos, _ := l.listing().List(context.Background(), everyProject)
	if len(doc) != len(infos) || len(doc) == 0 {
		t.Fatalf("%d records for %d sessions", len(doc), len(infos))
	}
	iso := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	statuses := map[string]int{}
	for i, r := range doc {
		if r["id"] != infos[i].SessionID || r["name"] != infos[i].Summary || r["transcriptPath"] != infos[i].Path || r["projectPath"] != infos[i].Cwd {
			t.Errorf("record %d: %v for %+v", i, r, infos[i])
		}
		for k := range r {
			switch k {
			case "id", "name", "status", "createdAt", "updatedAt", "completedAt", "projectPath", "transcriptPath", "metadata":
			default:
				t.Errorf("record %d: unexpected key %q", i, k)
			}
		}
		for _, k := range []string{"createdAt", "updatedAt", "completedAt"} {
			if v, ok := r[k]; ok && !iso.MatchString(v.(string)) {
				t.Errorf("record %d: %s = %v", i, k, v)
			}
		}
		st := r["status"].(string)
		statuses[st]++
		if _, ok := r["completedAt"]; ok != (st == "completed") {
			t.Errorf("record %d: status %s, completedAt %v", i, st, r["completedAt"])
		}
		meta := r["metadata"].(map[string]any)
		for k := range meta {
			if k != "model" && k != "tools" && k != "lastMessageId" {
				t.Errorf("record %d: unexpected metadata key %q", i, k)
			}
		}
	}
	if statuses["completed"] == 0 || statuses["interrupted"] == 0 {
		t.Errorf("statuses: %v", statuses)
	}
}

// TestIndexPlainReplyShortcut checks that the shortcut taken for a
// finished reply gives ClassifyAndRepair's answer, on the tail of every
// corpus file and of random transcripts.
func TestIndexPlainReplyShortcut(t *testing.T) {
	var tails [][]byte
	err := filepath.WalkDir(testenv.CorpusDir(t), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		tails = append(tails, b[max(len(b)-claudedir.ListWindow, 0):])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 200; seed++ {
		b := jsonltest.RandomTranscript(seed, false)
		tails = append(tails, b[max(len(b)-claudedir.ListWindow, 0):])
	}
	shortcuts, classes := 0, map[core.Interruption]int{}
	for i, tail := range tails {
		_, rows := lifeRows(tail, nil)
		if len(rows) == 0 {
			continue
		}
		full, state := classify(rows)
		classes[full]++
		if plainReply(rows) {
			shortcuts++
			if full != core.InterruptionNone || state != core.StateIdle {
				t.Errorf("tail %d: the shortcut says none and idle, ClassifyAndRepair %s, StateFromTail %s", i, full, state)
			}
		}
		if got, gs := classOf(rows); got != full || gs != state {
			t.Errorf("tail %d: %s %s, want %s %s", i, got, gs, full, state)
		}
	}
	t.Logf("%d tails: %d took the shortcut; classes %v", len(tails), shortcuts, classes)
	if shortcuts == 0 || len(classes) < 2 {
		t.Fatalf("the tails do not exercise the shortcut")
	}
}

// The export's model and tools are the whole session's, not the tail
// window's: many opus turns (one of them split over two rows, one turn),
// a tool used only early, then more than 64 KiB of haiku turns.
func TestIndexExportModelAndToolsOfTheWholeSession(t *testing.T) {
	dir := t.TempDir()
	l := Layout{Layout: layout.Layout{ConfigDir: dir}}
	c := &conv{id: jsonltest.Sess, cwd: jsonltest.Cwd, t: time.Date(2026, 1, 10, 11, 0, 0, 0, time.UTC)}
	withModel := func(line, model string) string {
		return strings.Replace(line, `"model":"claude-sonnet-4-5"`, `"model":"`+model+`"`, 1)
	}
	lines := []string{c.prompt("start"), withModel(c.toolUse("Grep", "toolu_0"), "claude-opus-4-1"), c.toolResult("toolu_0")}
	for i := range 40 {
		lines = append(lines, c.prompt(fmt.Sprintf("step %d", i)), c.reply("done"))
	}
	// A split assistant message: two rows, one message.id, one turn.
	split := c.row("assistant", `"message":{"model":"claude-haiku-4-5","id":"msg_split","type":"message","role":"assistant","content":[{"type":"text","text":"a"}],"stop_reason":null,"stop_sequence":null}`)
	lines = append(lines, c.prompt("split"), split, strings.Replace(split, c.last, "split-2", 1))
	pad := strings.Repeat("z", 2000)
	for i := range 39 {
		lines = append(lines, c.prompt(pad), c.row("assistant", fmt.Sprintf(`"message":{"model":"claude-haiku-4-5","id":"msg_h%d","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null}`, i)))
	}
	p := jsonltest.MainPath(dir)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tail := statusOf(t, l, jsonltest.Sess)
	if tail.Metadata.Model != "claude-haiku-4-5" || slices.Contains(tail.Metadata.Tools, "Grep") {
		t.Fatalf("the tail window's record: model %s, tools %v; the test needs haiku and no Grep there", tail.Metadata.Model, tail.Metadata.Tools)
	}
	var b bytes.Buffer
	if err := l.ExportSessionsJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc []struct {
		Metadata sessions.RecordMetadata `json:"metadata"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil || len(doc) != 1 {
		t.Fatalf("%v\n%s", err, b.String())
	}
	// 41 opus turns, 40 haiku turns (39 + the split one).
	if doc[0].Metadata.Model != "claude-opus-4-1" || !reflect.DeepEqual(doc[0].Metadata.Tools, []string{"Grep"}) {
		t.Fatalf("exported model %s, tools %v; want claude-opus-4-1 and [Grep]", doc[0].Metadata.Model, doc[0].Metadata.Tools)
	}
}

func TestWholeSessionTieGoesToTheModelUsedLast(t *testing.T) {
	c := &conv{id: jsonltest.Sess, cwd: jsonltest.Cwd, t: time.Date(2026, 1, 10, 11, 0, 0, 0, time.UTC)}
	p := filepath.Join(t.TempDir(), "s.jsonl")
	body := strings.Join([]string{c.prompt("a"), c.reply("x"), c.prompt("b"), c.toolUse("Bash", "toolu_1"), c.toolResult("toolu_1"),
		`{"type":"assistant","message":{"model":"<synthetic>","id":"msg_s","role":"assistant","content":[]}}`, "not json"}, "\n")
	if err := os.WriteFile(p, []byte(body+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, tools, err := wholeSession(context.Background(), nil, p)
	if err != nil || m != "claude-sonnet-4-5" || !reflect.DeepEqual(tools, []string{"Bash"}) {
		t.Fatalf("model %q tools %v err %v", m, tools, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := wholeSession(ctx, nil, p); err == nil {
		t.Fatal("a cancelled read succeeded")
	}
}
