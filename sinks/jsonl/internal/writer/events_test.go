package writer

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/reader"
	"github.com/e0dc0000/scribe/transcript"
)

// stateEntry is the scribe-state entry of a transition of the session.
func stateEntry(t *testing.T, session string, from, to core.State, at time.Time) core.Entry {
	t.Helper()
	e, err := core.StateChange{SessionID: session, From: from, To: to, At: at, Reason: "test"}.Entry()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// stateSession is a short conversation with state changes around it: the
// conversation's lines, and the entries to write (state changes included).
func stateSession(t *testing.T, session string) ([]string, []core.Entry) {
	at := time.Date(2026, 1, 10, 11, 0, 0, 0, time.UTC)
	u1, a1 := "5e000000-0000-4000-8000-000000000001", "5e000000-0000-4000-8000-000000000002"
	conv := []string{coretest.Line(core.TypeUser, session, u1, ""), coretest.Line(core.TypeAssistant, session, a1, u1)}
	es := []core.Entry{
		stateEntry(t, session, core.StateIdle, core.StateRunning, at), // before any message
		coretest.MustEntry(t, conv[0]),
		stateEntry(t, session, core.StateRunning, core.StateRequiresAction, at.Add(time.Second)),
		stateEntry(t, session, core.StateRequiresAction, core.StateRunning, at.Add(2*time.Second)),
		coretest.MustEntry(t, conv[1]),
		stateEntry(t, session, core.StateRunning, core.StateIdle, at.Add(3*time.Second)),
	}
	return conv, es
}

// State changes are session events, not transcript lines: the local store
// skips and counts them, and writes the conversation as without them.
func TestStateEventsAreNotWrittenToTheTranscript(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := newSink(t, dir, nil)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	conv, es := stateSession(t, sess)
	if err := s.Write(ctx, es); err != nil {
		t.Fatal(err)
	}
	// A session with nothing but state changes gets no file at all.
	const other = "0565a3a4-0000-4000-8000-0000000000ff"
	if err := s.Write(ctx, []core.Entry{stateEntry(t, other, core.StateIdle, core.StateRunning, time.Now())}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readLines(t, mainPath(dir)); !slices.Equal(got, conv) {
		t.Fatalf("transcript:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(conv, "\n"))
	}
	raw, _ := os.ReadFile(mainPath(dir))
	if bytes.Contains(raw, []byte(core.TypeScribeState)) {
		t.Fatal("a scribe-state entry is in the transcript")
	}
	if p, _ := s.layout.FindSession(other, cwd); p != "" {
		t.Fatalf("a folder was found for the session of state changes only: %s", p)
	}
	r := s.Report()
	if r["events_skipped"] != 5 || r["lines_written"] != 2 || r["held"] != 0 || r["unrouted"] != 0 {
		t.Fatalf("report %v", r)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	// The store, as a loader, reads the conversation alone.
	ld := reader.Loader{Layout: reader.Layout{Layout: layout.Layout{ConfigDir: dir}}}
	tr, err := ld.Load(ctx, core.SessionRef{SessionID: sess, CWD: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 2 || transcript.StateFromTail(tr.Entries) != core.StateIdle {
		t.Fatalf("loaded %d entries", len(tr.Entries))
	}
}

// Through a pipeline, the state entries reach the sinks that forward them
// and not the transcript; dedup seeded from the file does not hide them.
func TestStateEventsThroughThePipeline(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := newSink(t, dir, nil)
	fwd := &coretest.RecordingSink{}
	p, err := core.NewPipeline(core.PipelineOptions{
		Seeder: store,
		Sinks: []core.NamedSink{
			{ID: core.MustParseID("jsonl/local"), Sink: store},
			{ID: core.MustParseID("events/cloud"), Sink: fwd},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(ctx)
	m, err := core.NewStateMachine(sess, core.StateIdle)
	if err != nil {
		t.Fatal(err)
	}
	m.Attach(ctx, p, func(c core.StateChange, _ core.Result, err error) {
		if err != nil {
			t.Errorf("submit %s → %s: %v", c.From, c.To, err)
		}
	})
	conv, _ := stateSession(t, sess)
	if _, err := m.Transition(core.StateRunning, "prompt"); err != nil {
		t.Fatal(err)
	}
	for _, l := range conv {
		if r, err := p.Submit(ctx, coretest.MustEntry(t, l)); err != nil || r.Status != core.Accepted {
			t.Fatalf("submit: %v %v", r, err)
		}
	}
	if _, err := m.Transition(core.StateIdle, "done"); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readLines(t, mainPath(dir)); !slices.Equal(got, conv) {
		t.Fatalf("transcript:\n%s", strings.Join(got, "\n"))
	}
	var types []string
	for _, l := range fwd.Durable() {
		types = append(types, coretest.MustEntry(t, l).Type)
	}
	if want := []string{core.TypeScribeState, core.TypeUser, core.TypeAssistant, core.TypeScribeState}; !slices.Equal(types, want) {
		t.Fatalf("forwarded %v, want %v", types, want)
	}
	for _, st := range p.Stats().Sinks {
		if st.ID == "jsonl/local" && st.Counters["events_skipped"] != 2 {
			t.Errorf("jsonl counters %v", st.Counters)
		}
	}
}

// The SDK lists and reads a session written with state changes exactly as
// the same session written without them.
func TestStateEventsLeaveTheSDKReaderUnaffected(t *testing.T) {
	p := peer.Find(t)
	ctx := context.Background()
	write := func(withState bool) string {
		dir := t.TempDir()
		s := newSink(t, dir, nil)
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		_, es := stateSession(t, sess)
		if !withState {
			es = slices.DeleteFunc(es, func(e core.Entry) bool { return e.Type == core.TypeScribeState })
		}
		if err := s.Write(ctx, es); err != nil {
			t.Fatal(err)
		}
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	with, without := write(true), write(false)
	a, b := p.Messages(t, with, sess, cwd, true), p.Messages(t, without, sess, cwd, true)
	if len(a) != 2 || !slices.Equal(peer.UUIDs(a), peer.UUIDs(b)) {
		t.Fatalf("messages with state changes %s\nwithout %s", a, b)
	}
	for i := range a {
		var x, y any
		_ = json.Unmarshal(a[i], &x)
		_ = json.Unmarshal(b[i], &y)
		xa, _ := json.Marshal(x)
		ya, _ := json.Marshal(y)
		if !bytes.Equal(xa, ya) {
			t.Errorf("message %d differs:\n%s\n%s", i, xa, ya)
		}
	}
	la, lb := p.List(t, with, cwd), p.List(t, without, cwd)
	if len(la) != 1 || len(lb) != 1 || la[0].SessionID != sess || la[0].FirstPrompt != lb[0].FirstPrompt || la[0].FileSize != lb[0].FileSize {
		t.Fatalf("listing with state changes %+v\nwithout %+v", la, lb)
	}
}
