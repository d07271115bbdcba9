package fork

import (
	"fmt"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/transcript/internal/jsjson"
)

// The cut (UpTo)

// cut keeps the rows up to upTo, as the SDK does.
func (f *forker) cut(rows []*row, upTo string) ([]*row, error) {
	chain, _, err := buildChain(toNodes(rows, false))
	if err != nil {
		return nil, err
	}
	first := firstIndex(rows)
	y := -1
	for _, n := range chain {
		if i, ok := first[n.r.uuid]; ok && i > y {
			y = i
		}
	}
	// Look in the conversation and what follows it first, then anywhere.
	h := make([]*row, 0, len(chain)+len(rows)-y-1)
	for _, n := range chain {
		h = append(h, n.r)
	}
	h = append(h, rows[y+1:]...)
	b := -1
	if k := findRow(h, upTo); k >= 0 {
		if i, ok := first[h[k].uuid]; ok {
			b = i
		}
	} else {
		b = findRow(rows, upTo)
	}
	if b < 0 {
		return nil, fmt.Errorf("%w: %s in session %s", core.ErrMessageNotFound, upTo, f.src)
	}
	at := rows[b].uuid
	after := rows[b+1:]
	kept := dropTrailingBoundary(rows[:b+1])
	kept = unpreserve(at, kept)
	if kept, err = f.dropDeadBranches(kept); err != nil {
		return nil, err
	}
	return keepStateRows(kept, after), nil
}

// keepStateRows carries into a cut fork the plugin state rows that come
// after the cut (SDK 0.3.337): walking the rows after the cut in file
// order, a row that is not a user or assistant row and hangs off the kept
// chain (its parent is the last kept row or such a row) joins it; when it
// is a system row with content "" and pluginRow.name "state:kept" it is
// copied, parented on the last row of the fork so far.
func keepStateRows(kept, after []*row) []*row {
	var last []byte // the last kept row's uuid as JSON; nil when none
	if n := len(kept); n > 0 {
		last = core.AppendJSString(nil, kept[n-1].uuid)
	}
	hang := map[string]bool{}
	hangs := func(p []byte) bool {
		if p == nil {
			return last == nil // undefined === undefined
		}
		s, ok := stringOf(p)
		return ok && (hang[s] || last != nil && strictEq(p, last))
	}
	for _, r := range after {
		if r.typ == core.TypeUser || r.typ == core.TypeAssistant || !hangs(r.obj.Get("parentUuid")) {
			continue
		}
		hang[r.uuid] = true
		if r.typ != core.TypeSystem || !strIs(r.obj.Get("content"), "") ||
			!strIs(field(r.obj.Get("pluginRow"), "name"), "state:kept") {
			continue
		}
		parent := jsonNull
		if n := len(kept); n > 0 {
			parent = core.AppendJSString(nil, kept[n-1].uuid)
		}
		obj := r.obj.Clone()
		obj.Set("parentUuid", parent)
		kept = append(kept, &row{obj: obj, uuid: r.uuid, typ: r.typ})
	}
	return kept
}

func firstIndex(rows []*row) map[string]int {
	m := make(map[string]int, len(rows))
	for i, r := range rows {
		if _, ok := m[r.uuid]; !ok {
			m[r.uuid] = i
		}
	}
	return m
}

// findRow is the index of the row with uuid s, else of the queued command
// whose source_uuid is s, else -1.
func findRow(rows []*row, s string) int {
	for i, r := range rows {
		if r.uuid == s {
			return i
		}
	}
	for i, r := range rows {
		if sourceUUID(r) == s {
			return i
		}
	}
	return -1
}

// preserved is a compact boundary's preservedMessages (else
// preservedSegment) object when it has an anchorUuid, else nil.
func preserved(r *row) []byte {
	cm := r.obj.Get("compactMetadata")
	if !isObj(cm) {
		return nil
	}
	o := field(cm, "preservedMessages")
	if o == nil || isNull(o) {
		o = field(cm, "preservedSegment")
	}
	if isObj(o) && field(o, "anchorUuid") != nil {
		return o
	}
	return nil
}

func anchorIs(r *row, s string) bool {
	p := preserved(r)
	return p != nil && strIs(field(p, "anchorUuid"), s)
}

// preservedUUIDs lists the uuids a compact boundary keeps:
// preservedMessages.uuids, then preservedSegment's headUuid and tailUuid.
// Entries may be non-strings or absent (nil).
func preservedUUIDs(r *row) [][]byte {
	cm := r.obj.Get("compactMetadata")
	if !isObj(cm) {
		return nil
	}
	var out [][]byte
	if pm := field(cm, "preservedMessages"); isObj(pm) {
		if u := field(pm, "uuids"); isArr(u) {
			out = append(out, elems(u)...)
		}
	}
	if ps := field(cm, "preservedSegment"); isObj(ps) {
		out = append(out, field(ps, "headUuid"), field(ps, "tailUuid"))
	}
	return out
}

func preservedHas(r *row, s string) bool {
	for _, v := range preservedUUIDs(r) {
		if strIs(v, s) {
			return true
		}
	}
	return false
}

// selfAnchored is a boundary that records no compaction of its own
// (durationMs 0 and anchored at itself).
func selfAnchored(r *row) bool {
	cm := r.obj.Get("compactMetadata")
	if !isObj(cm) {
		return false
	}
	d, ok := jsjson.Num(field(cm, "durationMs"))
	return ok && d == 0 && anchorIs(r, r.uuid)
}

func isBoundary(r *row) bool {
	return r.typ == core.TypeSystem && r.subtype() == core.SubtypeCompactBoundary
}

// realBoundary is a compact boundary that is not self-anchored.
func realBoundary(r *row) bool { return isBoundary(r) && !selfAnchored(r) }

// dropTrailingBoundary drops a compact boundary that follows the cut's
// last user or assistant row, with everything after it, and goes back to
// the last row it preserves (or that row's own anchor) when it has one.
func dropTrailingBoundary(rows []*row) []*row {
	t := -1
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].typ == core.TypeUser || rows[i].typ == core.TypeAssistant {
			t = i
			break
		}
	}
	n := -1
	for i := t + 1; i < len(rows); i++ {
		if realBoundary(rows[i]) {
			n = i
			break
		}
	}
	if n < 0 {
		return rows
	}
	bnd := rows[n]
	before := rows[:n]
	var keep [][]byte
	if !anchorIs(bnd, bnd.uuid) {
		keep = append(preservedUUIDs(bnd), bnd.obj.Get("logicalParentUuid"))
	}
	i := -1
	for j := len(before) - 1; j >= 0 && i < 0; j-- {
		for _, v := range keep {
			if strIs(v, before[j].uuid) {
				i = j
				break
			}
		}
	}
	l := -1
	if i >= 0 {
		var prev *row
		for j := len(before) - 1; j >= 0; j-- {
			if isBoundary(before[j]) {
				prev = before[j]
				break
			}
		}
		if prev != nil && !selfAnchored(prev) && preservedHas(prev, before[i].uuid) {
			if p := preserved(prev); p != nil {
				if a, ok := stringOf(field(p, "anchorUuid")); ok {
					for j := len(before) - 1; j >= 0; j-- {
						if before[j].uuid == a {
							l = j
							break
						}
					}
				}
			}
		}
	}
	u := before
	if c := max(i, l); c >= 0 {
		u = before[:c+1]
	}
	for _, r := range u {
		if r.typ != core.TypeProgress {
			return u
		}
	}
	return rows
}

// unpreserve removes preservedMessages, preservedSegment and postTokens
// from compact boundaries anchored at the cut row.
func unpreserve(at string, rows []*row) []*row {
	out := rows
	copied := false
	for i, r := range rows {
		if !realBoundary(r) || !anchorIs(r, at) {
			continue
		}
		cm, _ := jsjson.Parse(r.obj.Get("compactMetadata"))
		cm.Set("preservedMessages", nil)
		cm.Set("preservedSegment", nil)
		cm.Set("postTokens", nil)
		obj := r.obj.Clone()
		obj.Set("compactMetadata", cm.Bytes())
		if !copied {
			out = append([]*row(nil), rows...)
			copied = true
		}
		out[i] = &row{obj: obj, uuid: r.uuid, typ: r.typ}
	}
	return out
}

// dropDeadBranches leaves out rows that a compact boundary cut off from the
// conversation that ends at the cut's last row, then the branches that
// still hide that conversation.
func (f *forker) dropDeadBranches(rows []*row) ([]*row, error) {
	if len(rows) == 0 {
		return rows, nil
	}
	last := rows[len(rows)-1]
	nodes := toNodes(rows, true)
	probe := &row{obj: jsjson.New(), uuid: f.newUUID(), typ: core.TypeSystem}
	probe.obj.Set("type", core.AppendJSString(nil, core.TypeSystem))
	probe.obj.Set("uuid", core.AppendJSString(nil, probe.uuid))
	withProbe := append(append([]*node(nil), nodes...), &node{r: probe, parent: core.AppendJSString(nil, last.uuid)})
	want, _, err := buildChain(withProbe)
	if err != nil {
		return nil, err
	}
	first := firstIndex(rows)
	if len(want) == 0 {
		return rows, nil
	}
	start, ok := first[want[0].r.uuid]
	if !ok {
		return rows, nil
	}
	wantSet := make(map[string]bool, len(want))
	for _, n := range want {
		wantSet[n.r.uuid] = true
	}
	byUUID := make(map[string]*row, len(rows))
	for _, r := range rows {
		byUUID[r.uuid] = r
	}
	parentOf := func(r *row) *row {
		if s, ok := stringOf(r.obj.Get("parentUuid")); ok && s != "" {
			return byUUID[s]
		}
		return nil
	}
	live := map[string]bool{}
	roots := append([]string{last.uuid}, uuidsOf(want)...)
	for _, u := range roots {
		for r := byUUID[u]; r != nil && !live[r.uuid]; r = parentOf(r) {
			live[r.uuid] = true
		}
	}
	removable := func(r *row) bool {
		if live[r.uuid] {
			return false
		}
		i, ok := first[r.uuid]
		if !ok {
			i = start
		}
		return i >= start
	}
	left := map[string]bool{}
	leave := func(t *row) {
		for r := byUUID[t.uuid]; r != nil && removable(r) && !left[r.uuid]; r = parentOf(r) {
			left[r.uuid] = true
		}
		for _, r := range rows {
			if s, ok := stringOf(r.obj.Get("parentUuid")); ok && s != "" && left[s] {
				left[r.uuid] = true
			}
		}
	}
	for _, r := range rows {
		if !isBoundary(r) || !removable(r) {
			continue
		}
		hit := false
		for _, v := range preservedUUIDs(r) {
			if s, ok := stringOf(v); ok && live[s] {
				hit = true
				break
			}
		}
		if !hit {
			leave(r)
		}
	}
	for {
		var in []*node
		for _, n := range nodes {
			if !left[n.r.uuid] {
				in = append(in, n)
			}
		}
		got, terminal, err := buildChain(in)
		if err != nil {
			return nil, err
		}
		same := len(got) == len(wantSet)
		for _, n := range got {
			if !same {
				break
			}
			same = wantSet[n.r.uuid]
		}
		if same || terminal == nil || !removable(terminal.r) {
			break
		}
		leave(terminal.r)
	}
	if len(left) == 0 {
		return rows, nil
	}
	out := make([]*row, 0, len(rows)-len(left))
	for _, r := range rows {
		if !left[r.uuid] {
			out = append(out, r)
		}
	}
	return out, nil
}

func uuidsOf(nodes []*node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.r.uuid
	}
	return out
}
