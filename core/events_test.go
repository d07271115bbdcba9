package core_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
)

// Set SCRIBE_UPDATE_GOLDEN=1 to rewrite core/testdata/events/*.ndjson.
const updateGoldenEnv = "SCRIBE_UPDATE_GOLDEN"

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "events", name)
	if os.Getenv(updateGoldenEnv) == "1" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with %s=1 to create it)", err, updateGoldenEnv)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s: line %d differs:\n got %s\nwant %s", path, i+1, g, w)
			}
		}
	}
}

// ndjson decodes every line of an event stream, failing on anything that
// is not one JSON object a line.
func ndjson(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("the stream does not end with a newline: %q", b)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		if err := dec.Decode(&m); err != nil || dec.More() || m == nil {
			t.Fatalf("line %d is not one JSON object (%v): %s", n, err, sc.Bytes())
		}
		out = append(out, m)
	}
	return out
}

// sdkInitKeys are the keys SDKSystemMessage (subtype init) requires in the
// SDK's sdk.d.ts.
var sdkInitKeys = []string{"type", "subtype", "apiKeySource", "claude_code_version", "cwd", "tools", "mcp_servers",
	"model", "permissionMode", "slash_commands", "output_style", "skills", "plugins", "uuid", "session_id"}

// checkSDKShape checks the keys each SDK message type requires.
func checkSDKShape(t *testing.T, i int, ev map[string]any) {
	t.Helper()
	need := []string{"type"}
	switch {
	case ev["type"] == "system" && ev["subtype"] == "init":
		need = sdkInitKeys
		if ev["apiKeySource"] != "none" {
			t.Errorf("event %d: apiKeySource %v, want none", i, ev["apiKeySource"])
		}
	case ev["type"] == "system" && ev["subtype"] == "session_state_changed":
		need = []string{"type", "subtype", "state", "uuid", "session_id"}
	case ev["type"] == "user" || ev["type"] == "assistant":
		need = []string{"type", "message", "parent_tool_use_id", "uuid", "session_id"}
	case ev["type"] == "scribe_entry":
		need = []string{"type", "entry"}
	}
	for _, k := range need {
		if _, ok := ev[k]; !ok {
			t.Errorf("event %d (%v/%v) has no %q: %v", i, ev["type"], ev["subtype"], k, ev)
		}
	}
}

func readTranscript(t *testing.T, name string) []core.Entry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	var es []core.Entry
	for l := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n"), "\n") {
		es = append(es, coretest.MustEntry(t, l))
	}
	return es
}

func TestEventStreamGoldenTranscript(t *testing.T) {
	var buf bytes.Buffer
	s := core.NewEventStream(&buf)
	es := readTranscript(t, "transcript.jsonl")
	for _, e := range es {
		if err := s.Entry(e); err != nil {
			t.Fatal(err)
		}
	}
	// Before the flush, the session with only a title still waits.
	if r := s.Report(); r["events_held"] != 1 {
		t.Fatalf("report before flush %v: want the lone title held", r)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(core.Event{Type: core.EventScribeAck, AckedLines: int64(len(es))}); err != nil {
		t.Fatal(err)
	}
	golden(t, "transcript.ndjson", buf.Bytes())

	evs := ndjson(t, buf.Bytes())
	for i, ev := range evs {
		checkSDKShape(t, i, ev)
	}
	// One event per entry, three inits, one ack.
	if len(evs) != len(es)+3+1 {
		t.Fatalf("%d events for %d entries", len(evs), len(es))
	}
	if r := s.Report(); r["events_written"] != int64(len(evs)) || r["inits"] != 3 || r["events_held"] != 0 {
		t.Fatalf("report %v", r)
	}
	// Each session's init comes before its first event, and the init says
	// what the transcript told.
	seen := map[string]map[string]any{}
	for i, ev := range evs {
		sid, _ := ev["session_id"].(string)
		if sid == "" {
			continue
		}
		if ev["subtype"] == "init" {
			seen[sid] = ev
			continue
		}
		if seen[sid] == nil {
			t.Fatalf("event %d of session %s before its init", i, sid)
		}
	}
	a := seen["7b3c2a10-5d4e-4f6a-9b8c-1d2e3f4a5b6c"]
	if a["cwd"] != "/home/alice/src/shop" || a["permissionMode"] != "default" || a["claude_code_version"] != "2.1.332" || a["model"] != nil {
		t.Errorf("init of the first session: %v", a)
	}
	if b := seen["2e9f4c61-8a0b-4c3d-9e5f-6a7b8c9d0e1f"]; b["model"] != "claude-opus-4-1" || b["permissionMode"] != nil {
		t.Errorf("init of the session that starts with an assistant row: %v", b)
	}
	if c := seen["c0ffee00-1111-4222-8333-444455556666"]; c["cwd"] != nil {
		t.Errorf("init of the session with only a title: %v", c)
	}

	// The same input gives the same stream.
	var again bytes.Buffer
	s2 := core.NewEventStream(&again)
	if err := s2.Entries(es); err != nil {
		t.Fatal(err)
	}
	_ = s2.Flush()
	_ = s2.Write(core.Event{Type: core.EventScribeAck, AckedLines: int64(len(es))})
	if !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Fatalf("a second stream of the same entries differs:\n%s", again.Bytes())
	}
}

func TestEventStreamGoldenAnnouncedSession(t *testing.T) {
	const sid = "3f1e2d3c-4b5a-4697-8877-665544332211"
	at := time.Date(2026, 1, 10, 11, 0, 2, 0, time.UTC)
	var buf bytes.Buffer
	s := core.NewEventStream(&buf)
	if err := s.Announce(core.SessionInit{SessionID: sid, CWD: "/srv/app", Model: "claude-sonnet-4-5",
		PermissionMode: "acceptEdits", ClaudeCodeVersion: "2.1.332", Tools: []string{"Bash", "Read"}}); err != nil {
		t.Fatal(err)
	}
	steps := []any{
		core.StateChange{SessionID: sid, From: core.StateIdle, To: core.StateRunning, At: at, Reason: "prompt"},
		coretest.Line(core.TypeUser, sid, "6c000000-0000-4000-8000-000000000001", ""),
		coretest.Line(core.TypeAssistant, sid, "6c000000-0000-4000-8000-000000000002", "6c000000-0000-4000-8000-000000000001"),
		core.StateChange{SessionID: sid, From: core.StateRunning, To: core.StateIdle, At: at.Add(3 * time.Second)},
	}
	for _, st := range steps {
		var err error
		switch v := st.(type) {
		case core.StateChange:
			err = s.State(v)
		case string:
			err = s.Entry(coretest.MustEntry(t, v))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// A second announcement (the SDK repeats init) gets its own uuid; what
	// it leaves empty is filled from what is known.
	if err := s.Announce(core.SessionInit{SessionID: sid, Model: "claude-opus-4-1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Announce(core.SessionInit{}); err == nil {
		t.Fatal("an announcement without a session id was accepted")
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	golden(t, "announced.ndjson", buf.Bytes())
	evs := ndjson(t, buf.Bytes())
	for i, ev := range evs {
		checkSDKShape(t, i, ev)
	}
	var kinds []string
	for _, ev := range evs {
		k := ev["type"].(string)
		if st, ok := ev["subtype"].(string); ok {
			k += "/" + st
		}
		kinds = append(kinds, k)
	}
	want := []string{"system/init", "system/session_state_changed", "user", "assistant", "system/session_state_changed", "system/init"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	if evs[0]["uuid"] == evs[5]["uuid"] || evs[5]["cwd"] != "/srv/app" || evs[5]["model"] != "claude-opus-4-1" {
		t.Fatalf("second init %v (first %v)", evs[5], evs[0])
	}
}

// An entry becomes the SDK message it maps to.
func TestEventOfEntries(t *testing.T) {
	for _, tc := range []struct {
		line string
		want string
	}{
		{`{"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","sessionId":"s-1","timestamp":"t"}`,
			`{"type":"user","message":{"role":"user","content":"hi"},"parent_tool_use_id":null,"session_id":"s-1","uuid":"u1","timestamp":"t"}`},
		// A line with breaks between tokens still gives one line.
		{"{\"type\":\"assistant\",\"message\":{\"role\":\"assistant\",\n\"content\":[]},\"uuid\":\"u2\",\"sessionId\":\"s-1\"}",
			`{"type":"assistant","message":{"role":"assistant","content":[]},"parent_tool_use_id":null,"session_id":"s-1","uuid":"u2"}`},
		// No message object, or no uuid: not an SDK message.
		{`{"type":"user","message":"text","uuid":"u3","sessionId":"s-1"}`,
			`{"type":"scribe_entry","session_id":"s-1","uuid":"u3","entry":{"type":"user","message":"text","uuid":"u3","sessionId":"s-1"}}`},
		{`{"type":"assistant","message":{"role":"assistant"},"sessionId":"s-1"}`,
			`{"type":"scribe_entry","session_id":"s-1","entry":{"type":"assistant","message":{"role":"assistant"},"sessionId":"s-1"}}`},
		// A state entry with an unknown state is an entry like any other.
		{`{"type":"scribe-state","state":"asleep","sessionId":"s-1","uuid":"u4"}`,
			`{"type":"scribe_entry","session_id":"s-1","uuid":"u4","entry":{"type":"scribe-state","state":"asleep","sessionId":"s-1","uuid":"u4"}}`},
		{`{"type":"scribe-state","state":"idle","sessionId":"s-1","uuid":"u5"}`,
			`{"type":"system","subtype":"session_state_changed","state":"idle","uuid":"u5","session_id":"s-1"}`},
	} {
		b, err := json.Marshal(core.EventOf(coretest.MustEntry(t, tc.line)))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("event of %s:\n got %s\nwant %s", tc.line, b, tc.want)
		}
	}
}

// A state machine attached to a pipeline submits each transition as its
// scribe-state entry, in order; a refused transition submits nothing.
func TestStateMachineAttachedToPipeline(t *testing.T) {
	rec := &coretest.RecordingSink{}
	p := newPipeline(t, core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.MustParseID("rec/a"), Sink: rec}}})
	m, err := core.NewStateMachine(sess, core.StateIdle)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var outcomes []core.Status
	detach := m.Attach(context.Background(), p, func(_ core.StateChange, r core.Result, err error) {
		if err != nil {
			t.Errorf("submit: %v", err)
		}
		mu.Lock()
		outcomes = append(outcomes, r.Status)
		mu.Unlock()
	})
	seq := []core.State{core.StateRunning, core.StateRequiresAction, core.StateRunning, core.StateIdle}
	var changes []core.StateChange
	for i, to := range seq {
		c, err := m.Transition(to, "step")
		if err != nil {
			t.Fatal(err)
		}
		changes = append(changes, c)
		if i == 1 {
			// Refused transitions in between submit nothing.
			if _, err := m.Transition(core.StateRequiresAction, "again"); !errors.Is(err, core.ErrInvalidTransition) {
				t.Fatalf("requires_action → requires_action: %v", err)
			}
		}
	}
	if _, err := m.Transition(core.StateRequiresAction, "from idle"); !errors.Is(err, core.ErrInvalidTransition) {
		t.Fatalf("idle → requires_action: %v", err)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := rec.Durable()
	if len(got) != len(seq) {
		t.Fatalf("%d entries for %d transitions: %v", len(got), len(seq), got)
	}
	from := core.StateIdle
	for i, l := range got {
		e := coretest.MustEntry(t, l)
		var f struct{ State, From, Reason string }
		if err := json.Unmarshal(e.Raw, &f); err != nil {
			t.Fatal(err)
		}
		want, _ := changes[i].Entry()
		if e.Type != core.TypeScribeState || e.SessionID != sess || e.UUID != want.UUID ||
			f.State != string(seq[i]) || f.From != string(from) || f.Reason != "step" {
			t.Errorf("entry %d: %s (want %s → %s)", i, l, from, seq[i])
		}
		from = seq[i]
	}
	mu.Lock()
	if len(outcomes) != len(seq) || slices.ContainsFunc(outcomes, func(s core.Status) bool { return s != core.Accepted }) {
		t.Errorf("outcomes %v", outcomes)
	}
	mu.Unlock()

	// The same change submitted again is a duplicate: its uuid is its own.
	if r, err := p.SubmitState(context.Background(), changes[0]); err != nil || r.Status != core.Duplicate {
		t.Fatalf("resubmitted change: %v %v", r, err)
	}
	// Detached, the machine submits nothing more.
	detach()
	detach()
	if _, err := m.Transition(core.StateRunning, "after detach"); err != nil {
		t.Fatal(err)
	}
	_ = p.Flush(context.Background())
	if n := len(rec.Durable()); n != len(seq) {
		t.Fatalf("%d entries after detach, want %d", n, len(seq))
	}
	if _, err := p.SubmitState(context.Background(), core.StateChange{To: core.StateIdle}); err == nil {
		t.Fatal("a change without a session was submitted")
	}
}

// A guard refuses state entries as any other; Attach reports it.
func TestStateMachineAttachedRefusedByGuard(t *testing.T) {
	rec := &coretest.RecordingSink{}
	p := newPipeline(t, core.PipelineOptions{
		Guards: []core.NamedGuard{{ID: core.MustParseID("deny/secret"), Guard: denyGuard{reason: "secret"}}},
		Sinks:  []core.NamedSink{{ID: core.MustParseID("rec/a"), Sink: rec}},
	})
	m, _ := core.NewStateMachine(sess, core.StateIdle)
	var res core.Result
	m.Attach(context.Background(), p, func(_ core.StateChange, r core.Result, _ error) { res = r })
	if _, err := m.Transition(core.StateRunning, "a secret"); err != nil {
		t.Fatal(err)
	}
	_ = p.Flush(context.Background())
	if res.Status != core.Refused || len(rec.Durable()) != 0 {
		t.Fatalf("result %v, sink %v", res, rec.Durable())
	}
}

// The event sink in a pipeline streams exactly the accepted entries, state
// changes included, after each session's init.
func TestEventSinkInPipeline(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	w := writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(b)
	})
	stream := core.NewEventStream(w)
	rec := &coretest.RecordingSink{}
	p := newPipeline(t, core.PipelineOptions{Sinks: []core.NamedSink{
		{ID: core.MustParseID("events/stdout"), Sink: core.NewEventSink(stream)},
		{ID: core.MustParseID("rec/a"), Sink: rec},
	}})
	m, _ := core.NewStateMachine(sess, core.StateIdle)
	m.Attach(context.Background(), p, nil)

	if _, err := m.Transition(core.StateRunning, "prompt"); err != nil {
		t.Fatal(err)
	}
	lines := chain(4, sess)
	accepted := 0
	for _, l := range append(lines, lines[1], lines[2]) { // two duplicates
		if submit(t, p, l).Status == core.Accepted {
			accepted++
		}
	}
	if _, err := m.Transition(core.StateIdle, "done"); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	evs := ndjson(t, buf.Bytes())
	mu.Unlock()
	var kinds []string
	for i, ev := range evs {
		checkSDKShape(t, i, ev)
		if ev["session_id"] != sess {
			t.Errorf("event %d of session %v", i, ev["session_id"])
		}
		k := ev["type"].(string)
		if st, ok := ev["subtype"].(string); ok {
			k += "/" + st
		}
		kinds = append(kinds, k)
	}
	want := []string{"system/init", "system/session_state_changed", "user", "assistant", "user", "assistant", "system/session_state_changed"}
	if accepted != 4 || !slices.Equal(kinds, want) {
		t.Fatalf("accepted %d; events %v, want %v", accepted, kinds, want)
	}
	if evs[0]["cwd"] != "/home/alice/src/shop" {
		t.Errorf("init %v", evs[0])
	}
	// The stream's counters are in the pipeline's stats.
	for _, s := range p.Stats().Sinks {
		if s.ID == "events/stdout" && s.Counters["events_written"] != int64(len(evs)) {
			t.Errorf("stats %+v", s)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// A writer that fails stops the stream: the sink does not fail (the
// pipeline would retry and repeat events), Flush reports the error.
func TestEventSinkBrokenWriter(t *testing.T) {
	boom := errors.New("broken pipe")
	calls := 0
	stream := core.NewEventStream(writerFunc(func([]byte) (int, error) { calls++; return 0, boom }))
	sink := core.NewEventSink(stream)
	ctx := context.Background()
	es := []core.Entry{coretest.MustEntry(t, coretest.Line(core.TypeUser, sess, uid(0), ""))}
	if err := sink.Write(ctx, es); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if err := sink.Write(ctx, es); err != nil {
		t.Fatalf("second Write: %v", err)
	}
	if err := sink.Flush(ctx); !errors.Is(err, boom) {
		t.Fatalf("Flush: %v", err)
	}
	if err := sink.Shutdown(ctx); !errors.Is(err, boom) {
		t.Fatalf("Shutdown: %v", err)
	}
	if r := sink.Report(); calls != 1 || r["events_dropped"] != 3 || r["events_written"] != 0 {
		t.Fatalf("%d writes, report %v", calls, r)
	}
}
