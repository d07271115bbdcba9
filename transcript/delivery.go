package transcript

import (
	"bytes"
	"encoding/json"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/transcript/internal/split"
)

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
	onPath := make(split.MapSet, len(path))
	for _, r := range path {
		onPath[r.uuid] = true
	}
	c.path = split.Reattach(rowSplitRules, sideOrder(c.all), path, onPath, nil)
}

// sideOrder is the SDK's map of a subagent file's rows (first-seen order,
// last value) for the split-assistant repair, which it runs on subagent
// chains since 0.3.337, less the rows a retry made redundant: a row marked
// toolDenialKind "cancelled" or interruptedByShutdown whose tool_result
// ids are all answered by another row (one that is not so marked, or a
// marked one later in the map) is left out. Such rows stay on the chain
// when they are on it.
func sideOrder(all []*row) []*row {
	slot := make(map[string]int, len(all))
	order := make([]*row, 0, len(all))
	for _, r := range all {
		if i, ok := slot[r.uuid]; ok {
			order[i] = r
			continue
		}
		slot[r.uuid] = len(order)
		order = append(order, r)
	}
	marked := func(r *row) bool {
		return r.f.get(fDenialKind).strEq("cancelled") || r.f.get(fInterruptedByShutdown).isTrue()
	}
	answered := map[string]bool{}
	var cands []int
	for i, r := range order {
		if marked(r) {
			cands = append(cands, i)
			continue
		}
		for _, id := range r.ids("tool_result", "tool_use_id") {
			answered[id] = true
		}
	}
	drop := map[int]bool{}
	for k := len(cands) - 1; k >= 0; k-- {
		ids := order[cands[k]].ids("tool_result", "tool_use_id")
		all := len(ids) > 0
		for _, id := range ids {
			all = all && answered[id]
		}
		if all {
			drop[cands[k]] = true
		}
		for _, id := range ids {
			answered[id] = true
		}
	}
	if len(drop) == 0 {
		return order
	}
	kept := order[:0:0]
	for i, r := range order {
		if !drop[i] {
			kept = append(kept, r)
		}
	}
	return kept
}

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
func queuedCommand(typ string, f *fields) jv {
	if typ == core.TypeSystem && f.get(fSubtype).strEq("voice_call_talk") {
		fold := f.get(fFold)
		if fold.objLike() {
			if c := fold.field("command"); c.objLike() {
				return c
			}
		}
		return nil
	}
	if typ == core.TypeAttachment {
		a := f.get(fAttachment)
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
	if r.typ == "queue-operation" && f.get(fOperation).strEq("remove") && f.get(fReason).strEq("absorbed_mid_turn") &&
		(f.get(fDeliveryID).isStr() || f.get(fCommandUUID).isStr()) {
		key := ""
		if s, _ := f.get(fDeliveryID).str(); s != "" {
			key = "delivery:" + s
		} else if s, ok := f.get(fCommandUUID).str(); ok {
			key = "uuid:" + s
		}
		if key != "" {
			d.counts_[key]++
		}
		return
	}
	if !f.get(fType).isStr() || !r.hasUUID {
		return
	}
	var only fields
	only.set(fAttachment, f.get(fAttachment))
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
	if json.Compact(&buf, f.get(fAttachment)) != nil {
		buf.Reset()
		buf.Write(f.get(fAttachment))
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
