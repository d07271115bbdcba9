package core

// Lifecycle entries: scribe's own record of a session's life (seed 001's
// session_start, session_end, resumed, model_change, cost_update,
// context_window, memory_update, interrupted_turn and compaction), carried
// through the pipeline like any entry.
//
// Each is one complete JSON line of scribe's own type "scribe-lifecycle",
// with the event in "event", the event's fields, and an envelope:
//
//	{"type":"scribe-lifecycle","event":"session_start","model":"claude-sonnet-4-5",
//	 "tools":["Bash","Read"],"branch":"main","sessionId":"…","cwd":"/home/alice/src/shop",
//	 "uuid":"…","timestamp":"2026-01-10T11:00:02.267Z"}
//
// The uuid makes dedup apply: by default it is derived from the rest of the
// line (session, event, time, fields), so submitting the same event twice
// stores it once.
//
// # Where they are stored
//
// Not in Claude Code's transcript. The SDK's getSessionMessages and
// forkSession skip lines of a type they do not know, but its listSessions
// (and the CLI's /resume picker, which reads the same windows) does not: it
// takes createdAt from the first "timestamp" in the first 64 KiB, cwd from
// the first "cwd" there, gitBranch from the last "gitBranch" in the last
// 64 KiB, and reports fileSize and lastModified (the file's mtime). A
// lifecycle line in the transcript therefore changes the listing whatever
// its keys: at the least fileSize and lastModified, and createdAt, cwd or
// gitBranch when it sits in a window with those keys (shown with the real
// SDK by TestLifecycleInTranscriptChangesTheSDKListing in sinks/jsonl). So
// the local store keeps these lines, and checkpoints, in a sidecar beside
// the transcript, <project>/<sessionId>/scribe-lifecycle.jsonl, which no
// reader of Claude Code opens (the SDK looks in <sessionId>/ only for
// subagents/, custom-title.json and archived.json) and which goes away with
// the session (deleteSession and the CLI's retention sweep remove
// <sessionId>/ whole). IsLifecycleRecord names the types that go there.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// TypeLifecycle is the entry type of lifecycle events. It is not a chain
// row, and stores keep it out of Claude Code's transcripts.
const TypeLifecycle = "scribe-lifecycle"

// IsLifecycleRecord reports whether entries of this type are scribe's own
// lifecycle records (lifecycle events and checkpoints): lines a store must
// keep out of Claude Code's transcripts (the local store writes them to the
// session's sidecar file).
func IsLifecycleRecord(typ string) bool { return typ == TypeLifecycle || typ == TypeCheckpoint }

// LifecycleEvent names a lifecycle event.
type LifecycleEvent string

// The lifecycle events (seed 001's metadata and state entry types).
const (
	LifecycleSessionStart    LifecycleEvent = "session_start"
	LifecycleSessionEnd      LifecycleEvent = "session_end"
	LifecycleResumed         LifecycleEvent = "resumed"
	LifecycleModelChange     LifecycleEvent = "model_change"
	LifecycleCostUpdate      LifecycleEvent = "cost_update"
	LifecycleContextWindow   LifecycleEvent = "context_window"
	LifecycleMemoryUpdate    LifecycleEvent = "memory_update"
	LifecycleInterruptedTurn LifecycleEvent = "interrupted_turn"
	LifecycleCompaction      LifecycleEvent = "compaction"
	// LifecycleRedaction: secrets were replaced by markers (the redact
	// processor, or `scribe redact` on a stored session).
	LifecycleRedaction LifecycleEvent = "redaction"
)

// LifecycleData is an event's own fields: one of SessionStart, SessionEnd,
// SessionResumed, ModelChange, CostUpdate, ContextWindow, MemoryUpdate,
// TurnInterrupted, Compaction, or UnknownLifecycle for an event this
// version does not know.
type LifecycleData interface {
	LifecycleEvent() LifecycleEvent
}

// SessionStart: a session began (or a host began writing one).
type SessionStart struct {
	Model string `json:"model,omitempty"`
	// Tools are the tool names the session may use.
	Tools []string `json:"tools"`
	// Branch is the git branch of the session's cwd, if any. (The cwd is
	// the envelope's.)
	Branch string `json:"branch,omitempty"`
	// Source says how the session began, as Claude Code's SessionStart
	// hook tells it (startup, resume, clear, compact, fork).
	Source string `json:"source,omitempty"`
}

// EndReason says how a session ended.
type EndReason string

// The ways a session ends.
const (
	// EndCompleted: the host finished the session normally.
	EndCompleted EndReason = "completed"
	// EndInterrupted: the session stopped mid-turn (Ctrl+C, a signal, a
	// crash noticed later).
	EndInterrupted EndReason = "interrupted"
	// EndError: the host gave up on an error.
	EndError EndReason = "error"
)

// SessionEnd: a session ended.
type SessionEnd struct {
	Reason EndReason `json:"reason"`
	// Detail says more, for people (an error message, a signal).
	Detail string `json:"detail,omitempty"`
	// LastMessageUUID is the uuid of the conversation's last message.
	LastMessageUUID string `json:"lastMessageUuid,omitempty"`
}

// SessionResumed: a session was taken up again.
type SessionResumed struct {
	// From is the loader that served the transcript.
	From string `json:"from,omitempty"`
	// LeafUUID is the message the session goes on from.
	LeafUUID string `json:"leafUuid,omitempty"`
	// Classification is how the transcript had ended.
	Classification Interruption `json:"classification,omitempty"`
	// Repairs counts the rows the resume appended.
	Repairs int `json:"repairs,omitempty"`
	// Checkpoint and Commit are set when the session was resumed at a
	// checkpoint.
	Checkpoint string `json:"checkpoint,omitempty"`
	Commit     string `json:"commit,omitempty"`
}

// ModelChange: the session switched models.
type ModelChange struct {
	Model         string `json:"model"`
	PreviousModel string `json:"previousModel,omitempty"`
}

// CostUpdate: the session's running totals so far.
type CostUpdate struct {
	TotalCostUSD             float64 `json:"totalCostUsd"`
	InputTokens              int64   `json:"inputTokens,omitempty"`
	OutputTokens             int64   `json:"outputTokens,omitempty"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens,omitempty"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens,omitempty"`
}

// ContextWindow: how full the model's context is.
type ContextWindow struct {
	UsedTokens int64 `json:"usedTokens"`
	// MaxTokens is the window's size (0: unknown).
	MaxTokens int64 `json:"maxTokens,omitempty"`
}

// MemoryUpdate: a memory file (CLAUDE.md, auto-memory) changed.
type MemoryUpdate struct {
	Path string `json:"path"`
	// Scope is project, user or local, as the host names it.
	Scope string `json:"scope,omitempty"`
	// Action is created, updated or deleted, as the host names it.
	Action string `json:"action,omitempty"`
}

// TurnInterrupted: a turn stopped before it finished.
type TurnInterrupted struct {
	// Kind is InterruptedPrompt or InterruptedTurn.
	Kind Interruption `json:"kind"`
	// LeafUUID is the last row written before the interruption.
	LeafUUID string `json:"leafUuid,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// Compaction: the conversation was compacted.
type Compaction struct {
	// Trigger is manual or auto.
	Trigger    string `json:"trigger,omitempty"`
	PreTokens  int64  `json:"preTokens,omitempty"`
	PostTokens int64  `json:"postTokens,omitempty"`
	// BoundaryUUID is the compact_boundary row's uuid.
	BoundaryUUID string `json:"boundaryUuid,omitempty"`
}

// Redaction: secrets in the session were replaced by markers. It names
// the rules and counts, never a value.
type Redaction struct {
	// By is what redacted: a processor id ("redact/default") or
	// "scribe redact".
	By string `json:"by"`
	// Rules counts the secrets replaced, by rule id.
	Rules map[string]int64 `json:"rules"`
	// Entries counts the lines that changed.
	Entries int64 `json:"entries"`
}

// Auditor is implemented by processors that keep an audit of what they
// did (the redact processor's Redaction records). A host submits
// AuditEntries before it shuts the pipeline down, so the records reach
// each session's sidecar with the session's other lifecycle records.
type Auditor interface {
	AuditEntries() ([]Entry, error)
}

// UnknownLifecycle is an event of a name this version does not know;
// Fields holds its fields (a JSON object, envelope left out).
type UnknownLifecycle struct {
	Event  LifecycleEvent
	Fields json.RawMessage
}

// The events' names.
func (SessionStart) LifecycleEvent() LifecycleEvent       { return LifecycleSessionStart }
func (SessionEnd) LifecycleEvent() LifecycleEvent         { return LifecycleSessionEnd }
func (SessionResumed) LifecycleEvent() LifecycleEvent     { return LifecycleResumed }
func (ModelChange) LifecycleEvent() LifecycleEvent        { return LifecycleModelChange }
func (CostUpdate) LifecycleEvent() LifecycleEvent         { return LifecycleCostUpdate }
func (ContextWindow) LifecycleEvent() LifecycleEvent      { return LifecycleContextWindow }
func (MemoryUpdate) LifecycleEvent() LifecycleEvent       { return LifecycleMemoryUpdate }
func (TurnInterrupted) LifecycleEvent() LifecycleEvent    { return LifecycleInterruptedTurn }
func (Compaction) LifecycleEvent() LifecycleEvent         { return LifecycleCompaction }
func (Redaction) LifecycleEvent() LifecycleEvent          { return LifecycleRedaction }
func (u UnknownLifecycle) LifecycleEvent() LifecycleEvent { return u.Event }

// LifecycleMeta is a lifecycle entry's envelope.
type LifecycleMeta struct {
	// SessionID is required.
	SessionID string
	// CWD is the session's working directory; it names the project folder
	// of a session the store has not written yet.
	CWD string
	// At is when it happened; zero means now. Stored in UTC with
	// milliseconds, as transcript timestamps are.
	At time.Time
	// UUID is the entry's uuid; "" derives one from the rest of the entry.
	UUID string
}

// lifecycleEnvelope are the keys an event's fields may not use.
var lifecycleEnvelope = map[string]bool{"type": true, "event": true, "sessionId": true, "cwd": true, "uuid": true, "timestamp": true}

// LifecycleEntry returns the entry of one lifecycle event, ready to Submit.
func LifecycleEntry(m LifecycleMeta, d LifecycleData) (Entry, error) {
	if d == nil {
		return Entry{}, errors.New("lifecycle entry: no event")
	}
	ev := d.LifecycleEvent()
	if ev == "" {
		return Entry{}, errors.New("lifecycle entry: empty event name")
	}
	if m.SessionID == "" {
		return Entry{}, fmt.Errorf("lifecycle entry %s: no session id", ev)
	}
	if s, ok := d.(SessionStart); ok && s.Tools == nil {
		s.Tools = []string{} // a list, as the SDK's init message has
		d = s
	}
	fields, err := lifecycleFields(d)
	if err != nil {
		return Entry{}, fmt.Errorf("lifecycle entry %s: %w", ev, err)
	}
	if m.At.IsZero() {
		m.At = time.Now()
	}
	ts := m.At.UTC().Format(timestampLayout)
	id := m.UUID
	if id == "" {
		id = nameUUID(TypeLifecycle + "\x00" + m.SessionID + "\x00" + string(ev) + "\x00" +
			strconv.FormatInt(m.At.UnixNano(), 10) + "\x00" + m.CWD + "\x00" + string(fields))
	}
	var o jsonObject
	o.str("type", TypeLifecycle)
	o.str("event", string(ev))
	if len(fields) > 0 {
		o.b = append(append(o.b, ','), fields...)
	}
	o.str("sessionId", m.SessionID)
	if m.CWD != "" {
		o.str("cwd", m.CWD)
	}
	o.str("uuid", id)
	o.str("timestamp", ts)
	e, err := ParseEntryOwned(o.bytes())
	if err != nil {
		return Entry{}, fmt.Errorf("lifecycle entry %s: %w", ev, err)
	}
	return e, nil
}

// lifecycleFields returns the members of d's JSON object, without braces
// ("" for no members), refusing envelope keys.
func lifecycleFields(d LifecycleData) ([]byte, error) {
	var obj []byte
	if u, ok := d.(UnknownLifecycle); ok {
		obj = bytes.TrimSpace(u.Fields)
		if len(obj) == 0 {
			obj = []byte("{}")
		}
	} else {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(d); err != nil {
			return nil, err
		}
		obj = bytes.TrimSpace(buf.Bytes())
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(obj, &keys); err != nil || keys == nil {
		return nil, fmt.Errorf("the event's fields are not a JSON object")
	}
	for k := range keys {
		if lifecycleEnvelope[k] {
			return nil, fmt.Errorf("the event's fields use the envelope key %q", k)
		}
	}
	if u, ok := d.(UnknownLifecycle); ok && bytes.ContainsAny(u.Fields, "\n\r") {
		// One line per entry: re-encode compactly.
		var c bytes.Buffer
		if err := json.Compact(&c, obj); err != nil {
			return nil, err
		}
		obj = c.Bytes()
	}
	inner := bytes.TrimSpace(obj[1 : len(obj)-1])
	return inner, nil
}

// Lifecycle is a parsed lifecycle entry.
type Lifecycle struct {
	LifecycleMeta
	Event LifecycleEvent
	// Data holds the event's fields as the type of its event (a value, not
	// a pointer), or an UnknownLifecycle.
	Data LifecycleData
}

// ErrNotLifecycle is returned by ParseLifecycle for an entry of another type.
var ErrNotLifecycle = errors.New("not a lifecycle entry")

// ParseLifecycle reads a lifecycle entry back.
func ParseLifecycle(e *Entry) (Lifecycle, error) {
	if e.Type != TypeLifecycle {
		return Lifecycle{}, fmt.Errorf("%w: type %q", ErrNotLifecycle, e.Type)
	}
	var env struct {
		Event     string `json:"event"`
		SessionID string `json:"sessionId"`
		CWD       string `json:"cwd"`
		UUID      string `json:"uuid"`
		Timestamp string `json:"timestamp"`
	}
	if err := json.Unmarshal(e.Raw, &env); err != nil {
		return Lifecycle{}, fmt.Errorf("lifecycle entry: %w", err)
	}
	if env.Event == "" {
		return Lifecycle{}, errors.New("lifecycle entry: no event")
	}
	l := Lifecycle{Event: LifecycleEvent(env.Event)}
	l.SessionID, l.CWD, l.UUID = env.SessionID, env.CWD, env.UUID
	if t, err := time.Parse(time.RFC3339Nano, env.Timestamp); err == nil {
		l.At = t
	}
	var err error
	switch l.Event {
	case LifecycleSessionStart:
		l.Data, err = decodeLifecycle[SessionStart](e.Raw)
	case LifecycleSessionEnd:
		l.Data, err = decodeLifecycle[SessionEnd](e.Raw)
	case LifecycleResumed:
		l.Data, err = decodeLifecycle[SessionResumed](e.Raw)
	case LifecycleModelChange:
		l.Data, err = decodeLifecycle[ModelChange](e.Raw)
	case LifecycleCostUpdate:
		l.Data, err = decodeLifecycle[CostUpdate](e.Raw)
	case LifecycleContextWindow:
		l.Data, err = decodeLifecycle[ContextWindow](e.Raw)
	case LifecycleMemoryUpdate:
		l.Data, err = decodeLifecycle[MemoryUpdate](e.Raw)
	case LifecycleInterruptedTurn:
		l.Data, err = decodeLifecycle[TurnInterrupted](e.Raw)
	case LifecycleCompaction:
		l.Data, err = decodeLifecycle[Compaction](e.Raw)
	case LifecycleRedaction:
		l.Data, err = decodeLifecycle[Redaction](e.Raw)
	default:
		var m map[string]json.RawMessage
		if err = json.Unmarshal(e.Raw, &m); err == nil {
			for k := range lifecycleEnvelope {
				delete(m, k)
			}
			var fields []byte
			fields, err = json.Marshal(m)
			l.Data = UnknownLifecycle{Event: l.Event, Fields: fields}
		}
	}
	if err != nil {
		return Lifecycle{}, fmt.Errorf("lifecycle entry %s: %w", l.Event, err)
	}
	return l, nil
}

func decodeLifecycle[T LifecycleData](raw []byte) (LifecycleData, error) {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// Describe is a one-line account of the event for people.
func (l Lifecycle) Describe() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	num := func(k string, n int64) {
		if n != 0 {
			add(k, strconv.FormatInt(n, 10))
		}
	}
	switch d := l.Data.(type) {
	case SessionStart:
		add("model", d.Model)
		if len(d.Tools) > 0 {
			add("tools", strings.Join(d.Tools, ","))
		}
		add("cwd", l.CWD)
		add("branch", d.Branch)
	case SessionEnd:
		add("reason", string(d.Reason))
		add("detail", d.Detail)
		add("last", d.LastMessageUUID)
	case SessionResumed:
		add("from", d.From)
		add("leaf", d.LeafUUID)
		add("classification", string(d.Classification))
		num("repairs", int64(d.Repairs))
		add("checkpoint", d.Checkpoint)
		add("commit", d.Commit)
	case ModelChange:
		add("model", d.Model)
		add("previous", d.PreviousModel)
	case CostUpdate:
		add("cost_usd", strconv.FormatFloat(d.TotalCostUSD, 'f', -1, 64))
		num("input_tokens", d.InputTokens)
		num("output_tokens", d.OutputTokens)
		num("cache_creation_tokens", d.CacheCreationInputTokens)
		num("cache_read_tokens", d.CacheReadInputTokens)
	case ContextWindow:
		add("used_tokens", strconv.FormatInt(d.UsedTokens, 10))
		num("max_tokens", d.MaxTokens)
	case MemoryUpdate:
		add("path", d.Path)
		add("scope", d.Scope)
		add("action", d.Action)
	case TurnInterrupted:
		add("kind", string(d.Kind))
		add("leaf", d.LeafUUID)
		add("detail", d.Detail)
	case Compaction:
		add("trigger", d.Trigger)
		num("pre_tokens", d.PreTokens)
		num("post_tokens", d.PostTokens)
		add("boundary", d.BoundaryUUID)
	case Redaction:
		add("by", d.By)
		num("entries", d.Entries)
		rules := make([]string, 0, len(d.Rules))
		for r, n := range d.Rules {
			rules = append(rules, r+":"+strconv.FormatInt(n, 10))
		}
		sort.Strings(rules)
		add("rules", strings.Join(rules, ","))
	case UnknownLifecycle:
		parts = append(parts, string(d.Fields))
	}
	if len(parts) == 0 {
		return string(l.Event)
	}
	return string(l.Event) + " " + strings.Join(parts, " ")
}

// SubmitLifecycle submits one lifecycle event (LifecycleEntry) through the
// guards and dedup to every sink.
func (p *Pipeline) SubmitLifecycle(ctx context.Context, m LifecycleMeta, d LifecycleData) (Result, error) {
	e, err := LifecycleEntry(m, d)
	if err != nil {
		return Result{}, err
	}
	return p.Submit(ctx, e)
}

// LifecycleTranscriptDeleted: a transcript scribe followed was deleted
// from Claude Code's folder (its retention sweep, a user's rm).
const LifecycleTranscriptDeleted LifecycleEvent = "transcript_deleted"

// TranscriptDeleted: a followed transcript disappeared; what was
// mirrored stays in every sink.
type TranscriptDeleted struct {
	// Path is the file that was deleted.
	Path string `json:"path"`
	// AgentID is set when it was a subagent's transcript.
	AgentID string `json:"agentId,omitempty"`
	// MirroredBytes is how much of it had been read and sent.
	MirroredBytes int64 `json:"mirroredBytes"`
	// LostBytes is what it held beyond that when last seen (a torn last
	// line, or lines written since the last look), which no sink has. It
	// is a lower bound: what was written between the last look and the
	// deletion is not known.
	LostBytes int64 `json:"lostBytes,omitempty"`
}

// LifecycleEvent names the event.
func (TranscriptDeleted) LifecycleEvent() LifecycleEvent { return LifecycleTranscriptDeleted }
