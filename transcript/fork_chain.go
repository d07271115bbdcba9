package transcript

import (
	"fmt"
	"math"
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
	order := make([]string, 0, len(in))
	m := make(map[string]*fkNode, len(in))
	pos := make(map[string]int, len(in))
	for i, n := range in {
		if _, ok := m[n.r.uuid]; !ok {
			order = append(order, n.r.uuid)
		}
		m[n.r.uuid] = n
		pos[n.r.uuid] = i
	}
	for _, key := range order {
		h := m[key]
		if !fkIsBoundary(h.r) {
			continue
		}
		cm := h.get("compactMetadata")
		var pm, ps []byte
		if fkIsObj(cm) {
			pm, ps = fkField(cm, "preservedMessages"), fkField(cm, "preservedSegment")
		}
		switch {
		case fkTruthy(pm):
			uuids, skip, err := fkRelinkList(pm, m, h.r.uuid)
			if err != nil {
				return nil, nil, err
			}
			if skip {
				continue
			}
			anchor := fkField(pm, "anchorUuid")
			c := anchor
			for _, w := range uuids {
				m[w] = m[w].with(c)
				c = core.AppendJSString(nil, w)
			}
			head, tail := uuids[0], core.AppendJSString(nil, uuids[len(uuids)-1])
			for _, k := range order {
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
			for _, k := range order {
				if x := m[k]; fkSame(x.parent, anchor) && !(hok && k == hs) {
					m[k] = x.with(tail)
				}
			}
		}
	}
	up := func(n *fkNode) *fkNode {
		if s, ok := fkStr(n.parent); ok && s != "" {
			return m[s]
		}
		return nil
	}
	cand := func(n *fkNode) bool {
		if fkTruthy(n.get("isSidechain")) || fkTruthy(n.get("teamName")) || n.r.typ == core.TypeProgress {
			return false
		}
		return !(n.r.typ == core.TypeAttachment && fkStrIs(fkField(n.get("attachment"), "type"), "fork_briefing"))
	}
	parents := map[string]bool{}
	candParents := map[string]bool{}
	for _, k := range order {
		x := m[k]
		if s, ok := fkStr(x.parent); ok && s != "" {
			parents[s] = true
			if cand(x) {
				candParents[s] = true
			}
		}
	}
	var cands []*fkNode
	for _, k := range order {
		if x := m[k]; cand(x) && !candParents[k] {
			cands = append(cands, x)
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return pos[cands[a].r.uuid] > pos[cands[b].r.uuid] })
	isMsg := func(n *fkNode) bool { return n.r.typ == core.TypeUser || n.r.typ == core.TypeAssistant }
	var leaf, terminal *fkNode
	visited := map[string]bool{}
	for _, h := range cands {
		var path []string
		here := map[string]bool{}
		for c := h; c != nil && !visited[c.r.uuid] && !here[c.r.uuid]; c = up(c) {
			if isMsg(c) {
				leaf, terminal = c, h
				break
			}
			here[c.r.uuid] = true
			path = append(path, c.r.uuid)
		}
		if leaf != nil {
			break
		}
		for _, u := range path {
			visited[u] = true
		}
	}
	if leaf == nil {
		var found []*fkNode
		for _, k := range order {
			if parents[k] {
				continue
			}
			seen := map[string]bool{}
			for c := m[k]; c != nil && !seen[c.r.uuid]; c = up(c) {
				seen[c.r.uuid] = true
				if isMsg(c) {
					found = append(found, c)
					break
				}
			}
		}
		if len(found) == 0 {
			return nil, nil, nil
		}
		latest := func(list []*fkNode) *fkNode {
			best := list[0]
			for _, x := range list[1:] {
				if pos[x.r.uuid] > pos[best.r.uuid] {
					best = x
				}
			}
			return best
		}
		var main []*fkNode
		for _, c := range found {
			if !fkTruthy(c.get("isSidechain")) && !fkTruthy(c.get("teamName")) && !fkTruthy(c.get("isMeta")) {
				main = append(main, c)
			}
		}
		if len(main) > 0 {
			leaf = latest(main)
		} else {
			leaf = latest(found)
		}
	}
	var chain []*fkNode
	onChain := map[string]bool{}
	for y := m[leaf.r.uuid]; y != nil && !onChain[y.r.uuid]; y = up(y) {
		onChain[y.r.uuid] = true
		chain = append(chain, y)
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return fkRepairSplit(order, m, chain, onChain), terminal, nil
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
	var asst []*fkNode
	for _, b := range chain {
		if b.r.typ == core.TypeAssistant {
			asst = append(asst, b)
		}
	}
	if len(asst) == 0 {
		return chain
	}
	chainByMsg := map[string]*fkNode{}
	for _, b := range asst {
		if id := b.r.messageID(); id != "" {
			chainByMsg[id] = b
		}
	}
	byMsg := map[string][]*fkNode{}
	toolUse := map[string]*fkNode{} // nil value: claimed by two messages
	var results []*fkNode
	for _, k := range order {
		b := m[k]
		if id := b.r.messageID(); id != "" {
			byMsg[id] = append(byMsg[id], b)
			b.r.loadMessage()
			for _, x := range b.r.uses {
				w, had := toolUse[x]
				if !had || (w != nil && w.r.messageID() == id) {
					toolUse[x] = b
				} else {
					toolUse[x] = nil
				}
			}
		} else if b.r.hasToolResult(b.parent) {
			results = append(results, b)
		}
	}
	children := map[string][]*fkNode{}
	dedup := map[[2]string]bool{}
	add := func(key string, c *fkNode) {
		k := [2]string{key, c.r.uuid}
		if dedup[k] {
			return
		}
		dedup[k] = true
		children[key] = append(children[key], c)
	}
	same := func(b, c *fkNode) bool {
		side := func(n *fkNode) []byte {
			if v := n.get("isSidechain"); v != nil && !fkIsNull(v) {
				return v
			}
			return fkFalse
		}
		return fkSame(side(b), side(c)) && fkSame(b.get("agentId"), c.get("agentId"))
	}
	for _, b := range results {
		if s, ok := fkStr(b.parent); ok {
			add(s, b)
		}
		if st := b.get("sourceToolAssistantUUID"); fkIsStr(st) && !fkSame(st, b.parent) {
			s, _ := fkStr(st)
			if c := m[s]; c != nil && same(b, c) {
				add(c.r.uuid, b)
			}
		}
		b.r.loadMessage()
		for _, id := range b.r.results {
			if x := toolUse[id]; x != nil && same(b, x) {
				add(x.r.uuid, b)
			}
		}
	}
	answered := map[string]bool{}
	for _, b := range chain {
		b.r.loadMessage()
		for _, id := range b.r.results {
			answered[id] = true
		}
	}
	idx := make(map[string]int, len(order))
	for i, k := range order {
		idx[k] = i
	}
	at := func(n *fkNode) int {
		if i, ok := idx[n.r.uuid]; ok {
			return i
		}
		return math.MaxInt
	}
	byTime := func(list []*fkNode) {
		sort.SliceStable(list, func(a, b int) bool { return fkTimeKey(list[a]) < fkTimeKey(list[b]) })
	}
	done := map[string]bool{}
	extra := map[string][]*fkNode{}
	total := 0
	for _, b := range asst {
		id := b.r.messageID()
		if id == "" || done[id] {
			continue
		}
		done[id] = true
		rs := byMsg[id]
		if len(rs) == 0 {
			rs = []*fkNode{b}
		}
		inMsg := map[string]bool{}
		for _, x := range rs {
			inMsg[x.r.uuid] = true
		}
		var w, k, other []*fkNode
		for _, x := range rs {
			if !onChain[x.r.uuid] {
				w = append(w, x)
			}
		}
		q := map[string]bool{}
		for _, x := range rs {
			for _, c := range children[x.r.uuid] {
				if onChain[c.r.uuid] || q[c.r.uuid] {
					continue
				}
				q[c.r.uuid] = true
				if s, ok := fkStr(c.parent); ok && inMsg[s] {
					k = append(k, c)
				} else {
					other = append(other, c)
				}
			}
		}
		if len(other) > 0 {
			seen := make(map[string]bool, len(answered))
			for id := range answered {
				seen[id] = true
			}
			for _, c := range k {
				for _, id := range c.r.results {
					seen[id] = true
				}
			}
			sort.SliceStable(other, func(a, b int) bool { return at(other[a]) < at(other[b]) })
			for _, c := range other {
				hit := false
				for _, id := range c.r.results {
					if x := toolUse[id]; !seen[id] && x != nil && inMsg[x.r.uuid] {
						hit = true
						break
					}
				}
				if !hit {
					continue
				}
				for _, id := range c.r.results {
					seen[id] = true
				}
				k = append(k, c)
			}
		}
		if len(w) == 0 && len(k) == 0 {
			continue
		}
		byTime(w)
		byTime(k)
		all := append(w, k...)
		for _, x := range all {
			onChain[x.r.uuid] = true
		}
		total += len(all)
		a := chainByMsg[id]
		extra[a.r.uuid] = all
	}
	if total == 0 {
		return chain
	}
	out := make([]*fkNode, 0, len(chain)+total)
	for _, b := range chain {
		out = append(out, b)
		out = append(out, extra[b.r.uuid]...)
	}
	return out
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
