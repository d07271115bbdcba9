package transcript

import (
	"github.com/e0dc0000/scribe/core"
)

// Host rows: tool calls a host ran for the model, stored beside the chain.

func hostCarrier(r *row) bool {
	return r.typ == core.TypeAssistant && (r.f.get(fHostHidden).isArr() || r.f.get(fRanBy).isStr())
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
		if p, ok := r.f.get(fParent).str(); ok {
			named[p] = true
		}
	}
	child := map[string]*row{}
	for _, r := range all {
		if !in[r.uuid] {
			if p, ok := r.f.get(fParent).str(); ok {
				child[p] = r
			}
		}
	}
	var out []*row
	for _, i := range path {
		out = append(out, i)
		a := child[i.uuid]
		if i.f.get(fVirtual).isTrue() || a == nil {
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
			if a.f.get(fVirtual).isTrue() && (hostCarrier(a) || (a.typ == core.TypeUser && hostCarrier(out[len(out)-1]))) {
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
		ran, _ := h.f.get(fRanBy).str()
		rowUUID, isStr := h.f.get(fRowUUID).str()
		block := h.f.get(fBlock)
		switch {
		case h.f.get(fWithheld).isTrue():
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
		rowUUID, _ := h.f.get(fRowUUID).str()
		n := &row{e: owner.e, pos: owner.pos, typ: role, uuid: rowUUID, hasUUID: true}
		n.f.set(fType, jstr(role))
		n.f.set(fUUID, jstr(rowUUID))
		n.f.set(fParent, jv("null"))
		n.syncParent()
		n.f.set(fSession, owner.f.get(fSession))
		if h.f.get(fTimestamp).isStr() {
			n.f.set(fTimestamp, h.f.get(fTimestamp))
		}
		n.f.set(fVirtual, jv("true"))
		n.f.set(fRanBy, h.f.get(fRanBy))
		var m objBuilder
		m.add("role", jstr(role))
		m.add("content", jv("["+string(h.f.get(fBlock))+"]"))
		n.f.set(fMessage, m.done())
		return n
	}
	var out []*row
	for _, a := range items {
		out = append(out, a)
		if a.f.get(fVirtual).isTrue() || !a.f.get(fHostHidden).isArr() {
			continue
		}
		for _, idv := range a.f.get(fHostHidden).elems() {
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
				useID, _ := m.f.get(fBlock).field("id").str()
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
	f := &hostFolder{
		twice:     repeatedToolUses(items),
		hiddenMsg: map[string]jv{},
		shown:     map[string]*row{},
		ranShown:  map[string]bool{},
	}
	for _, i := range items {
		msg := i.f.get(fMessage)
		if !msg.isObj() {
			f.out = append(f.out, i)
			continue
		}
		mi := i.m()
		var l []blockInfo
		if mi.content.isArr() {
			l = mi.blocks
		}
		switch {
		case hostCarrier(i):
			f.carrier(i, msg, l)
		case i.typ != core.TypeUser:
			f.out = append(f.out, i)
		default:
			f.user(i, msg, l)
		}
	}
	return f.out
}

// hostFolder is hostFold's state along the items.
type hostFolder struct {
	twice     map[string]bool // tool_use ids seen more than once
	hiddenMsg map[string]jv   // tool_use id -> the message that hid it
	shown     map[string]*row // tool_use id -> the carrier shown with host content
	ranShown  map[string]bool // tool_use ids of virtual host calls shown
	out       []*row
}

// repeatedToolUses lists the tool_use ids that appear more than once in the
// assistant rows of items.
func repeatedToolUses(items []*row) map[string]bool {
	once, twice := map[string]bool{}, map[string]bool{}
	for _, r := range items {
		if r.typ != core.TypeAssistant || !r.f.get(fMessage).isObj() {
			continue
		}
		for _, b := range r.m().blocks {
			if b.obj && b.typ == "tool_use" {
				id := string(b.f.get("id"))
				if once[id] {
					twice[id] = true
				} else {
					once[id] = true
				}
			}
		}
	}
	return twice
}

// withMessage is a copy of r whose message is msg with this content.
func withMessage(r *row, msg jv, content jv) *row {
	n := r.clone()
	n.f.set(fMessage, spread(msg, nil, "content", content))
	n.msg = nil
	return n
}

// joinBlocks is the array of these blocks.
func joinBlocks(bs []blockInfo) jv {
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

// hostContent is r's hostContent when its one block of blk's type matches
// blk on key and name, else nil.
func hostContent(r *row, blk blockInfo, key string) jv {
	hc := r.f.get(fHostContent)
	if !hc.isArr() {
		return nil
	}
	var match []jv
	for _, x := range hc.elems() {
		if x.isObj() && x.field("type").strEq(blk.typ) {
			match = append(match, x)
		}
	}
	if len(match) == 1 && strictEq(match[0].field(key), blk.f.get(key)) && strictEq(match[0].field("name"), blk.f.get("name")) {
		return hc
	}
	return nil
}

// carrier folds a row that carries host fields: the tool calls it hides
// go, a virtual host call is shown with its host content.
func (f *hostFolder) carrier(i *row, msg jv, l []blockInfo) {
	var hidden []string
	for _, x := range i.f.get(fHostHidden).elems() {
		if s, ok := x.str(); ok {
			hidden = append(hidden, s)
		}
	}
	var keep []blockInfo
	for _, b := range l {
		id, isStr := b.f.get("id").str()
		hide := b.obj && b.typ == "tool_use" && isStr && contains(hidden, id) && !f.twice[string(b.f.get("id"))]
		if hide {
			f.hiddenMsg[id] = msg
		} else {
			keep = append(keep, b)
		}
	}
	if len(keep) < len(l) {
		if len(l) == 1 && l[0].obj && l[0].typ == "tool_use" && i.f.get(fHostContent).isArr() {
			if hc := i.f.get(fHostContent).elems(); len(hc) > 0 && hc[0].isObj() && hc[0].field("type").strEq("tool_use") &&
				strictEq(hc[0].field("id"), l[0].f.get("id")) {
				id, _ := l[0].f.get("id").str()
				f.shown[id] = withMessage(i, msg, jv("["+string(hc[0])+"]"))
			}
		}
		if len(keep) > 0 {
			f.out = append(f.out, withMessage(i, msg, joinBlocks(keep)))
		}
		return
	}
	if !i.f.get(fRanBy).isStr() || !i.f.get(fVirtual).isTrue() || len(l) != 1 || !l[0].obj || l[0].typ != "tool_use" {
		f.out = append(f.out, i)
		return
	}
	id, _ := l[0].f.get("id").str()
	f.ranShown[id] = true
	base := msg
	ran, _ := i.f.get(fRanBy).str()
	if hm, ok := f.hiddenMsg[ran]; ok {
		base = hm
	}
	content := hostContent(i, l[0], "id")
	if content == nil {
		content = joinBlocks(l)
	}
	f.out = append(f.out, withMessage(i, base, content))
}

// user folds a user row: a host result replaces its tool_result, results
// of hidden calls go.
func (f *hostFolder) user(i *row, msg jv, l []blockInfo) {
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
	var fc jv
	if u != nil {
		uid, _ = u.f.get("tool_use_id").str()
		p = f.shown[uid]
		if p != nil {
			if u.f.get("is_error").isTrue() {
				fc = hostContent(i, *u, "tool_use_id")
			}
		} else if i.f.get(fVirtual).isTrue() && f.ranShown[uid] {
			fc = hostContent(i, *u, "tool_use_id")
		}
	}
	if fc != nil {
		g := withMessage(i, msg, fc)
		delete(f.shown, uid)
		if p == nil {
			f.out = append(f.out, g)
		} else {
			f.out = append(f.out, p, g)
		}
		return
	}
	f.dropHiddenResults(i, msg, l, results)
}

// dropHiddenResults drops the tool_results of hidden calls from a user row
// (the whole row when they are all it has).
func (f *hostFolder) dropHiddenResults(i *row, msg jv, l, results []blockInfo) {
	dropped := 0
	for _, b := range results {
		if id, ok := b.f.get("tool_use_id").str(); ok {
			if _, hid := f.hiddenMsg[id]; hid {
				dropped++
			}
		}
	}
	if dropped == 0 {
		f.out = append(f.out, i)
		return
	}
	if dropped == len(results) {
		return
	}
	var keep []blockInfo
	for _, b := range l {
		drop := false
		if b.obj && b.typ == "tool_result" {
			if id, ok := b.f.get("tool_use_id").str(); ok {
				_, drop = f.hiddenMsg[id]
			}
		}
		if !drop {
			keep = append(keep, b)
		}
	}
	n := withMessage(i, msg, joinBlocks(keep))
	n.f.set(fDenialKind, nil)
	n.f.set(fDenialUnanswered, nil)
	f.out = append(f.out, n)
}
