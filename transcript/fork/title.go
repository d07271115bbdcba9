package transcript

import (
	"bytes"
	"regexp"
	"strings"
	"sync"

	"github.com/e0dc0000/scribe/jsonv"
)

// Titles

// fkLastTyped is the SDK's tail search for a metadata value: from the end,
// the first line holding "key": and "type":"typ" (or "type": "typ") that
// parses with a string key; a line that does not parse is retried from
// its last {"type":"typ" when that does not follow ':', ',' or '['.
func fkLastTyped(text []byte, key, typ string) (string, bool) {
	want := []byte(`"` + key + `":`)
	t1 := []byte(`"type":"` + typ + `"`)
	t2 := []byte(`"type": "` + typ + `"`)
	retry := append([]byte{'{'}, t1...)
	for i := len(text); i > 0; {
		a := bytes.LastIndexByte(text[:i], '\n')
		l := text[a+1 : i]
		i = a
		if bytes.Contains(l, want) && (bytes.Contains(l, t1) || bytes.Contains(l, t2)) {
			v, st := fkTypedValue(l, key, typ)
			if st == fkParseFailed {
				if u := bytes.LastIndex(l, retry); u > 0 && !strings.ContainsRune(":,[", rune(l[u-1])) {
					v, st = fkTypedValue(l[u:], key, typ)
				}
			}
			if st == fkFoundString {
				return v, true
			}
		}
		if a < 0 {
			break
		}
	}
	return "", false
}

const (
	fkNotFound = iota
	fkFoundString
	fkParseFailed
)

func fkTypedValue(line []byte, key, typ string) (string, int) {
	if !jsonv.Valid(line) {
		return "", fkParseFailed
	}
	obj, ok := fkParseObj(line)
	if !ok || !fkStrIs(obj.get("type"), typ) {
		return "", fkNotFound
	}
	if s, ok := fkStr(obj.get(key)); ok {
		return s, fkFoundString
	}
	return "", fkNotFound
}

// fkFirstPrompt is the SDK's first prompt of a head as a fork shows it: the
// first line holding "type":"user" (and none of "tool_result",
// "isMeta":true, "isCompactSummary":true) whose prompt text survives the
// rules below; else the first <command-name> met on the way.
func fkFirstPrompt(head []byte) string {
	fallback := ""
	for n := 0; n < len(head); {
		var s []byte
		if o := bytes.IndexByte(head[n:], '\n'); o >= 0 {
			s, n = head[n:n+o], n+o+1
		} else {
			s, n = head[n:], len(head)
		}
		if !bytes.Contains(s, []byte(`"type":"user"`)) && !bytes.Contains(s, []byte(`"type": "user"`)) {
			continue
		}
		if bytes.Contains(s, []byte(`"tool_result"`)) ||
			bytes.Contains(s, []byte(`"isMeta":true`)) || bytes.Contains(s, []byte(`"isMeta": true`)) ||
			bytes.Contains(s, []byte(`"isCompactSummary":true`)) || bytes.Contains(s, []byte(`"isCompactSummary": true`)) {
			continue
		}
		if !jsonv.Valid(s) {
			continue
		}
		obj, ok := fkParseObj(s)
		if !ok {
			continue
		}
		if p, ok := fkPromptOf(obj, &fallback); ok {
			return p
		}
	}
	return fallback
}

var (
	fkCommandRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`<command-name>([^\n\r\x{2028}\x{2029}]*?)</command-name>`)
	})
	fkBashRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)<bash-input>(.*?)</bash-input>`) })
	fkTagRE  = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:` + fkJSSpaceClass + `*<[a-z][A-Za-z0-9_-]*(?:` + fkJSSpaceClass +
			`|>)|\[Request interrupted by user[^\]]*\])`)
	})
)

// fkJSSpaceClass is JavaScript's \s.
const fkJSSpaceClass = `[\t\n\x0B\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]`

func fkPromptOf(obj *fkObj, fallback *string) (string, bool) {
	if !fkStrIs(obj.get("type"), "user") || fkIsTrue(obj.get("isMeta")) || fkIsTrue(obj.get("isCompactSummary")) {
		return "", false
	}
	msg := obj.get("message")
	if !fkTruthy(msg) {
		return "", false
	}
	var content []byte
	if fkIsObj(msg) {
		content = fkField(msg, "content")
	}
	var texts []string
	shown := false
	if s, ok := fkStr(content); ok {
		if p, ok := fkPluginPrompt(s, obj.get("pluginPrompt")); ok {
			s, shown = p, true
		}
		texts = append(texts, s)
	} else if fkIsArr(content) {
		for _, el := range fkElems(content) {
			if !fkIsObj(el) {
				continue
			}
			t := fkField(el, "type")
			if fkStrIs(t, "tool_result") {
				return "", false
			}
			if fkStrIs(t, "text") {
				if s, ok := fkStr(fkField(el, "text")); ok {
					texts = append(texts, s)
				}
			}
		}
	}
	for _, l := range texts {
		c := JSTrim(strings.ReplaceAll(UnwrapPastedContent(l), "\n", " "))
		if c == "" {
			continue
		}
		if !shown {
			if m := fkCommandRE().FindStringSubmatch(c); m != nil {
				if *fallback == "" {
					*fallback = m[1]
				}
				continue
			}
			if m := fkBashRE().FindStringSubmatch(c); m != nil {
				return "! " + JSTrim(m[1]), true
			}
		}
		if fkTagRE().MatchString(c) {
			continue
		}
		if UTF16Len(c) > 200 {
			c = JSTrim(TruncateUTF16(c, 200)) + "…"
		}
		return c, true
	}
	return "", false
}

// fkPluginTrailer ends the text Claude Code puts in the user's place for a
// plugin's prompt.
const fkPluginTrailer = "\n\nThis is how Claude Code surfaces a prompt a plugin submits between " +
	"turns \u2014 it starts this turn in the user's place. Address the message above."

// fkPluginPrompt shows a plugin's prompt ("The X plugin sent a
// message:\n<text>" + fkPluginTrailer, with pluginPrompt.text = <text>)
// as "Prompt from the X plugin: <text>".
func fkPluginPrompt(s string, pp []byte) (string, bool) {
	const pre, suf = "The ", " plugin sent a message:\n"
	if !fkIsObj(pp) {
		return "", false
	}
	text, ok := fkStr(fkField(pp, "text"))
	if !ok || text == "" {
		return "", false
	}
	first := s[:strings.IndexByte(s, '\n')+1]
	if UTF16Len(first) <= 28 || !strings.HasPrefix(first, pre) || !strings.HasSuffix(first, suf) || s != first+text+fkPluginTrailer {
		return "", false
	}
	return "Prompt from the " + first[len(pre):len(first)-len(suf)] + " plugin: " + text, true
}
