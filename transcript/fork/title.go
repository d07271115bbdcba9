package fork

import (
	"bytes"
	"regexp"
	"strings"
	"sync"

	"github.com/e0dc0000/scribe/jsonv"
	"github.com/e0dc0000/scribe/transcript"
	"github.com/e0dc0000/scribe/transcript/internal/jsjson"
)

// Titles

// lastTyped is the SDK's tail search for a metadata value: from the end,
// the first line holding "key": and "type":"typ" (or "type": "typ") that
// parses with a string key; a line that does not parse is retried from
// its last {"type":"typ" when that does not follow ':', ',' or '['.
func lastTyped(text []byte, key, typ string) (string, bool) {
	want := []byte(`"` + key + `":`)
	t1 := []byte(`"type":"` + typ + `"`)
	t2 := []byte(`"type": "` + typ + `"`)
	retry := append([]byte{'{'}, t1...)
	for i := len(text); i > 0; {
		a := bytes.LastIndexByte(text[:i], '\n')
		l := text[a+1 : i]
		i = a
		if bytes.Contains(l, want) && (bytes.Contains(l, t1) || bytes.Contains(l, t2)) {
			v, st := typedValue(l, key, typ)
			if st == parseFailed {
				if u := bytes.LastIndex(l, retry); u > 0 && !strings.ContainsRune(":,[", rune(l[u-1])) {
					v, st = typedValue(l[u:], key, typ)
				}
			}
			if st == foundString {
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
	notFound = iota
	foundString
	parseFailed
)

func typedValue(line []byte, key, typ string) (string, int) {
	if !jsonv.Valid(line) {
		return "", parseFailed
	}
	obj, ok := jsjson.Parse(line)
	if !ok || !strIs(obj.Get("type"), typ) {
		return "", notFound
	}
	if s, ok := stringOf(obj.Get(key)); ok {
		return s, foundString
	}
	return "", notFound
}

// firstPrompt is the SDK's first prompt of a head as a fork shows it: the
// first line holding "type":"user" (and none of "tool_result",
// "isMeta":true, "isCompactSummary":true) whose prompt text survives the
// rules below; else the first <command-name> met on the way.
func firstPrompt(head []byte) string {
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
		obj, ok := jsjson.Parse(s)
		if !ok {
			continue
		}
		if p, ok := promptOf(obj, &fallback); ok {
			return p
		}
	}
	return fallback
}

var (
	commandRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`<command-name>([^\n\r\x{2028}\x{2029}]*?)</command-name>`)
	})
	bashRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)<bash-input>(.*?)</bash-input>`) })
	tagRE  = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:` + jsSpaceClass + `*<[a-z][A-Za-z0-9_-]*(?:` + jsSpaceClass +
			`|>)|\[Request interrupted by user[^\]]*\])`)
	})
)

// jsSpaceClass is JavaScript's \s.
const jsSpaceClass = `[\t\n\x0B\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]`

func promptOf(obj *jsjson.Object, fallback *string) (string, bool) {
	if !strIs(obj.Get("type"), "user") || isTrue(obj.Get("isMeta")) || isTrue(obj.Get("isCompactSummary")) {
		return "", false
	}
	msg := obj.Get("message")
	if !truthy(msg) {
		return "", false
	}
	var content []byte
	if isObj(msg) {
		content = field(msg, "content")
	}
	var texts []string
	shown := false
	if s, ok := stringOf(content); ok {
		if p, ok := pluginPrompt(s, obj.Get("pluginPrompt")); ok {
			s, shown = p, true
		}
		texts = append(texts, s)
	} else if isArr(content) {
		for _, el := range elems(content) {
			if !isObj(el) {
				continue
			}
			t := field(el, "type")
			if strIs(t, "tool_result") {
				return "", false
			}
			if strIs(t, "text") {
				if s, ok := stringOf(field(el, "text")); ok {
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
		if !shown {
			if m := commandRE().FindStringSubmatch(c); m != nil {
				if *fallback == "" {
					*fallback = m[1]
				}
				continue
			}
			if m := bashRE().FindStringSubmatch(c); m != nil {
				return "! " + transcript.JSTrim(m[1]), true
			}
		}
		if tagRE().MatchString(c) {
			continue
		}
		if transcript.UTF16Len(c) > 200 {
			c = transcript.JSTrim(transcript.TruncateUTF16(c, 200)) + "…"
		}
		return c, true
	}
	return "", false
}

// pluginTrailer ends the text Claude Code puts in the user's place for a
// plugin's prompt.
const pluginTrailer = "\n\nThis is how Claude Code surfaces a prompt a plugin submits between " +
	"turns \u2014 it starts this turn in the user's place. Address the message above."

// pluginPrompt shows a plugin's prompt ("The X plugin sent a
// message:\n<text>" + pluginTrailer, with pluginPrompt.text = <text>)
// as "Prompt from the X plugin: <text>".
func pluginPrompt(s string, pp []byte) (string, bool) {
	const pre, suf = "The ", " plugin sent a message:\n"
	if !isObj(pp) {
		return "", false
	}
	text, ok := stringOf(field(pp, "text"))
	if !ok || text == "" {
		return "", false
	}
	first := s[:strings.IndexByte(s, '\n')+1]
	if transcript.UTF16Len(first) <= 28 || !strings.HasPrefix(first, pre) || !strings.HasSuffix(first, suf) || s != first+text+pluginTrailer {
		return "", false
	}
	return "Prompt from the " + first[len(pre):len(first)-len(suf)] + " plugin: " + text, true
}
