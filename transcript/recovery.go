package transcript

// Recovery of an interrupted session on resume: what state the transcript's
// end is in, and which rows to append so the conversation can go on.
//
// The rules follow Claude Code's (reference §7): walk back from the end over
// the rows that carry no turn of their own, then
//
//	assistant row                          → none
//	real user prompt                       → interrupted_prompt (offer it again)
//	tool_result user row, or an attachment → interrupted_turn   (continue the turn)
//
// Every tool call of the conversation's last assistant message that has no
// result gets a synthetic error result, one row per call, as the CLI writes
// it: is_error true, the interruption notice Claude Code's own readers
// recognise, toolDenialKind "interrupted". An interrupted turn younger than
// MaxAge then gets the harness's meta prompt "Continue from where you left
// off.". The repairs are idempotent: classifying the conversation with its
// repairs appended adds no second result for any call and no second prompt.

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/transcript/internal/jsjson"
)

// The kinds of Repair.
const (
	// RepairToolResult is a synthetic error tool_result for a tool call that
	// has none.
	RepairToolResult = "synthetic_tool_result"
	// RepairContinue is the meta user prompt that continues an interrupted
	// turn.
	RepairContinue = "continue_prompt"
)

// DefaultContinueText is the text of the continue prompt, as in Claude Code
// (which lets CLAUDE_CODE_RESUME_PROMPT replace it).
const DefaultContinueText = "Continue from where you left off."

// InterruptedToolText is the content of a synthetic tool_result. It is the
// notice Claude Code writes for a call whose result was never recorded, and
// one of the interruption notices the Agent SDK's readers recognise.
const InterruptedToolText = "[Tool call interrupted: the session ended before this call's result was recorded, so its outcome is unknown. Check whether it took effect before relying on it or running it again.]"

// ClassifyAndRepair classifies a conversation (rows in chain order, root
// first, as a Rebuild returns them) and builds the rows that repair it.
// It never changes conv.
func ClassifyAndRepair(conv []core.Entry, opt core.RecoveryOptions) core.Recovery {
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	if opt.ContinueText == "" {
		opt.ContinueText = DefaultContinueText
	}
	if opt.NewUUID == nil {
		opt.NewUUID = recRandomUUID
	}
	rows := decodeRecRows(conv)
	v := recClassifyTail(rows)
	rec := core.Recovery{Class: v.class, Reason: v.why}
	if v.class == core.InterruptedPrompt && v.at >= 0 {
		rec.PromptUUID = conv[v.at].UUID
	}

	final, earlier := recOpenToolCalls(rows)
	rec.Unrepaired = earlier
	if len(final) > 0 && v.class == core.InterruptionNone && v.at >= 0 && rows[v.at].typ == core.TypeAssistant {
		rec.Class = core.InterruptedTurn
		rec.Reason = fmt.Sprintf("last assistant message has %s with no result", recPlural(len(final), "tool call"))
	} else if len(final) > 0 {
		rec.Reason += fmt.Sprintf("; %s had no result", recPlural(len(final), "tool call"))
	}

	env := recEnvelopeOf(rows, opt)
	parent := opt.Leaf
	if parent == "" && len(conv) > 0 {
		parent = conv[len(conv)-1].UUID
	}
	ts := opt.Now.UTC().Format(recTimestampLayout)
	for _, call := range final {
		id := opt.NewUUID()
		line := env.toolResultLine(parent, id, ts, call, recPromptIDBefore(rows, call.row))
		rec.Repairs = append(rec.Repairs, core.Repair{Kind: RepairToolResult, Entry: recMustParse(line), ToolUseID: call.id})
		parent = id
	}

	if rec.Class == core.InterruptedTurn {
		if age, ok := recLastAge(rows, opt.Now); ok && opt.MaxAge > 0 && age > opt.MaxAge {
			rec.Reason += fmt.Sprintf("; not continued: interrupted %s ago, older than %s", age.Round(time.Second), opt.MaxAge)
		} else {
			id := opt.NewUUID()
			line := env.continueLine(parent, id, ts, opt.ContinueText)
			rec.Repairs = append(rec.Repairs, core.Repair{Kind: RepairContinue, Entry: recMustParse(line)})
			rec.PromptUUID = id
		}
	}
	if len(earlier) > 0 {
		rec.Reason += fmt.Sprintf("; %s in earlier turns had no result and cannot be repaired by appending", recPlural(len(earlier), "tool call"))
	}
	return rec
}

const recTimestampLayout = "2006-01-02T15:04:05.000Z"

func recPlural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// ---------------------------------------------------------------------------
// Reading the rows

// recRow is what recovery, validation and state need of one row.
type recRow struct {
	e              *core.Entry
	typ            string
	apiError       bool   // isApiErrorMessage
	visibleOnly    bool   // isVisibleInTranscriptOnly
	rowSource      string // "harness" on the continue prompt
	toolDenialKind string
	attachment     string // attachment.type
	msgID          string // message.id
	hasContent     bool   // message.content is a string or an array
	text           string // message.content when it is a string
	blocks         []recBlock
	env            map[string]string // envelope fields to copy
}

// recBlock is one content block.
type recBlock struct {
	typ       string
	id        string // tool_use
	name      string // tool_use
	toolUseID string // tool_result
	text      string // a text block's text
	isError   bool
}

// recEnvelopeKeys are the fields copied from the conversation onto repairs.
var recEnvelopeKeys = []string{"promptId", "agentId", "userType", "entrypoint", "cwd", "sessionId", "version", "gitBranch", "slug"}

func decodeRecRows(conv []core.Entry) []recRow {
	rows := make([]recRow, len(conv))
	for i := range conv {
		rows[i] = decodeRecRow(&conv[i])
	}
	return rows
}

// decodeRecRow reads a row leniently: a field of an unexpected type is
// treated as absent, so one odd field does not hide the rest.
func decodeRecRow(e *core.Entry) recRow {
	r := recRow{e: e, typ: e.Type}
	var top map[string]json.RawMessage
	if json.Unmarshal(e.Raw, &top) != nil {
		return r
	}
	r.apiError = rawBool(top["isApiErrorMessage"])
	r.visibleOnly = rawBool(top["isVisibleInTranscriptOnly"])
	r.rowSource = rawString(top["rowSource"])
	r.toolDenialKind = rawString(top["toolDenialKind"])
	for _, k := range recEnvelopeKeys {
		if s := rawString(top[k]); s != "" {
			if r.env == nil {
				r.env = make(map[string]string)
			}
			r.env[k] = s
		}
	}
	if a := top["attachment"]; len(a) > 0 {
		var att map[string]json.RawMessage
		if json.Unmarshal(a, &att) == nil {
			r.attachment = rawString(att["type"])
		}
	}
	var msg map[string]json.RawMessage
	if m := top["message"]; len(m) == 0 || json.Unmarshal(m, &msg) != nil {
		return r
	}
	r.msgID = rawString(msg["id"])
	content := msg["content"]
	if json.Unmarshal(content, &r.text) == nil && len(content) > 0 && content[0] == '"' {
		r.hasContent = true
		return r
	}
	var blocks []json.RawMessage
	if json.Unmarshal(content, &blocks) != nil || len(content) == 0 || content[0] != '[' {
		return r
	}
	r.hasContent = true
	for _, raw := range blocks {
		var b map[string]json.RawMessage
		if json.Unmarshal(raw, &b) != nil {
			r.blocks = append(r.blocks, recBlock{})
			continue
		}
		rb := recBlock{
			typ:       rawString(b["type"]),
			id:        rawString(b["id"]),
			name:      rawString(b["name"]),
			toolUseID: rawString(b["tool_use_id"]),
			isError:   rawBool(b["is_error"]),
		}
		if rb.typ == "text" {
			rb.text = rawString(b["text"])
		}
		r.blocks = append(r.blocks, rb)
	}
	return r
}

func rawString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func rawBool(raw json.RawMessage) bool { return string(raw) == "true" }

func (r *recRow) hasToolResult() bool {
	for _, b := range r.blocks {
		if b.typ == "tool_result" {
			return true
		}
	}
	return false
}

// syntheticInterrupted reports a tool_result row written by a resume (ours
// or Claude Code's): every block an error result, toolDenialKind
// "interrupted".
func (r *recRow) syntheticInterrupted() bool {
	if r.toolDenialKind != "interrupted" || len(r.blocks) == 0 {
		return false
	}
	for _, b := range r.blocks {
		if b.typ != "tool_result" || !b.isError {
			return false
		}
	}
	return true
}

// lastText is the text Claude Code tests for command tags: the string
// content, or the last text block.
func (r *recRow) lastText() string {
	if len(r.blocks) == 0 {
		return r.text
	}
	for i := len(r.blocks) - 1; i >= 0; i-- {
		if r.blocks[i].typ == "text" {
			return r.blocks[i].text
		}
	}
	return ""
}

// localCommand reports the rows a local command writes: the command itself
// (<command-name> first; a prompt command starts with <command-message>
// and is a real prompt), its output, and ! bash mode input and output. None
// of them asks the model for anything.
func (r *recRow) localCommand() bool {
	t := strings.TrimLeft(r.lastText(), " \t\r\n")
	for _, p := range []string{"<command-name>", "<local-command-stdout>", "<local-command-stderr>",
		"<bash-input>", "<bash-stdout>", "<bash-stderr>"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// recNotices are the starts of the notices Claude Code writes when a turn
// stops: a user row made only of them closes the turn like a reply.
var recNotices = []string{
	"[Request interrupted by user",
	"[Request interrupted: the session ended before this agent finished.",
	"[This turn ended before it finished.]",
	"[Agent call interrupted:",
	"[Tool call did not complete:",
	"[Tool call interrupted:",
	"[Tool call result not in this copy:",
	"[Tool call skipped:",
	"The user doesn't want to take this action right now.",
}

func recIsNotice(s string) bool {
	for _, p := range recNotices {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// interruptionNotice reports a user row made only of text notices.
func (r *recRow) interruptionNotice() bool {
	if len(r.blocks) == 0 {
		return r.hasContent && recIsNotice(r.text)
	}
	for _, b := range r.blocks {
		if b.typ != "text" || !recIsNotice(b.text) {
			return false
		}
	}
	return true
}

// isHarnessPrompt reports the continue prompt of a resume.
func (r *recRow) isHarnessPrompt() bool {
	return r.typ == core.TypeUser && r.e.IsMeta && r.rowSource == "harness" && !r.hasToolResult()
}

// ---------------------------------------------------------------------------
// Classification

// recVerdict is the class, why, and the row that decided (-1 when none
// did).
type recVerdict struct {
	class core.Interruption
	why   string
	at    int
}

// recClassifyTail walks back from the end to the row that decides the class.
// Skipped: system and progress rows, API-error assistant rows, meta and
// transcript-only user rows (context, not prompts), and the synthetic
// results of an earlier resume, which are bookkeeping and not a turn: the
// row before them decides, so a repaired conversation classifies the same
// way again.
func recClassifyTail(rows []recRow) recVerdict {
	skipped := false
	for i := len(rows) - 1; i >= 0; i-- {
		r := &rows[i]
		switch r.typ {
		case core.TypeAssistant:
			if r.apiError {
				continue
			}
			if skipped {
				return recVerdict{core.InterruptedTurn, "last tool calls have only the synthetic results of an earlier resume", i}
			}
			return recVerdict{core.InterruptionNone, "last row is an assistant message", i}
		case core.TypeAttachment:
			if r.attachment == "queued_command" {
				return recVerdict{core.InterruptedPrompt, "last row is a queued prompt", i}
			}
			return recVerdict{core.InterruptedTurn, fmt.Sprintf("last row is an attachment (%s)", r.attachment), i}
		case core.TypeUser:
			switch {
			case r.hasToolResult():
				if r.syntheticInterrupted() {
					skipped = true
					continue
				}
				return recVerdict{core.InterruptedTurn, "last row is a tool_result", i}
			case r.e.IsCompactSummary:
				return recVerdict{core.InterruptionNone, "last row is a compact summary", i}
			case r.isHarnessPrompt():
				return recVerdict{core.InterruptedPrompt, "last row is an unanswered continue prompt", i}
			case r.e.IsMeta || r.visibleOnly:
				continue
			case r.interruptionNotice():
				return recVerdict{core.InterruptionNone, "last row is an interruption notice: the turn was stopped", i}
			case r.localCommand():
				return recVerdict{core.InterruptionNone, "last row is a local command", i}
			}
			return recVerdict{core.InterruptedPrompt, "last row is a user prompt", i}
		}
	}
	return recVerdict{core.InterruptionNone, "no message rows", -1}
}

// recOpenCall is a tool call without a result.
type recOpenCall struct {
	id, name  string
	row       int    // the assistant row holding it
	assistant string // that row's uuid
}

// recOpenToolCalls finds the tool calls with no tool_result in any later user
// row: those of the conversation's last assistant message (its rows share
// one message.id; API-error rows do not count), and those of earlier turns.
// A call id seen twice counts once, at its last appearance.
func recOpenToolCalls(rows []recRow) (final []recOpenCall, earlier []string) {
	finalRow := make(map[int]bool)
	lastID, found := "", false
	for i := len(rows) - 1; i >= 0; i-- {
		r := &rows[i]
		if r.typ != core.TypeAssistant || r.apiError {
			continue
		}
		if !found {
			found, lastID = true, r.msgID
			finalRow[i] = true
			if lastID == "" {
				break
			}
			continue
		}
		if r.msgID != lastID {
			break
		}
		finalRow[i] = true
	}

	answered := make(map[string]bool)
	seen := make(map[string]bool)
	var open []recOpenCall // newest first
	for i := len(rows) - 1; i >= 0; i-- {
		r := &rows[i]
		switch {
		case r.typ == core.TypeUser:
			for _, b := range r.blocks {
				if b.typ == "tool_result" && b.toolUseID != "" {
					answered[b.toolUseID] = true
				}
			}
		case r.typ == core.TypeAssistant && !r.apiError:
			for j := len(r.blocks) - 1; j >= 0; j-- {
				b := r.blocks[j]
				if b.typ != "tool_use" || b.id == "" || answered[b.id] || seen[b.id] {
					continue
				}
				seen[b.id] = true
				open = append(open, recOpenCall{id: b.id, name: b.name, row: i, assistant: r.e.UUID})
			}
		}
	}
	for k := len(open) - 1; k >= 0; k-- {
		if finalRow[open[k].row] {
			final = append(final, open[k])
		} else {
			earlier = append(earlier, open[k].id)
		}
	}
	return final, earlier
}

// recPromptIDBefore is the promptId of the turn a row belongs to: that of the
// nearest user row at or before it that has one.
func recPromptIDBefore(rows []recRow, at int) string {
	for i := at; i >= 0; i-- {
		if rows[i].typ == core.TypeUser && rows[i].env["promptId"] != "" {
			return rows[i].env["promptId"]
		}
	}
	return ""
}

// recLastAge is how long ago the conversation's last timestamped row was
// written. The synthetic results of an earlier resume do not count: they
// say when the session was resumed, not when it stopped.
func recLastAge(rows []recRow, now time.Time) (time.Duration, bool) {
	for i := len(rows) - 1; i >= 0; i-- {
		e := rows[i].e
		if e.Timestamp == "" || rows[i].syntheticInterrupted() {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, e.Timestamp)
		if err != nil {
			continue
		}
		return now.Sub(t), true
	}
	return 0, false
}

// stateQuestionTools are the tools whose call waits for the user by design.
var stateQuestionTools = map[string]bool{
	"AskUserQuestion": true, // a question with choices
	"ExitPlanMode":    true, // the plan, for the user's approval
}

// StateFromTail derives the last known state from the end of a transcript
// (conversation rows in chain order, root first). The row that decides is
// the one ClassifyAndRepair's walk back finds (system, progress, API-error,
// meta context rows and synthetic interrupted results are stepped over):
//
//   - a user prompt, the continue prompt, a tool_result or an attachment:
//     a turn is in flight, running;
//   - an assistant message with a tool call that has no result: if one of
//     those calls is AskUserQuestion or ExitPlanMode, requires_action; else
//     running (a tool is working; a transcript cannot tell that from a
//     permission prompt, which leaves no row);
//   - anything else (an answered assistant message, an interruption notice,
//     a local command, a compact summary, nothing): idle.
func StateFromTail(conv []core.Entry) core.State {
	rows := decodeRecRows(conv)
	v := recClassifyTail(rows)
	if v.at < 0 {
		return core.StateIdle
	}
	switch rows[v.at].typ {
	case core.TypeAssistant:
		final, _ := recOpenToolCalls(rows)
		if len(final) == 0 {
			return core.StateIdle
		}
		for _, c := range final {
			if stateQuestionTools[c.name] {
				return core.StateRequiresAction
			}
		}
		return core.StateRunning
	case core.TypeAttachment:
		return core.StateRunning
	}
	if v.class == core.InterruptionNone {
		return core.StateIdle
	}
	return core.StateRunning
}

// ---------------------------------------------------------------------------
// Writing the repairs

// recEnvelope holds what every repair row is stamped with.
type recEnvelope struct {
	sidechain bool
	agentID   string
	fields    map[string]string // userType, entrypoint, cwd, sessionId, version, gitBranch, slug
}

func recEnvelopeOf(rows []recRow, opt core.RecoveryOptions) recEnvelope {
	env := recEnvelope{fields: make(map[string]string)}
	if n := len(rows); n > 0 {
		last := rows[n-1].e
		env.sidechain = last.IsSidechain
		if last.IsSidechain {
			env.agentID = last.AgentID
		}
	}
	for _, k := range []string{"userType", "entrypoint", "cwd", "sessionId", "version", "gitBranch", "slug"} {
		for i := len(rows) - 1; i >= 0; i-- {
			if v := rows[i].env[k]; v != "" {
				env.fields[k] = v
				break
			}
		}
	}
	if opt.SessionID != "" {
		env.fields["sessionId"] = opt.SessionID
	}
	if opt.CWD != "" {
		env.fields["cwd"] = opt.CWD
	}
	return env
}

// head writes the keys before the message's own: parentUuid, isSidechain,
// promptId?, agentId?.
func (env recEnvelope) head(o *jsjson.Object, parent, promptID string) {
	o.SetString("parentUuid", parent)
	o.Set("isSidechain", jsjson.Bool(env.sidechain))
	if promptID != "" {
		o.SetString("promptId", promptID)
	}
	if env.agentID != "" {
		o.SetString("agentId", env.agentID)
	}
}

// tail writes the keys after the message's own, in Claude Code's order.
func (env recEnvelope) tail(o *jsjson.Object) {
	for _, k := range []string{"userType", "entrypoint", "cwd", "sessionId", "version", "gitBranch", "slug"} {
		if v, ok := env.fields[k]; ok {
			o.SetString(k, v)
		}
	}
}

// toolResultLine is the synthetic result, shaped like Claude Code's error
// results:
//
//	{"parentUuid":…,"isSidechain":false,"promptId":…,"type":"user",
//	 "message":{"role":"user","content":[{"type":"tool_result","content":"[Tool call interrupted: …]","is_error":true,"tool_use_id":…}]},
//	 "uuid":…,"timestamp":…,"toolUseResult":"Error: [Tool call interrupted: …]",
//	 "sourceToolAssistantUUID":…,"toolDenialKind":"interrupted","userType":…,…}
func (env recEnvelope) toolResultLine(parent, id, ts string, call recOpenCall, promptID string) []byte {
	block := jsjson.New()
	block.SetString("type", "tool_result")
	block.SetString("content", InterruptedToolText)
	block.Set("is_error", jsjson.Bool(true))
	block.SetString("tool_use_id", call.id)
	msg := jsjson.New()
	msg.SetString("role", "user")
	msg.Set("content", jsjson.Array([][]byte{block.Bytes()}))

	o := jsjson.New()
	env.head(o, parent, promptID)
	o.SetString("type", "user")
	o.Set("message", msg.Bytes())
	o.SetString("uuid", id)
	o.SetString("timestamp", ts)
	o.SetString("toolUseResult", "Error: "+InterruptedToolText)
	o.SetString("sourceToolAssistantUUID", call.assistant)
	o.SetString("toolDenialKind", "interrupted")
	env.tail(o)
	return o.Bytes()
}

// continueLine is the harness's meta prompt:
//
//	{"parentUuid":…,"isSidechain":false,"type":"user",
//	 "message":{"role":"user","content":"Continue from where you left off."},
//	 "isMeta":true,"rowSource":"harness","uuid":…,"timestamp":…,"userType":…,…}
func (env recEnvelope) continueLine(parent, id, ts, text string) []byte {
	msg := jsjson.New()
	msg.SetString("role", "user")
	msg.SetString("content", text)
	o := jsjson.New()
	env.head(o, parent, "")
	o.SetString("type", "user")
	o.Set("message", msg.Bytes())
	o.Set("isMeta", jsjson.Bool(true))
	o.SetString("rowSource", "harness")
	o.SetString("uuid", id)
	o.SetString("timestamp", ts)
	env.tail(o)
	return o.Bytes()
}

func recMustParse(line []byte) core.Entry {
	e, err := core.ParseEntryOwned(line)
	if err != nil {
		// The lines are built here from quoted strings; a failure is a bug.
		panic("transcript: repair line does not parse: " + err.Error())
	}
	return e
}

// ---------------------------------------------------------------------------
// UUIDs

// recRandomUUID returns a random version 4 uuid in the canonical form.
func recRandomUUID() string { return uuid.NewString() }
