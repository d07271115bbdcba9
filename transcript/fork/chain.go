package fork

import (
	"fmt"
	"sort"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/transcript/internal/jsjson"
	"github.com/e0dc0000/scribe/transcript/internal/split"
)

// The SDK's conversation rebuild, as the fork uses it

// row is one transcript row.
type row struct {
	obj  *jsjson.Object
	uuid string
	typ  string

	msgDone bool
	msgID   string // assistant message.id ("" when none)
	uses    []string
	results []string
}

func (r *row) subtype() string {
	s, _ := stringOf(r.obj.Get("subtype"))
	return s
}

func (r *row) loadMessage() {
	if r.msgDone {
		return
	}
	r.msgDone = true
	msg := r.obj.Get("message")
	if !isObj(msg) {
		return
	}
	if r.typ == core.TypeAssistant {
		r.msgID, _ = stringOf(field(msg, "id"))
	}
	for _, b := range elems(field(msg, "content")) {
		if !isObj(b) {
			continue
		}
		switch t, _ := stringOf(field(b, "type")); t {
		case "tool_use":
			if s, ok := stringOf(field(b, "id")); ok {
				r.uses = append(r.uses, s)
			}
		case "tool_result":
			if s, ok := stringOf(field(b, "tool_use_id")); ok {
				r.results = append(r.results, s)
			}
		}
	}
}

// messageID is an assistant row's non-empty message.id.
func (r *row) messageID() string { r.loadMessage(); return r.msgID }

// hasToolResult reports a user row with a parent whose content holds a
// tool_result block.
func (r *row) hasToolResult(parent []byte) bool {
	if r.typ != core.TypeUser || !truthy(parent) {
		return false
	}
	msg := r.obj.Get("message")
	if !isObj(msg) {
		return false
	}
	for _, b := range elems(field(msg, "content")) {
		if isObj(b) && strIs(field(b, "type"), "tool_result") {
			return true
		}
	}
	return false
}

// node is a row as the rebuild sees it: its parent may be re-linked, and
// a clean node reads as the fork's copy (not a sidechain row, no team, no
// sourceToolAssistantUUID).
type node struct {
	r      *row
	parent []byte
	clean  bool
}

func toNodes(rows []*row, clean bool) []*node {
	out := make([]*node, len(rows))
	for i, r := range rows {
		out[i] = &node{r: r, parent: r.obj.Get("parentUuid"), clean: clean}
	}
	return out
}

func (n *node) get(k string) []byte {
	if n.clean {
		if k == "isSidechain" {
			return jsonFalse
		}
		for _, y := range removedKeys {
			if k == y {
				return nil
			}
		}
	}
	return n.r.obj.Get(k)
}

func (n *node) with(parent []byte) *node {
	c := *n
	c.parent = parent
	return &c
}

// buildChain is the SDK's rebuild of the conversation (the one its
// forkSession uses): compact relinking, the leaf, the walk to the root,
// split-assistant repair. It returns the chain and the terminal row the
// leaf was found from (nil when the fallback chose the leaf).
func buildChain(in []*node) ([]*node, *node, error) {
	fm := newNodeMap(in)
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
	var chain []*node
	onChain := map[string]bool{}
	for y := fm.m[leaf.r.uuid]; y != nil && !onChain[y.r.uuid]; y = fm.up(y) {
		onChain[y.r.uuid] = true
		chain = append(chain, y)
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return repairSplit(fm.order, fm.m, chain, onChain), terminal, nil
}

// nodeMap is the fork's map of rows by uuid: first-seen order, last value,
// last position.
type nodeMap struct {
	order []string
	m     map[string]*node
	pos   map[string]int
}

func newNodeMap(in []*node) *nodeMap {
	fm := &nodeMap{
		order: make([]string, 0, len(in)),
		m:     make(map[string]*node, len(in)),
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

func (fm *nodeMap) up(n *node) *node {
	if s, ok := stringOf(n.parent); ok && s != "" {
		return fm.m[s]
	}
	return nil
}

// relinkCompact relinks the rows a compact boundary h kept to its anchor;
// a boundary the SDK fails on is an error.
func (fm *nodeMap) relinkCompact(h *node) error {
	if !isBoundary(h.r) {
		return nil
	}
	m := fm.m
	cm := h.get("compactMetadata")
	var pm, ps []byte
	if isObj(cm) {
		pm, ps = field(cm, "preservedMessages"), field(cm, "preservedSegment")
	}
	switch {
	case truthy(pm):
		uuids, skip, err := relinkList(pm, m, h.r.uuid)
		if err != nil || skip {
			return err
		}
		anchor := field(pm, "anchorUuid")
		c := anchor
		for _, w := range uuids {
			m[w] = m[w].with(c)
			c = core.AppendJSString(nil, w)
		}
		head, tail := uuids[0], core.AppendJSString(nil, uuids[len(uuids)-1])
		for _, k := range fm.order {
			if x := m[k]; strictEq(x.parent, anchor) && k != head {
				m[k] = x.with(tail)
			}
		}
	case truthy(ps):
		var head, anchor, tail []byte
		if isObj(ps) {
			head, anchor, tail = field(ps, "headUuid"), field(ps, "anchorUuid"), field(ps, "tailUuid")
		}
		hs, hok := stringOf(head)
		if hok && m[hs] != nil {
			m[hs] = m[hs].with(anchor)
		}
		for _, k := range fm.order {
			if x := m[k]; strictEq(x.parent, anchor) && !(hok && k == hs) {
				m[k] = x.with(tail)
			}
		}
	}
	return nil
}

func countsForLeaf(n *node) bool {
	if truthy(n.get("isSidechain")) || truthy(n.get("teamName")) || n.r.typ == core.TypeProgress {
		return false
	}
	return !(n.r.typ == core.TypeAttachment && strIs(field(n.get("attachment"), "type"), "fork_briefing"))
}

func isMessage(n *node) bool { return n.r.typ == core.TypeUser || n.r.typ == core.TypeAssistant }

// newestTerminalLeaf is the leaf (and the terminal row it was climbed
// from): the newest terminal that climbs to a user or assistant row.
func (fm *nodeMap) newestTerminalLeaf() (leaf, terminal *node) {
	candParents := map[string]bool{}
	for _, k := range fm.order {
		x := fm.m[k]
		if s, ok := stringOf(x.parent); ok && s != "" && countsForLeaf(x) {
			candParents[s] = true
		}
	}
	var cands []*node
	for _, k := range fm.order {
		if x := fm.m[k]; countsForLeaf(x) && !candParents[k] {
			cands = append(cands, x)
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return fm.pos[cands[a].r.uuid] > fm.pos[cands[b].r.uuid] })
	visited := map[string]bool{}
	for _, h := range cands {
		var path []string
		here := map[string]bool{}
		for c := h; c != nil && !visited[c.r.uuid] && !here[c.r.uuid]; c = fm.up(c) {
			if isMessage(c) {
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
func (fm *nodeMap) fallbackLeaf() *node {
	parents := map[string]bool{}
	for _, k := range fm.order {
		if s, ok := stringOf(fm.m[k].parent); ok && s != "" {
			parents[s] = true
		}
	}
	var found []*node
	for _, k := range fm.order {
		if parents[k] {
			continue
		}
		seen := map[string]bool{}
		for c := fm.m[k]; c != nil && !seen[c.r.uuid]; c = fm.up(c) {
			seen[c.r.uuid] = true
			if isMessage(c) {
				found = append(found, c)
				break
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	var main []*node
	for _, c := range found {
		if !truthy(c.get("isSidechain")) && !truthy(c.get("teamName")) && !truthy(c.get("isMeta")) {
			main = append(main, c)
		}
	}
	if len(main) > 0 {
		return fm.latest(main)
	}
	return fm.latest(found)
}

func (fm *nodeMap) latest(list []*node) *node {
	best := list[0]
	for _, x := range list[1:] {
		if fm.pos[x.r.uuid] > fm.pos[best.r.uuid] {
			best = x
		}
	}
	return best
}

// relinkList checks a compact boundary's preservedMessages as the SDK
// uses it: the uuids to chain, or skip when the SDK skips the boundary; an
// error where the SDK throws.
func relinkList(pm []byte, m map[string]*node, boundary string) ([]string, bool, error) {
	bad := fmt.Errorf("%w: compact boundary %s has a malformed compactMetadata.preservedMessages (the SDK fails on it too)",
		ErrUnsupported, boundary)
	if !isObj(pm) {
		return nil, false, bad
	}
	u := field(pm, "uuids")
	switch {
	case u == nil || isNull(u):
		return nil, false, bad
	case isStr(u):
		if string(u) == `""` {
			return nil, true, nil
		}
		return nil, false, bad
	case isObj(u):
		if field(u, "0") != nil {
			return nil, false, bad
		}
		return nil, true, nil
	case !isArr(u):
		return nil, true, nil
	}
	els := elems(u)
	if len(els) == 0 {
		return nil, true, nil
	}
	out := make([]string, len(els))
	for i, el := range els {
		s, ok := stringOf(el)
		if !ok || m[s] == nil {
			return nil, true, nil
		}
		out[i] = s
	}
	return out, false, nil
}

// repairSplit puts back, after the chain row holding each assistant
// message id, that message's other rows (older CLIs wrote one row per
// content block) and the tool_result rows answering them, ordered by
// timestamp.
func repairSplit(order []string, m map[string]*node, chain []*node, onChain map[string]bool) []*node {
	nodes := make([]*node, len(order))
	for i, k := range order {
		nodes[i] = m[k]
	}
	return split.Reattach(splitRules, nodes, chain, split.MapSet(onChain), nil)
}

// splitRules read the split-assistant repair's facts off a fork node.
// They differ from transcript's rules for its rows where the SDK's fork
// reads a row differently from its getSessionMessages: an empty message.id is no id,
// the tool_use and tool_result ids are those of message.content whatever
// message's shape, and a timestamp that is not a string sorts by its JSON
// text (the read path sorts it as "").
var splitRules = split.Rules[*node]{
	UUID:        func(n *node) string { return n.r.uuid },
	IsAssistant: func(n *node) bool { return n.r.typ == core.TypeAssistant },
	MessageID: func(n *node) (string, bool) {
		id := n.r.messageID()
		return id, id != ""
	},
	ToolUses:    func(n *node) []string { n.r.loadMessage(); return n.r.uses },
	ToolResults: func(n *node) []string { n.r.loadMessage(); return n.r.results },
	IsResultRow: func(n *node) bool { return n.r.hasToolResult(n.parent) },
	Parent:      func(n *node) (string, bool) { return stringOf(n.parent) },
	SourceTool: func(n *node) (string, bool) {
		st := n.get("sourceToolAssistantUUID")
		if !isStr(st) || strictEq(st, n.parent) {
			return "", false
		}
		return stringOf(st)
	},
	SameSide: func(a, b *node) bool {
		side := func(n *node) []byte {
			if v := n.get("isSidechain"); v != nil && !isNull(v) {
				return v
			}
			return jsonFalse
		}
		return strictEq(side(a), side(b)) && strictEq(a.get("agentId"), b.get("agentId"))
	},
	TimeKey: timeKey,
}

// timeKey is a row's timestamp for ordering ("" when absent or null).
// The SDK compares with localeCompare; for ISO-8601 timestamps of one
// format that is the byte order.
func timeKey(n *node) string {
	v := n.get("timestamp")
	if v == nil || isNull(v) {
		return ""
	}
	if s, ok := stringOf(v); ok {
		return s
	}
	return string(v)
}
