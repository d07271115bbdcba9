package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/transcript"
)

var lcAt = time.Date(2026, 1, 10, 11, 0, 2, 267e6, time.UTC)

// Every event becomes one line of scribe's own type, outside the chain,
// with a uuid, the session and a timestamp, and reads back as it was.
func TestLifecycleEntriesRoundTrip(t *testing.T) {
	events := []core.LifecycleData{
		core.SessionStart{Model: "claude-sonnet-4-5", Tools: []string{"Bash", "Read"}, Branch: "main"},
		core.SessionEnd{Reason: core.EndCompleted, LastMessageUUID: "a-9"},
		core.SessionEnd{Reason: core.EndInterrupted, Detail: "SIGINT"},
		core.SessionResumed{From: "jsonl/local", LeafUUID: "a-9", Classification: core.InterruptedTurn, Repairs: 2, Checkpoint: "c-1", Commit: "abc"},
		core.ModelChange{Model: "claude-opus-4", PreviousModel: "claude-sonnet-4-5"},
		core.CostUpdate{TotalCostUSD: 0.125, InputTokens: 1200, OutputTokens: 340, CacheReadInputTokens: 9000},
		core.ContextWindow{UsedTokens: 48213, MaxTokens: 200000},
		core.MemoryUpdate{Path: "/home/alice/src/shop/CLAUDE.md", Scope: "project", Action: "updated"},
		core.TurnInterrupted{Kind: core.InterruptedTurn, LeafUUID: "r-1", Detail: "killed"},
		core.Compaction{Trigger: "auto", PreTokens: 150000, PostTokens: 9000, BoundaryUUID: "c-b"},
		core.UnknownLifecycle{Event: "plugin_loaded", Fields: json.RawMessage(`{"name":"x","n":2}`)},
	}
	seen := map[string]bool{}
	for _, d := range events {
		e, err := core.LifecycleEntry(core.LifecycleMeta{SessionID: sess, CWD: "/home/alice/src/shop", At: lcAt}, d)
		if err != nil {
			t.Fatalf("%s: %v", d.LifecycleEvent(), err)
		}
		if e.Type != core.TypeLifecycle || !core.IsLifecycleRecord(e.Type) || e.IsChain() || e.UUID == "" ||
			e.SessionID != sess || e.CWD != "/home/alice/src/shop" || e.Timestamp != "2026-01-10T11:00:02.267Z" {
			t.Fatalf("%s: entry %+v", d.LifecycleEvent(), e)
		}
		if strings.ContainsAny(string(e.Raw), "\n\r") || !json.Valid(e.Raw) {
			t.Fatalf("not one JSON line: %s", e.Raw)
		}
		if seen[e.UUID] {
			t.Fatalf("uuid %s given twice", e.UUID)
		}
		seen[e.UUID] = true
		again, err := core.ParseEntry(e.Raw)
		if err != nil {
			t.Fatal(err)
		}
		l, err := core.ParseLifecycle(&again)
		if err != nil {
			t.Fatalf("%s: %v", e.Raw, err)
		}
		if l.Event != d.LifecycleEvent() || l.SessionID != sess || l.UUID != e.UUID || !l.At.Equal(lcAt) || l.CWD != "/home/alice/src/shop" {
			t.Fatalf("%s: parsed %+v", e.Raw, l)
		}
		if u, ok := d.(core.UnknownLifecycle); ok {
			var a, b any
			_ = json.Unmarshal(u.Fields, &a)
			_ = json.Unmarshal(l.Data.(core.UnknownLifecycle).Fields, &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("unknown event fields %s, want %s", l.Data.(core.UnknownLifecycle).Fields, u.Fields)
			}
		} else if !reflect.DeepEqual(l.Data, d) {
			t.Fatalf("%s: data %#v, want %#v", e.Raw, l.Data, d)
		}
		if l.Describe() == "" || !strings.HasPrefix(l.Describe(), string(l.Event)) {
			t.Fatalf("describe %q", l.Describe())
		}
	}
}

// The line is exactly this: type and event first, the event's fields, then
// the envelope. Keys Claude Code's lite readers look for (gitBranch,
// lastPrompt, customTitle, summary) are not used.
func TestLifecycleLineShape(t *testing.T) {
	e, err := core.LifecycleEntry(core.LifecycleMeta{SessionID: sess, CWD: "/w", At: lcAt, UUID: "11111111-1111-4111-8111-111111111111"},
		core.SessionStart{Model: "m", Tools: []string{"Bash"}, Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"scribe-lifecycle","event":"session_start","model":"m","tools":["Bash"],"branch":"main","sessionId":"` + sess +
		`","cwd":"/w","uuid":"11111111-1111-4111-8111-111111111111","timestamp":"2026-01-10T11:00:02.267Z"}`
	if string(e.Raw) != want {
		t.Fatalf("line\n %s\nwant\n %s", e.Raw, want)
	}
	// No tools: an empty list, not null; no cwd: no key.
	e, _ = core.LifecycleEntry(core.LifecycleMeta{SessionID: sess, At: lcAt}, core.SessionStart{})
	if !strings.Contains(string(e.Raw), `"tools":[]`) {
		t.Fatalf("tools: %s", e.Raw)
	}
	if strings.Contains(string(e.Raw), `"cwd"`) {
		t.Fatalf("cwd without a cwd: %s", e.Raw)
	}
	for _, d := range []core.LifecycleData{core.SessionStart{Branch: "x"}, core.SessionEnd{Detail: "x"}, core.SessionResumed{LeafUUID: "x"}} {
		e, _ := core.LifecycleEntry(core.LifecycleMeta{SessionID: sess, At: lcAt}, d)
		for _, k := range []string{`"gitBranch"`, `"lastPrompt"`, `"customTitle"`, `"summary"`, `"leafUuid":null`} {
			if strings.Contains(string(e.Raw), k) {
				t.Fatalf("%s uses %s", e.Raw, k)
			}
		}
	}
}

// The uuid is derived from the event, so the same event gives the same
// entry; a host's own uuid is kept.
func TestLifecycleUUIDIsStable(t *testing.T) {
	m := core.LifecycleMeta{SessionID: sess, At: lcAt}
	a, _ := core.LifecycleEntry(m, core.CostUpdate{TotalCostUSD: 1})
	b, _ := core.LifecycleEntry(m, core.CostUpdate{TotalCostUSD: 1})
	c, _ := core.LifecycleEntry(m, core.CostUpdate{TotalCostUSD: 2})
	d, _ := core.LifecycleEntry(core.LifecycleMeta{SessionID: sess, At: lcAt.Add(time.Millisecond)}, core.CostUpdate{TotalCostUSD: 1})
	if a.UUID != b.UUID || string(a.Raw) != string(b.Raw) {
		t.Fatal("the same event gave two entries")
	}
	if a.UUID == c.UUID || a.UUID == d.UUID {
		t.Fatal("different events share a uuid")
	}
	m.UUID = "99999999-9999-4999-8999-999999999999"
	e, _ := core.LifecycleEntry(m, core.CostUpdate{TotalCostUSD: 1})
	if e.UUID != m.UUID {
		t.Fatalf("uuid %s", e.UUID)
	}
	// Zero time: now.
	before := time.Now().Add(-time.Second)
	e, _ = core.LifecycleEntry(core.LifecycleMeta{SessionID: sess}, core.SessionEnd{Reason: core.EndCompleted})
	l, _ := core.ParseLifecycle(&e)
	if l.At.Before(before) || l.At.After(time.Now().Add(time.Second)) {
		t.Fatalf("timestamp %v", l.At)
	}
}

func TestLifecycleRefusesBadEntries(t *testing.T) {
	cases := map[string]struct {
		m core.LifecycleMeta
		d core.LifecycleData
	}{
		"no session":    {core.LifecycleMeta{}, core.SessionEnd{Reason: core.EndCompleted}},
		"no event":      {core.LifecycleMeta{SessionID: sess}, nil},
		"empty name":    {core.LifecycleMeta{SessionID: sess}, core.UnknownLifecycle{}},
		"envelope key":  {core.LifecycleMeta{SessionID: sess}, core.UnknownLifecycle{Event: "x", Fields: json.RawMessage(`{"uuid":"u"}`)}},
		"type key":      {core.LifecycleMeta{SessionID: sess}, core.UnknownLifecycle{Event: "x", Fields: json.RawMessage(`{"type":"user"}`)}},
		"not an object": {core.LifecycleMeta{SessionID: sess}, core.UnknownLifecycle{Event: "x", Fields: json.RawMessage(`[1]`)}},
	}
	for name, c := range cases {
		if e, err := core.LifecycleEntry(c.m, c.d); err == nil {
			t.Errorf("%s: accepted %s", name, e.Raw)
		}
	}
	// A multi-line object is written on one line.
	e, err := core.LifecycleEntry(core.LifecycleMeta{SessionID: sess, At: lcAt}, core.UnknownLifecycle{Event: "x", Fields: json.RawMessage("{\n \"a\": 1\n}")})
	if err != nil || strings.Contains(string(e.Raw), "\n") {
		t.Fatalf("%v %q", err, e.Raw)
	}
	user := coretest.MustEntry(t, coretest.Line("user", sess, "u-1", ""))
	if _, err := core.ParseLifecycle(&user); !errors.Is(err, core.ErrNotLifecycle) {
		t.Fatalf("a user row parsed as lifecycle: %v", err)
	}
	if _, err := core.ParseCheckpoint(&user); !errors.Is(err, core.ErrNotCheckpoint) {
		t.Fatalf("a user row parsed as a checkpoint: %v", err)
	}
}

// Lifecycle entries go through the guards and dedup like any entry: the
// same event submitted twice is stored once.
func TestLifecycleThroughThePipelineDedups(t *testing.T) {
	ctx := context.Background()
	rec := &coretest.RecordingSink{}
	p := newPipeline(t, core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.MustParseID("rec/a"), Sink: rec}}})
	m := core.LifecycleMeta{SessionID: sess, CWD: "/w", At: lcAt}
	for i, want := range []core.Status{core.Accepted, core.Duplicate} {
		res, err := p.SubmitLifecycle(ctx, m, core.SessionStart{Model: "m"})
		if err != nil || res.Status != want {
			t.Fatalf("submit %d: %v %v", i, res.Status, err)
		}
	}
	cp, res, err := p.SubmitCheckpoint(ctx, core.Checkpoint{SessionID: sess, MessageUUID: "a-1", Label: "done", CWD: "/w", Timestamp: "2026-01-10T11:00:05.000Z"})
	if err != nil || res.Status != core.Accepted || cp.ID == "" {
		t.Fatalf("checkpoint: %+v %v %v", cp, res, err)
	}
	if _, res, _ = p.SubmitCheckpoint(ctx, cp); res.Status != core.Duplicate {
		t.Fatalf("checkpoint again: %v", res.Status)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rec.Durable(); len(got) != 2 || !strings.Contains(got[0], `"event":"session_start"`) || !strings.Contains(got[1], `"scribe-checkpoint"`) {
		t.Fatalf("stored %q", got)
	}
}

// Seed 002's checkpoint line, with the message it follows and a uuid for
// dedup; no commit key outside a repository.
func TestCheckpointEntryShape(t *testing.T) {
	cp, e, err := core.NewCheckpoint(core.Checkpoint{SessionID: sess, Label: "État initial", Commit: "a1b2c3d", MessageUUID: "a-1", CWD: "/w", ID: "chk456"}, lcAt)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"scribe-checkpoint","sessionId":"` + sess + `","commit":"a1b2c3d","timestamp":"2026-01-10T11:00:02.267Z","label":"État initial","id":"chk456","messageUuid":"a-1","cwd":"/w","uuid":"chk456"}`
	if string(e.Raw) != want {
		t.Fatalf("line\n %s\nwant\n %s", e.Raw, want)
	}
	if e.Type != core.TypeCheckpoint || !core.IsLifecycleRecord(e.Type) || e.IsChain() || e.UUID != "chk456" || cp.Timestamp != "2026-01-10T11:00:02.267Z" {
		t.Fatalf("entry %+v, checkpoint %+v", e, cp)
	}
	back, err := core.ParseCheckpoint(&e)
	if err != nil || back != cp {
		t.Fatalf("parsed %+v (%v), want %+v", back, err, cp)
	}
	if !cp.Time().Equal(lcAt) {
		t.Fatalf("time %v", cp.Time())
	}
	// Outside a repository: no commit key. The id is derived and stable.
	cp1, e1, _ := core.NewCheckpoint(core.Checkpoint{SessionID: sess, Label: "x", MessageUUID: "a-1"}, lcAt)
	cp2, _, _ := core.NewCheckpoint(core.Checkpoint{SessionID: sess, Label: "x", MessageUUID: "a-1"}, lcAt)
	if strings.Contains(string(e1.Raw), `"commit"`) || cp1.ID == "" || cp1.ID != cp2.ID || e1.UUID != cp1.ID {
		t.Fatalf("%s / %+v / %+v", e1.Raw, cp1, cp2)
	}
	for _, bad := range []core.Checkpoint{{MessageUUID: "a"}, {SessionID: sess}} {
		if _, _, err := core.NewCheckpoint(bad, lcAt); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}

func TestCheckpointResolve(t *testing.T) {
	list := []core.Checkpoint{
		{ID: "aaaa1111-0000-4000-8000-000000000001", Label: "tests pass"},
		{ID: "aaaa2222-0000-4000-8000-000000000002", Label: "refactor"},
		{ID: "bbbb3333-0000-4000-8000-000000000003", Label: "refactor"},
		{ID: "cccc4444-0000-4000-8000-000000000004", Label: "aaaa"},
		{ID: "aaaa1111-0000-4000-8000-000000000001", Label: "tests pass"}, // recorded twice
	}
	ok := map[string]string{
		"aaaa2222-0000-4000-8000-000000000002": "aaaa2222-0000-4000-8000-000000000002",
		"AAAA2222-0000-4000-8000-000000000002": "aaaa2222-0000-4000-8000-000000000002",
		"tests pass":                           "aaaa1111-0000-4000-8000-000000000001",
		"aaaa1":                                "aaaa1111-0000-4000-8000-000000000001",
		"bbbb":                                 "bbbb3333-0000-4000-8000-000000000003",
		"aaaa":                                 "cccc4444-0000-4000-8000-000000000004", // a label beats an id prefix
	}
	for name, want := range ok {
		c, err := core.ResolveCheckpoint(list, name)
		if err != nil || c.ID != want {
			t.Errorf("%q: %s %v, want %s", name, c.ID, err, want)
		}
	}
	for name, want := range map[string]error{
		"refactor": core.ErrCheckpointAmbiguous,
		"aaaa":     nil,
		"a":        core.ErrCheckpointAmbiguous,
		"dddd":     core.ErrCheckpointNotFound,
		"":         core.ErrCheckpointNotFound,
	} {
		_, err := core.ResolveCheckpoint(list, name)
		if want == nil {
			continue
		}
		if !errors.Is(err, want) {
			t.Errorf("%q: %v, want %v", name, err, want)
		}
	}
	if _, err := core.ResolveCheckpoint(nil, "x"); !errors.Is(err, core.ErrCheckpointNotFound) {
		t.Errorf("empty list: %v", err)
	}
}

// resumeAtLines: a session that went on after the checkpoint (a-2) and
// then rewound to u-1 and branched (u-3 → a-3, the current leaf).
func resumeAtEntries(t *testing.T) []core.Entry {
	t.Helper()
	asst := func(uuid, parent, text string) string {
		return `{"parentUuid":"` + parent + `","isSidechain":false,"message":{"model":"m","id":"msg_` + uuid + `","type":"message","role":"assistant","content":[{"type":"text","text":"` + text + `"}],"stop_reason":"end_turn","stop_sequence":null},"type":"assistant","uuid":"` + uuid + `","timestamp":"2026-01-10T11:00:03.000Z","cwd":"/home/alice/src/shop","sessionId":"` + sess + `"}`
	}
	var out []core.Entry
	for _, l := range []string{
		coretest.Line("user", sess, "u-1", ""),
		asst("a-1", "u-1", "one"),
		coretest.Line("user", sess, "u-2", "a-1"),
		asst("a-2", "u-2", "two"), // the checkpoint
		coretest.Line("user", sess, "u-4", "a-2"),
		asst("a-4", "u-4", "four"),
		coretest.Line("user", sess, "u-3", "a-1"), // a rewind to a-1
		asst("a-3", "u-3", "three"),
	} {
		out = append(out, coretest.MustEntry(t, l))
	}
	return out
}

func convUUIDs(es []core.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.UUID)
	}
	return out
}

// Resume at a checkpoint's message gives the conversation as it stood
// then, even though the session went on and then branched away from it.
func TestCheckpointResumeUpTo(t *testing.T) {
	ctx := context.Background()
	entries := resumeAtEntries(t)
	r := core.NewResumer([]core.NamedLoader{{ID: core.MustParseID("stub/x"), Loader: &stubLoader{t: &core.Transcript{Entries: entries}}}})
	ref := core.SessionRef{SessionID: sess}
	plain, err := core.Resume(ctx, r, nil, ref, core.ResumeOptions{Format: transcript.Format{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := convUUIDs(plain.Conversation); !reflect.DeepEqual(got, []string{"u-1", "a-1", "u-3", "a-3"}) {
		t.Fatalf("plain resume %v", got)
	}
	for upTo, want := range map[string][]string{
		"a-2": {"u-1", "a-1", "u-2", "a-2"},               // on the abandoned branch
		"a-4": {"u-1", "a-1", "u-2", "a-2", "u-4", "a-4"}, // the abandoned branch's end
		"a-1": {"u-1", "a-1"},
		"a-3": {"u-1", "a-1", "u-3", "a-3"}, // the current leaf: as a plain resume
		"u-2": {"u-1", "a-1", "u-2"},        // a prompt: an interrupted prompt
	} {
		res, err := core.Resume(ctx, r, nil, ref, core.ResumeOptions{Format: transcript.Format{}, UpTo: upTo})
		if err != nil {
			t.Fatalf("up to %s: %v", upTo, err)
		}
		if got := convUUIDs(res.Conversation); !reflect.DeepEqual(got, want) {
			t.Fatalf("up to %s: %v, want %v", upTo, got, want)
		}
		wantClass := core.InterruptionNone
		if upTo == "u-2" {
			wantClass = core.InterruptedPrompt
		}
		if res.Recovery.Class != wantClass || res.Chain.Leaf != upTo {
			t.Fatalf("up to %s: class %s, leaf %s", upTo, res.Recovery.Class, res.Chain.Leaf)
		}
	}
	if _, err := core.Resume(ctx, r, nil, ref, core.ResumeOptions{Format: transcript.Format{}, UpTo: "nope"}); !errors.Is(err, core.ErrMessageNotFound) {
		t.Fatalf("unknown message: %v", err)
	}
}

// Repairs at a checkpoint hang from the checkpoint's message, and dedup is
// seeded with the whole transcript, not just the part resumed.
func TestCheckpointResumeUpToRepairsFromTheMessage(t *testing.T) {
	ctx := context.Background()
	toolUse := `{"parentUuid":"u-1","isSidechain":false,"message":{"model":"m","id":"msg_t","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}],"stop_reason":"tool_use","stop_sequence":null},"type":"assistant","uuid":"a-t","timestamp":"2026-01-10T11:00:03.000Z","cwd":"/home/alice/src/shop","sessionId":"` + sess + `"}`
	result := `{"parentUuid":"a-t","isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"ok"}]},"uuid":"r-t","timestamp":"2026-01-10T11:00:04.000Z","cwd":"/home/alice/src/shop","sessionId":"` + sess + `"}`
	entries := []core.Entry{
		coretest.MustEntry(t, coretest.Line("user", sess, "u-1", "")),
		coretest.MustEntry(t, toolUse),
		coretest.MustEntry(t, result),
		coretest.MustEntry(t, coretest.Line("assistant", sess, "a-9", "r-t")),
	}
	rec := &coretest.RecordingSink{}
	p := newPipeline(t, core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.MustParseID("rec/a"), Sink: rec}}})
	r := core.NewResumer([]core.NamedLoader{{ID: core.MustParseID("stub/x"), Loader: &stubLoader{t: &core.Transcript{Entries: entries}}}})
	res, err := core.Resume(ctx, r, p, core.SessionRef{SessionID: sess}, core.ResumeOptions{Format: transcript.Format{}, UpTo: "a-t", Recovery: core.RecoveryOptions{Now: lcAt}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Recovery.Class != core.InterruptedTurn || len(res.Recovery.Repairs) != 2 || res.Persisted != 2 {
		t.Fatalf("class %s, %d repairs, %d persisted", res.Recovery.Class, len(res.Recovery.Repairs), res.Persisted)
	}
	if got := res.Recovery.Repairs[0].Entry.ParentUUID.Value; got != "a-t" {
		t.Fatalf("first repair hangs from %s", got)
	}
	if len(res.Violations) != 0 {
		t.Fatalf("violations %+v", res.Violations)
	}
	// Submitting a row of the part left out is a duplicate: dedup knows it.
	out, err := p.Submit(ctx, entries[3])
	if err != nil || out.Status != core.Duplicate {
		t.Fatalf("a-9 after resume at a-t: %v %v", out.Status, err)
	}
}

func TestShortCommit(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	if core.ShortCommit(sha) != sha[:12] || core.ShortCommit("abc") != "abc" {
		t.Fatal("short commit")
	}
}
