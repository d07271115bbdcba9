package transcript

import (
	"fmt"

	"github.com/e0dc0000/scribe/core"
)

// The cut (UpTo)

// cut keeps the rows up to upTo, as the SDK does.
func (f *forker) cut(rows []*fkRow, upTo string) ([]*fkRow, error) {
	chain, _, err := fkBuildChain(fkNodes(rows, false))
	if err != nil {
		return nil, err
	}
	first := fkFirstIndex(rows)
	y := -1
	for _, n := range chain {
		if i, ok := first[n.r.uuid]; ok && i > y {
			y = i
		}
	}
	// Look in the conversation and what follows it first, then anywhere.
	h := make([]*fkRow, 0, len(chain)+len(rows)-y-1)
	for _, n := range chain {
		h = append(h, n.r)
	}
	h = append(h, rows[y+1:]...)
	b := -1
	if k := fkFind(h, upTo); k >= 0 {
		if i, ok := first[h[k].uuid]; ok {
			b = i
		}
	} else {
		b = fkFind(rows, upTo)
	}
	if b < 0 {
		return nil, fmt.Errorf("%w: %s in session %s", core.ErrMessageNotFound, upTo, f.src)
	}
	at := rows[b].uuid
	after := rows[b+1:]
	kept := fkDropTrailingBoundary(rows[:b+1])
	kept = fkUnpreserve(at, kept)
	if kept, err = f.dropDeadBranches(kept); err != nil {
		return nil, err
	}
	return fkKeepStateRows(kept, after), nil
}

// fkKeepStateRows carries into a cut fork the plugin state rows that come
// after the cut (SDK 0.3.337): walking the rows after the cut in file
// order, a row that is not a user or assistant row and hangs off the kept
// chain (its parent is the last kept row or such a row) joins it; when it
// is a system row with content "" and pluginRow.name "state:kept" it is
// copied, parented on the last row of the fork so far.
func fkKeepStateRows(kept, after []*fkRow) []*fkRow {
	var last []byte // the last kept row's uuid as JSON; nil when none
	if n := len(kept); n > 0 {
		last = core.AppendJSString(nil, kept[n-1].uuid)
	}
	hang := map[string]bool{}
	hangs := func(p []byte) bool {
		if p == nil {
			return last == nil // undefined === undefined
		}
		s, ok := fkStr(p)
		return ok && (hang[s] || last != nil && fkSame(p, last))
	}
	for _, r := range after {
		if r.typ == core.TypeUser || r.typ == core.TypeAssistant || !hangs(r.obj.get("parentUuid")) {
			continue
		}
		hang[r.uuid] = true
		if r.typ != core.TypeSystem || !fkStrIs(r.obj.get("content"), "") ||
			!fkStrIs(fkField(r.obj.get("pluginRow"), "name"), "state:kept") {
			continue
		}
		parent := fkNull
		if n := len(kept); n > 0 {
			parent = core.AppendJSString(nil, kept[n-1].uuid)
		}
		obj := r.obj.clone()
		obj.set("parentUuid", parent)
		kept = append(kept, &fkRow{obj: obj, uuid: r.uuid, typ: r.typ})
	}
	return kept
}

func fkFirstIndex(rows []*fkRow) map[string]int {
	m := make(map[string]int, len(rows))
	for i, r := range rows {
		if _, ok := m[r.uuid]; !ok {
			m[r.uuid] = i
		}
	}
	return m
}

// fkFind is the index of the row with uuid s, else of the queued command
// whose source_uuid is s, else -1.
func fkFind(rows []*fkRow, s string) int {
	for i, r := range rows {
		if r.uuid == s {
			return i
		}
	}
	for i, r := range rows {
		if fkSourceUUID(r) == s {
			return i
		}
	}
	return -1
}

// fkPreserved is a compact boundary's preservedMessages (else
// preservedSegment) object when it has an anchorUuid, else nil.
func fkPreserved(r *fkRow) []byte {
	cm := r.obj.get("compactMetadata")
	if !fkIsObj(cm) {
		return nil
	}
	o := fkField(cm, "preservedMessages")
	if o == nil || fkIsNull(o) {
		o = fkField(cm, "preservedSegment")
	}
	if fkIsObj(o) && fkField(o, "anchorUuid") != nil {
		return o
	}
	return nil
}

func fkAnchorIs(r *fkRow, s string) bool {
	p := fkPreserved(r)
	return p != nil && fkStrIs(fkField(p, "anchorUuid"), s)
}

// fkPreservedUUIDs lists the uuids a compact boundary keeps:
// preservedMessages.uuids, then preservedSegment's headUuid and tailUuid.
// Entries may be non-strings or absent (nil).
func fkPreservedUUIDs(r *fkRow) [][]byte {
	cm := r.obj.get("compactMetadata")
	if !fkIsObj(cm) {
		return nil
	}
	var out [][]byte
	if pm := fkField(cm, "preservedMessages"); fkIsObj(pm) {
		if u := fkField(pm, "uuids"); fkIsArr(u) {
			out = append(out, fkElems(u)...)
		}
	}
	if ps := fkField(cm, "preservedSegment"); fkIsObj(ps) {
		out = append(out, fkField(ps, "headUuid"), fkField(ps, "tailUuid"))
	}
	return out
}

func fkPreservedHas(r *fkRow, s string) bool {
	for _, v := range fkPreservedUUIDs(r) {
		if fkStrIs(v, s) {
			return true
		}
	}
	return false
}

// fkSelfAnchored is a boundary that records no compaction of its own
// (durationMs 0 and anchored at itself).
func fkSelfAnchored(r *fkRow) bool {
	cm := r.obj.get("compactMetadata")
	if !fkIsObj(cm) {
		return false
	}
	d, ok := fkNum(fkField(cm, "durationMs"))
	return ok && d == 0 && fkAnchorIs(r, r.uuid)
}

func fkIsBoundary(r *fkRow) bool {
	return r.typ == core.TypeSystem && r.subtype() == core.SubtypeCompactBoundary
}

// fkRealBoundary is a compact boundary that is not self-anchored.
func fkRealBoundary(r *fkRow) bool { return fkIsBoundary(r) && !fkSelfAnchored(r) }

// fkDropTrailingBoundary drops a compact boundary that follows the cut's
// last user or assistant row, with everything after it, and goes back to
// the last row it preserves (or that row's own anchor) when it has one.
func fkDropTrailingBoundary(rows []*fkRow) []*fkRow {
	t := -1
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].typ == core.TypeUser || rows[i].typ == core.TypeAssistant {
			t = i
			break
		}
	}
	n := -1
	for i := t + 1; i < len(rows); i++ {
		if fkRealBoundary(rows[i]) {
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
	if !fkAnchorIs(bnd, bnd.uuid) {
		keep = append(fkPreservedUUIDs(bnd), bnd.obj.get("logicalParentUuid"))
	}
	i := -1
	for j := len(before) - 1; j >= 0 && i < 0; j-- {
		for _, v := range keep {
			if fkStrIs(v, before[j].uuid) {
				i = j
				break
			}
		}
	}
	l := -1
	if i >= 0 {
		var prev *fkRow
		for j := len(before) - 1; j >= 0; j-- {
			if fkIsBoundary(before[j]) {
				prev = before[j]
				break
			}
		}
		if prev != nil && !fkSelfAnchored(prev) && fkPreservedHas(prev, before[i].uuid) {
			if p := fkPreserved(prev); p != nil {
				if a, ok := fkStr(fkField(p, "anchorUuid")); ok {
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

// fkUnpreserve removes preservedMessages, preservedSegment and postTokens
// from compact boundaries anchored at the cut row.
func fkUnpreserve(at string, rows []*fkRow) []*fkRow {
	out := rows
	copied := false
	for i, r := range rows {
		if !fkRealBoundary(r) || !fkAnchorIs(r, at) {
			continue
		}
		cm, _ := fkParseObj(r.obj.get("compactMetadata"))
		cm.set("preservedMessages", nil)
		cm.set("preservedSegment", nil)
		cm.set("postTokens", nil)
		obj := r.obj.clone()
		obj.set("compactMetadata", cm.bytes())
		if !copied {
			out = append([]*fkRow(nil), rows...)
			copied = true
		}
		out[i] = &fkRow{obj: obj, uuid: r.uuid, typ: r.typ}
	}
	return out
}

// dropDeadBranches leaves out rows that a compact boundary cut off from the
// conversation that ends at the cut's last row, then the branches that
// still hide that conversation.
func (f *forker) dropDeadBranches(rows []*fkRow) ([]*fkRow, error) {
	if len(rows) == 0 {
		return rows, nil
	}
	last := rows[len(rows)-1]
	nodes := fkNodes(rows, true)
	probe := &fkRow{obj: newFkObj(), uuid: f.newUUID(), typ: core.TypeSystem}
	probe.obj.set("type", core.AppendJSString(nil, core.TypeSystem))
	probe.obj.set("uuid", core.AppendJSString(nil, probe.uuid))
	withProbe := append(append([]*fkNode(nil), nodes...), &fkNode{r: probe, parent: core.AppendJSString(nil, last.uuid)})
	want, _, err := fkBuildChain(withProbe)
	if err != nil {
		return nil, err
	}
	first := fkFirstIndex(rows)
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
	byUUID := make(map[string]*fkRow, len(rows))
	for _, r := range rows {
		byUUID[r.uuid] = r
	}
	parentOf := func(r *fkRow) *fkRow {
		if s, ok := fkStr(r.obj.get("parentUuid")); ok && s != "" {
			return byUUID[s]
		}
		return nil
	}
	live := map[string]bool{}
	roots := append([]string{last.uuid}, fkKeys(want)...)
	for _, u := range roots {
		for r := byUUID[u]; r != nil && !live[r.uuid]; r = parentOf(r) {
			live[r.uuid] = true
		}
	}
	removable := func(r *fkRow) bool {
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
	leave := func(t *fkRow) {
		for r := byUUID[t.uuid]; r != nil && removable(r) && !left[r.uuid]; r = parentOf(r) {
			left[r.uuid] = true
		}
		for _, r := range rows {
			if s, ok := fkStr(r.obj.get("parentUuid")); ok && s != "" && left[s] {
				left[r.uuid] = true
			}
		}
	}
	for _, r := range rows {
		if !fkIsBoundary(r) || !removable(r) {
			continue
		}
		hit := false
		for _, v := range fkPreservedUUIDs(r) {
			if s, ok := fkStr(v); ok && live[s] {
				hit = true
				break
			}
		}
		if !hit {
			leave(r)
		}
	}
	for {
		var in []*fkNode
		for _, n := range nodes {
			if !left[n.r.uuid] {
				in = append(in, n)
			}
		}
		got, terminal, err := fkBuildChain(in)
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
	out := make([]*fkRow, 0, len(rows)-len(left))
	for _, r := range rows {
		if !left[r.uuid] {
			out = append(out, r)
		}
	}
	return out, nil
}

func fkKeys(nodes []*fkNode) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.r.uuid
	}
	return out
}
