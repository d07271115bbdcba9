package transcript

import (
	"bytes"

	"github.com/e0dc0000/scribe/core"
)

// Rows

// The top-level keys a row is read for.
const (
	fType = iota
	fSubtype
	fUUID
	fParent
	fSidechain
	fTeam
	fAgent
	fMeta
	fCompactSummary
	fVisibleOnly
	fInterruptedByShutdown
	fTimestamp
	fSession
	fMessage
	fCompactMeta
	fAttachment
	fSourceTool
	fPromptSource
	fOrigin
	fDenialUnanswered
	fDenialKind
	fCallEnded
	fResultRewritten
	fQueuedCommand
	fCompletedLocal
	fHostHidden
	fRanBy
	fVirtual
	fQuiet
	fHostContent
	fOperation
	fReason
	fDeliveryID
	fCommandUUID
	fLevel
	fMsgV
	fContent
	fBlocks
	fFold
	fRowUUID
	fBlock
	fWithheld
	nFields
)

var fieldNames = [nFields]string{
	fType: "type", fSubtype: "subtype", fUUID: "uuid", fParent: "parentUuid",
	fSidechain: "isSidechain", fTeam: "teamName", fAgent: "agentId", fMeta: "isMeta",
	fCompactSummary: "isCompactSummary", fVisibleOnly: "isVisibleInTranscriptOnly",
	fInterruptedByShutdown: "interruptedByShutdown", fTimestamp: "timestamp", fSession: "sessionId",
	fMessage: "message", fCompactMeta: "compactMetadata", fAttachment: "attachment",
	fSourceTool: "sourceToolAssistantUUID", fPromptSource: "promptSource", fOrigin: "origin",
	fDenialUnanswered: "toolDenialUnanswered", fDenialKind: "toolDenialKind", fCallEnded: "toolCallEnded",
	fResultRewritten: "toolResultRewritten", fQueuedCommand: "isQueuedCommand",
	fCompletedLocal: "isCompletedLocalCommand", fHostHidden: "hostHiddenToolUseIds", fRanBy: "ranByToolUseId",
	fVirtual: "isVirtual", fQuiet: "closesQuietTurn", fHostContent: "hostContent", fOperation: "operation",
	fReason: "reason", fDeliveryID: "deliveryId", fCommandUUID: "commandUuid", fLevel: "level", fMsgV: "msgV",
	fContent: "content", fBlocks: "blocks", fFold: "fold", fRowUUID: "rowUuid", fBlock: "block",
	fWithheld: "withheld",
}

var fieldIndex = func() map[string]int {
	m := make(map[string]int, nFields)
	for i, n := range fieldNames {
		m[n] = i
	}
	return m
}()

// row is one parsed line as the SDK's code sees it. Rows are copied, not
// changed, when the rebuild gives them another parent or content.
type row struct {
	e       *core.Entry
	pos     int // index among the chain rows, in file order
	typ     string
	uuid    string
	hasUUID bool
	f       [nFields]jv
	msg     *msgInfo
}

func extractFields(v jv, f *[nFields]jv) bool {
	return eachField(v, func(k []byte, val jv) {
		if i, ok := fieldIndex[string(k)]; ok {
			f[i] = val
		}
	})
}

func extractRow(e *core.Entry) (*row, bool) {
	r := &row{e: e}
	raw := bytes.TrimLeft(e.Raw, " \t\r\n")
	if !extractFields(jv(raw), &r.f) {
		return nil, false
	}
	voiceTalk(r)
	r.sync()
	return r, true
}

// sync refreshes the decoded type and uuid after f changed.
func (r *row) sync() {
	r.typ, _ = r.f[fType].str()
	r.uuid, r.hasUUID = r.f[fUUID].str()
}

func (r *row) clone() *row {
	c := *r
	return &c
}

// parent returns parentUuid when it is a non-empty string: the only kind
// the SDK can look up.
func (r *row) parent() (string, bool) {
	s, ok := r.f[fParent].str()
	return s, ok && s != ""
}

func (r *row) timestamp() string {
	s, _ := r.f[fTimestamp].str()
	return s
}

// voiceTalk turns a voice-call talk system row into the user row or
// queued-command attachment it stands for, as the SDK does on parse.
func voiceTalk(r *row) {
	f := &r.f
	if !f[fType].strEq(core.TypeSystem) || !f[fSubtype].strEq("voice_call_talk") {
		return
	}
	origin := f[fOrigin]
	if !f[fContent].isStr() || !origin.isObj() || !origin.field("kind").strEq("voice-call") {
		return
	}
	content := f[fContent]
	if f[fBlocks].isArr() {
		content = f[fBlocks]
	}
	fold := f[fFold]
	if fold == nil {
		for _, k := range []int{fSubtype, fLevel, fMsgV, fContent, fBlocks, fFold} {
			f[k] = nil
		}
		f[fType] = jstr(core.TypeUser)
		var m objBuilder
		m.add("role", jstr(core.TypeUser))
		m.add("content", content)
		f[fMessage] = m.done()
		return
	}
	command := fold.field("command")
	if !fold.isObj() || !command.isObj() {
		return
	}
	var merged [nFields]jv
	eachField(fold, func(k []byte, val jv) {
		if string(k) == "command" {
			return
		}
		if i, ok := fieldIndex[string(k)]; ok {
			merged[i] = val
		}
	})
	for i := range f {
		switch i {
		case fSubtype, fLevel, fMsgV, fContent, fBlocks, fFold, fMeta, fOrigin:
			continue
		}
		if f[i] != nil {
			merged[i] = f[i]
		}
	}
	merged[fType] = jstr(core.TypeAttachment)
	merged[fAttachment] = spread(command, nil, "type", jstr("queued_command"), "prompt", content, "origin", origin)
	*f = merged
}

// msgInfo is what the rebuild reads from a row's message.
type msgInfo struct {
	objLike bool // typeof message === "object" && message !== null
	id      string
	hasID   bool
	content jv
	blocks  []blockInfo
}

type blockInfo struct {
	raw  jv
	obj  bool // a non-null object (arrays have no "type")
	typ  string
	f    map[string]jv
	text jv
}

func (r *row) m() *msgInfo {
	if r.msg != nil {
		return r.msg
	}
	mi := &msgInfo{}
	msg := r.f[fMessage]
	mi.objLike = msg.objLike()
	if msg.isObj() {
		eachField(msg, func(k []byte, val jv) {
			switch string(k) {
			case "id":
				mi.id, mi.hasID = val.str()
			case "content":
				mi.content = val
			}
		})
	}
	for _, b := range mi.content.elems() {
		bi := blockInfo{raw: b, obj: b.isObj()}
		if bi.obj {
			bi.f = map[string]jv{}
			eachField(b, func(k []byte, val jv) {
				switch string(k) {
				case "type", "id", "tool_use_id", "text", "is_error", "content", "name":
					bi.f[string(k)] = val
				}
			})
			bi.typ, _ = bi.f["type"].str()
			bi.text = bi.f["text"]
		}
		mi.blocks = append(mi.blocks, bi)
	}
	r.msg = mi
	return mi
}

// ids returns the string member key of every block of type typ (the SDK's
// helper over message.content).
func (r *row) ids(typ, key string) []string {
	mi := r.m()
	if !mi.objLike || !mi.content.isArr() {
		return nil
	}
	var out []string
	for _, b := range mi.blocks {
		if b.obj && b.typ == typ {
			if s, ok := b.f[key].str(); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// messageID is the message.id of an assistant row.
func (r *row) messageID() (string, bool) {
	if r.typ != core.TypeAssistant {
		return "", false
	}
	mi := r.m()
	return mi.id, mi.hasID
}

// isToolResultRow: a user row with a parent whose content holds a
// tool_result block.
func (r *row) isToolResultRow() bool {
	if r.typ != core.TypeUser || !r.f[fParent].truthy() {
		return false
	}
	mi := r.m()
	if !mi.objLike || !mi.content.isArr() {
		return false
	}
	for _, b := range mi.blocks {
		if b.obj && b.typ == "tool_result" {
			return true
		}
	}
	return false
}

func (r *row) attachmentType() (string, bool) {
	if r.typ != core.TypeAttachment || !r.f[fAttachment].isObj() {
		return "", false
	}
	return r.f[fAttachment].field("type").str()
}
