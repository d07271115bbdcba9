package transcript

import (
	"fmt"
	"sort"

	"github.com/e0dc0000/scribe/core"
)

// The SDK's conversation rebuild, as the fork uses it

// fkRow is one transcript row.
type fkRow struct {
	obj  *fkObj
	uuid string
	typ  string

	msgDone bool
	msgID   string // assistant message.id ("" when none)
	uses    []string
	results []string
}

func (r *fkRow) subtype() string {
	s, _ := fkStr(r.obj.get("subtype"))
	return s
}

func (r *fkRow) loadMessage() {
	if r.msgDone {
		return
	}
	r.msgDone = true
	msg := r.obj.get("message")
	if !fkIsObj(msg) {
		return
	}
	if r.typ == core.TypeAssistant {
		r.msgID, _ = fkStr(fkField(msg, "id"))
	}
	for _, b := range fkElems(fkField(msg, "content")) {
		if !fkIsObj(b) {
			continue
		}
		switch t, _ := fkStr(fkField(b, "type")); t {
		case "tool_use":
			if s, ok := fkStr(fkField(b, "id")); ok {
				r.uses = append(r.uses, s)
			}
		case "tool_result":
			if s, ok := fkStr(fkField(b, "tool_use_id")); ok {
				r.results = append(r.results, s)
			}
		}
	}
}

// messageID is an assistant row's non-empty message.id.
func (r *fkRow) messageID() string { r.loadMessage(); return r.msgID }

// hasToolResult reports a user row with a parent whose content holds a
// tool_result block.
func (r *fkRow) hasToolResult(parent []byte) bool {
	if r.typ != core.TypeUser || !fkTruthy(parent) {
		return false
	}
	msg := r.obj.get("message")
	if !fkIsObj(msg) {
		return false
	}
	for _, b := range fkElems(fkField(msg, "content")) {
		if fkIsObj(b) && fkStrIs(fkField(b, "type"), "tool_result") {
			return true
		}
	}
	return false
}

// fkNode is a row as the rebuild sees it: its parent may be re-linked, and
// a clean node reads as the fork's copy (not a sidechain row, no team, no
// sourceToolAssistantUUID).
type fkNode struct {
	r      *fkRow
	parent []byte
	clean  bool
}

func fkNodes(rows []*fkRow, clean bool) []*fkNode {
	out := make([]*fkNode, len(rows))
	for i, r := range rows {
		out[i] = &fkNode{r: r, parent: r.obj.get("parentUuid"), clean: clean}
	}
	return out
}

func (n *fkNode) get(k string) []byte {
	if n.clean {
		if k == "isSidechain" {
			return fkFalse
		}
		for _, y := range fkYJ {
			if k == y {
				return nil
			}
		}
	}
	return n.r.obj.get(k)
}

func (n *fkNode) with(parent []byte) *fkNode {
	c := *n
	c.parent = parent
	return &c
}

// fkBuildChain is the SDK's rebuild of the conversation (the one its
// forkSession uses): compact relinking, the leaf, the walk to the root,
// split-assistant repair. It returns the chain and the terminal row the
// leaf was found from (nil when the fallback chose the leaf).
func fkBuildChain(in []*fkNode) ([]*fkNode, *fkNode, error) {
	fm := newFkMap(in)
	for _, key := range fm.order {
		if err := fm.relinkCompact(fm.m[key]); err != nil {
			return nil, nil, err
		}
	}
	leaf, terminal := fm.newestTerminalLeaf()
	if leaf == nil {
		if leaf = fm.fallbackLeaf(); leaf == nil {
			return nil, nil, nil
		}
	}
	var chain []*fkNode
	onChain := map[string]bool{}
	for y := fm.m[leaf.r.uuid]; y != nil && !onChain[y.r.uuid]; y = fm.up(y) {
		onChain[y.r.uuid] = true
		chain = append(chain, y)
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return fkRepairSplit(fm.order, fm.m, chain, onChain), terminal, nil
}

// fkMap is the fork's map of rows by uuid: first-seen order, last value,
// last position.
type fkMap struct {
	order []string
	m     map[string]*fkNode
	pos   map[string]int
}

func newFkMap(in []*fkNode) *fkMap {
	fm := &fkMap{
		order: make([]string, 0, len(in)),
		m:     make(map[string]*fkNode, len(in)),
		pos:   make(map[string]int, len(in)),
	}
	for i, n := range in {
		if _, ok := fm.m[n.r.uuid]; !ok {
			fm.order = append(fm.order, n.r.uuid)
		}
		fm.m[n.r.uuid] = n
		fm.pos[n.r.uuid] = i
	}
	return fm
}

func (fm *fkMap) up(n *fkNode) *fkNode {
	if s, ok := fkStr(n.parent); ok && s != "" {
		return fm.m[s]
	}
	return nil
}

// relinkCompact relinks the rows a compact boundary h kept to its anchor;
// a boundary the SDK fails on is an error.
func (fm *fkMap) relinkCompact(h *fkNode) error {
	if !fkIsBoundary(h.r) {
		return nil
	}
	m := fm.m
	cm := h.get("compactMetadata")
	var pm, ps []byte
	if fkIsObj(cm) {
		pm, ps = fkField(cm, "preservedMessages"), fkField(cm, "preservedSegment")
	}
	switch {
	case fkTruthy(pm):
		uuids, skip, err := fkRelinkList(pm, m, h.r.uuid)
		if err != nil || skip {
			return err
		}
		anchor := fkField(pm, "anchorUuid")
		c := anchor
		for _, w := range uuids {
			m[w] = m[w].with(c)
			c = core.AppendJSString(nil, w)
		}
		head, tail := uuids[0], core.AppendJSString(nil, uuids[len(uuids)-1])
		for _, k := range fm.order {
			if x := m[k]; fkSame(x.parent, anchor) && k != head {
				m[k] = x.with(tail)
			}
		}
	case fkTruthy(ps):
		var head, anchor, tail []byte
		if fkIsObj(ps) {
			head, anchor, tail = fkField(ps, "headUuid"), fkField(ps, "anchorUuid"), fkField(ps, "tailUuid")
		}
		hs, hok := fkStr(head)
		if hok && m[hs] != nil {
			m[hs] = m[hs].with(anchor)
		}
		for _, k := range fm.order {
			if x := m[k]; fkSame(x.parent, anchor) && !(hok && k == hs) {
				m[k] = x.with(tail)
			}
		}
	}
	return nil
}

func fkCountsForLeaf(n *fkNode) bool {
	if fkTruthy(n.get("isSidechain")) || fkTruthy(n.get("teamName")) || n.r.typ == core.TypeProgress {
		return false
	}
	return !(n.r.typ == core.TypeAttachment && fkStrIs(fkField(n.get("attachment"), "type"), "fork_briefing"))
}

func fkIsMessage(n *fkNode) bool { return n.r.typ == core.TypeUser || n.r.typ == core.TypeAssistant }

// newestTerminalLeaf is the leaf (and the terminal row it was climbed
// from): the newest terminal that climbs to a user or assistant row.
func (fm *fkMap) newestTerminalLeaf() (leaf, terminal *fkNode) {
	candParents := map[string]bool{}
	for _, k := range fm.order {
		x := fm.m[k]
		if s, ok := fkStr(x.parent); ok && s != "" && fkCountsForLeaf(x) {
			candParents[s] = true
		}
	}
	var cands []*fkNode
	for _, k := range fm.order {
		if x := fm.m[k]; fkCountsForLeaf(x) && !candParents[k] {
			cands = append(cands, x)
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return fm.pos[cands[a].r.uuid] > fm.pos[cands[b].r.uuid] })
	visited := map[string]bool{}
	for _, h := range cands {
		var path []string
		here := map[string]bool{}
		for c := h; c != nil && !visited[c.r.uuid] && !here[c.r.uuid]; c = fm.up(c) {
			if fkIsMessage(c) {
				return c, h
			}
			here[c.r.uuid] = true
			path = append(path, c.r.uuid)
		}
		for _, u := range path {
			visited[u] = true
		}
	}
	return nil, nil
}

// fallbackLeaf is the newest user/assistant row a row no one names climbs
// to, main rows (not sidechain, team or meta) first; nil if none.
func (fm *fkMap) fallbackLeaf() *fkNode {
	parents := map[string]bool{}
	for _, k := range fm.order {
		if s, ok := fkStr(fm.m[k].parent); ok && s != "" {
			parents[s] = true
		}
	}
	var found []*fkNode
	for _, k := range fm.order {
		if parents[k] {
			continue
		}
		seen := map[string]bool{}
		for c := fm.m[k]; c != nil && !seen[c.r.uuid]; c = fm.up(c) {
			seen[c.r.uuid] = true
			if fkIsMessage(c) {
				found = append(found, c)
				break
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	var main []*fkNode
	for _, c := range found {
		if !fkTruthy(c.get("isSidechain")) && !fkTruthy(c.get("teamName")) && !fkTruthy(c.get("isMeta")) {
			main = append(main, c)
		}
	}
	if len(main) > 0 {
		return fm.latest(main)
	}
	return fm.latest(found)
}

func (fm *fkMap) latest(list []*fkNode) *fkNode {
	best := list[0]
	for _, x := range list[1:] {
		if fm.pos[x.r.uuid] > fm.pos[best.r.uuid] {
			best = x
		}
	}
	return best
}

// fkRelinkList checks a compact boundary's preservedMessages as the SDK
// uses it: the uuids to chain, or skip when the SDK skips the boundary; an
// error where the SDK throws.
func fkRelinkList(pm []byte, m map[string]*fkNode, boundary string) ([]string, bool, error) {
	bad := fmt.Errorf("%w: compact boundary %s has a malformed compactMetadata.preservedMessages (the SDK fails on it too)",
		ErrForkUnsupported, boundary)
	if !fkIsObj(pm) {
		return nil, false, bad
	}
	u := fkField(pm, "uuids")
	switch {
	case u == nil || fkIsNull(u):
		return nil, false, bad
	case fkIsStr(u):
		if string(u) == `""` {
			return nil, true, nil
		}
		return nil, false, bad
	case fkIsObj(u):
		if fkField(u, "0") != nil {
			return nil, false, bad
		}
		return nil, true, nil
	case !fkIsArr(u):
		return nil, true, nil
	}
	els := fkElems(u)
	if len(els) == 0 {
		return nil, true, nil
	}
	out := make([]string, len(els))
	for i, el := range els {
		s, ok := fkStr(el)
		if !ok || m[s] == nil {
			return nil, true, nil
		}
		out[i] = s
	}
	return out, false, nil
}

// fkRepairSplit puts back, after the chain row holding each assistant
// message id, that message's other rows (older CLIs wrote one row per
// content block) and the tool_result rows answering them, ordered by
// timestamp.
func fkRepairSplit(order []string, m map[string]*fkNode, chain []*fkNode, onChain map[string]bool) []*fkNode {
	nodes := make([]*fkNode, len(order))
	for i, k := range order {
		nodes[i] = m[k]
	}
	return reattach(fkSplitRules, nodes, chain, mapSet(onChain), nil)
}

// fkSplitRules read the split-assistant repair's facts off a fork node.
// They differ from rowSplitRules where the SDK's fork reads a row
// differently from its getSessionMessages: an empty message.id is no id,
// the tool_use and tool_result ids are those of message.content whatever
// message's shape, and a timestamp that is not a string sorts by its JSON
// text (the read path sorts it as "").
var fkSplitRules = splitRules[*fkNode]{
	uuid:        func(n *fkNode) string { return n.r.uuid },
	isAssistant: func(n *fkNode) bool { return n.r.typ == core.TypeAssistant },
	messageID: func(n *fkNode) (string, bool) {
		id := n.r.messageID()
		return id, id != ""
	},
	toolUses:    func(n *fkNode) []string { n.r.loadMessage(); return n.r.uses },
	toolResults: func(n *fkNode) []string { n.r.loadMessage(); return n.r.results },
	isResultRow: func(n *fkNode) bool { return n.r.hasToolResult(n.parent) },
	parent:      func(n *fkNode) (string, bool) { return fkStr(n.parent) },
	sourceTool: func(n *fkNode) (string, bool) {
		st := n.get("sourceToolAssistantUUID")
		if !fkIsStr(st) || fkSame(st, n.parent) {
			return "", false
		}
		return fkStr(st)
	},
	sameSide: func(a, b *fkNode) bool {
		side := func(n *fkNode) []byte {
			if v := n.get("isSidechain"); v != nil && !fkIsNull(v) {
				return v
			}
			return fkFalse
		}
		return fkSame(side(a), side(b)) && fkSame(a.get("agentId"), b.get("agentId"))
	},
	timeKey: fkTimeKey,
}

// fkTimeKey is a row's timestamp for ordering ("" when absent or null).
// The SDK compares with localeCompare; for ISO-8601 timestamps of one
// format that is the byte order.
func fkTimeKey(n *fkNode) string {
	v := n.get("timestamp")
	if v == nil || fkIsNull(v) {
		return ""
	}
	if s, ok := fkStr(v); ok {
		return s
	}
	return string(v)
}
