package listing

// The listing: the first prompt (see listing.go).

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/e0dc0000/scribe/jsonv"
	"github.com/e0dc0000/scribe/transcript"
)

// ---------------------------------------------------------------------------
// First prompt

// firstPrompt is the SDK's first-prompt rule over the head: the first
// line holding "type":"user" without "tool_result", "isMeta":true or
// "isCompactSummary":true that parses and yields a prompt text; else the
// first <command-name> seen on the way.
func firstPrompt(head []byte) string {
	var fallback string
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		if userTypePat.index(line, 0) < 0 && userTypeSpPat.index(line, 0) < 0 {
			continue
		}
		if toolResultPat.index(line, 0) >= 0 ||
			isMetaTruePat.index(line, 0) >= 0 || isMetaTrueSpPat.index(line, 0) >= 0 ||
			compactTruePat.index(line, 0) >= 0 || compactTrueSpPat.index(line, 0) >= 0 {
			continue
		}
		obj, ok := jsonv.Value(line)
		if !ok || obj[0] != '{' {
			continue
		}
		if p, ok := promptOfEntry(obj, &fallback); ok {
			return p
		}
	}
	return fallback
}

// promptOfEntry is the SDK's prompt extraction from one parsed entry:
// a user entry that is not meta or a compact summary, whose content is a
// string or blocks without a tool_result.
func promptOfEntry(obj []byte, fallback *string) (string, bool) {
	var vals [4][]byte
	jsonv.Lookup(obj, promptKeys[:], vals[:])
	typ, isMeta, compact, msg := vals[0], vals[1], vals[2], vals[3]
	if t, ok := jsonv.String(typ); !ok || t != "user" {
		return "", false
	}
	if string(isMeta) == "true" || string(compact) == "true" {
		return "", false
	}
	if msg == nil || !truthy(msg) {
		return "", false
	}
	var content []byte
	if msg[0] == '{' {
		content, _ = jsonv.Get(msg, "content")
	}
	return promptOfContent(content, fallback)
}

var (
	promptKeys       = [4]string{"type", "isMeta", "isCompactSummary", "message"}
	userTypePat      = newFinder(`"type":"user"`)
	userTypeSpPat    = newFinder(`"type": "user"`)
	toolResultPat    = newFinder(`"tool_result"`)
	isMetaTruePat    = newFinder(`"isMeta":true`)
	isMetaTrueSpPat  = newFinder(`"isMeta": true`)
	compactTruePat   = newFinder(`"isCompactSummary":true`)
	compactTrueSpPat = newFinder(`"isCompactSummary": true`)
)

// promptOfContent runs the SDK's text rules over a message content.
func promptOfContent(content []byte, fallback *string) (string, bool) {
	var texts []string
	switch {
	case len(content) == 0:
	case content[0] == '"':
		s, _ := jsonv.Unquote(content)
		texts = append(texts, s)
	case content[0] == '[':
		for el := range jsonv.Elems(content) {
			if el[0] != '{' {
				continue
			}
			t, tok := jsonv.GetString(el, "type")
			if tok && t == "tool_result" {
				return "", false
			}
			if tok && t == "text" {
				if s, ok := jsonv.GetString(el, "text"); ok {
					texts = append(texts, s)
				}
			}
		}
	}
	for _, l := range texts {
		c := transcript.JSTrim(strings.ReplaceAll(transcript.UnwrapPastedContent(l), "\n", " "))
		if c == "" {
			continue
		}
		if name, ok := commandName(c); ok {
			if *fallback == "" {
				*fallback = name
			}
			continue
		}
		if in, ok := bashInput(c); ok {
			return "! " + transcript.JSTrim(in), true
		}
		if looksLikeTag(c) {
			continue
		}
		if transcript.UTF16Len(c) > 200 {
			c = transcript.JSTrim(transcript.TruncateUTF16(c, 200)) + "…"
		}
		return c, true
	}
	return "", false
}

func indexFrom(s, sub string, from int) int {
	if from < 0 {
		from = 0
	}
	if from > len(s) {
		return -1
	}
	i := strings.Index(s[from:], sub)
	if i < 0 {
		return -1
	}
	return from + i
}

// commandName is /<command-name>(.*?)<\/command-name>/: '.' stops at
// JS line terminators.
func commandName(c string) (string, bool) {
	const open, end = "<command-name>", "</command-name>"
	from := 0
	for {
		o := indexFrom(c, open, from)
		if o < 0 {
			return "", false
		}
		st := o + len(open)
		cl := strings.Index(c[st:], end)
		if cl < 0 {
			return "", false
		}
		seg := c[st : st+cl]
		if !strings.ContainsAny(seg, "\n\r\u2028\u2029") {
			return seg, true
		}
		from = o + 1
	}
}

// bashInput is /<bash-input>([\s\S]*?)<\/bash-input>/.
func bashInput(c string) (string, bool) {
	o := strings.Index(c, "<bash-input>")
	if o < 0 {
		return "", false
	}
	st := o + len("<bash-input>")
	cl := strings.Index(c[st:], "</bash-input>")
	if cl < 0 {
		return "", false
	}
	return c[st : st+cl], true
}

// looksLikeTag is the SDK's skip test
// /^(?:\s*<[a-z][\w-]*[\s>]|\[Request interrupted by user[^\]]*\])/.
func looksLikeTag(c string) bool {
	i := 0
	for i < len(c) {
		r, size := utf8.DecodeRuneInString(c[i:])
		if !transcript.IsJSSpace(r) {
			break
		}
		i += size
	}
	if i+1 < len(c) && c[i] == '<' && c[i+1] >= 'a' && c[i+1] <= 'z' {
		j := i + 2
		for j < len(c) && (c[j] == '-' || c[j] == '_' || c[j] >= 'a' && c[j] <= 'z' || c[j] >= 'A' && c[j] <= 'Z' || c[j] >= '0' && c[j] <= '9') {
			j++
		}
		if j < len(c) {
			r, _ := utf8.DecodeRuneInString(c[j:])
			if r == '>' || transcript.IsJSSpace(r) {
				return true
			}
		}
	}
	const intr = "[Request interrupted by user"
	if strings.HasPrefix(c, intr) && strings.IndexByte(c[len(intr):], ']') >= 0 {
		return true
	}
	return false
}

// mediaPlaceholder is the SDK's last resort title: "Image" or
// "Document" for the first head line holding "type":"user" (not a
// tool_result, not meta) with an image or document block.
func mediaPlaceholder(head []byte) string {
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		if !bytes.Contains(line, []byte(`"type":"user"`)) && !bytes.Contains(line, []byte(`"type": "user"`)) {
			continue
		}
		if bytes.Contains(line, []byte(`"tool_result"`)) ||
			bytes.Contains(line, []byte(`"isMeta":true`)) || bytes.Contains(line, []byte(`"isMeta": true`)) {
			continue
		}
		if bytes.Contains(line, []byte(`"type":"image"`)) || bytes.Contains(line, []byte(`"type": "image"`)) {
			return "Image"
		}
		if bytes.Contains(line, []byte(`"type":"document"`)) || bytes.Contains(line, []byte(`"type": "document"`)) {
			return "Document"
		}
	}
	return ""
}
