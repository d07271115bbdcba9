package transcript

import (
	"encoding/json"
	"math"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/ident"
	"github.com/e0dc0000/scribe/transcript/internal/jsjson"
)

// Projection to the SDK's SessionMessage

// MessageOptions select what Messages returns.
type MessageOptions struct {
	// IncludeSystem keeps system rows (main files only), as the SDK's
	// includeSystemMessages.
	IncludeSystem bool
	// ParentToolUseID and ParentAgentID come from a subagent's
	// agent-<id>.meta.json (toolUseId, parentAgentId). Values the SDK would
	// reject are dropped.
	ParentToolUseID string
	ParentAgentID   string
}

// SessionMessage is one element of the SDK's getSessionMessages or
// getSubagentMessages result, with the SDK's JSON: the field order, names
// and omission rules of its output object.
type SessionMessage struct {
	Type                  string           `json:"type"`
	UUID                  string           `json:"uuid"`
	SessionID             json.RawMessage  `json:"session_id,omitempty"`
	Message               json.RawMessage  `json:"message,omitempty"`
	ParentToolUseID       *string          `json:"parent_tool_use_id"`
	ParentAgentID         *string          `json:"parent_agent_id"`
	InterruptedByShutdown bool             `json:"interruptedByShutdown,omitempty"`
	ToolDenialUnanswered  string           `json:"toolDenialUnanswered,omitempty"`
	ToolResultMeta        []ToolResultMeta `json:"tool_result_meta,omitempty"`
	// NamesPlanFile is an assistant row's namesPlanFile ("in_default_directory"
	// or "in_project") when its content is one block (SDK 0.3.337).
	NamesPlanFile           string          `json:"names_plan_file,omitempty"`
	IsCompactSummary        bool            `json:"isCompactSummary,omitempty"`
	IsMeta                  bool            `json:"is_meta,omitempty"`
	IsQueuedCommand         bool            `json:"isQueuedCommand,omitempty"`
	ResultEndsInWaitingNote bool            `json:"resultEndsInWaitingNote,omitempty"`
	IsCompletedLocalCommand bool            `json:"isCompletedLocalCommand,omitempty"`
	NoCommandRan            bool            `json:"noCommandRan,omitempty"` // only with IsCompletedLocalCommand
	Timestamp               json.RawMessage `json:"timestamp,omitempty"`
	Origin                  json.RawMessage `json:"origin,omitempty"`
}

// ToolResultMeta describes a tool_result that was not an execution result.
// RefusedBy, Remedy, FileRefusal, InputInvalid and InputChanged are SDK
// 0.3.337's (see toolResultMeta).
type ToolResultMeta struct {
	ID                string          `json:"id"`
	NonExecutionKind  string          `json:"non_execution_kind,omitempty"`
	CallEnded         string          `json:"call_ended,omitempty"`
	RefusedBy         string          `json:"refused_by,omitempty"`
	Remedy            json.RawMessage `json:"remedy,omitempty"`
	FileRefusal       json.RawMessage `json:"file_refusal,omitempty"`
	InputInvalid      bool            `json:"input_invalid,omitempty"`
	RewrittenByPlugin bool            `json:"rewritten_by_plugin,omitempty"`
	InputChanged      bool            `json:"input_changed,omitempty"`
}

// Messages returns the chain as the SDK's session-message objects, in
// order, before any limit or offset.
func (c Chain) Messages(opt MessageOptions) []SessionMessage {
	items := hostExpand(hostHide(c.path, c.all), c.all, c.hostRows)
	var trailingIDs map[string]bool
	if !c.side {
		items = append(items, c.trailing...)
		trailingIDs = make(map[string]bool, len(c.trailing))
		for _, r := range c.trailing {
			trailingIDs[r.uuid] = true
		}
	}
	items = markCommands(items, !c.side, trailingIDs, c.delivered)
	kept := items[:0:0]
	for _, r := range items {
		if c.side {
			if r.typ == core.TypeUser || r.typ == core.TypeAssistant {
				kept = append(kept, r)
			}
		} else if visible(r, opt.IncludeSystem) {
			kept = append(kept, r)
		}
	}
	kept = hostFold(kept)
	var tool, agent *string
	if c.side {
		if ident.RunID(opt.ParentToolUseID) {
			s := opt.ParentToolUseID
			tool = &s
		}
		if ident.Token(opt.ParentAgentID, 128) {
			s := opt.ParentAgentID
			agent = &s
		}
	}
	out := make([]SessionMessage, 0, len(kept))
	for _, r := range kept {
		out = append(out, toMessage(r, tool, agent))
	}
	return out
}

// visible is the SDK's output filter for main files.
func visible(r *row, system bool) bool {
	switch r.typ {
	case core.TypeUser, core.TypeAssistant:
	case core.TypeSystem:
		if !system {
			return false
		}
	default:
		return false
	}
	if quietClose(r) {
		return false
	}
	if r.f.get(fMeta).truthy() && !channelOrigin(r.f.get(fOrigin)) {
		return false
	}
	return !r.f.get(fSidechain).truthy() && !r.f.get(fTeam).truthy()
}

// quietClose: an assistant row that only closes a quiet turn.
func quietClose(r *row) bool {
	if r.typ != core.TypeAssistant || !r.f.get(fQuiet).isTrue() {
		return false
	}
	mi := r.m()
	if !mi.objLike || mi.content == nil || !mi.content.isArr() {
		return false
	}
	if len(mi.blocks) != 1 || !mi.blocks[0].obj || mi.blocks[0].typ != "text" {
		return false
	}
	s, ok := mi.blocks[0].text.str()
	return ok && (s == "" || s == "No response requested.")
}

// channelOrigin: meta rows from these origins are shown.
func channelOrigin(o jv) bool {
	if !o.isObj() {
		return false
	}
	k, _ := o.field("kind").str()
	switch k {
	case "channel", "observer", "observer-activity", "slack-ping", "voice-call", "peer":
		return true
	}
	return false
}

func toMessage(r *row, tool, agent *string) SessionMessage {
	f := r.f.full()
	m := SessionMessage{
		Type:            r.typ,
		UUID:            r.uuid,
		SessionID:       json.RawMessage(f[fSession]),
		Message:         json.RawMessage(f[fMessage]),
		ParentToolUseID: tool,
		ParentAgentID:   agent,
		Timestamp:       json.RawMessage(f[fTimestamp]),
	}
	m.InterruptedByShutdown = f[fInterruptedByShutdown].isTrue()
	if f[fDenialUnanswered].strEq("stream-closed") {
		m.ToolDenialUnanswered = "stream-closed"
	}
	m.ToolResultMeta = toolResultMeta(r, &f)
	if r.typ == core.TypeAssistant && (f[fNamesPlanFile].strEq("in_default_directory") || f[fNamesPlanFile].strEq("in_project")) {
		if mi := r.m(); mi.objLike && mi.content.isArr() && len(mi.blocks) == 1 {
			m.NamesPlanFile, _ = f[fNamesPlanFile].str()
		}
	}
	m.IsCompactSummary = f[fCompactSummary].isTrue()
	m.IsMeta = f[fMeta].isTrue() || m.IsCompactSummary || f[fVisibleOnly].isTrue()
	m.IsQueuedCommand = f[fQueuedCommand].isTrue()
	m.ResultEndsInWaitingNote = f[fWaitingNote].isTrue()
	m.IsCompletedLocalCommand = f[fCompletedLocal].isTrue()
	m.NoCommandRan = m.IsCompletedLocalCommand && f[fNoCommandRan].isTrue()
	if o := f[fOrigin]; !o.nullish() {
		if o = normalizeOrigin(o); o.truthy() {
			m.Origin = json.RawMessage(o)
		}
	}
	return m
}

// normalizeOrigin rebuilds a task-notification origin with only the keys
// the SDK keeps (0.3.337 adds failure, turnLimit and noReportNote); other
// origins pass through.
func normalizeOrigin(o jv) jv {
	if !o.isObj() || !o.field("kind").strEq("task-notification") {
		return o
	}
	var b objBuilder
	b.add("kind", jstr("task-notification"))
	var sub, fire, prod, run, kind, failure, turnLimit, noReport jv
	eachField(o, func(k []byte, v jv) {
		switch string(k) {
		case "subkind":
			sub = v
		case "fireReason":
			fire = v
		case "producer":
			prod = v
		case "runId":
			run = v
		case "taskKind":
			kind = v
		case "failure":
			failure = v
		case "turnLimit":
			turnLimit = v
		case "noReportNote":
			noReport = v
		}
	})
	b.add("subkind", sub)
	b.add("fireReason", fire)
	b.add("producer", prod)
	if s, ok := run.str(); ok && ident.RunID(s) {
		b.add("runId", run)
	}
	if msg, det := failure.field("message"), failure.field("details"); msg.isStr() && det.isStr() {
		var fb objBuilder
		fb.add("message", msg)
		fb.add("details", det)
		b.add("failure", fb.done())
	}
	if kind.strEq("mcp-task") {
		b.add("taskKind", kind)
	}
	if note, turns := turnLimit.field("note"), turnLimit.field("turns"); note.isStr() {
		if n, ok := jsjson.Num(turns); ok && n == math.Trunc(n) && !math.IsInf(n, 0) {
			var tb objBuilder
			tb.add("turns", jv(jsNumString(n)))
			tb.add("note", note)
			b.add("turnLimit", tb.done())
		}
	}
	if noReport.isStr() {
		b.add("noReportNote", noReport)
	}
	return b.done()
}
