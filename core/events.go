package core

// Session events: state changes through the pipeline (Pipeline.SubmitState,
// StateMachine.Attach), and the event stream in the Claude Agent SDK's style
// (EventStream, EventSink).
//
// A state change travels as its "scribe-state" entry (StateChange.Entry),
// through the guards and dedup like any entry. A sink that forwards entries
// forwards it: the events sink sends it to the server, which stores it and
// sets the session's state. The local store (jsonl) skips it: Claude Code's
// readers must not meet it in a transcript.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// SubmitState submits the change as its "scribe-state" entry: through the
// guards and dedup as any entry, so the same change submitted twice is
// stored once.
func (p *Pipeline) SubmitState(ctx context.Context, c StateChange) (Result, error) {
	e, err := c.Entry()
	if err != nil {
		return Result{}, err
	}
	return p.Submit(ctx, e)
}

// Attach submits every later transition of m to p (Pipeline.SubmitState),
// from a listener (OnChange): entries arrive in the order of the
// transitions, and a refused transition submits nothing. Each submission
// uses ctx. report, when not nil, is called with each outcome (a guard may
// refuse a state entry as any other); without it, errors are logged with
// the pipeline's logger. The returned function detaches (safe to call
// twice).
//
// The listener runs as StateMachine describes: a transition made while
// another goroutine delivers is submitted by that goroutine, in order, so
// Transition may return before its entry is submitted.
func (m *StateMachine) Attach(ctx context.Context, p *Pipeline, report func(StateChange, Result, error)) (detach func()) {
	return m.OnChange(func(c StateChange) {
		res, err := p.SubmitState(ctx, c)
		switch {
		case report != nil:
			report(c, res, err)
		case err != nil:
			p.log.Warn("state change not submitted", "session", c.SessionID, "from", c.From, "to", c.To, "error", err)
		}
	})
}

// Event types and subtypes of the event stream.
const (
	EventSystem      = "system"
	EventUser        = TypeUser
	EventAssistant   = TypeAssistant
	EventScribeEntry = "scribe_entry"
	EventScribeAck   = "scribe_ack"

	SubtypeInit                = "init"
	SubtypeSessionStateChanged = "session_state_changed"
)

// SessionInit is what a system/init event says of a session. An empty
// field is unknown: a string is written as null, a list as [].
type SessionInit struct {
	SessionID         string
	CWD               string
	Model             string
	PermissionMode    string
	ClaudeCodeVersion string
	Tools             []string
	// UUID of the event; empty derives one from the session.
	UUID string
}

// Event is one line of the event stream (see EventStream for the format).
// Which fields count depends on Type (and Subtype); MarshalJSON writes the
// SDK's shape for each.
type Event struct {
	Type      string
	Subtype   string
	SessionID string
	UUID      string

	// Init is the system/init event's content.
	Init *SessionInit

	// State, From and Reason: system/session_state_changed.
	State, From State
	Reason      string

	// Timestamp: user, assistant and session_state_changed events.
	Timestamp string

	// Message, IsSynthetic, AgentID and ToolUseResult: user and assistant
	// events. parent_tool_use_id is always null.
	Message       json.RawMessage
	IsSynthetic   bool
	AgentID       string
	ToolUseResult json.RawMessage

	// Entry is a scribe_entry event's line.
	Entry json.RawMessage

	// AckedLines: scribe_ack.
	AckedLines int64
}

// InitEvent returns the system/init event of a session.
func InitEvent(init SessionInit) Event {
	return Event{Type: EventSystem, Subtype: SubtypeInit, SessionID: init.SessionID, UUID: init.UUID, Init: &init}
}

// entryFields are the parts of an entry the stream reads.
type entryFields struct {
	Message        json.RawMessage `json:"message"`
	ToolUseResult  json.RawMessage `json:"toolUseResult"`
	Version        string          `json:"version"`
	PermissionMode string          `json:"permissionMode"`
	State          string          `json:"state"`
	From           string          `json:"from"`
	Reason         string          `json:"reason"`
}

func readEntryFields(e *Entry) entryFields {
	var f entryFields
	// The line is valid JSON (ParseEntry); a field of an unexpected type
	// is left empty and the rest still decoded.
	_ = json.Unmarshal(e.Raw, &f)
	return f
}

// EventOf returns the event an entry becomes on the stream.
func EventOf(e Entry) Event {
	f := readEntryFields(&e)
	return eventOf(&e, &f)
}

func eventOf(e *Entry, f *entryFields) Event {
	ev := Event{SessionID: e.SessionID, UUID: e.UUID}
	switch {
	case e.IsMessage() && e.UUID != "" && isJSONObject(f.Message):
		ev.Type = e.Type
		ev.Message = f.Message
		ev.Timestamp = e.Timestamp
		ev.IsSynthetic = e.Type == TypeUser && e.IsMeta
		if e.IsSidechain && e.AgentID != "" {
			ev.AgentID = e.AgentID
		}
		if e.Type == TypeUser && len(f.ToolUseResult) > 0 && !bytes.Equal(f.ToolUseResult, []byte("null")) {
			ev.ToolUseResult = f.ToolUseResult
		}
	case e.Type == TypeScribeState && State(f.State).Valid():
		ev.Type, ev.Subtype = EventSystem, SubtypeSessionStateChanged
		ev.State, ev.From, ev.Reason = State(f.State), State(f.From), f.Reason
		ev.Timestamp = e.Timestamp
	default:
		ev.Type = EventScribeEntry
		ev.Entry = e.Raw
	}
	return ev
}

func isJSONObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

// MarshalJSON writes the event in the SDK's shape, on one line.
func (ev Event) MarshalJSON() ([]byte, error) {
	return ev.appendJSON(nil), nil
}

func (ev Event) appendJSON(dst []byte) []byte {
	var o jsonObject
	opt := func(k, v string) {
		if v != "" {
			o.str(k, v)
		}
	}
	orNull := func(k, v string) {
		if v == "" {
			o.raw(k, []byte("null"))
		} else {
			o.str(k, v)
		}
	}
	o.str("type", ev.Type)
	switch {
	case ev.Type == EventSystem && ev.Subtype == SubtypeInit:
		in := SessionInit{SessionID: ev.SessionID, UUID: ev.UUID}
		if ev.Init != nil {
			in = *ev.Init
		}
		o.str("subtype", SubtypeInit)
		orNull("cwd", in.CWD)
		o.str("session_id", in.SessionID)
		tools, _ := json.Marshal(nonNil(in.Tools))
		o.raw("tools", tools)
		o.raw("mcp_servers", []byte("[]"))
		orNull("model", in.Model)
		orNull("permissionMode", in.PermissionMode)
		o.raw("slash_commands", []byte("[]"))
		o.str("apiKeySource", "none")
		orNull("claude_code_version", in.ClaudeCodeVersion)
		o.raw("output_style", []byte("null"))
		o.raw("skills", []byte("[]"))
		o.raw("plugins", []byte("[]"))
		o.str("uuid", in.UUID)
	case ev.Type == EventSystem && ev.Subtype == SubtypeSessionStateChanged:
		o.str("subtype", ev.Subtype)
		o.str("state", string(ev.State))
		opt("from", string(ev.From))
		opt("reason", ev.Reason)
		opt("timestamp", ev.Timestamp)
		o.str("uuid", ev.UUID)
		o.str("session_id", ev.SessionID)
	case ev.Type == EventUser || ev.Type == EventAssistant:
		msg := oneLine(ev.Message)
		if len(msg) == 0 {
			msg = []byte("null")
		}
		o.raw("message", msg)
		o.raw("parent_tool_use_id", []byte("null"))
		if ev.IsSynthetic {
			o.boolean("isSynthetic", true)
		}
		o.str("session_id", ev.SessionID)
		o.str("uuid", ev.UUID)
		opt("timestamp", ev.Timestamp)
		opt("agent_id", ev.AgentID)
		if len(ev.ToolUseResult) > 0 {
			o.raw("tool_use_result", oneLine(ev.ToolUseResult))
		}
	case ev.Type == EventScribeAck:
		o.raw("acked_lines", strconv.AppendInt(nil, ev.AckedLines, 10))
	default: // scribe_entry, and events a host makes
		opt("subtype", ev.Subtype)
		opt("session_id", ev.SessionID)
		opt("uuid", ev.UUID)
		if len(ev.Entry) > 0 {
			o.raw("entry", oneLine(ev.Entry))
		}
	}
	return append(dst, o.bytes()...)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// oneLine returns the JSON value b without line breaks (a value between
// tokens may hold them; a string never does).
func oneLine(b []byte) []byte {
	if !bytes.ContainsAny(b, "\r\n") {
		return b
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	return buf.Bytes()
}

// maxHeldEvents bounds the events a session keeps while it waits for a
// cwd to announce.
const maxHeldEvents = 64

// EventStream writes NDJSON to w, one event a line, shaped as the SDK's
// SDKMessage stream (sdk.d.ts of @anthropic-ai/claude-agent-sdk):
//
//	{"type":"system","subtype":"init","cwd":"/home/alice/src/shop","session_id":"…","tools":[],
//	 "mcp_servers":[],"model":null,"permissionMode":"default","slash_commands":[],
//	 "apiKeySource":"none","claude_code_version":"2.1.332","output_style":null,
//	 "skills":[],"plugins":[],"uuid":"…"}
//	{"type":"user","message":{…},"parent_tool_use_id":null,"session_id":"…","uuid":"…","timestamp":"…"}
//	{"type":"assistant","message":{…},"parent_tool_use_id":null,"session_id":"…","uuid":"…","timestamp":"…"}
//	{"type":"system","subtype":"session_state_changed","state":"idle","from":"running","uuid":"…","session_id":"…"}
//	{"type":"scribe_entry","session_id":"…","uuid":"…","entry":{…}}
//
// Each session announces itself with a system/init event
// (SDKSystemMessage) before its first event. Scribe fills what a transcript
// tells: session_id; cwd, claude_code_version (the rows' "version") and
// permissionMode from the rows up to the announcement; model from an
// assistant row among them; apiKeySource is always "none" (scribe makes no
// API request). What it does not know is null (cwd, model, permissionMode,
// claude_code_version, output_style) or an empty list (tools, mcp_servers,
// slash_commands, skills, plugins); the SDK's optional fields are left
// out. A host that knows more announces the session itself (Announce). The
// init's uuid is derived from the session and its first entry, so the same
// input gives the same stream.
//
// So that the init has a cwd, a session's leading entries without one (a
// title, a queue operation, a state change: lines outside the chain) wait
// for its first chain row or entry with a cwd. Flush announces every
// session still waiting, with what it knows, and writes what waited; after
// 64 waiting events a session is announced anyway. Order within a session
// is kept; events of different sessions may interleave otherwise.
//
// Entries become events as follows (EventOf):
//
//   - user and assistant rows with a message object and a uuid:
//     SDKUserMessage / SDKAssistantMessage: message (the entry's message,
//     byte for byte), parent_tool_use_id (always null: a transcript row
//     does not name the Agent call that started its subagent), session_id,
//     uuid, timestamp; isSynthetic for a meta user row, tool_use_result
//     for a row with toolUseResult, agent_id for a subagent's sidechain row;
//   - "scribe-state" entries: SDKSessionStateChangedMessage (system /
//     session_state_changed with state, uuid and session_id), plus scribe's
//     own from, reason and timestamp;
//   - everything else (system rows, attachments, progress, titles, tags,
//     summaries, …): {"type":"scribe_entry","session_id":…,"uuid":…,
//     "entry":<the line>}, uuid only when the entry has one, session_id only
//     when it has one. The SDK has no message for these; a consumer that
//     knows only SDK messages skips a type it does not know.
//
// Hosts may write events of their own (Write); `scribe record --ack`
// writes {"type":"scribe_ack","acked_lines":N}.
//
// An EventStream is safe for concurrent use; each call's lines reach w in
// one Write, never interleaved with another's. The first failed Write of w
// stops the stream: what follows is counted as dropped, and every method
// returns that error (Err).
type EventStream struct {
	mu       sync.Mutex
	w        io.Writer
	sessions map[string]*streamSession
	waiting  []*streamSession // announced at the next Flush, in arrival order
	err      error

	events, inits, dropped int64
}

type streamSession struct {
	id        string
	announced bool
	inits     int
	facts     SessionInit
	firstKey  string   // the first entry's uuid (or line): names the init
	held      [][]byte // lines waiting for the announcement
}

// NewEventStream returns a stream writing to w.
func NewEventStream(w io.Writer) *EventStream {
	return &EventStream{w: w, sessions: make(map[string]*streamSession)}
}

func (s *EventStream) session(id string) *streamSession {
	ss := s.sessions[id]
	if ss == nil {
		ss = &streamSession{id: id, facts: SessionInit{SessionID: id}}
		s.sessions[id] = ss
	}
	return ss
}

// Announce writes a system/init event for the session, then what waited
// for it. Empty fields of init are filled from what is known of the
// session: an earlier announcement, else what its entries told. A session
// may be announced again (the SDK repeats init; the newest wins).
func (s *EventStream) Announce(init SessionInit) error {
	if init.SessionID == "" {
		return errors.New("event stream: announce without a session id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.session(init.SessionID)
	f := ss.facts
	fill := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	fill(&init.CWD, f.CWD)
	fill(&init.Model, f.Model)
	fill(&init.PermissionMode, f.PermissionMode)
	fill(&init.ClaudeCodeVersion, f.ClaudeCodeVersion)
	if init.Tools == nil {
		init.Tools = f.Tools
	}
	ss.facts = init
	ss.facts.UUID = ""
	return s.write(s.announce(nil, ss, init))
}

// announce appends the session's init and its held lines to buf.
func (s *EventStream) announce(buf []byte, ss *streamSession, init SessionInit) []byte {
	if init.UUID == "" {
		init.UUID = nameUUID("scribe-init\x00" + ss.id + "\x00" + strconv.Itoa(ss.inits) + "\x00" + ss.firstKey)
	}
	ss.inits++
	s.inits++
	buf = InitEvent(init).appendJSON(buf)
	buf = append(buf, '\n')
	for _, l := range ss.held {
		buf = append(buf, l...)
	}
	ss.held = nil
	if !ss.announced {
		ss.announced = true
		for i, w := range s.waiting {
			if w == ss {
				s.waiting = append(s.waiting[:i:i], s.waiting[i+1:]...)
				break
			}
		}
	}
	return buf
}

// Entry writes the entry's event, announcing its session first when this
// is the session's first event (leading entries outside the chain wait for
// the announcement; see EventStream). An entry without a session id is
// written without an announcement.
func (s *EventStream) Entry(e Entry) error {
	return s.Entries([]Entry{e})
}

// Entries writes the entries' events, in order.
func (s *EventStream) Entries(es []Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var buf []byte
	for i := range es {
		buf = s.entry(buf, &es[i])
	}
	return s.write(buf)
}

// State writes the change's event (as its "scribe-state" entry would).
func (s *EventStream) State(c StateChange) error {
	e, err := c.Entry()
	if err != nil {
		return err
	}
	return s.Entry(e)
}

func (s *EventStream) entry(buf []byte, e *Entry) []byte {
	f := readEntryFields(e)
	line := eventOf(e, &f).appendJSON(nil)
	line = append(line, '\n')
	if e.SessionID == "" {
		return append(buf, line...)
	}
	ss := s.session(e.SessionID)
	fa := &ss.facts
	if fa.CWD == "" {
		fa.CWD = e.CWD
	}
	if fa.ClaudeCodeVersion == "" {
		fa.ClaudeCodeVersion = f.Version
	}
	if fa.PermissionMode == "" {
		fa.PermissionMode = f.PermissionMode
	}
	if fa.Model == "" && e.Type == TypeAssistant && len(f.Message) > 0 {
		var m struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(f.Message, &m)
		fa.Model = m.Model
	}
	if ss.announced {
		return append(buf, line...)
	}
	if ss.firstKey == "" {
		ss.firstKey = e.UUID
		if ss.firstKey == "" {
			ss.firstKey = string(e.Raw)
		}
		s.waiting = append(s.waiting, ss)
	}
	ss.held = append(ss.held, line)
	if e.CWD != "" || e.IsChain() || len(ss.held) >= maxHeldEvents {
		buf = s.announce(buf, ss, ss.facts)
	}
	return buf
}

// Write writes an event as it is: a host's own, such as scribe_ack. It
// does not announce a session.
func (s *EventStream) Write(ev Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write(append(ev.appendJSON(nil), '\n'))
}

// Flush announces every session still waiting for a cwd, with what it
// knows, writes what waited, and flushes w when it has a Flush method.
func (s *EventStream) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var buf []byte
	for len(s.waiting) > 0 {
		ss := s.waiting[0]
		buf = s.announce(buf, ss, ss.facts)
	}
	if err := s.write(buf); err != nil {
		return err
	}
	if f, ok := s.w.(interface{ Flush() error }); ok {
		if err := f.Flush(); err != nil {
			s.err = fmt.Errorf("event stream: %w", err)
			return s.err
		}
	}
	return nil
}

// Err returns the error that stopped the stream, if any.
func (s *EventStream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Report returns the stream's counters: events written (init included),
// inits, events waiting for their session's init, and events dropped after
// the writer failed.
func (s *EventStream) Report() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var held int64
	for _, ss := range s.waiting {
		held += int64(len(ss.held))
	}
	return map[string]int64{
		"events_written": s.events,
		"inits":          s.inits,
		"events_held":    held,
		"events_dropped": s.dropped,
	}
}

// write writes buf (whole lines) in one call. Called with s.mu held.
func (s *EventStream) write(buf []byte) error {
	if len(buf) == 0 {
		return s.err
	}
	n := int64(bytes.Count(buf, []byte{'\n'}))
	if s.err != nil {
		s.dropped += n
		return s.err
	}
	if _, err := s.w.Write(buf); err != nil {
		s.err = fmt.Errorf("event stream: %w", err)
		s.dropped += n
		return s.err
	}
	s.events += n
	return nil
}

// EventSink is the event stream as a pipeline sink: it sees exactly the
// accepted entries, in submission order. A failed write of the stream
// never makes Write fail (a retried batch would repeat its events, and a
// stuck observer would fill its queue until Submit waits): the events are
// dropped and counted, and Flush returns the stream's error.
type EventSink struct {
	s *EventStream
}

var (
	_ Sink     = (*EventSink)(nil)
	_ Reporter = (*EventSink)(nil)
)

// NewEventSink returns a sink writing to the stream.
func NewEventSink(s *EventStream) *EventSink { return &EventSink{s: s} }

// Stream returns the sink's stream (to announce sessions, or write a
// host's own events between entries).
func (k *EventSink) Stream() *EventStream { return k.s }

// Start implements Sink.
func (k *EventSink) Start(context.Context) error { return nil }

// Write implements Sink.
func (k *EventSink) Write(_ context.Context, entries []Entry) error {
	_ = k.s.Entries(entries)
	return nil
}

// Flush implements Sink: every event of the entries written before it is
// written to the stream's writer.
func (k *EventSink) Flush(context.Context) error { return k.s.Flush() }

// Shutdown implements Sink: it flushes.
func (k *EventSink) Shutdown(context.Context) error { return k.s.Flush() }

// Report implements Reporter.
func (k *EventSink) Report() map[string]int64 { return k.s.Report() }
