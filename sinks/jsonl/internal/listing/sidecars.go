package listing

// The listing: titles, archive marks and the last prompt's time (see listing.go).

import (
	"bytes"
	"regexp"
	"strings"
	"sync"

	"github.com/e0dc0000/scribe/jsonv"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/transcript"
)

// ---------------------------------------------------------------------------
// Sidecars

// sidecarTitle is <id>/custom-title.json's customTitle, cleaned as the SDK
// cleans it ("" when absent or invalid).
func (w *Worker) sidecarTitle(path string) string {
	raw, err := layout.ReadFileFS(w.fsys, path)
	if err != nil {
		return ""
	}
	obj, ok := jsonv.Value(raw)
	if !ok || obj[0] != '{' {
		return ""
	}
	t, ok := jsonv.GetString(obj, "customTitle")
	if !ok {
		return ""
	}
	return transcript.CleanSidecarTitle(t)
}

var isoDateTime = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-(?:0[1-9]|1\d|2[0-8])))T(?:(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|([+-](?:[01]\d|2[0-3]):[0-5]\d)))$`)
})

// archived reads <id>/archived.json ({archived: bool, at: ISO datetime},
// at most 4096 bytes, not a symlink) and applies the SDK's rule: archived
// stays true unless a prompt in either window is newer than "at".
func (w *Worker) archived(path string, win *Win) *bool {
	f, err := openFile(w.fsys, path)
	if err != nil {
		return nil
	}
	defer f.close()
	st, err := f.stat()
	if err != nil || !st.regular || st.size > 4096 {
		return nil
	}
	if cap(w.side) < int(st.size) {
		w.side = make([]byte, 4096)
	}
	n, err := f.pread(w.side[:st.size], 0)
	if err != nil {
		return nil
	}
	obj, ok := jsonv.Value(w.side[:n])
	if !ok || obj[0] != '{' {
		return nil
	}
	a, ok := jsonv.Get(obj, "archived")
	if !ok || (string(a) != "true" && string(a) != "false") {
		return nil
	}
	at, ok := jsonv.GetString(obj, "at")
	if !ok || !isoDateTime().MatchString(at) {
		return nil
	}
	atMs, ok := DateParse(at)
	if !ok {
		return nil
	}
	res := string(a) == "true"
	if res {
		newer := promptAfter(win.Tail, atMs) || (!bytes.Equal(win.Head, win.Tail) && promptAfter(win.Head, atMs))
		res = !newer
	}
	return &res
}

// promptAfter: some line of win is a prompt (a user row or a
// queued_command attachment, as the SDK's schema accepts them) sent after
// atMs.
func promptAfter(win []byte, atMs int64) bool {
	for len(win) > 0 {
		line := win
		if i := bytes.IndexByte(win, '\n'); i >= 0 {
			line, win = win[:i], win[i+1:]
		} else {
			win = nil
		}
		if !bytes.Contains(line, []byte(`"user"`)) && !bytes.Contains(line, []byte(`"queued_command"`)) {
			continue
		}
		if bytes.Contains(line, []byte(`"tool_result"`)) {
			continue
		}
		obj, ok := jsonv.Value(line)
		if !ok || obj[0] != '{' {
			continue
		}
		if t, ok := promptTime(obj); ok && t > atMs {
			return true
		}
	}
	return false
}

// promptTime is the SDK's "when was this prompt sent": the timestamp of
// a human prompt row, validated against its schema.
func promptTime(obj []byte) (int64, bool) {
	typ, ok := jsonv.GetString(obj, "type")
	if !ok {
		return 0, false
	}
	ts, ok := jsonv.GetString(obj, "timestamp")
	if !ok {
		return 0, false
	}
	var content, origin []byte
	var hasContent bool
	switch typ {
	case "user":
		content, hasContent, origin, ok = promptUser(obj)
	case "attachment":
		content, hasContent, origin, ok = promptAttachment(obj)
	default:
		return 0, false
	}
	if !ok {
		return 0, false
	}
	if origin != nil {
		if k, _ := jsonv.GetString(origin, "kind"); k != "human" {
			return 0, false
		}
	}
	if !promptOfBlocks(content, hasContent, origin) {
		return 0, false
	}
	return DateParse(ts)
}

// promptUser is promptTime's test of a user row: its content and
// origin, and whether it may be a prompt.
func promptUser(obj []byte) (content []byte, hasContent bool, origin []byte, ok bool) {
	msg, ok := jsonv.Get(obj, "message")
	if !ok || msg[0] != '{' {
		return nil, false, nil, false
	}
	content, hasContent = jsonv.Get(msg, "content")
	if o, ok := jsonv.Get(obj, "origin"); ok {
		if !validOrigin(o) {
			return nil, false, nil, false
		}
		origin = o
	}
	if v, ok := jsonv.Get(obj, "promptSource"); ok && v[0] != '"' {
		return nil, false, nil, false
	}
	for _, k := range []string{"persist", "wakeupSource", "scheduledTaskId"} {
		if _, ok := jsonv.Get(obj, k); ok {
			return nil, false, nil, false
		}
	}
	if _, ok := jsonv.Get(obj, "turnOrigin"); ok {
		s, ok := jsonv.GetString(obj, "turnOrigin")
		if !ok || (s != "human" && s != "sdk" && s != "unknown") {
			return nil, false, nil, false
		}
	}
	if v, ok := jsonv.Get(obj, "toolUseResult"); ok && string(v) != "null" {
		return nil, false, nil, false
	}
	if !falseOnly(obj, "isCompactSummary", "isSidechain", "isVirtual", "isVisibleInTranscriptOnly",
		"isMeta", "textNotTyped", "handedOff", "queueSkipAttachments") {
		return nil, false, nil, false
	}
	return content, hasContent, origin, true
}

// promptAttachment is promptTime's test of an attachment row (a
// queued command): its prompt and origin, and whether it may be a prompt.
func promptAttachment(obj []byte) (content []byte, hasContent bool, origin []byte, ok bool) {
	if !falseOnly(obj, "isSidechain") {
		return nil, false, nil, false
	}
	att, ok := jsonv.Get(obj, "attachment")
	if !ok || att[0] != '{' {
		return nil, false, nil, false
	}
	if t, ok := jsonv.GetString(att, "type"); !ok || t != "queued_command" {
		return nil, false, nil, false
	}
	content, hasContent = jsonv.Get(att, "prompt")
	if o, ok := jsonv.Get(att, "origin"); ok {
		if !validOrigin(o) {
			return nil, false, nil, false
		}
		origin = o
	}
	if _, ok := jsonv.Get(att, "commandMode"); ok {
		s, ok := jsonv.GetString(att, "commandMode")
		if !ok || (s != "prompt" && s != "bash") {
			return nil, false, nil, false
		}
	}
	if !falseOnly(att, "isMeta") {
		return nil, false, nil, false
	}
	return content, hasContent, origin, true
}

// falseOnly reports whether each of keys is absent from o or false.
func falseOnly(o []byte, keys ...string) bool {
	for _, k := range keys {
		if v, ok := jsonv.Get(o, k); ok && string(v) != "false" {
			return false
		}
	}
	return true
}

// validOrigin: an origin is an object with a string kind.
func validOrigin(v []byte) bool {
	if v[0] != '{' {
		return false
	}
	_, ok := jsonv.GetString(v, "kind")
	return ok
}

// promptOfBlocks is promptTime's test of the content: whether it
// makes the row a prompt.
func promptOfBlocks(content []byte, hasContent bool, origin []byte) bool {
	// The blocks: a string is one text block; otherwise an array of
	// objects with a string type, else none.
	type block struct {
		typ, text string
		hasText   bool
	}
	var blocks []block
	if hasContent && content[0] == '"' {
		s, _ := jsonv.Unquote(content)
		blocks = []block{{typ: "text", text: s, hasText: true}}
	} else if hasContent && content[0] == '[' {
		for el := range jsonv.Elems(content) {
			t, ok := "", el[0] == '{'
			if ok {
				t, ok = jsonv.GetString(el, "type")
			}
			if !ok {
				blocks = nil
				break
			}
			b := block{typ: t}
			b.text, b.hasText = jsonv.GetString(el, "text")
			blocks = append(blocks, b)
		}
	}
	texts := make([]string, len(blocks))
	for i, b := range blocks {
		if b.typ == "tool_result" {
			return false
		}
		if b.hasText {
			texts[i] = strings.TrimLeftFunc(b.text, transcript.IsJSSpace)
		}
	}
	var prompt bool
	if origin != nil {
		some, cmd := false, false
		for _, t := range texts {
			some = some || t != ""
			cmd = cmd || strings.HasPrefix(t, "<command-name>")
		}
		prompt = some && !cmd
	} else {
		var fb string
		if hasContent {
			_, prompt = promptOfContent(content, &fb)
		}
		for _, t := range texts {
			prompt = prompt || strings.HasPrefix(t, "<command-message>")
		}
	}
	for _, b := range blocks {
		prompt = prompt || b.typ == "image" || b.typ == "document"
	}
	return prompt
}

// lastEntry returns a copy of the last complete conversation row of the
// tail window (see SessionInfo.LastEntryTail).
func (x *keyIndex) lastEntry() []byte {
	win, occ := x.win, x.pos[lkParentUUID]
	// (The first line of a tail window may be cut; it does not parse.)
	for line := range linesBack(win, occ) {
		if obj, ok := jsonv.Value(line); ok && obj[0] == '{' {
			switch t, _ := jsonv.GetString(obj, "type"); t {
			case "user", "assistant", "attachment":
				return bytes.Clone(bytes.TrimRight(line, "\r"))
			}
		}
	}
	return nil
}

// truthy is JavaScript truthiness of a JSON value.
func truthy(v []byte) bool {
	switch {
	case string(v) == "null" || string(v) == "false" || string(v) == `""`:
		return false
	case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
		for _, c := range v {
			if c == 'e' || c == 'E' {
				break
			}
			if c >= '1' && c <= '9' {
				return true
			}
		}
		return false
	}
	return true
}
