// Package split is the split-assistant repair, shared by transcript's read
// rebuild (on its rows) and transcript/fork's rebuild (on fork nodes):
// older CLIs wrote one row per content block of an assistant message, all
// with the same message.id; the rows of such a message that are off the
// chain, and the tool_result rows answering them, are put back after the
// chain row holding that message id, ordered by timestamp.
//
// The algorithm is one; what a row says is read through Rules, since the
// SDK's two readers (getSessionMessages and forkSession) differ at the
// edges.
package split

import (
	"math"
	"sort"
)

// Rules reads what the repair needs from a row of type T.
type Rules[T comparable] struct {
	UUID        func(T) string
	IsAssistant func(T) bool
	MessageID   func(T) (string, bool)
	ToolUses    func(T) []string // tool_use ids of the row's content
	ToolResults func(T) []string // tool_use_ids of its tool_result blocks
	// IsResultRow: a user row with a parent and a tool_result block.
	IsResultRow func(T) bool
	Parent      func(T) (string, bool) // a string parentUuid
	// SourceTool is a string sourceToolAssistantUUID that is not the parent.
	SourceTool func(T) (string, bool)
	SameSide   func(a, b T) bool // same isSidechain (null is false) and agentId
	TimeKey    func(T) string    // what rows put back are sorted by
}

// Set is a set of uuids: the chain's, grown with the rows put back.
type Set interface {
	Has(u string) bool
	Add(u string)
}

// MapSet is a Set in a map.
type MapSet map[string]bool

// Has reports whether u is in s.
func (s MapSet) Has(u string) bool { return s[u] }

// Add puts u in s.
func (s MapSet) Add(u string) { s[u] = true }

// Lookup finds a row of order by uuid, with its index in order; nil makes
// the repair map order itself when it first needs to.
type Lookup[T any] func(u string) (T, int, bool)

// Reattach is the repair over rows of type T: order is the file's rows (the
// map's order), path the chain root first, onPath its uuids (grown with the
// rows put back), find (or nil) order by uuid.
func Reattach[T comparable](rules Rules[T], order, path []T, onPath Set, find Lookup[T]) []T {
	var assistants []T
	for _, r := range path {
		if rules.IsAssistant(r) {
			assistants = append(assistants, r)
		}
	}
	if len(assistants) == 0 {
		return path
	}
	holder := map[string]T{}
	for _, r := range assistants {
		if id, ok := rules.MessageID(r); ok {
			holder[id] = r
		}
	}
	x := newSplitIndex(rules, order, path, find)
	handled := map[string]bool{}
	insert := map[string][]T{}
	total := 0
	for _, b := range assistants {
		id, ok := rules.MessageID(b)
		if !ok || handled[id] {
			continue
		}
		handled[id] = true
		add := x.putBack(b, id, onPath)
		if len(add) == 0 {
			continue
		}
		for _, r := range add {
			onPath.Add(rules.UUID(r))
		}
		total += len(add)
		insert[rules.UUID(holder[id])] = add
	}
	if total == 0 {
		return path
	}
	out := make([]T, 0, len(path)+total)
	for _, r := range path {
		out = append(out, r)
		out = append(out, insert[rules.UUID(r)]...)
	}
	return out
}

// splitIndex is what the repair knows of a file: rows by message id, the
// row holding each tool_use id, the tool_result rows answering each row,
// and the tool_use ids answered on the path.
type splitIndex[T comparable] struct {
	rules       Rules[T]
	order       []T
	find        Lookup[T]    // order by uuid: given, or made by index()
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
		x.byUUID[x.rules.UUID(r)] = r
		x.pos[x.rules.UUID(r)] = i
	}
	x.find = func(u string) (T, int, bool) {
		r, ok := x.byUUID[u]
		return r, x.pos[u], ok
	}
}

func newSplitIndex[T comparable](rules Rules[T], order, path []T, find Lookup[T]) *splitIndex[T] {
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
		if id, ok := rules.MessageID(r); ok {
			x.sameMsg[id] = append(x.sameMsg[id], r)
			x.claimToolUses(r, id)
		} else if rules.IsResultRow(r) {
			results = append(results, r)
		}
	}
	for _, b := range results {
		x.attachResult(b)
	}
	for _, r := range path {
		for _, id := range rules.ToolResults(r) {
			x.pathResults[id] = true
		}
	}
	return x
}

// claimToolUses records r (of message id) as the holder of its tool_use
// ids; an id that rows of two messages claim holds none.
func (x *splitIndex[T]) claimToolUses(r T, id string) {
	for _, u := range x.rules.ToolUses(r) {
		w, seen := x.toolUse[u]
		switch {
		case !seen:
			x.toolUse[u] = r
		case x.conflict[u]:
		default:
			if wid, ok := x.rules.MessageID(w); ok && wid == id {
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
	if p, ok := x.rules.Parent(b); ok {
		x.attach(p, b)
	}
	if src, ok := x.rules.SourceTool(b); ok {
		x.index()
		if a, _, in := x.find(src); in && x.rules.SameSide(b, a) {
			x.attach(x.rules.UUID(a), b)
		}
	}
	for _, id := range x.rules.ToolResults(b) {
		if a, ok := x.holderOf(id); ok && x.rules.SameSide(b, a) {
			x.attach(x.rules.UUID(a), b)
		}
	}
}

func (x *splitIndex[T]) attach(key string, r T) {
	k := key + "\n" + x.rules.UUID(r)
	if x.answered[k] {
		return
	}
	x.answered[k] = true
	x.answers[key] = append(x.answers[key], r)
}

func (x *splitIndex[T]) posOf(r T) int {
	x.index()
	if _, p, ok := x.find(x.rules.UUID(r)); ok {
		return p
	}
	return math.MaxInt
}

// putBack returns the rows to put back after the path's holder b of message
// id: the message's rows off the path, then their answers, each by time.
func (x *splitIndex[T]) putBack(b T, id string, onPath Set) []T {
	group := x.sameMsg[id]
	if group == nil {
		group = []T{b}
	}
	inGroup := map[string]bool{}
	for _, r := range group {
		inGroup[x.rules.UUID(r)] = true
	}
	var off, kept, other []T
	for _, r := range group {
		if !onPath.Has(x.rules.UUID(r)) {
			off = append(off, r)
		}
	}
	seen := map[string]bool{}
	for _, r := range group {
		for _, a := range x.answers[x.rules.UUID(r)] {
			au := x.rules.UUID(a)
			if onPath.Has(au) || seen[au] {
				continue
			}
			seen[au] = true
			if p, ok := x.rules.Parent(a); ok && inGroup[p] {
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
		for _, id := range x.rules.ToolResults(a) {
			have[id] = true
		}
	}
	sort.SliceStable(other, func(i, j int) bool { return x.posOf(other[i]) < x.posOf(other[j]) })
	for _, a := range other {
		ids := x.rules.ToolResults(a)
		useful := false
		for _, id := range ids {
			if t, ok := x.holderOf(id); ok && !have[id] && inGroup[x.rules.UUID(t)] {
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
	sort.SliceStable(rs, func(i, j int) bool { return x.rules.TimeKey(rs[i]) < x.rules.TimeKey(rs[j]) })
}
