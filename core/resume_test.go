package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/transcript"
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
	// A loader that failed for another reason than not having the session
	// makes the error "not served", never "not found".
	if errors.Is(err, core.ErrNotFound) || !errors.Is(err, core.ErrNotServed) || !strings.Contains(err.Error(), "a/x") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v", err)
	}
	if res == nil || len(res.Misses) != 2 {
		t.Fatalf("misses %+v", res)
	}
	// Only misses: not found.
	r = core.NewResumer([]core.NamedLoader{
		{ID: core.MustParseID("a/x"), Loader: &stubLoader{err: core.ErrNotFound}},
		{ID: core.MustParseID("b/y"), Loader: &stubLoader{t: &core.Transcript{}}},
	})
	if _, err := r.Load(context.Background(), core.SessionRef{SessionID: sess}); !errors.Is(err, core.ErrNotFound) || errors.Is(err, core.ErrNotServed) {
		t.Fatalf("only misses: err = %v", err)
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
	if v := transcript.ValidateConversation(entries); len(v) == 0 {
		t.Fatal("the interrupted conversation passes the validator; the test proves nothing")
	}
	store := &storeLoader{}
	for _, e := range entries {
		store.hold(e.Raw)
	}
	p := newPipeline(t, core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.MustParseID("store/local"), Sink: store}}, Seeder: store})
	r := core.NewResumer([]core.NamedLoader{{ID: core.MustParseID("store/local"), Loader: store}})
	res, err := core.Resume(ctx, r, p, core.SessionRef{SessionID: sess}, core.ResumeOptions{Format: transcript.Format{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Recovery.Class != core.InterruptedTurn || len(res.Recovery.Repairs) != 2 || res.Persisted != 2 || res.Copied != 0 {
		t.Fatalf("class %s, %d repairs, %d persisted, %d copied", res.Recovery.Class, len(res.Recovery.Repairs), res.Persisted, res.Copied)
	}
	if len(res.Violations) != 0 {
		t.Fatalf("repaired conversation still violates: %+v", res.Violations)
	}
	persisted := store.Durable()
	if len(persisted) != 2 || !strings.Contains(persisted[0], "toolu_2") || !strings.Contains(persisted[1], "Continue from where you left off.") {
		t.Fatalf("persisted %q", persisted)
	}
	// Resume again from what is now in the store.
	res, err = core.Resume(ctx, r, p, core.SessionRef{SessionID: sess}, core.ResumeOptions{Format: transcript.Format{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Recovery.Repairs) != 0 || res.Persisted != 0 || len(res.Violations) != 0 {
		t.Fatalf("second resume: class %s, repairs %+v", res.Recovery.Class, res.Recovery.Repairs)
	}
	if len(store.Durable()) != 2 {
		t.Fatalf("second resume wrote %d lines", len(store.Durable())-2)
	}
	// A dry run repairs in memory only.
	r = core.NewResumer([]core.NamedLoader{{ID: core.MustParseID("stub/x"), Loader: &stubLoader{t: &core.Transcript{Entries: entries}}}})
	res, err = core.Resume(ctx, r, p, core.SessionRef{SessionID: sess}, core.ResumeOptions{Format: transcript.Format{}, DryRun: true})
	if err != nil || len(res.Recovery.Repairs) != 2 || res.Persisted != 0 || res.Copied != 0 || len(store.Durable()) != 2 {
		t.Fatalf("dry run: %v, %d repairs, %d persisted, %d copied", err, len(res.Recovery.Repairs), res.Persisted, res.Copied)
	}
}

// interruptedTurn is a titled conversation whose last assistant row left
// a tool call open.
func interruptedTurn(t *testing.T) []core.Entry {
	toolUse := `{"parentUuid":"u-1","isSidechain":false,"message":{"model":"m","id":"msg_1","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}],"stop_reason":"tool_use","stop_sequence":null},"type":"assistant","uuid":"a-1","timestamp":"2026-01-10T11:00:03.000Z","cwd":"/home/alice/src/shop","sessionId":"` + sess + `"}`
	return []core.Entry{
		coretest.MustEntry(t, `{"type":"custom-title","customTitle":"fix the build","sessionId":"`+sess+`"}`),
		coretest.MustEntry(t, coretest.Line("user", sess, "u-1", "")),
		coretest.MustEntry(t, toolUse),
	}
}

// Served by another loader than the local store (the team server), the
// whole transcript is persisted, in order and byte for byte, before the
// repairs; resuming again finds it in the store and repairs nothing.
func TestResumeFromAnotherLoaderPersistsTheTranscriptFirst(t *testing.T) {
	ctx := context.Background()
	entries := interruptedTurn(t)
	store := &storeLoader{}
	p := newPipeline(t, core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.MustParseID("store/local"), Sink: store}}, Seeder: store})
	r := core.NewResumer([]core.NamedLoader{
		{ID: core.MustParseID("store/local"), Loader: store},
		{ID: core.MustParseID("cloud/team"), Loader: &stubLoader{t: &core.Transcript{Entries: entries}}},
	})
	res, err := core.Resume(ctx, r, p, core.SessionRef{SessionID: sess}, core.ResumeOptions{Format: transcript.Format{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Served.String() != "cloud/team" || res.Copied != len(entries) || res.CopyDuplicates != 0 || res.Persisted != 2 {
		t.Fatalf("served by %s, copied %d (%d duplicates), persisted %d", res.Served, res.Copied, res.CopyDuplicates, res.Persisted)
	}
	got := store.Durable()
	if len(got) != len(entries)+2 {
		t.Fatalf("the store holds %d lines, want %d loaded + 2 repairs:\n%s", len(got), len(entries), strings.Join(got, "\n"))
	}
	for i, e := range entries {
		if got[i] != string(e.Raw) {
			t.Fatalf("line %d is %s, want the loaded %s", i+1, got[i], e.Raw)
		}
	}
	for i, rp := range res.Recovery.Repairs {
		if got[len(entries)+i] != string(rp.Entry.Raw) {
			t.Fatalf("line %d is not the repair %s", len(entries)+i+1, rp.Kind)
		}
	}
	// The store now serves it whole, and nothing is repaired twice.
	res, err = core.Resume(ctx, r, p, core.SessionRef{SessionID: sess}, core.ResumeOptions{Format: transcript.Format{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Served.String() != "store/local" || len(res.Recovery.Repairs) != 0 || res.Copied != 0 || len(store.Durable()) != len(got) {
		t.Fatalf("second resume: served by %s, %d repairs, %d copied, %d lines", res.Served, len(res.Recovery.Repairs), res.Copied, len(store.Durable()))
	}
}

// A local copy that holds part of what the server serves gets only the
// rest: dedup, seeded from the store, drops the rows it has.
func TestResumeFromAnotherLoaderCopiesOnlyWhatIsMissing(t *testing.T) {
	ctx := context.Background()
	entries := interruptedTurn(t)
	store := &storeLoader{}
	store.hold(entries[1].Raw)
	p := newPipeline(t, core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.MustParseID("store/local"), Sink: store}}, Seeder: store})
	r := core.NewResumer([]core.NamedLoader{{ID: core.MustParseID("cloud/team"), Loader: &stubLoader{t: &core.Transcript{Entries: entries}}}})
	res, err := core.Resume(ctx, r, p, core.SessionRef{SessionID: sess}, core.ResumeOptions{Format: transcript.Format{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Copied != 2 || res.CopyDuplicates != 1 || res.Persisted != 2 {
		t.Fatalf("copied %d, %d duplicates, persisted %d", res.Copied, res.CopyDuplicates, res.Persisted)
	}
	got := store.Durable()
	if len(got) != 4 || got[0] != string(entries[0].Raw) || got[1] != string(entries[2].Raw) {
		t.Fatalf("the store got %q", got)
	}
}

func TestResumeDryRunNeverCopies(t *testing.T) {
	ctx := context.Background()
	store := &storeLoader{}
	p := newPipeline(t, core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.MustParseID("store/local"), Sink: store}}, Seeder: store})
	r := core.NewResumer([]core.NamedLoader{{ID: core.MustParseID("cloud/team"), Loader: &stubLoader{t: &core.Transcript{Entries: interruptedTurn(t)}}}})
	res, err := core.Resume(ctx, r, p, core.SessionRef{SessionID: sess}, core.ResumeOptions{Format: transcript.Format{}, DryRun: true})
	if err != nil || res.Copied != 0 || res.Persisted != 0 || len(store.All()) != 0 {
		t.Fatalf("dry run: %v, %d copied, %d persisted, %d lines", err, res.Copied, res.Persisted, len(store.All()))
	}
}

// storeLoader is a fake local store: a recording sink that seeds dedup with
// what it holds and serves it as a loader (what it held before the test
// comes first, as a file's older lines would).
type storeLoader struct {
	coretest.RecordingSink
	held [][]byte
}

func (s *storeLoader) hold(raw []byte) { s.held = append(s.held, raw) }

func (s *storeLoader) lines() [][]byte {
	out := append([][]byte(nil), s.held...)
	for _, l := range s.Durable() {
		out = append(out, []byte(l))
	}
	return out
}

func (s *storeLoader) Seed(context.Context, core.SessionRef) (core.Seed, error) {
	var sd core.Seed
	for _, l := range s.lines() {
		e, err := core.ParseEntry(l)
		if err != nil {
			return sd, err
		}
		if e.UUID != "" {
			sd.UUIDs = append(sd.UUIDs, e.UUID)
		} else {
			sd.Metadata = append(sd.Metadata, e.Raw)
		}
	}
	return sd, nil
}

func (s *storeLoader) Load(_ context.Context, ref core.SessionRef) (*core.Transcript, error) {
	tr := &core.Transcript{Ref: ref}
	for _, l := range s.lines() {
		e, err := core.ParseEntry(l)
		if err != nil {
			return nil, err
		}
		tr.Entries = append(tr.Entries, e)
	}
	if len(tr.Entries) == 0 {
		return nil, core.ErrNotFound
	}
	return tr, nil
}

// core knows no rules of the format: a Resume without them is refused, not
// guessed.
func TestResumeNeedsAFormat(t *testing.T) {
	r := core.NewResumer(nil)
	if _, err := core.Resume(context.Background(), r, nil, core.SessionRef{SessionID: "s"}, core.ResumeOptions{}); !errors.Is(err, core.ErrNoFormat) {
		t.Fatalf("Resume without a Format: %v, want ErrNoFormat", err)
	}
}
