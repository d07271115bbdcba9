package install

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/jsonv"
)

// The hooks commands edit a settings.json in place: every byte scribe does
// not change stays as it was (the user's escapes, indentation, key order,
// line ends), what scribe adds follows the file's own layout, and removing
// what it added gives the original file back byte for byte.

// hookHandlerTimeout is the timeout, in seconds, of the hook handler scribe
// writes into settings.json (Claude Code's limit on the process).
const hookHandlerTimeout = 10

// jsonItem is a member of an object or an element of an array, as spans of
// the file: from its key (or the element) to the end of its value.
type jsonItem struct {
	start, end int
	key        string // decoded; members only
	keyEnd     int    // members only
	val        int    // offset of the value
}

// jsonList is an object's members or an array's elements.
type jsonList struct {
	open, close int // offsets of the opening and of the closing bracket
	items       []jsonItem
}

// scanList lists the members (b[open] == '{') or elements (b[open] == '[')
// of a value checked before.
func scanList(b []byte, open int) jsonList {
	b = b[:len(b):len(b)] // a key's offset is len(b)-cap(key)
	l := jsonList{open: open}
	var end int
	if b[open] == '{' {
		end = jsonv.Object(b, open, func(key []byte, v int) int {
			ve := jsonv.End(b, v)
			k, _ := jsonv.Unquote(key)
			start := len(b) - cap(key)
			l.items = append(l.items, jsonItem{start: start, end: ve, key: k, keyEnd: start + len(key), val: v})
			return ve
		})
	} else {
		end = jsonv.Array(b, open, func(v int) int {
			ve := jsonv.End(b, v)
			l.items = append(l.items, jsonItem{start: v, end: ve, val: v})
			return ve
		})
	}
	l.close = end - 1
	return l
}

// duplicateKey returns a key the object holds more than once.
func (l jsonList) duplicateKey() (string, bool) {
	seen := map[string]bool{}
	for _, it := range l.items {
		if seen[it.key] {
			return it.key, true
		}
		seen[it.key] = true
	}
	return "", false
}

func (l jsonList) find(key string) int {
	for i, it := range l.items {
		if it.key == key {
			return i
		}
	}
	return -1
}

// jsonStyle is how a file lays out its JSON, for the parts scribe adds.
type jsonStyle struct {
	nl    string // "\n" or "\r\n"
	unit  string // one level of indentation; "" writes on one line
	colon string // ":" or ": "
}

// styleOf reads the layout of the file b whose top object is top.
func styleOf(b []byte, top jsonList) jsonStyle {
	st := jsonStyle{nl: "\n", unit: "  ", colon: ": "}
	if bytes.Contains(b, []byte("\r\n")) {
		st.nl = "\r\n"
	}
	if len(top.items) == 0 {
		return st
	}
	first := top.items[0]
	ws := b[top.open+1 : first.start]
	if i := bytes.LastIndexByte(ws, '\n'); i >= 0 {
		st.unit = strings.TrimPrefix(string(ws[i+1:]), lineIndent(b, top.open))
	} else {
		st.unit = ""
	}
	if st.unit == "" && bytes.IndexByte(ws, '\n') >= 0 {
		st.unit = "  "
	}
	if gap := b[first.keyEnd:first.val]; bytes.HasSuffix(gap, []byte(":")) {
		st.colon = ":"
	}
	return st
}

// lineIndent is the whitespace the line holding b[i] starts with.
func lineIndent(b []byte, i int) string {
	s := bytes.LastIndexByte(b[:i], '\n') + 1
	e := s
	for e < i && (b[e] == ' ' || b[e] == '\t') {
		e++
	}
	return string(b[s:e])
}

// member is a key and its value, for the values scribe adds.
type member struct {
	key string
	val any
}

// render appends v (a string, an int, a []any or a []member) as JSON in
// the style, its lines after the first indented by indent; strings are
// written without HTML escapes.
func (st jsonStyle) render(dst []byte, v any, indent string) []byte {
	inner := indent + st.unit
	switch x := v.(type) {
	case string:
		return appendJSONString(dst, x)
	case int:
		return fmt.Append(dst, x)
	case []any:
		return st.renderList(dst, "[]", len(x), indent, func(dst []byte, i int) []byte { return st.render(dst, x[i], inner) })
	case []member:
		return st.renderList(dst, "{}", len(x), indent, func(dst []byte, i int) []byte { return st.renderMember(dst, x[i], inner) })
	}
	return dst
}

// renderList appends n items between the brackets, each on its own line
// one level in (or all on one line when the style has no indentation).
func (st jsonStyle) renderList(dst []byte, brackets string, n int, indent string, item func(dst []byte, i int) []byte) []byte {
	dst = append(dst, brackets[0])
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
			if st.unit == "" {
				// On one line, a blank after the comma as after the colon
				// (JSON.stringify writes neither, Python's json.dumps both).
				dst = append(dst, strings.TrimPrefix(st.colon, ":")...)
			}
		}
		if st.unit != "" {
			dst = append(dst, st.nl...)
			dst = append(dst, indent+st.unit...)
		}
		dst = item(dst, i)
	}
	if n > 0 && st.unit != "" {
		dst = append(dst, st.nl...)
		dst = append(dst, indent...)
	}
	return append(dst, brackets[1])
}

func (st jsonStyle) renderMember(dst []byte, m member, indent string) []byte {
	dst = appendJSONString(dst, m.key)
	dst = append(dst, st.colon...)
	return st.render(dst, m.val, indent)
}

func appendJSONString(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return append(dst, bytes.TrimRight(buf.Bytes(), "\n")...)
}

// local is the style for text placed after the whitespace ws: on its own
// line, indented as ws ends, when ws holds a line break, else on one line.
func (st jsonStyle) local(ws []byte) (jsonStyle, string) {
	i := bytes.LastIndexByte(ws, '\n')
	if i < 0 {
		st.unit = ""
		return st, ""
	}
	return st, string(ws[i+1:])
}

// edit replaces b[start:end] with text.
type edit struct {
	start, end int
	text       []byte
}

// applyEdits applies non-overlapping edits to b.
func applyEdits(b []byte, edits []edit) ([]byte, error) {
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	var out []byte
	at := 0
	for _, e := range edits {
		if e.start < at || e.end < e.start {
			return nil, fmt.Errorf("internal error: overlapping edits at offset %d", e.start)
		}
		out = append(out, b[at:e.start]...)
		out = append(out, e.text...)
		at = e.end
	}
	return append(out, b[at:]...), nil
}

// listEdit says what changes in one list: items removed, items replaced
// by new values, and new values appended at its end.
type listEdit struct {
	remove  map[int]bool
	replace map[int]any
	add     []any // []member items for an object
}

// edits turns a listEdit into edits of b: removed items go with the
// separator before them (the one after them when nothing before stays), so
// that removing what was appended gives back the list as it was; appended
// items copy the separator the list already uses.
func (le listEdit) edits(b []byte, l jsonList, st jsonStyle) []edit {
	var out []edit
	for i, v := range le.replace {
		it := l.items[i]
		s, ind := st, lineIndent(b, it.start)
		if bytes.IndexByte(b[it.start:it.end], '\n') < 0 {
			s.unit = ""
		}
		out = append(out, edit{it.val, it.end, s.render(nil, v, ind)})
	}
	n := len(l.items)
	for i := 0; i < n; {
		if !le.remove[i] {
			i++
			continue
		}
		k := i
		for k+1 < n && le.remove[k+1] {
			k++
		}
		switch {
		case i > 0:
			out = append(out, edit{l.items[i-1].end, l.items[k].end, nil})
		case k+1 < n:
			out = append(out, edit{l.items[0].start, l.items[k+1].start, nil})
		default:
			out = append(out, edit{l.open + 1, l.close, nil})
		}
		i = k + 1
	}
	if len(le.add) == 0 {
		return out
	}
	renderItem := func(dst []byte, s jsonStyle, v any, ind string) []byte {
		if m, ok := v.(member); ok {
			return s.renderMember(dst, m, ind)
		}
		return s.render(dst, v, ind)
	}
	if n == 0 {
		outer := lineIndent(b, l.open)
		var text []byte
		for i, v := range le.add {
			if i > 0 {
				text = append(text, ',')
			}
			if st.unit != "" {
				text = append(text, st.nl...)
				text = append(text, outer+st.unit...)
			}
			text = renderItem(text, st, v, outer+st.unit)
		}
		if st.unit != "" {
			text = append(text, st.nl...)
			text = append(text, outer...)
		}
		return append(out, edit{l.open + 1, l.close, text})
	}
	ws := b[l.open+1 : l.items[0].start]
	if n > 1 {
		between := b[l.items[0].end:l.items[1].start]
		ws = between[bytes.IndexByte(between, ',')+1:]
	}
	s, ind := st.local(ws)
	var text []byte
	for _, v := range le.add {
		text = append(text, ',')
		text = append(text, ws...)
		text = renderItem(text, s, v, ind)
	}
	return append(out, edit{l.items[n-1].end, l.items[n-1].end, text})
}

// scribeGroup is the matcher group hooks install writes for command.
func scribeGroup(command string) any {
	return []member{{"hooks", []any{[]member{{"type", "command"}, {"command", command}, {"timeout", hookHandlerTimeout}}}}}
}

// scribeGroupCommand returns the command of g, a checked JSON value, when
// g is exactly a group scribe writes: {"hooks": [{"type": "command",
// "command": C, "timeout": 10}]} and nothing else, C a command scribe
// makes (isScribeCommand). A group with a matcher, another handler or any
// other key is the user's.
func scribeGroupCommand(g []byte, names []string) (string, bool) {
	if len(g) == 0 || g[0] != '{' {
		return "", false
	}
	var handlers []byte
	n := 0
	for k, v := range jsonv.Members(g) {
		n++
		if jsonv.KeyIs(k, "hooks") {
			handlers = v
		}
	}
	if n != 1 || len(handlers) == 0 || handlers[0] != '[' {
		return "", false
	}
	var h []byte
	n = 0
	for e := range jsonv.Elems(handlers) {
		n++
		h = e
	}
	if n != 1 || h[0] != '{' {
		return "", false
	}
	got := map[string][]byte{}
	n = 0
	for k, v := range jsonv.Members(h) {
		n++
		key, _ := jsonv.Unquote(k)
		got[key] = v
	}
	typ, _ := jsonv.String(got["type"])
	cmd, ok := jsonv.String(got["command"])
	if n != 3 || len(got) != 3 || typ != "command" || string(got["timeout"]) != fmt.Sprint(hookHandlerTimeout) || !ok {
		return "", false
	}
	return cmd, isScribeCommand(cmd, names)
}

// isScribeCommand reports whether c is a command hooks install makes:
// cmdutil.ShellQuote(binary) + " hook", with " --config " + cmdutil.ShellQuote(file) or
// not, the binary an absolute path whose name is one of names, the file
// an absolute path. Anything else (a user's own `scribe-notify hook
// --sound`) is not scribe's.
func isScribeCommand(c string, names []string) bool {
	bin, rest, ok := cutShellWord(c)
	if !ok || !filepath.IsAbs(bin) || !slices.Contains(names, filepath.Base(bin)) {
		return false
	}
	if rest == " hook" {
		return true
	}
	file, ok := strings.CutPrefix(rest, " hook --config ")
	if !ok {
		return false
	}
	p, tail, ok := cutShellWord(file)
	return ok && tail == "" && filepath.IsAbs(p)
}

// cutShellWord takes the first word of s as shellQuote writes it and
// returns it unquoted and the rest; ok is false unless shellQuote writes
// the word exactly as s has it.
func cutShellWord(s string) (word, rest string, ok bool) {
	var w []byte
	i := 0
	if strings.HasPrefix(s, "'") {
		i = 1
		for {
			j := strings.IndexByte(s[i:], '\'')
			if j < 0 {
				return "", "", false
			}
			w = append(w, s[i:i+j]...)
			i += j + 1
			if !strings.HasPrefix(s[i:], `\''`) {
				break
			}
			w = append(w, '\'')
			i += 3
		}
	} else {
		i = strings.IndexByte(s, ' ')
		if i < 0 {
			i = len(s)
		}
		w = []byte(s[:i])
	}
	word = string(w)
	return word, s[i:], cmdutil.ShellQuote(word) == s[:i]
}

// editHooks adds (install) or removes scribe's hook groups in old, a
// settings.json ("" for none), for every event of hookEvents, and returns
// the new file and what changed (nothing: no write needed). names are the
// binary names whose commands are scribe's (isScribeCommand).
func editHooks(old []byte, install bool, command string, names []string) ([]byte, []string, error) {
	b, top, st, err := settingsTop(old)
	if err != nil {
		return nil, nil, err
	}
	var hooks jsonList
	hi := top.find("hooks")
	if hi >= 0 {
		v := top.items[hi].val
		if b[v] != '{' {
			return nil, nil, fmt.Errorf("\"hooks\" is not an object")
		}
		hooks = scanList(b, v)
		if k, dup := hooks.duplicateKey(); dup {
			return nil, nil, fmt.Errorf("the key %q is there twice in \"hooks\" (Claude Code reads only the last one)", k)
		}
	}
	group := scribeGroup(command)
	var edits []edit
	var changes []string
	hooksEdit := listEdit{remove: map[int]bool{}}
	var added []member // the events scribe adds to "hooks"
	for _, ev := range hookEvents {
		mi := -1
		if hi >= 0 {
			mi = hooks.find(ev)
		}
		if mi < 0 {
			if install {
				added = append(added, member{ev, []any{group}})
				hooksEdit.add = append(hooksEdit.add, added[len(added)-1])
				changes = append(changes, "added "+ev)
			}
			continue
		}
		v := hooks.items[mi].val
		if b[v] != '[' {
			return nil, nil, fmt.Errorf("\"hooks\".%q is not a list of matcher groups", ev)
		}
		groups := scanList(b, v)
		le := listEdit{remove: map[int]bool{}, replace: map[int]any{}}
		var found []int
		same := false
		for i, g := range groups.items {
			if c, ok := scribeGroupCommand(b[g.start:g.end], names); ok {
				found = append(found, i)
				same = same || c == command
			}
		}
		switch {
		case install && len(found) == 1 && same:
			continue
		case install && len(found) > 0:
			// Another scribe binary or configuration: this one replaces it.
			le.replace[found[0]] = group
			for _, i := range found[1:] {
				le.remove[i] = true
			}
			changes = append(changes, "updated "+ev)
		case install:
			le.add = []any{group}
			changes = append(changes, "added "+ev)
		case len(found) > 0:
			for _, i := range found {
				le.remove[i] = true
			}
			changes = append(changes, "removed "+ev)
		default:
			continue
		}
		if len(le.remove) > 0 && len(le.remove) == len(groups.items) {
			hooksEdit.remove[mi] = true // the event held scribe's groups only
			continue
		}
		edits = append(edits, le.edits(b, groups, st)...)
	}
	if len(changes) == 0 {
		return old, nil, nil
	}
	switch {
	case hi < 0:
		edits = append(edits, listEdit{add: []any{member{"hooks", added}}}.edits(b, top, st)...)
	case len(hooksEdit.remove) == len(hooks.items) && len(hooksEdit.add) == 0:
		edits = append(edits, listEdit{remove: map[int]bool{hi: true}}.edits(b, top, st)...)
	default:
		edits = append(edits, hooksEdit.edits(b, hooks, st)...)
	}
	out, err := finishEdit(old, b, edits)
	if err != nil {
		return nil, nil, err
	}
	return out, changes, nil
}

// settingsTop checks a JSON settings file ("" for none, read as {}) and
// returns it, its top object's members and its layout: a file that is not
// a JSON object, or whose top object holds a key twice, is refused.
func settingsTop(old []byte) ([]byte, jsonList, jsonStyle, error) {
	b := old
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}\n")
	}
	start := jsonv.Space(b, 0)
	if end := jsonv.End(b, start); end < 0 || jsonv.Space(b, end) != len(b) {
		off := ^end
		if end >= 0 {
			off = jsonv.Space(b, end)
		}
		line := 1 + bytes.Count(b[:min(off, len(b))], []byte{'\n'})
		return nil, jsonList{}, jsonStyle{}, fmt.Errorf("not valid JSON (line %d): %w", line, jsonv.Err(b, ^off))
	}
	if b[start] != '{' {
		return nil, jsonList{}, jsonStyle{}, fmt.Errorf("not a JSON object")
	}
	top := scanList(b, start)
	if k, dup := top.duplicateKey(); dup {
		return nil, jsonList{}, jsonStyle{}, fmt.Errorf("the key %q is there twice at the top level (Claude Code reads only the last one)", k)
	}
	return b, top, styleOf(b, top), nil
}

// finishEdit applies edits to b, the checked form of old, and checks the
// result.
func finishEdit(old, b []byte, edits []edit) ([]byte, error) {
	out, err := applyEdits(b, edits)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(old)) == 0 && !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	if !jsonv.Valid(out) {
		return nil, fmt.Errorf("internal error: the edited file is not valid JSON")
	}
	return out, nil
}
