package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
)

type stubLoader struct {
	t   *core.Transcript
	err error
	n   int
}

func (s *stubLoader) Load(context.Context, core.SessionRef) (*core.Transcript, error) {
	s.n++
	return s.t, s.err
}

func TestResumerTriesLoadersInOrder(t *testing.T) {
	ref := core.SessionRef{SessionID: sess}
	full := &core.Transcript{Entries: []core.Entry{coretest.MustEntry(t, coretest.Line("user", sess, "u-1", ""))}}
	onlyMeta := &core.Transcript{Entries: []core.Entry{coretest.MustEntry(t, `{"type":"custom-title","customTitle":"x","sessionId":"`+sess+`"}`)}}
	cache := &stubLoader{err: core.ErrNotFound}
	broken := &stubLoader{err: errors.New("disk says no")}
	empty := &stubLoader{t: onlyMeta}
	cloud := &stubLoader{t: full}
	last := &stubLoader{t: full}
	r := core.NewResumer([]core.NamedLoader{
		{ID: core.MustParseID("memcache/recent"), Loader: cache},
		{ID: core.MustParseID("jsonl/local"), Loader: broken},
		{ID: core.MustParseID("stub/empty"), Loader: empty},
		{ID: core.MustParseID("cloud/team"), Loader: cloud},
		{ID: core.MustParseID("summary/default"), Loader: last},
	})
	res, err := r.Load(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if res.Served.String() != "cloud/team" || res.Transcript.Source.String() != "cloud/team" {
		t.Fatalf("served by %s", res.Served)
	}
	if len(res.Misses) != 3 || !errors.Is(res.Misses[0].Err, core.ErrNotFound) ||
		!strings.Contains(res.Misses[1].Err.Error(), "disk says no") || !errors.Is(res.Misses[2].Err, core.ErrEmptyTranscript) {
		t.Fatalf("misses %+v", res.Misses)
	}
	if last.n != 0 {
		t.Error("a loader after the one that served was asked")
	}
	// --from: only the named loader.
	res, err = r.Load(context.Background(), ref, core.MustParseID("summary/default"))
	if err != nil || res.Served.String() != "summary/default" || len(res.Misses) != 0 {
		t.Fatalf("--from summary: %+v %v", res, err)
	}
}

func TestResumerNothingAnywhereIsAnError(t *testing.T) {
	r := core.NewResumer([]core.NamedLoader{
		{ID: core.MustParseID("a/x"), Loader: &stubLoader{err: core.ErrNotFound}},
		{ID: core.MustParseID("b/y"), Loader: &stubLoader{err: errors.New("boom")}},
	})
	res, err := r.Load(context.Background(), core.SessionRef{SessionID: sess})
	if !errors.Is(err, core.ErrNotFound) || !strings.Contains(err.Error(), "a/x") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v", err)
	}
	if res == nil || len(res.Misses) != 2 {
		t.Fatalf("misses %+v", res)
	}
	if _, err := r.Load(context.Background(), core.SessionRef{SessionID: sess}, core.MustParseID("c/z")); err == nil {
		t.Error("an unconfigured --from loader was accepted")
	}
}

// An interrupted turn is repaired through the pipeline; resuming what was
// persisted repairs nothing twice.
func TestResumeRepairsThroughThePipelineOnce(t *testing.T) {
	ctx := context.Background()
	toolUse := `{"parentUuid":"u-1","isSidechain":false,"message":{"model":"m","id":"msg_1","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}},{"type":"tool_use","id":"toolu_2","name":"Bash","input":{"command":"pwd"}}],"stop_reason":"tool_use","stop_sequence":null},"type":"assistant","uuid":"a-1","timestamp":"2026-01-10T11:00:03.000Z","cwd":"/home/alice/src/shop","sessionId":"` + sess + `"}`
	result := `{"parentUuid":"a-1","isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"a.txt"}]},"uuid":"r-1","timestamp":"2026-01-10T11:00:04.000Z","sourceToolAssistantUUID":"a-1","cwd":"/home/alice/src/shop","sessionId":"` + sess + `"}`
	entries := []core.Entry{
		coretest.MustEntry(t, coretest.Line("user", sess, "u-1", "")),
		coretest.MustEntry(t, toolUse),
		coretest.MustEntry(t, result),
	}
	if v := core.ValidateConversation(entries); len(v) == 0 {
		t.Fatal("the interrupted conversation passes the validator; the test proves nothing")
	}
	rec := &coretest.RecordingSink{}
	p := newPipeline(t, core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.MustParseID("rec/a"), Sink: rec}}})
	loader := &stubLoader{t: &core.Transcript{Entries: entries}}
	r := core.NewResumer([]core.NamedLoader{{ID: core.MustParseID("stub/x"), Loader: loader}})
	res, err := core.Resume(ctx, r, p, core.SessionRef{SessionID: sess}, core.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Recovery.Class != core.InterruptedTurn || len(res.Recovery.Repairs) != 2 || res.Persisted != 2 {
		t.Fatalf("class %s, %d repairs, %d persisted", res.Recovery.Class, len(res.Recovery.Repairs), res.Persisted)
	}
	if len(res.Violations) != 0 {
		t.Fatalf("repaired conversation still violates: %+v", res.Violations)
	}
	persisted := rec.Durable()
	if len(persisted) != 2 || !strings.Contains(persisted[0], "toolu_2") || !strings.Contains(persisted[1], "Continue from where you left off.") {
		t.Fatalf("persisted %q", persisted)
	}
	// Resume again from what is now on "disk".
	again := append([]core.Entry(nil), entries...)
	for _, l := range persisted {
		again = append(again, coretest.MustEntry(t, l))
	}
	loader.t = &core.Transcript{Entries: again}
	res, err = core.Resume(ctx, r, p, core.SessionRef{SessionID: sess}, core.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Recovery.Repairs) != 0 || res.Persisted != 0 || len(res.Violations) != 0 {
		t.Fatalf("second resume: class %s, repairs %+v", res.Recovery.Class, res.Recovery.Repairs)
	}
	if len(rec.Durable()) != 2 {
		t.Fatalf("second resume wrote %d lines", len(rec.Durable())-2)
	}
	// A dry run repairs in memory only.
	loader.t = &core.Transcript{Entries: entries}
	res, err = core.Resume(ctx, r, p, core.SessionRef{SessionID: sess}, core.ResumeOptions{DryRun: true})
	if err != nil || len(res.Recovery.Repairs) != 2 || res.Persisted != 0 || len(rec.Durable()) != 2 {
		t.Fatalf("dry run: %v, %d repairs, %d persisted", err, len(res.Recovery.Repairs), res.Persisted)
	}
}
