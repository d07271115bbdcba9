package transcript

import (
	"sort"
	"strconv"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/transcript/internal/split"
)

// Main files

// rowMap is the SDK's map of a main file's rows by uuid: first-seen order,
// last value, and the last file position of each uuid (which ranks leaves).
type rowMap struct {
	slot    map[string]int // uuid -> index in order
	order   []*row         // each uuid's last row, in first-seen order
	lastPos []int          // by slot
	parents *parentIndex   // made when a compact boundary first needs it
}

func newRowMap(all []*row) *rowMap {
	m := &rowMap{slot: make(map[string]int, len(all)), order: make([]*row, 0, len(all)), lastPos: make([]int, 0, len(all))}
	for _, r := range all {
		if i, ok := m.slot[r.uuid]; ok {
			m.order[i] = r
			m.lastPos[i] = r.pos
			r.slot = i
		} else {
			r.slot = len(m.order)
			m.slot[r.uuid] = r.slot
			m.order = append(m.order, r)
			m.lastPos = append(m.lastPos, r.pos)
		}
	}
	for k, r := range all {
		if k > 0 && r.parStr && r.par != "" && r.par == all[k-1].uuid {
			// Most rows follow their parent: its slot, without a lookup.
			r.upSlot, r.upKnown = all[k-1].slot, true
			continue
		}
		m.linkUp(r)
	}
	return m
}

// linkUp notes the slot of r's parent (-1: none, or not in the file), so
// that climbing the chain looks no uuid up.
func (m *rowMap) linkUp(r *row) {
	r.upSlot, r.upKnown = -1, true
	if p, ok := r.parent(); ok {
		if i, in := m.slot[p]; in {
			r.upSlot = i
		}
	}
}

// get is the row of uuid u (its last one in the file).
func (m *rowMap) get(u string) (*row, bool) {
	if i, ok := m.slot[u]; ok {
		return m.order[i], true
	}
	return nil, false
}

// posOf is the last file position of r's uuid (which ranks leaves).
func (m *rowMap) posOf(r *row) int { return m.lastPos[r.slot] }

// reparent replaces r by a copy whose parentUuid is p.
func (m *rowMap) reparent(r *row, p jv) *row {
	n := r.clone()
	n.f.set(fParent, p)
	n.syncParent()
	m.linkUp(n)
	m.order[n.slot] = n
	if m.parents != nil {
		m.parents.add(n.slot, p)
	}
	return n
}

// matching returns, in map order, the rows whose parent === v now.
func (m *rowMap) matching(v jv) []int {
	if m.parents == nil {
		m.parents = newParentIndex(m.order)
	}
	return m.parents.matching(v)
}

// up is r's parent row, or nil.
func (m *rowMap) up(r *row) *row {
	if i := m.upSlot(r); i >= 0 {
		return m.order[i]
	}
	return nil
}

// upSlot is the slot of r's parent, -1 when it has none in the file: what
// looking its parentUuid up in slot says, without the lookup.
func (m *rowMap) upSlot(r *row) int {
	if !r.upKnown {
		m.linkUp(r)
	}
	return r.upSlot
}

func (c *Chain) buildMain() {
	m := newRowMap(c.all)
	for i := 0; i < len(m.order); i++ {
		m.relinkCompact(m.order[i])
	}
	c.Gaps = m.gaps()
	leaf := m.newestTerminalLeaf()
	if leaf == nil {
		if leaf = m.fallbackLeaf(); leaf == nil {
			return
		}
	}
	path, onPath, cycle := m.walk(leaf)
	c.Cycle = cycle
	path = split.Reattach(rowSplitRules, m.order, path, onPath, func(u string) (*row, int, bool) {
		if i, ok := m.slot[u]; ok {
			return m.order[i], i, true
		}
		return nil, 0, false
	})
	c.path = path
	c.trailing = trailingQueued(c.all, m, path, leaf)
}

// relinkCompact relinks the rows a compact boundary h kept
// (compactMetadata.preservedMessages or preservedSegment) to its anchor.
func (m *rowMap) relinkCompact(h *row) {
	if h.typ != core.TypeSystem || !h.f.get(fSubtype).strEq(core.SubtypeCompactBoundary) {
		return
	}
	cm := h.f.get(fCompactMeta)
	var pm, ps jv
	if cm.isObj() {
		pm, ps = cm.field("preservedMessages"), cm.field("preservedSegment")
	}
	switch {
	case pm.truthy():
		m.relinkPreserved(pm)
	case ps.truthy():
		head, anchor, tail := ps.field("headUuid"), ps.field("anchorUuid"), ps.field("tailUuid")
		hs, headIsStr := head.str()
		if hr, ok := m.get(hs); ok && headIsStr {
			m.reparent(hr, anchor)
		}
		for _, i := range m.matching(anchor) {
			if r := m.order[i]; !(headIsStr && r.uuid == hs) {
				m.reparent(r, tail)
			}
		}
	}
}

// relinkPreserved chains preservedMessages.uuids below the anchor, and the
// anchor's other children below the last of them, when every uuid is a row.
func (m *rowMap) relinkPreserved(pm jv) {
	uuids := pm.field("uuids").elems()
	if len(uuids) == 0 {
		return
	}
	for _, u := range uuids {
		s, isStr := u.str()
		if _, in := m.get(s); !isStr || !in {
			return
		}
	}
	anchor := pm.field("anchorUuid")
	p := anchor
	for _, u := range uuids {
		s, _ := u.str()
		r, _ := m.get(s)
		m.reparent(r, p)
		p = jstr(s)
	}
	first, _ := uuids[0].str()
	last := uuids[len(uuids)-1]
	for _, i := range m.matching(anchor) {
		if r := m.order[i]; r.uuid != first {
			m.reparent(r, last)
		}
	}
}

// gaps lists the rows whose parent is named but absent, in file order.
func (m *rowMap) gaps() []ChainBreak {
	var gaps []ChainBreak
	for _, r := range m.order {
		if p, ok := r.parent(); ok && m.upSlot(r) < 0 {
			gaps = append(gaps, ChainBreak{UUID: r.uuid, Parent: p})
		}
	}
	sort.SliceStable(gaps, func(i, j int) bool {
		return m.lastPos[m.slot[gaps[i].UUID]] < m.lastPos[m.slot[gaps[j].UUID]]
	})
	return gaps
}

// countsForLeaf reports whether r takes part in the leaf choice.
func countsForLeaf(r *row) bool {
	if r.f.get(fSidechain).truthy() || r.f.get(fTeam).truthy() || r.typ == core.TypeProgress {
		return false
	}
	if t, _ := r.attachmentType(); t == "fork_briefing" {
		return false
	}
	return true
}

// newestTerminalLeaf is the leaf: the newest terminal row (no counted row
// names it) that climbs to a user or assistant row, or nil.
func (m *rowMap) newestTerminalLeaf() *row {
	namedByCounted := make([]bool, len(m.order)) // by slot
	for _, r := range m.order {
		if countsForLeaf(r) {
			if i := m.upSlot(r); i >= 0 {
				namedByCounted[i] = true
			}
		}
	}
	var cands []*row
	for _, r := range m.order {
		if countsForLeaf(r) && !namedByCounted[r.slot] {
			cands = append(cands, r)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return m.posOf(cands[i]) > m.posOf(cands[j]) })
	done := map[string]bool{}
	for _, h := range cands {
		var climbed []string
		seen := map[string]bool{}
		for cur := h; cur != nil && !done[cur.uuid] && !seen[cur.uuid]; cur = m.up(cur) {
			if cur.typ == core.TypeUser || cur.typ == core.TypeAssistant {
				return cur
			}
			seen[cur.uuid] = true
			climbed = append(climbed, cur.uuid)
		}
		for _, u := range climbed {
			done[u] = true
		}
	}
	return nil
}

// fallbackLeaf is the newest user/assistant row that a row no one names
// climbs to, plain rows (not sidechain, team or meta) first; nil if none.
func (m *rowMap) fallbackLeaf() *row {
	named := make(map[string]bool, len(m.order))
	for _, r := range m.order {
		if p, ok := r.parent(); ok {
			named[p] = true
		}
	}
	// Each terminal climbs to its nearest user/assistant row; climbs share
	// their results, so a comb of long paths stays linear.
	memo := map[*row]*row{}
	var hits []*row
	for _, t := range m.order {
		if named[t.uuid] {
			continue
		}
		if h := m.climb(t, memo); h != nil {
			hits = append(hits, h)
		}
	}
	if len(hits) == 0 {
		return nil
	}
	var plain []*row
	for _, r := range hits {
		if !r.f.get(fSidechain).truthy() && !r.f.get(fTeam).truthy() && !r.f.get(fMeta).truthy() {
			plain = append(plain, r)
		}
	}
	if len(plain) > 0 {
		return m.newest(plain)
	}
	return m.newest(hits)
}

// climb is the nearest user/assistant row at or above t (nil at a missing
// parent or a loop), remembered in memo for every row climbed.
func (m *rowMap) climb(t *row, memo map[*row]*row) *row {
	var path []*row
	on := map[*row]bool{}
	var hit *row
	for cur := t; cur != nil; cur = m.up(cur) {
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

// newest is the row of rs written last.
func (m *rowMap) newest(rs []*row) *row {
	best := rs[0]
	for _, r := range rs[1:] {
		if m.posOf(r) > m.posOf(best) {
			best = r
		}
	}
	return best
}

// walk climbs from the leaf to the root, stopping at a missing parent or a
// uuid seen twice (the cycle), and returns the path root first.
func (m *rowMap) walk(leaf *row) (path []*row, onPath *slotSet, cycle *ChainBreak) {
	onPath = &slotSet{m: m, on: make([]bool, len(m.order))}
	path = make([]*row, 0, len(m.order)) // most rows are on the chain
	for cur, _ := m.get(leaf.uuid); cur != nil; {
		if onPath.on[cur.slot] {
			prev := path[len(path)-1]
			p, _ := prev.parent()
			cycle = &ChainBreak{UUID: prev.uuid, Parent: p}
			break
		}
		onPath.on[cur.slot] = true
		path = append(path, cur)
		cur = m.up(cur)
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path, onPath, cycle
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
		x.add(i, r.f.get(fParent))
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
		if pk, ok := parentKey(x.order[i].f.get(fParent)); ok && pk == k {
			seen[i] = true
			out = append(out, i)
		}
	}
	x.by[k] = append(x.by[k][:0], out...)
	sort.Ints(out)
	return out
}

// slotSet is the split.Set of a main file's chain: the rowMap's uuids by
// slot, any other in a map.
type slotSet struct {
	m     *rowMap
	on    []bool
	other split.MapSet
}

// Has reports whether u is on the chain.
func (s *slotSet) Has(u string) bool {
	if i, ok := s.m.slot[u]; ok {
		return s.on[i]
	}
	return s.other[u]
}

// Add puts u on the chain.
func (s *slotSet) Add(u string) {
	if i, ok := s.m.slot[u]; ok {
		s.on[i] = true
		return
	}
	if s.other == nil {
		s.other = split.MapSet{}
	}
	s.other[u] = true
}

// rowSplitRules read the split-assistant repair's facts off a row.
var rowSplitRules = split.Rules[*row]{
	UUID:        func(r *row) string { return r.uuid },
	IsAssistant: func(r *row) bool { return r.typ == core.TypeAssistant },
	MessageID:   (*row).messageID,
	ToolUses:    func(r *row) []string { return r.ids("tool_use", "id") },
	ToolResults: func(r *row) []string { return r.ids("tool_result", "tool_use_id") },
	IsResultRow: (*row).isToolResultRow,
	Parent:      func(r *row) (string, bool) { return r.f.get(fParent).str() },
	SourceTool: func(r *row) (string, bool) {
		src, ok := r.f.get(fSourceTool).str()
		return src, ok && !strictEq(r.f.get(fSourceTool), r.f.get(fParent))
	},
	SameSide: func(a, b *row) bool {
		sa, sb := a.f.get(fSidechain), b.f.get(fSidechain)
		if sa.nullish() {
			sa = jv("false")
		}
		if sb.nullish() {
			sb = jv("false")
		}
		return strictEq(sa, sb) && strictEq(a.f.get(fAgent), b.f.get(fAgent))
	},
	TimeKey: (*row).timestamp,
}

// trailingQueued finds queued-command attachments that hang below the leaf
// through non-message rows and are not on another branch.
func trailingQueued(all []*row, relinked *rowMap, path []*row, leaf *row) []*row {
	if leaf == nil {
		return nil
	}
	// Only queued-command attachments are ever appended: without one,
	// there is nothing to walk.
	queued := false
	for _, p := range all {
		if t, _ := p.attachmentType(); t == "queued_command" {
			queued = true
			break
		}
	}
	if !queued {
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
		if rl, _ := relinked.get(p.uuid); rl != nil {
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
		if (p.typ != core.TypeUser && p.typ != core.TypeAssistant) || p.f.get(fSidechain).truthy() || p.f.get(fTeam).truthy() || seen[p.uuid] {
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
