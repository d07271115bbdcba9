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
	fNamesPlanFile
	fWaitingNote
	fNoCommandRan
	fPermissionDecision
	fDenialFromHost
	fDenialAfterRun
	fResultRemedy
	fFileRefusal
	fInputInvalid
	fExecutedInput
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
	fWithheld: "withheld", fNamesPlanFile: "namesPlanFile", fWaitingNote: "resultEndsInWaitingNote",
	fNoCommandRan: "noCommandRan", fPermissionDecision: "permissionDecision", fDenialFromHost: "toolDenialFromHost",
	fDenialAfterRun: "toolDenialAfterRun", fResultRemedy: "toolResultRemedy", fFileRefusal: "toolResultFileRefusal",
	fInputInvalid: "toolInputInvalid", fExecutedInput: "executedInput",
}

// fieldsByLen lists the fields by the length of their key, so that
// looking a key up compares it with two or three names and hashes nothing
// (it is done for every member of every line).
var fieldsByLen = func() (t [32][]uint8) {
	for i, n := range fieldNames {
		t[len(n)] = append(t[len(n)], uint8(i))
	}
	return t
}()

// fieldOf returns the index of the field named key.
func fieldOf(key []byte) (int, bool) {
	if len(key) >= len(fieldsByLen) {
		return 0, false
	}
	for _, i := range fieldsByLen[len(key)] {
		if string(key) == fieldNames[i] {
			return int(i), true
		}
	}
	return 0, false
}

// row is one parsed line as the SDK's code sees it. Rows are copied, not
// changed, when the rebuild gives them another parent or content.
type row struct {
	e       *core.Entry
	pos     int  // index among the chain rows, in file order
	slot    int  // index of its uuid in the rowMap's order (main files)
	shared  bool // its decoded strings may share the line's bytes
	upSlot  int  // the slot of its parent (see rowMap.linkUp)
	upKnown bool
	typ     string
	uuid    string
	hasUUID bool
	par     string // parentUuid when a string (syncParent keeps it)
	parStr  bool
	f       fields
	msg     *msgInfo
}

// fields holds the members of a row that the rebuild reads, sparsely: a
// row has a handful of the nFields keys, and a long transcript has tens of
// thousands of rows.
type fields struct {
	at   [nFields]uint8 // 1 + the member's index in vals; 0 when absent
	vals []jv
}

func (f *fields) get(i int) jv {
	if k := f.at[i]; k != 0 {
		return f.vals[k-1]
	}
	return nil
}

func (f *fields) set(i int, v jv) {
	if k := f.at[i]; k != 0 {
		f.vals[k-1] = v
		return
	}
	if v == nil {
		return
	}
	f.vals = append(f.vals, v)
	f.at[i] = uint8(len(f.vals))
}

// full returns every field, absent ones nil.
func (f *fields) full() (a [nFields]jv) {
	for i, k := range f.at {
		if k != 0 {
			a[i] = f.vals[k-1]
		}
	}
	return a
}

// packFields keeps the present fields of a.
func packFields(a *[nFields]jv) fields {
	var f fields
	f.vals = make([]jv, 0, countFields(a))
	f.fill(a)
	return f
}

func countFields(a *[nFields]jv) int {
	n := 0
	for _, v := range a {
		if v != nil {
			n++
		}
	}
	return n
}

// fill appends the present fields of a to f.vals, which has room for them.
func (f *fields) fill(a *[nFields]jv) {
	for i, v := range a {
		if v != nil {
			f.vals = append(f.vals, v)
			f.at[i] = uint8(len(f.vals))
		}
	}
}

func extractFields(v jv, f *[nFields]jv) bool {
	return eachField(v, func(k []byte, val jv) {
		if i, ok := fieldOf(k); ok {
			f[i] = val
		}
	})
}

func extractRow(e *core.Entry) (*row, bool) {
	r := &row{e: e}
	raw := bytes.TrimLeft(e.Raw, " \t\r\n")
	var f [nFields]jv
	if !extractFields(jv(raw), &f) {
		return nil, false
	}
	voiceTalk(&f)
	r.f = packFields(&f)
	r.sync()
	return r, true
}

// sync refreshes the decoded type and uuid after f changed.
func (r *row) sync() {
	r.typ, _ = r.str(fType)
	r.uuid, r.hasUUID = r.str(fUUID)
	r.syncParent()
}

// syncParent refreshes the decoded parentUuid after f[fParent] changed.
func (r *row) syncParent() {
	r.par, r.parStr = r.str(fParent)
}

// str decodes the string field i, sharing the line's bytes when the row
// may (see extractLine).
func (r *row) str(i int) (string, bool) {
	if r.shared {
		return r.f.get(i).strShared()
	}
	return r.f.get(i).str()
}

func (r *row) clone() *row {
	c := *r
	c.f.vals = append([]jv(nil), r.f.vals...)
	return &c
}

// parent returns parentUuid when it is a non-empty string: the only kind
// the SDK can look up.
func (r *row) parent() (string, bool) {
	return r.par, r.parStr && r.par != ""
}

func (r *row) timestamp() string {
	s, _ := r.f.get(fTimestamp).str()
	return s
}

// voiceTalk turns a voice-call talk system row into the user row or
// queued-command attachment it stands for, as the SDK does on parse.
func voiceTalk(f *[nFields]jv) {
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
		if i, ok := fieldOf(k); ok {
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
	f    blockFields
	text jv
}

// blockKeys are the members of a content block the rebuild reads.
var blockKeys = [...]string{"type", "id", "tool_use_id", "text", "is_error", "content", "name"}

// blockFields holds the members of a block named in blockKeys, nil when
// absent: a map a block cost an allocation or two for every block of every
// message.
type blockFields [len(blockKeys)]jv

// keyOf is the index of key in blockKeys, or -1.
func keyOf(key string) int {
	for i, k := range blockKeys {
		if k == key {
			return i
		}
	}
	return -1
}

// get returns the member key, nil when absent or not one of blockKeys.
func (f *blockFields) get(key string) jv {
	if i := keyOf(key); i >= 0 {
		return f[i]
	}
	return nil
}

// noMessage is the msgInfo of every row without a message.
var noMessage = &msgInfo{}

func (r *row) m() *msgInfo {
	if r.msg != nil {
		return r.msg
	}
	if r.f.get(fMessage) == nil {
		r.msg = noMessage
		return r.msg
	}
	mi := &msgInfo{}
	msg := r.f.get(fMessage)
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
			eachField(b, func(k []byte, val jv) {
				if i := keyOf(string(k)); i >= 0 {
					bi.f[i] = val
				}
			})
			bi.typ, _ = bi.f.get("type").str()
			bi.text = bi.f.get("text")
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
			if s, ok := b.f.get(key).str(); ok {
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
	if r.typ != core.TypeUser || !r.f.get(fParent).truthy() {
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
	if r.typ != core.TypeAttachment || !r.f.get(fAttachment).isObj() {
		return "", false
	}
	return r.f.get(fAttachment).field("type").str()
}

// Row is one row of a transcript as the rebuild reads it, made by a
// RowBuilder.
type Row struct{ r *row }

// RowBuilder makes Rows from the top-level members of a line as a reader
// meets them, so that a reader that keeps no entries reads each line once.
// Values given to Set are kept, and the strings decoded from them share
// their bytes: they must not change afterwards.
type RowBuilder struct {
	// rows holds the members of the row being built (rows[cur]) and of
	// the last one built (rows[cur^1]): most repeat from row to row
	// (sessionId, type, cwd, version, userType), and Same shares them
	// instead of the reader keeping a copy of each. Row swaps the two.
	rows [2][nFields]jv
	cur  int
	// slab and vals are where Row takes its rows and their members from,
	// a block at a time: a reader of tens of thousands of rows allocates
	// a few hundred times instead of twice a row.
	slab []row
	vals []jv
}

// Blocks of the RowBuilder's slab and vals.
const (
	rowBlock = 256
	valBlock = 2048
)

// Same sets member i to the last row's value and reports true when val
// holds the same bytes; the caller then need not keep val. A reader of
// tens of thousands of rows keeps a third less this way.
func (b *RowBuilder) Same(i int, val []byte) bool {
	if p := b.rows[b.cur^1][i]; p != nil && bytes.Equal(p, val) {
		b.rows[b.cur][i] = p
		return true
	}
	return false
}

// Field returns the rebuild's index of the top-level member key (as
// decoded), or -1 when the rebuild does not read it.
func Field(key []byte) int {
	if i, ok := fieldOf(key); ok {
		return i
	}
	return -1
}

// Set records the value of member i (from Field); a repeated member keeps
// its last value, as JSON.parse does.
func (b *RowBuilder) Set(i int, val []byte) { b.rows[b.cur][i] = val }

// Row returns the row of the members set since the last Row or Reset.
func (b *RowBuilder) Row() Row {
	if len(b.slab) == 0 {
		b.slab = make([]row, rowBlock)
	}
	r := &b.slab[0]
	b.slab = b.slab[1:]
	r.shared = true
	f := &b.rows[b.cur]
	voiceTalk(f)
	n := countFields(f)
	if cap(b.vals)-len(b.vals) < n {
		b.vals = make([]jv, 0, max(valBlock, n))
	}
	// Capped at its own members: a later set appends elsewhere.
	r.f.vals = b.vals[len(b.vals) : len(b.vals) : len(b.vals)+n]
	b.vals = b.vals[:len(b.vals)+n]
	r.f.fill(f)
	r.sync()
	if r.typ == core.TypeUser || r.typ == core.TypeAssistant {
		// The rebuild reads the message of every such row (message ids,
		// tool_use and tool_result blocks) on one core: read it here, on
		// the reader's.
		r.m()
	}
	b.cur ^= 1 // this row's members become the last row's
	b.Reset()
	return Row{r}
}

// Reset forgets the members set, for a line found malformed.
func (b *RowBuilder) Reset() { b.rows[b.cur] = [nFields]jv{} }
