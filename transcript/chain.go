package transcript

// The conversation rebuild: from the rows of one transcript file, in file
// order, the chain of messages that Claude Code's SDK returns from
// getSessionMessages (main files) and getSubagentMessages (subagent files).
//
// The rules follow the SDK's shipped code (@anthropic-ai/claude-agent-sdk
// 0.3.332), written anew here:
//
//   - Only user, assistant, progress, system and attachment rows with a
//     string uuid take part (user, assistant and attachment in a subagent
//     file). A later row with the same uuid replaces the earlier one but keeps
//     its place in the map's order; the file position used to rank leaves is
//     the last one.
//   - Compact boundaries with compactMetadata.preservedMessages or
//     preservedSegment relink the kept rows to the pre-compact anchor.
//   - The leaf is the latest "terminal" row (no non-progress, non-sidechain
//     row names it as parent) that climbs to a user or assistant row; a
//     fallback takes the newest user/assistant row above any terminal.
//   - The walk from the leaf to the root stops at a missing parent or at a
//     uuid seen twice.
//   - Rows of a split assistant message (same message.id) that are off the
//     chain, and their tool_result rows, are put back after the chain row
//     holding that message id.
//   - Queued-command attachments hanging below the leaf are appended.
//
// JSON values keep JavaScript's meaning: a flag is "set" when the SDK's
// test would be truthy, equality is strict equality, and so on.

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/e0dc0000/scribe/core"
)

// ChainOptions selects the rebuild rule.
type ChainOptions struct {
	// Sidechain selects the subagent rule (getSubagentMessages): only user,
	// assistant and attachment rows count, the chain ends at the last user or
	// assistant row in the file, and there is no compact relinking and no
	// split-assistant repair.
	Sidechain bool
}

// ChainBreak names a row and the parent it points at.
type ChainBreak struct{ UUID, Parent string }

// Chain is a rebuilt conversation.
type Chain struct {
	// Entries is the conversation from root to leaf after compact
	// relinking and split-assistant repair, in the SDK's order. Progress rows
	// on the path are walked through but left out.
	Entries []core.Entry
	// Trailing holds queued-command attachments below the leaf that the SDK
	// appends after the chain (main files only).
	Trailing []core.Entry
	// Leaf is the uuid of the chain's last row ("" for an empty chain).
	Leaf string
	// Cycle is set when the walk from the leaf met a uuid twice: UUID is the
	// row whose parent closed the loop, Parent that parent. The chain ends
	// there, as in the SDK.
	Cycle *ChainBreak
	// Gaps lists rows whose parentUuid names a row that is not in the file,
	// in file order. A gap on the path ends the chain.
	Gaps []ChainBreak

	side      bool
	path      []*row // the chain with progress rows
	trailing  []*row
	all       []*row
	hostRows  []*row
	delivered map[string]int
}

// BuildChain rebuilds the conversation of one file's entries, in file order.
// It never fails: damaged input gives a shorter chain and a report in Cycle
// and Gaps.
func BuildChain(entries []core.Entry, opt ChainOptions) Chain {
	c := Chain{side: opt.Sidechain}
	var delivery *deliveryState
	if !opt.Sidechain {
		delivery = newDeliveryState()
	}
	for i := range entries {
		r, ok := extractRow(&entries[i])
		if !ok {
			continue
		}
		r.pos = len(c.all)
		switch {
		case r.hasUUID && (r.typ == core.TypeUser || r.typ == core.TypeAssistant || r.typ == core.TypeAttachment ||
			(!opt.Sidechain && (r.typ == core.TypeProgress || r.typ == core.TypeSystem))):
			c.all = append(c.all, r)
		case r.typ == "host-row" && r.f[fRanBy].isStr():
			c.hostRows = append(c.hostRows, r)
		}
		if delivery != nil {
			delivery.add(r)
		}
	}
	if delivery != nil {
		c.delivered = delivery.counts()
	}
	if opt.Sidechain {
		c.buildSidechain()
	} else {
		c.buildMain()
	}
	for _, r := range c.path {
		if r.typ != core.TypeProgress {
			c.Entries = append(c.Entries, *r.e)
		}
	}
	for _, r := range c.trailing {
		c.Trailing = append(c.Trailing, *r.e)
	}
	if n := len(c.path); n > 0 {
		c.Leaf = c.path[n-1].uuid
	}
	return c
}

// ---------------------------------------------------------------------------
// JSON values

// jv is one JSON value as it appears in a line; nil when the key is absent.
type jv []byte

func (v jv) absent() bool { return v == nil }
func (v jv) isStr() bool  { return len(v) > 0 && v[0] == '"' }
func (v jv) isObj() bool  { return len(v) > 0 && v[0] == '{' }
func (v jv) isArr() bool  { return len(v) > 0 && v[0] == '[' }

// objLike is JavaScript's typeof v === "object" && v !== null.
func (v jv) objLike() bool { return v.isObj() || v.isArr() }
func (v jv) isTrue() bool  { return string(v) == "true" }

// nullish is v === undefined || v === null.
func (v jv) nullish() bool { return v == nil || string(v) == "null" }

func (v jv) str() (string, bool) {
	if !v.isStr() {
		return "", false
	}
	in := v[1 : len(v)-1]
	if bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		return string(in), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// truthy is JavaScript's Boolean(v).
func (v jv) truthy() bool {
	if len(v) == 0 {
		return false
	}
	switch v[0] {
	case 'n', 'f':
		return false
	case 't', '{', '[':
		return true
	case '"':
		return len(v) > 2
	}
	// A number is falsy when it is zero: every mantissa digit is 0.
	for _, c := range v {
		switch {
		case c == 'e' || c == 'E':
			return false
		case c >= '1' && c <= '9':
			return true
		}
	}
	return false
}

// strictEq is JavaScript's a === b for values read from JSON (objects and
// arrays are never equal, being distinct objects).
func strictEq(a, b jv) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch {
	case a.isStr() && b.isStr():
		x, _ := a.str()
		y, _ := b.str()
		return x == y
	case a.objLike() || b.objLike():
		return false
	case a[0] == '-' || (a[0] >= '0' && a[0] <= '9'):
		if !(b[0] == '-' || (b[0] >= '0' && b[0] <= '9')) {
			return false
		}
		x, err1 := strconv.ParseFloat(string(a), 64)
		y, err2 := strconv.ParseFloat(string(b), 64)
		return err1 == nil && err2 == nil && x == y && !math.IsNaN(x)
	}
	return bytes.Equal(a, b) // true, false, null
}

// strEq reports whether v is the string s.
func (v jv) strEq(s string) bool {
	if !v.isStr() {
		return false
	}
	if len(v) == len(s)+2 && string(v[1:len(v)-1]) == s {
		return true
	}
	x, ok := v.str()
	return ok && x == s
}

// jstr encodes s as a JSON string.
func jstr(s string) jv {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		b := make([]byte, 0, len(s)+2)
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	return core.AppendJSString(nil, s)
}

// eachField calls fn for every member of the object v, in order.
func eachField(v jv, fn func(key []byte, val jv)) bool {
	return core.JSONFields(v, func(k, val []byte) { fn(k, jv(val)) })
}

// field returns the member name of the object v (the last one when the key
// repeats, as JSON.parse keeps), or nil.
func (v jv) field(name string) jv {
	var out jv
	eachField(v, func(k []byte, val jv) {
		if string(k) == name {
			out = val
		}
	})
	return out
}

// elems returns the elements of the array v.
func (v jv) elems() []jv {
	var out []jv
	for _, e := range core.JSONElems(v) {
		out = append(out, e)
	}
	return out
}

// objBuilder writes a JSON object member by member.
type objBuilder struct{ b []byte }

func (o *objBuilder) add(key string, val jv) {
	if val == nil {
		return
	}
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = append(o.b, jstr(key)...)
	o.b = append(o.b, ':')
	o.b = append(o.b, val...)
}

func (o *objBuilder) done() jv {
	if len(o.b) == 0 {
		return jv("{}")
	}
	return append(o.b, '}')
}

// spread is {...base, <overrides>}: base's members, minus the keys that
// drop names, with the overrides (in order) replacing or following them.
func spread(base jv, drop []string, overrides ...any) jv {
	type kv struct {
		k string
		v jv
	}
	var members []kv
	idx := map[string]int{}
	set := func(k string, v jv) {
		if i, ok := idx[k]; ok {
			members[i].v = v
			return
		}
		idx[k] = len(members)
		members = append(members, kv{k, v})
	}
	eachField(base, func(k []byte, v jv) {
		for _, d := range drop {
			if string(k) == d {
				return
			}
		}
		set(string(k), v)
	})
	for i := 0; i+1 < len(overrides); i += 2 {
		set(overrides[i].(string), overrides[i+1].(jv))
	}
	var o objBuilder
	for _, m := range members {
		o.add(m.k, m.v)
	}
	return o.done()
}

// ---------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------
// Main files

func (c *Chain) buildMain() {
	// The map by uuid: first-seen order, last value.
	byUUID := make(map[string]*row, len(c.all))
	var order []*row
	slot := make(map[string]int, len(c.all))
	lastPos := make(map[string]int, len(c.all))
	for _, r := range c.all {
		if i, ok := slot[r.uuid]; ok {
			order[i] = r
		} else {
			slot[r.uuid] = len(order)
			order = append(order, r)
		}
		byUUID[r.uuid] = r
		lastPos[r.uuid] = r.pos
	}
	set := func(r *row) {
		byUUID[r.uuid] = r
		order[slot[r.uuid]] = r
	}
	parents := newParentIndex(order)
	reparent := func(r *row, p jv) *row {
		n := r.clone()
		n.f[fParent] = p
		set(n)
		parents.add(slot[r.uuid], p)
		return n
	}

	// Compact relinking.
	for i := 0; i < len(order); i++ {
		h := order[i]
		if h.typ != core.TypeSystem || !h.f[fSubtype].strEq("compact_boundary") {
			continue
		}
		cm := h.f[fCompactMeta]
		var pm, ps jv
		if cm.isObj() {
			pm, ps = cm.field("preservedMessages"), cm.field("preservedSegment")
		}
		switch {
		case pm.truthy():
			uuids := pm.field("uuids").elems()
			if len(uuids) == 0 {
				continue
			}
			ok := true
			for _, u := range uuids {
				s, isStr := u.str()
				if _, in := byUUID[s]; !isStr || !in {
					ok = false
					break
				}
			}
			if !ok {
				continue
			}
			anchor := pm.field("anchorUuid")
			p := anchor
			for _, u := range uuids {
				s, _ := u.str()
				reparent(byUUID[s], p)
				p = jstr(s)
			}
			first, _ := uuids[0].str()
			last := uuids[len(uuids)-1]
			for _, i := range parents.matching(anchor) {
				if r := order[i]; r.uuid != first {
					reparent(r, last)
				}
			}
		case ps.truthy():
			head, anchor, tail := ps.field("headUuid"), ps.field("anchorUuid"), ps.field("tailUuid")
			hs, headIsStr := head.str()
			if hr, ok := byUUID[hs]; ok && headIsStr {
				reparent(hr, anchor)
			}
			for _, i := range parents.matching(anchor) {
				if r := order[i]; !(headIsStr && r.uuid == hs) {
					reparent(r, tail)
				}
			}
		}
	}

	// Gaps: parents named but absent.
	for _, r := range order {
		if p, ok := r.parent(); ok {
			if _, in := byUUID[p]; !in {
				c.Gaps = append(c.Gaps, ChainBreak{UUID: r.uuid, Parent: p})
			}
		}
	}
	sort.SliceStable(c.Gaps, func(i, j int) bool {
		return lastPos[c.Gaps[i].UUID] < lastPos[c.Gaps[j].UUID]
	})

	up := func(r *row) *row {
		if p, ok := r.parent(); ok {
			return byUUID[p]
		}
		return nil
	}

	// Leaf choice.
	named := make(map[string]bool, len(order))
	for _, r := range order {
		if p, ok := r.parent(); ok {
			named[p] = true
		}
	}
	counts := func(r *row) bool {
		if r.f[fSidechain].truthy() || r.f[fTeam].truthy() || r.typ == core.TypeProgress {
			return false
		}
		if t, _ := r.attachmentType(); t == "fork_briefing" {
			return false
		}
		return true
	}
	namedByCounted := make(map[string]bool, len(order))
	for _, r := range order {
		if p, ok := r.parent(); ok && counts(r) {
			namedByCounted[p] = true
		}
	}
	var cands []*row
	for _, r := range order {
		if counts(r) && !namedByCounted[r.uuid] {
			cands = append(cands, r)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return lastPos[cands[i].uuid] > lastPos[cands[j].uuid] })
	var leaf *row
	done := map[string]bool{}
	for _, h := range cands {
		var climbed []string
		seen := map[string]bool{}
		for cur := h; cur != nil && !done[cur.uuid] && !seen[cur.uuid]; cur = up(cur) {
			if cur.typ == core.TypeUser || cur.typ == core.TypeAssistant {
				leaf = cur
				break
			}
			seen[cur.uuid] = true
			climbed = append(climbed, cur.uuid)
		}
		if leaf != nil {
			break
		}
		for _, u := range climbed {
			done[u] = true
		}
	}
	if leaf == nil {
		// Each terminal climbs to its nearest user/assistant row; climbs
		// share their results, so a comb of long paths stays linear.
		memo := map[*row]*row{}
		climb := func(t *row) *row {
			var path []*row
			on := map[*row]bool{}
			var hit *row
			for cur := t; cur != nil; cur = up(cur) {
				if r, ok := memo[cur]; ok {
					hit = r
					break
				}
				if on[cur] {
					break
				}
				if cur.typ == core.TypeUser || cur.typ == core.TypeAssistant {
					hit = cur
					break
				}
				on[cur] = true
				path = append(path, cur)
			}
			for _, p := range path {
				memo[p] = hit
			}
			return hit
		}
		var hits []*row
		for _, t := range order {
			if named[t.uuid] {
				continue
			}
			if h := climb(t); h != nil {
				hits = append(hits, h)
			}
		}
		if len(hits) == 0 {
			return
		}
		newest := func(rs []*row) *row {
			best := rs[0]
			for _, r := range rs[1:] {
				if lastPos[r.uuid] > lastPos[best.uuid] {
					best = r
				}
			}
			return best
		}
		var plain []*row
		for _, r := range hits {
			if !r.f[fSidechain].truthy() && !r.f[fTeam].truthy() && !r.f[fMeta].truthy() {
				plain = append(plain, r)
			}
		}
		if len(plain) > 0 {
			leaf = newest(plain)
		} else {
			leaf = newest(hits)
		}
	}

	// The walk.
	var path []*row
	onPath := map[string]bool{}
	for cur := byUUID[leaf.uuid]; cur != nil; {
		if onPath[cur.uuid] {
			prev := path[len(path)-1]
			p, _ := prev.parent()
			c.Cycle = &ChainBreak{UUID: prev.uuid, Parent: p}
			break
		}
		onPath[cur.uuid] = true
		path = append(path, cur)
		cur = up(cur)
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	path = reattachSplit(order, path, onPath)
	c.path = path
	c.trailing = trailingQueued(c.all, byUUID, path, leaf)
}

// parentIndex finds the rows whose parentUuid is strictly equal to a value
// without scanning them all. Entries go stale when a row is given another
// parent; matching drops those.
type parentIndex struct {
	order []*row
	by    map[string][]int
}

func newParentIndex(order []*row) *parentIndex {
	x := &parentIndex{order: order, by: make(map[string][]int, len(order))}
	for i, r := range order {
		x.add(i, r.f[fParent])
	}
	return x
}

// parentKey is a key under which values that are === share an entry;
// objects and arrays have none (they equal nothing).
func parentKey(v jv) (string, bool) {
	switch {
	case v == nil:
		return "\x00", true
	case v.isStr():
		s, _ := v.str()
		return "s" + s, true
	case v.objLike():
		return "", false
	case v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return "", false
		}
		if f == 0 {
			f = 0 // -0 === 0
		}
		return "#" + strconv.FormatFloat(f, 'g', -1, 64), true
	}
	return "\x01" + string(v), true // null, true, false
}

func (x *parentIndex) add(i int, v jv) {
	if k, ok := parentKey(v); ok {
		x.by[k] = append(x.by[k], i)
	}
}

// matching returns, in map order, the rows whose parent === v now.
func (x *parentIndex) matching(v jv) []int {
	k, ok := parentKey(v)
	if !ok {
		return nil
	}
	var out []int
	seen := map[int]bool{}
	for _, i := range x.by[k] {
		if seen[i] {
			continue
		}
		if pk, ok := parentKey(x.order[i].f[fParent]); ok && pk == k {
			seen[i] = true
			out = append(out, i)
		}
	}
	x.by[k] = append(x.by[k][:0], out...)
	sort.Ints(out)
	return out
}

// reattachSplit puts back the rows of split assistant messages (one row per
// content block, sharing message.id) that are off the chain, and the
// tool_result rows answering them, after the chain row with that message id.
func reattachSplit(order, path []*row, onPath map[string]bool) []*row {
	var assistants []*row
	for _, r := range path {
		if r.typ == core.TypeAssistant {
			assistants = append(assistants, r)
		}
	}
	if len(assistants) == 0 {
		return path
	}
	holder := map[string]*row{}
	for _, r := range assistants {
		if id, ok := r.messageID(); ok {
			holder[id] = r
		}
	}
	byUUID := make(map[string]*row, len(order))
	for _, r := range order {
		byUUID[r.uuid] = r
	}
	sameMsg := map[string][]*row{}
	toolUse := map[string]*row{} // nil: claimed by two messages
	var results []*row
	for _, r := range order {
		if id, ok := r.messageID(); ok {
			sameMsg[id] = append(sameMsg[id], r)
			for _, x := range r.ids("tool_use", "id") {
				w, seen := toolUse[x]
				if !seen {
					toolUse[x] = r
				} else if w != nil {
					if wid, ok := w.messageID(); ok && wid == id {
						toolUse[x] = r
					} else {
						toolUse[x] = nil
					}
				}
			}
		} else if r.isToolResultRow() {
			results = append(results, r)
		}
	}
	answers := map[string][]*row{}
	answered := map[string]bool{}
	attach := func(key string, r *row) {
		k := key + "\n" + r.uuid
		if answered[k] {
			return
		}
		answered[k] = true
		answers[key] = append(answers[key], r)
	}
	sameSide := func(a, b *row) bool {
		sa, sb := a.f[fSidechain], b.f[fSidechain]
		if sa.nullish() {
			sa = jv("false")
		}
		if sb.nullish() {
			sb = jv("false")
		}
		return strictEq(sa, sb) && strictEq(a.f[fAgent], b.f[fAgent])
	}
	for _, b := range results {
		if p, ok := b.f[fParent].str(); ok {
			attach(p, b)
		}
		if src, ok := b.f[fSourceTool].str(); ok && !strictEq(b.f[fSourceTool], b.f[fParent]) {
			if a := byUUID[src]; a != nil && sameSide(b, a) {
				attach(a.uuid, b)
			}
		}
		for _, id := range b.ids("tool_result", "tool_use_id") {
			if a := toolUse[id]; a != nil && sameSide(b, a) {
				attach(a.uuid, b)
			}
		}
	}
	pathResults := map[string]bool{}
	for _, r := range path {
		for _, id := range r.ids("tool_result", "tool_use_id") {
			pathResults[id] = true
		}
	}
	pos := make(map[string]int, len(order))
	for i, r := range order {
		pos[r.uuid] = i
	}
	posOf := func(r *row) int {
		if p, ok := pos[r.uuid]; ok {
			return p
		}
		return math.MaxInt
	}
	handled := map[string]bool{}
	insert := map[string][]*row{}
	total := 0
	byTime := func(rs []*row) {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].timestamp() < rs[j].timestamp() })
	}
	for _, b := range assistants {
		id, ok := b.messageID()
		if !ok || handled[id] {
			continue
		}
		handled[id] = true
		group := sameMsg[id]
		if group == nil {
			group = []*row{b}
		}
		inGroup := map[string]bool{}
		for _, r := range group {
			inGroup[r.uuid] = true
		}
		var off, kept, other []*row
		for _, r := range group {
			if !onPath[r.uuid] {
				off = append(off, r)
			}
		}
		seen := map[string]bool{}
		for _, r := range group {
			for _, a := range answers[r.uuid] {
				if onPath[a.uuid] || seen[a.uuid] {
					continue
				}
				seen[a.uuid] = true
				if p, ok := a.f[fParent].str(); ok && inGroup[p] {
					kept = append(kept, a)
				} else {
					other = append(other, a)
				}
			}
		}
		if len(other) > 0 {
			have := map[string]bool{}
			for k := range pathResults {
				have[k] = true
			}
			for _, a := range kept {
				for _, x := range a.ids("tool_result", "tool_use_id") {
					have[x] = true
				}
			}
			sort.SliceStable(other, func(i, j int) bool { return posOf(other[i]) < posOf(other[j]) })
			for _, a := range other {
				ids := a.ids("tool_result", "tool_use_id")
				useful := false
				for _, x := range ids {
					if t := toolUse[x]; !have[x] && t != nil && inGroup[t.uuid] {
						useful = true
						break
					}
				}
				if !useful {
					continue
				}
				for _, x := range ids {
					have[x] = true
				}
				kept = append(kept, a)
			}
		}
		if len(off) == 0 && len(kept) == 0 {
			continue
		}
		byTime(off)
		byTime(kept)
		add := append(off, kept...)
		for _, r := range add {
			onPath[r.uuid] = true
		}
		total += len(add)
		insert[holder[id].uuid] = add
	}
	if total == 0 {
		return path
	}
	out := make([]*row, 0, len(path)+total)
	for _, r := range path {
		out = append(out, r)
		out = append(out, insert[r.uuid]...)
	}
	return out
}

// trailingQueued finds queued-command attachments that hang below the leaf
// through non-message rows and are not on another branch.
func trailingQueued(all []*row, relinked map[string]*row, path []*row, leaf *row) []*row {
	if leaf == nil {
		return nil
	}
	children := map[string][]*row{}
	for _, p := range all {
		if p.typ == core.TypeUser || p.typ == core.TypeAssistant {
			continue
		}
		a, aok := p.parent()
		var b string
		bok := false
		if rl := relinked[p.uuid]; rl != nil {
			b, bok = rl.parent()
		}
		if aok {
			children[a] = append(children[a], p)
		}
		if bok && !(aok && a == b) {
			children[b] = append(children[b], p)
		}
	}
	seen := make(map[string]bool, len(path))
	for _, r := range path {
		seen[r.uuid] = true
	}
	last := make(map[string]*row, len(all))
	for _, r := range all {
		last[r.uuid] = r
	}
	return walkTrailing(all, children, seen, last, leaf)
}

func walkTrailing(all []*row, children map[string][]*row, seen map[string]bool, last map[string]*row, leaf *row) []*row {
	// Rows above user/assistant rows that are off the chain belong to
	// other branches.
	other := map[string]bool{}
	for _, p := range all {
		if (p.typ != core.TypeUser && p.typ != core.TypeAssistant) || p.f[fSidechain].truthy() || p.f[fTeam].truthy() || seen[p.uuid] {
			continue
		}
		var f *row
		if s, ok := p.parent(); ok {
			f = last[s]
		}
		for f != nil && !seen[f.uuid] && !other[f.uuid] {
			other[f.uuid] = true
			var next *row
			if s, ok := f.parent(); ok {
				next = last[s]
			}
			f = next
		}
	}
	var out []*row
	stack := []*row{leaf}
	first := true
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !first {
			if seen[p.uuid] {
				continue
			}
			seen[p.uuid] = true
			if t, _ := p.attachmentType(); t == "queued_command" && !other[p.uuid] {
				out = append(out, p)
			}
		}
		first = false
		kids := children[p.uuid]
		if len(kids) > 1 {
			kids = append([]*row(nil), kids...)
			sort.SliceStable(kids, func(i, j int) bool { return kids[i].timestamp() < kids[j].timestamp() })
		}
		for i := len(kids) - 1; i >= 0; i-- {
			if !seen[kids[i].uuid] {
				stack = append(stack, kids[i])
			}
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Subagent files

func (c *Chain) buildSidechain() {
	if len(c.all) == 0 {
		return
	}
	byUUID := make(map[string]*row, len(c.all))
	for _, r := range c.all {
		byUUID[r.uuid] = r
	}
	var leaf *row
	for i := len(c.all) - 1; i >= 0; i-- {
		if t := c.all[i].typ; t == core.TypeUser || t == core.TypeAssistant {
			leaf = c.all[i]
			break
		}
	}
	if leaf == nil {
		return
	}
	for _, r := range c.all {
		if p, ok := r.parent(); ok {
			if _, in := byUUID[p]; !in {
				c.Gaps = append(c.Gaps, ChainBreak{UUID: r.uuid, Parent: p})
			}
		}
	}
	var path []*row
	seen := map[string]bool{}
	for cur := leaf; cur != nil; {
		if seen[cur.uuid] {
			prev := path[len(path)-1]
			p, _ := prev.parent()
			c.Cycle = &ChainBreak{UUID: prev.uuid, Parent: p}
			break
		}
		seen[cur.uuid] = true
		path = append(path, cur)
		var next *row
		if p, ok := cur.parent(); ok {
			next = byUUID[p]
		}
		cur = next
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	c.path = path
}

// ---------------------------------------------------------------------------
// Queued-command delivery bookkeeping (main files)

type deliveryState struct {
	counts_    map[string]int
	copies     map[string]string
	mixed      map[string]bool
	mixedOrder []string
	dcopies    map[string][]string
	dorder     []string
	dseen      map[string]bool
}

func newDeliveryState() *deliveryState {
	return &deliveryState{counts_: map[string]int{}, copies: map[string]string{}, mixed: map[string]bool{},
		dcopies: map[string][]string{}, dseen: map[string]bool{}}
}

// queuedCommand returns the queued command object behind a row: the
// attachment of a queued_command attachment row, or the fold command of a
// voice-call talk system row.
func queuedCommand(typ string, f *[nFields]jv) jv {
	if typ == core.TypeSystem && f[fSubtype].strEq("voice_call_talk") {
		fold := f[fFold]
		if fold.objLike() {
			if c := fold.field("command"); c.objLike() {
				return c
			}
		}
		return nil
	}
	if typ == core.TypeAttachment {
		a := f[fAttachment]
		if a.isObj() && a.field("type").strEq("queued_command") {
			return a
		}
	}
	return nil
}

func commandField(cmd jv, key string) (string, bool) {
	if cmd == nil {
		return "", false
	}
	s, ok := cmd.field(key).str()
	return s, ok && s != ""
}

func (d *deliveryState) add(r *row) {
	f := &r.f
	if r.typ == "queue-operation" && f[fOperation].strEq("remove") && f[fReason].strEq("absorbed_mid_turn") &&
		(f[fDeliveryID].isStr() || f[fCommandUUID].isStr()) {
		key := ""
		if s, _ := f[fDeliveryID].str(); s != "" {
			key = "delivery:" + s
		} else if s, ok := f[fCommandUUID].str(); ok {
			key = "uuid:" + s
		}
		if key != "" {
			d.counts_[key]++
		}
		return
	}
	if !f[fType].isStr() || !r.hasUUID {
		return
	}
	var only [nFields]jv
	only[fAttachment] = f[fAttachment]
	cmd := queuedCommand(r.typ, &only)
	if id, ok := commandField(cmd, "delivery_id"); ok {
		if !d.dseen[r.uuid] {
			d.dseen[r.uuid] = true
			key := "delivery:" + id
			if _, ok := d.dcopies[key]; !ok {
				d.dorder = append(d.dorder, key)
			}
			d.dcopies[key] = append(d.dcopies[key], r.uuid)
		}
		return
	}
	src, ok := commandField(cmd, "source_uuid")
	if !ok {
		return
	}
	var buf bytes.Buffer
	if json.Compact(&buf, f[fAttachment]) != nil {
		buf.Reset()
		buf.Write(f[fAttachment])
	}
	s := buf.String()
	if prev, ok := d.copies[src]; !ok {
		d.copies[src] = s
	} else if prev != s && !d.mixed[src] {
		d.mixed[src] = true
		d.mixedOrder = append(d.mixedOrder, src)
	}
}

func (d *deliveryState) counts() map[string]int {
	for _, s := range d.mixedOrder {
		delete(d.counts_, "uuid:"+s)
	}
	for _, key := range d.dorder {
		uuids := d.dcopies[key]
		n := d.counts_[key]
		start := len(uuids) - n
		if start < 0 {
			start = 0
		}
		for _, u := range uuids[start:] {
			d.counts_["entry:"+u] = 1
		}
	}
	return d.counts_
}

// ---------------------------------------------------------------------------
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
	Type                    string           `json:"type"`
	UUID                    string           `json:"uuid"`
	SessionID               json.RawMessage  `json:"session_id,omitempty"`
	Message                 json.RawMessage  `json:"message,omitempty"`
	ParentToolUseID         *string          `json:"parent_tool_use_id"`
	ParentAgentID           *string          `json:"parent_agent_id"`
	InterruptedByShutdown   bool             `json:"interruptedByShutdown,omitempty"`
	ToolDenialUnanswered    string           `json:"toolDenialUnanswered,omitempty"`
	ToolResultMeta          []ToolResultMeta `json:"tool_result_meta,omitempty"`
	IsCompactSummary        bool             `json:"isCompactSummary,omitempty"`
	IsMeta                  bool             `json:"is_meta,omitempty"`
	IsQueuedCommand         bool             `json:"isQueuedCommand,omitempty"`
	IsCompletedLocalCommand bool             `json:"isCompletedLocalCommand,omitempty"`
	Timestamp               json.RawMessage  `json:"timestamp,omitempty"`
	Origin                  json.RawMessage  `json:"origin,omitempty"`
}

// ToolResultMeta describes a tool_result that was not an execution result.
type ToolResultMeta struct {
	ID                string `json:"id"`
	NonExecutionKind  string `json:"non_execution_kind,omitempty"`
	CallEnded         string `json:"call_ended,omitempty"`
	RewrittenByPlugin bool   `json:"rewritten_by_plugin,omitempty"`
}

var (
	runIDRE   = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)
	agentIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
)

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
		if runIDRE.MatchString(opt.ParentToolUseID) {
			s := opt.ParentToolUseID
			tool = &s
		}
		if agentIDRE.MatchString(opt.ParentAgentID) {
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
	if r.f[fMeta].truthy() && !channelOrigin(r.f[fOrigin]) {
		return false
	}
	return !r.f[fSidechain].truthy() && !r.f[fTeam].truthy()
}

// quietClose: an assistant row that only closes a quiet turn.
func quietClose(r *row) bool {
	if r.typ != core.TypeAssistant || !r.f[fQuiet].isTrue() {
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

var denialKinds = []string{"user-rejected", "permission-rule", "automode-blocked", "automode-unavailable",
	"automode-parsing-error", "interrupted", "cancelled"}

func toMessage(r *row, tool, agent *string) SessionMessage {
	f := &r.f
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
	var ids []jv
	msg := f[fMessage]
	if msg.isObj() {
		for _, b := range r.m().blocks {
			if b.obj && b.typ == "tool_result" {
				ids = append(ids, b.f["tool_use_id"])
			}
		}
	}
	kind, ended := "", ""
	if len(ids) == 1 {
		for _, k := range denialKinds {
			if f[fDenialKind].strEq(k) {
				kind = k
			}
		}
		if f[fCallEnded].strEq("not_started") {
			ended = "not_started"
		}
	}
	rewritten := f[fResultRewritten].truthy()
	if kind != "" || ended != "" || rewritten {
		for _, id := range ids {
			if s, ok := id.str(); ok {
				m.ToolResultMeta = append(m.ToolResultMeta, ToolResultMeta{ID: s, NonExecutionKind: kind,
					CallEnded: ended, RewrittenByPlugin: rewritten})
			}
		}
	}
	m.IsCompactSummary = f[fCompactSummary].isTrue()
	m.IsMeta = f[fMeta].isTrue() || m.IsCompactSummary || f[fVisibleOnly].isTrue()
	m.IsQueuedCommand = f[fQueuedCommand].isTrue()
	m.IsCompletedLocalCommand = f[fCompletedLocal].isTrue()
	if o := f[fOrigin]; !o.nullish() {
		if o = normalizeOrigin(o); o.truthy() {
			m.Origin = json.RawMessage(o)
		}
	}
	return m
}

// normalizeOrigin rebuilds a task-notification origin with only the keys
// the SDK keeps; other origins pass through.
func normalizeOrigin(o jv) jv {
	if !o.isObj() || !o.field("kind").strEq("task-notification") {
		return o
	}
	var b objBuilder
	b.add("kind", jstr("task-notification"))
	var sub, fire, prod, run, kind jv
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
		}
	})
	b.add("subkind", sub)
	b.add("fireReason", fire)
	b.add("producer", prod)
	if s, ok := run.str(); ok && runIDRE.MatchString(s) {
		b.add("runId", run)
	}
	if kind.strEq("mcp-task") {
		b.add("taskKind", kind)
	}
	return b.done()
}

// ---------------------------------------------------------------------------
// Local commands and queued commands

var interruptPrefixes = []string{
	"[Request interrupted by user]",
	"[Request interrupted: the session ended before this agent finished. Nobody asked it to stop.]",
	"[This turn ended before it finished.]",
	"[Agent call interrupted: the process running this conversation stopped before this agent finished, so it returned no result. Nobody asked it to stop.]",
	"[Request interrupted by user for tool use]",
	"[Tool call did not complete: the turn was ended to deliver the message that follows. Nothing refused it; re-run it if still needed.]",
	"[Tool call interrupted: the session ended before this call's result was recorded, so its outcome is unknown. Check whether it took effect before relying on it or running it again.]",
	"[Tool call result not in this copy: this session was copied from another session before that session recorded this call's result. The call may have finished there, may still be running there, or may never have run. Check whether it took effect before relying on it or running it again.]",
	"The user doesn't want to take this action right now. STOP what you are doing and wait for the user to tell you how to proceed.",
	"[Tool call skipped: the turn was stopped before this call ran, by the check whose denial is on another call in this batch. Nothing refused this call and it had no effects; re-run it if still needed.]",
	"[Tool call skipped: the turn ended to deliver the message that follows before this call ran. Nothing refused it; re-run it if still needed.]",
}

func hasInterruptPrefix(s string) bool {
	for _, p := range interruptPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// isInterruption: a user row whose content is only interruption notices.
func isInterruption(r *row) bool {
	if r.typ != core.TypeUser {
		return false
	}
	if !r.f[fMessage].isObj() {
		return false // message?.content of a non-object is undefined
	}
	mi := r.m()
	if s, ok := mi.content.str(); ok {
		return hasInterruptPrefix(s)
	}
	if !mi.content.isArr() || len(mi.blocks) == 0 {
		return false
	}
	for _, b := range mi.blocks {
		if !b.obj {
			return false
		}
		var text jv
		switch {
		case b.typ == "text":
			text = b.text
		case b.typ == "tool_result" && b.f["is_error"].isTrue():
			text = b.f["content"]
		}
		s, ok := text.str()
		if !ok || !hasInterruptPrefix(s) {
			return false
		}
	}
	return true
}

// commandKind classifies a user row's text: "record" (<command-name>),
// "output" (local command stdout/stderr) or "caveat".
func commandKind(r *row) string {
	if r.f[fPromptSource] != nil {
		return ""
	}
	if !r.f[fMessage].isObj() {
		return ""
	}
	mi := r.m()
	var text jv
	switch {
	case mi.content.isArr():
		for i := len(mi.blocks) - 1; i >= 0; i-- {
			if b := mi.blocks[i]; b.obj && b.typ == "text" {
				text = b.text
				break
			}
		}
	case mi.content.isStr():
		text = mi.content
	}
	s, ok := text.str()
	if !ok {
		return ""
	}
	switch {
	case strings.HasPrefix(s, "<command-name>"):
		return "record"
	case strings.HasPrefix(s, "<local-command-stdout>"), strings.HasPrefix(s, "<local-command-stderr>"):
		return "output"
	case strings.HasPrefix(s, "<local-command-caveat>"):
		return "caveat"
	}
	return ""
}

// markCommands flags finished local commands and turns queued-command
// attachments that were delivered into the user messages they became.
func markCommands(items []*row, mainFile bool, trailingIDs map[string]bool, delivered map[string]int) []*row {
	// Local commands: after a meta caveat row, its <command-name> row and
	// the output rows that follow it.
	local := map[int]bool{}
	for o, r := range items {
		if r.typ != core.TypeUser || !r.f[fMeta].truthy() || commandKind(r) != "caveat" {
			continue
		}
		rec := false
		for i := o + 1; i < len(items); i++ {
			a := items[i]
			if a.typ == core.TypeAssistant {
				break
			}
			if a.typ != core.TypeUser || a.f[fMeta].truthy() {
				continue
			}
			k := commandKind(a)
			if k == "record" && !rec {
				rec = true
			} else if k != "output" || !rec {
				break
			}
			local[i] = true
		}
	}
	// Whether a reply follows each row.
	replied := make([]bool, len(items))
	state := ""
	for o := len(items) - 1; o >= 0; o-- {
		s := items[o]
		replied[o] = state == "reply"
		if s.typ == core.TypeAssistant || s.isToolResultRow() || isInterruption(s) {
			state = "reply"
		} else if s.typ == core.TypeUser && !s.f[fMeta].truthy() && !s.f[fCompactSummary].truthy() && !local[o] {
			state = "prompt"
		}
	}
	// Delivered queued commands.
	deliveredAt := map[int]bool{}
	if len(delivered) > 0 {
		groups := map[string][]int{}
		var keys []string
		for i, r := range items {
			cmd := queuedCommand(r.typ, &r.f)
			key := ""
			if id, ok := commandField(cmd, "delivery_id"); ok {
				key = "delivery:" + id
			} else if src, ok := commandField(cmd, "source_uuid"); ok {
				key = "uuid:" + src
			}
			if _, ok := delivered[key]; key == "" || !ok {
				continue
			}
			if _, ok := groups[key]; !ok {
				keys = append(keys, key)
			}
			groups[key] = append(groups[key], i)
		}
		for _, key := range keys {
			idx := groups[key]
			if strings.HasPrefix(key, "delivery:") {
				for _, i := range idx {
					_, ok := delivered["entry:"+items[i].uuid]
					deliveredAt[i] = ok
				}
				continue
			}
			n := delivered[key]
			for j, i := range idx {
				deliveredAt[i] = j >= len(idx)-n
			}
		}
	}
	uuids := make(map[string]bool, len(items))
	for _, r := range items {
		uuids[r.uuid] = true
	}
	out := make([]*row, len(items))
	for i, r := range items {
		if local[i] {
			n := r.clone()
			n.f[fCompletedLocal] = jv("true")
			out[i] = n
			continue
		}
		use, ok := deliveredAt[i]
		if !ok {
			use = replied[i] || trailingIDs[r.uuid]
		}
		out[i] = queuedToUser(r, use, uuids, !mainFile)
	}
	return out
}

// queuedToUser turns a delivered queued-command attachment into its user
// message.
func queuedToUser(r *row, use bool, uuids map[string]bool, keepMeta bool) *row {
	if !use || r.typ != core.TypeAttachment || !r.f[fAttachment].objLike() {
		return r
	}
	a := r.f[fAttachment]
	var at [nFields]jv
	var prompt, srcUUID, forwarded, mode, runID jv
	eachField(a, func(k []byte, v jv) {
		switch string(k) {
		case "type":
			at[fType] = v
		case "prompt":
			prompt = v
		case "origin":
			at[fOrigin] = v
		case "isMeta":
			at[fMeta] = v
		case "source_uuid":
			srcUUID = v
		case "forwardedIntent":
			forwarded = v
		case "commandMode":
			mode = v
		case "runId":
			runID = v
		}
	})
	origin := at[fOrigin]
	if !(origin.isObj() && origin.field("kind").isStr()) {
		origin = nil
	}
	if !at[fType].strEq("queued_command") || (at[fMeta].truthy() && !keepMeta && !channelOrigin(origin)) ||
		(!prompt.isStr() && !prompt.isArr()) {
		return r
	}
	if forwarded.isObj() {
		if l, ok := forwarded.field("lineage").str(); ok && l != "" {
			return r
		}
	}
	id := r.uuid
	if s, ok := srcUUID.str(); ok && s != "" {
		id = s
	}
	if id != r.uuid && uuids[id] {
		return r
	}
	uuids[id] = true
	// The origin: task-notification origins are rebuilt and may take the
	// run id.
	var o jv
	if origin != nil {
		o = normalizeOrigin(origin)
	} else if mode.strEq("task-notification") {
		o = jv(`{"kind":"task-notification"}`)
	}
	if s, ok := runID.str(); ok && runIDRE.MatchString(s) && o.isObj() && o.field("kind").strEq("task-notification") &&
		o.field("runId") == nil {
		o = spread(o, nil, "runId", runID)
	}
	n := &row{e: r.e, pos: r.pos, typ: core.TypeUser, uuid: id, hasUUID: true}
	n.f[fType] = jstr(core.TypeUser)
	n.f[fUUID] = jstr(id)
	n.f[fParent] = r.f[fParent]
	n.f[fSession] = r.f[fSession]
	n.f[fTimestamp] = r.f[fTimestamp]
	var msg objBuilder
	msg.add("role", jstr(core.TypeUser))
	msg.add("content", prompt)
	n.f[fMessage] = msg.done()
	if at[fMeta].truthy() {
		n.f[fMeta] = jv("true")
	} else {
		n.f[fMeta] = jv("false")
	}
	n.f[fOrigin] = o
	n.f[fQueuedCommand] = jv("true")
	n.f[fSidechain] = r.f[fSidechain]
	n.f[fTeam] = r.f[fTeam]
	return n
}

// ---------------------------------------------------------------------------
// Host rows: tool calls a host ran for the model, stored beside the chain.

func hostCarrier(r *row) bool {
	return r.typ == core.TypeAssistant && (r.f[fHostHidden].isArr() || r.f[fRanBy].isStr())
}

// hostHide follows, after each chain row, the virtual rows that a hidden
// host call left off the chain.
func hostHide(path, all []*row) []*row {
	found := false
	for _, r := range path {
		if hostCarrier(r) {
			found = true
			break
		}
	}
	if !found {
		return path
	}
	in := make(map[string]bool, len(path))
	named := make(map[string]bool, len(path))
	for _, r := range path {
		in[r.uuid] = true
		if p, ok := r.f[fParent].str(); ok {
			named[p] = true
		}
	}
	child := map[string]*row{}
	for _, r := range all {
		if !in[r.uuid] {
			if p, ok := r.f[fParent].str(); ok {
				child[p] = r
			}
		}
	}
	var out []*row
	for _, i := range path {
		out = append(out, i)
		a := child[i.uuid]
		if i.f[fVirtual].isTrue() || a == nil {
			continue
		}
		if hostCarrier(i) && a.typ == core.TypeUser {
			in[a.uuid] = true
			a = child[a.uuid]
		} else if a.typ == core.TypeAttachment && (i.typ != core.TypeUser || named[i.uuid]) {
			continue
		}
		for a != nil && !in[a.uuid] {
			in[a.uuid] = true
			if a.f[fVirtual].isTrue() && (hostCarrier(a) || (a.typ == core.TypeUser && hostCarrier(out[len(out)-1]))) {
				out = append(out, a)
			} else if a.typ != core.TypeAttachment {
				break
			}
			a = child[a.uuid]
		}
	}
	return out
}

// hostExpand inserts, after each row that hid host tool calls, the virtual
// assistant/user rows rebuilt from host-row records.
func hostExpand(items, all, hostRows []*row) []*row {
	if len(hostRows) == 0 {
		return items
	}
	known := make(map[string]bool, len(all))
	for _, r := range all {
		known[r.uuid] = true
	}
	withheld := map[string]bool{}
	results := map[string]*row{}
	calls := map[string][]*row{}
	for _, h := range hostRows {
		ran, _ := h.f[fRanBy].str()
		rowUUID, isStr := h.f[fRowUUID].str()
		block := h.f[fBlock]
		switch {
		case h.f[fWithheld].isTrue():
			withheld[ran] = true
		case !isStr || known[rowUUID]:
		case block.isObj() && block.field("type").strEq("tool_result"):
			if id, ok := block.field("tool_use_id").str(); ok {
				results[id] = h
			} else {
				results[string(block.field("tool_use_id"))] = h
			}
		case block.isObj() && block.field("type").strEq("tool_use"):
			known[rowUUID] = true
			calls[ran] = append(calls[ran], h)
		}
	}
	virtual := func(h *row, role string, owner *row) *row {
		rowUUID, _ := h.f[fRowUUID].str()
		n := &row{e: owner.e, pos: owner.pos, typ: role, uuid: rowUUID, hasUUID: true}
		n.f[fType] = jstr(role)
		n.f[fUUID] = jstr(rowUUID)
		n.f[fParent] = jv("null")
		n.f[fSession] = owner.f[fSession]
		if h.f[fTimestamp].isStr() {
			n.f[fTimestamp] = h.f[fTimestamp]
		}
		n.f[fVirtual] = jv("true")
		n.f[fRanBy] = h.f[fRanBy]
		var m objBuilder
		m.add("role", jstr(role))
		m.add("content", jv("["+string(h.f[fBlock])+"]"))
		n.f[fMessage] = m.done()
		return n
	}
	var out []*row
	for _, a := range items {
		out = append(out, a)
		if a.f[fVirtual].isTrue() || !a.f[fHostHidden].isArr() {
			continue
		}
		for _, idv := range a.f[fHostHidden].elems() {
			id, ok := idv.str()
			if !ok {
				continue
			}
			var list []*row
			if !withheld[id] {
				list = calls[id]
			}
			delete(calls, id)
			for _, m := range list {
				out = append(out, virtual(m, core.TypeAssistant, a))
				useID, _ := m.f[fBlock].field("id").str()
				if g := results[useID]; g != nil {
					out = append(out, virtual(g, core.TypeUser, a))
				}
			}
		}
	}
	return out
}

// hostFold shows host-run calls in place of the hidden tool_use blocks.
func hostFold(items []*row) []*row {
	found := false
	for _, r := range items {
		if hostCarrier(r) {
			found = true
			break
		}
	}
	if !found {
		return items
	}
	once, twice := map[string]bool{}, map[string]bool{}
	for _, r := range items {
		if r.typ != core.TypeAssistant || !r.f[fMessage].isObj() {
			continue
		}
		for _, b := range r.m().blocks {
			if b.obj && b.typ == "tool_use" {
				id := string(b.f["id"])
				if once[id] {
					twice[id] = true
				} else {
					once[id] = true
				}
			}
		}
	}
	hiddenMsg := map[string]jv{}  // tool_use id -> the message that hid it
	shown := map[string]*row{}    // tool_use id -> the carrier shown with host content
	ranShown := map[string]bool{} // tool_use ids of virtual host calls shown
	withMessage := func(r *row, msg jv, content jv) *row {
		n := r.clone()
		n.f[fMessage] = spread(msg, nil, "content", content)
		n.msg = nil
		return n
	}
	joinBlocks := func(bs []blockInfo) jv {
		var b []byte
		b = append(b, '[')
		for i, x := range bs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, x.raw...)
		}
		return append(b, ']')
	}
	hostContent := func(r *row, blk blockInfo, key string) jv {
		hc := r.f[fHostContent]
		if !hc.isArr() {
			return nil
		}
		var match []jv
		for _, x := range hc.elems() {
			if x.isObj() && x.field("type").strEq(blk.typ) {
				match = append(match, x)
			}
		}
		if len(match) == 1 && strictEq(match[0].field(key), blk.f[key]) && strictEq(match[0].field("name"), blk.f["name"]) {
			return hc
		}
		return nil
	}
	var out []*row
	for _, i := range items {
		msg := i.f[fMessage]
		if !msg.isObj() {
			out = append(out, i)
			continue
		}
		mi := i.m()
		var l []blockInfo
		if mi.content.isArr() {
			l = mi.blocks
		}
		if hostCarrier(i) {
			var hidden []string
			for _, x := range i.f[fHostHidden].elems() {
				if s, ok := x.str(); ok {
					hidden = append(hidden, s)
				}
			}
			var keep []blockInfo
			for _, b := range l {
				id, isStr := b.f["id"].str()
				hide := b.obj && b.typ == "tool_use" && isStr && contains(hidden, id) && !twice[string(b.f["id"])]
				if hide {
					hiddenMsg[id] = msg
				} else {
					keep = append(keep, b)
				}
			}
			if len(keep) < len(l) {
				if len(l) == 1 && l[0].obj && l[0].typ == "tool_use" && i.f[fHostContent].isArr() {
					if hc := i.f[fHostContent].elems(); len(hc) > 0 && hc[0].isObj() && hc[0].field("type").strEq("tool_use") &&
						strictEq(hc[0].field("id"), l[0].f["id"]) {
						id, _ := l[0].f["id"].str()
						shown[id] = withMessage(i, msg, jv("["+string(hc[0])+"]"))
					}
				}
				if len(keep) > 0 {
					out = append(out, withMessage(i, msg, joinBlocks(keep)))
				}
				continue
			}
			if !i.f[fRanBy].isStr() || !i.f[fVirtual].isTrue() || len(l) != 1 || !l[0].obj || l[0].typ != "tool_use" {
				out = append(out, i)
				continue
			}
			id, _ := l[0].f["id"].str()
			ranShown[id] = true
			base := msg
			ran, _ := i.f[fRanBy].str()
			if hm, ok := hiddenMsg[ran]; ok {
				base = hm
			}
			content := hostContent(i, l[0], "id")
			if content == nil {
				content = joinBlocks(l)
			}
			out = append(out, withMessage(i, base, content))
			continue
		}
		if i.typ != core.TypeUser {
			out = append(out, i)
			continue
		}
		var results []blockInfo
		for _, b := range l {
			if b.obj && b.typ == "tool_result" {
				results = append(results, b)
			}
		}
		var u *blockInfo
		if len(results) == 1 {
			u = &results[0]
		}
		var p *row
		var uid string
		if u != nil {
			uid, _ = u.f["tool_use_id"].str()
			p = shown[uid]
		}
		var fc jv
		if u != nil {
			if p != nil {
				if u.f["is_error"].isTrue() {
					fc = hostContent(i, *u, "tool_use_id")
				}
			} else if i.f[fVirtual].isTrue() && ranShown[uid] {
				fc = hostContent(i, *u, "tool_use_id")
			}
		}
		if fc != nil {
			g := withMessage(i, msg, fc)
			delete(shown, uid)
			if p == nil {
				out = append(out, g)
			} else {
				out = append(out, p, g)
			}
			continue
		}
		var dropped []int
		for k, b := range results {
			if id, ok := b.f["tool_use_id"].str(); ok {
				if _, hid := hiddenMsg[id]; hid {
					dropped = append(dropped, k)
				}
			}
		}
		if len(dropped) == 0 {
			out = append(out, i)
			continue
		}
		if len(dropped) == len(results) {
			continue
		}
		var keep []blockInfo
		for _, b := range l {
			drop := false
			if b.obj && b.typ == "tool_result" {
				if id, ok := b.f["tool_use_id"].str(); ok {
					_, drop = hiddenMsg[id]
				}
			}
			if !drop {
				keep = append(keep, b)
			}
		}
		n := withMessage(i, msg, joinBlocks(keep))
		n.f[fDenialKind] = nil
		n.f[fDenialUnanswered] = nil
		out = append(out, n)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// IsPlainCompactBoundary reports whether e is a system compact_boundary row
// whose compactMetadata has neither preservedSegment nor preservedMessages:
// a boundary after which nothing older is needed. The SDK drops everything
// before the last such line when it loads a large file.
func IsPlainCompactBoundary(e *core.Entry) bool {
	var f [nFields]jv
	if !extractFields(jv(bytes.TrimLeft(e.Raw, " \t\r\n")), &f) {
		return false
	}
	if !f[fType].strEq(core.TypeSystem) || !f[fSubtype].strEq("compact_boundary") {
		return false
	}
	cm := f[fCompactMeta]
	if !cm.isObj() {
		return true
	}
	return !cm.field("preservedSegment").truthy() && !cm.field("preservedMessages").truthy()
}

// Rebuild is BuildChain as core.Rebuild: what a host passes to
// core.ResumeOptions.Rebuild.
func Rebuild(entries []core.Entry, sidechain bool) core.Rebuilt {
	c := BuildChain(entries, ChainOptions{Sidechain: sidechain})
	return core.Rebuilt{Entries: c.Entries, Trailing: c.Trailing, Leaf: c.Leaf}
}
