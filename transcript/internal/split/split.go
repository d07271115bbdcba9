package transcript

import (
	"math"
	"sort"
)

// The split-assistant repair, shared by the read rebuild (buildMain,
// on rows) and the fork's rebuild (fkRepairSplit, on fork nodes): older CLIs
// wrote one row per content block of an assistant message, all with the
// same message.id; the rows of such a message that are off the chain, and
// the tool_result rows answering them, are put back after the chain row
// holding that message id, ordered by timestamp.
//
// The algorithm is one; what a row says is read through splitRules, since
// the SDK's two readers differ at the edges (see fkSplitRules).

// splitRules reads what the repair needs from a row of type T.
type splitRules[T comparable] struct {
	uuid        func(T) string
	isAssistant func(T) bool
	messageID   func(T) (string, bool)
	toolUses    func(T) []string // tool_use ids of the row's content
	toolResults func(T) []string // tool_use_ids of its tool_result blocks
	// isResultRow: a user row with a parent and a tool_result block.
	isResultRow func(T) bool
	parent      func(T) (string, bool) // a string parentUuid
	// sourceTool is a string sourceToolAssistantUUID that is not the parent.
	sourceTool func(T) (string, bool)
	sameSide   func(a, b T) bool // same isSidechain (null is false) and agentId
	timeKey    func(T) string    // what rows put back are sorted by
}

// uuidSet is a set of uuids: the chain's, grown with the rows put back.
type uuidSet interface {
	has(u string) bool
	add(u string)
}

// mapSet is a uuidSet in a map.
type mapSet map[string]bool

func (s mapSet) has(u string) bool { return s[u] }
func (s mapSet) add(u string)      { s[u] = true }

// lookup finds a row of order by uuid, with its index in order; nil makes
// the repair map order itself when it first needs to.
type lookup[T any] func(u string) (T, int, bool)

// reattach is the repair over rows of type T: order is the file's rows (the
// map's order), path the chain root first, onPath its uuids (grown with the
// rows put back), find (or nil) order by uuid.
func reattach[T comparable](rules splitRules[T], order, path []T, onPath uuidSet, find lookup[T]) []T {
	var assistants []T
	for _, r := range path {
		if rules.isAssistant(r) {
			assistants = append(assistants, r)
		}
	}
	if len(assistants) == 0 {
		return path
	}
	holder := map[string]T{}
	for _, r := range assistants {
		if id, ok := rules.messageID(r); ok {
			holder[id] = r
		}
	}
	x := newSplitIndex(rules, order, path, find)
	handled := map[string]bool{}
	insert := map[string][]T{}
	total := 0
	for _, b := range assistants {
		id, ok := rules.messageID(b)
		if !ok || handled[id] {
			continue
		}
		handled[id] = true
		add := x.putBack(b, id, onPath)
		if len(add) == 0 {
			continue
		}
		for _, r := range add {
			onPath.add(rules.uuid(r))
		}
		total += len(add)
		insert[rules.uuid(holder[id])] = add
	}
	if total == 0 {
		return path
	}
	out := make([]T, 0, len(path)+total)
	for _, r := range path {
		out = append(out, r)
		out = append(out, insert[rules.uuid(r)]...)
	}
	return out
}

// splitIndex is what the repair knows of a file: rows by message id, the
// row holding each tool_use id, the tool_result rows answering each row,
// and the tool_use ids answered on the path.
type splitIndex[T comparable] struct {
	rules       splitRules[T]
	order       []T
	find        lookup[T]    // order by uuid: given, or made by index()
	byUUID      map[string]T // by index()
	sameMsg     map[string][]T
	toolUse     map[string]T
	conflict    map[string]bool // tool_use ids claimed by two messages
	answers     map[string][]T
	answered    map[string]bool
	pathResults map[string]bool
	pos         map[string]int // by index()
}

// index maps the file's rows by uuid and position, once: most files never
// need it.
func (x *splitIndex[T]) index() {
	if x.find != nil {
		return
	}
	x.byUUID = make(map[string]T, len(x.order))
	x.pos = make(map[string]int, len(x.order))
	for i, r := range x.order {
		x.byUUID[x.rules.uuid(r)] = r
		x.pos[x.rules.uuid(r)] = i
	}
	x.find = func(u string) (T, int, bool) {
		r, ok := x.byUUID[u]
		return r, x.pos[u], ok
	}
}

func newSplitIndex[T comparable](rules splitRules[T], order, path []T, find lookup[T]) *splitIndex[T] {
	x := &splitIndex[T]{
		rules:       rules,
		order:       order,
		find:        find,
		sameMsg:     map[string][]T{},
		toolUse:     map[string]T{},
		conflict:    map[string]bool{},
		answers:     map[string][]T{},
		answered:    map[string]bool{},
		pathResults: map[string]bool{},
	}
	var results []T
	for _, r := range order {
		if id, ok := rules.messageID(r); ok {
			x.sameMsg[id] = append(x.sameMsg[id], r)
			x.claimToolUses(r, id)
		} else if rules.isResultRow(r) {
			results = append(results, r)
		}
	}
	for _, b := range results {
		x.attachResult(b)
	}
	for _, r := range path {
		for _, id := range rules.toolResults(r) {
			x.pathResults[id] = true
		}
	}
	return x
}

// claimToolUses records r (of message id) as the holder of its tool_use
// ids; an id that rows of two messages claim holds none.
func (x *splitIndex[T]) claimToolUses(r T, id string) {
	for _, u := range x.rules.toolUses(r) {
		w, seen := x.toolUse[u]
		switch {
		case !seen:
			x.toolUse[u] = r
		case x.conflict[u]:
		default:
			if wid, ok := x.rules.messageID(w); ok && wid == id {
				x.toolUse[u] = r
			} else {
				x.conflict[u] = true
			}
		}
	}
}

// holderOf is the row holding tool_use id, if one message claims it.
func (x *splitIndex[T]) holderOf(id string) (T, bool) {
	t, ok := x.toolUse[id]
	return t, ok && !x.conflict[id]
}

// attachResult files the tool_result row b under the rows it answers: its
// parent, its sourceToolAssistantUUID and the holders of its tool_use_ids.
func (x *splitIndex[T]) attachResult(b T) {
	if p, ok := x.rules.parent(b); ok {
		x.attach(p, b)
	}
	if src, ok := x.rules.sourceTool(b); ok {
		x.index()
		if a, _, in := x.find(src); in && x.rules.sameSide(b, a) {
			x.attach(x.rules.uuid(a), b)
		}
	}
	for _, id := range x.rules.toolResults(b) {
		if a, ok := x.holderOf(id); ok && x.rules.sameSide(b, a) {
			x.attach(x.rules.uuid(a), b)
		}
	}
}

func (x *splitIndex[T]) attach(key string, r T) {
	k := key + "\n" + x.rules.uuid(r)
	if x.answered[k] {
		return
	}
	x.answered[k] = true
	x.answers[key] = append(x.answers[key], r)
}

func (x *splitIndex[T]) posOf(r T) int {
	x.index()
	if _, p, ok := x.find(x.rules.uuid(r)); ok {
		return p
	}
	return math.MaxInt
}

// putBack returns the rows to put back after the path's holder b of message
// id: the message's rows off the path, then their answers, each by time.
func (x *splitIndex[T]) putBack(b T, id string, onPath uuidSet) []T {
	group := x.sameMsg[id]
	if group == nil {
		group = []T{b}
	}
	inGroup := map[string]bool{}
	for _, r := range group {
		inGroup[x.rules.uuid(r)] = true
	}
	var off, kept, other []T
	for _, r := range group {
		if !onPath.has(x.rules.uuid(r)) {
			off = append(off, r)
		}
	}
	seen := map[string]bool{}
	for _, r := range group {
		for _, a := range x.answers[x.rules.uuid(r)] {
			au := x.rules.uuid(a)
			if onPath.has(au) || seen[au] {
				continue
			}
			seen[au] = true
			if p, ok := x.rules.parent(a); ok && inGroup[p] {
				kept = append(kept, a)
			} else {
				other = append(other, a)
			}
		}
	}
	if len(other) > 0 {
		kept = x.keepUseful(other, kept, inGroup)
	}
	if len(off) == 0 && len(kept) == 0 {
		return nil
	}
	x.byTime(off)
	x.byTime(kept)
	return append(off, kept...)
}

// keepUseful adds to kept, in file order, the answers parented elsewhere
// that answer a tool_use of the group not answered yet.
func (x *splitIndex[T]) keepUseful(other, kept []T, inGroup map[string]bool) []T {
	have := make(map[string]bool, len(x.pathResults))
	for k := range x.pathResults {
		have[k] = true
	}
	for _, a := range kept {
		for _, id := range x.rules.toolResults(a) {
			have[id] = true
		}
	}
	sort.SliceStable(other, func(i, j int) bool { return x.posOf(other[i]) < x.posOf(other[j]) })
	for _, a := range other {
		ids := x.rules.toolResults(a)
		useful := false
		for _, id := range ids {
			if t, ok := x.holderOf(id); ok && !have[id] && inGroup[x.rules.uuid(t)] {
				useful = true
				break
			}
		}
		if !useful {
			continue
		}
		for _, id := range ids {
			have[id] = true
		}
		kept = append(kept, a)
	}
	return kept
}

func (x *splitIndex[T]) byTime(rs []T) {
	sort.SliceStable(rs, func(i, j int) bool { return x.rules.timeKey(rs[i]) < x.rules.timeKey(rs[j]) })
}
