package redact

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Finding is one secret in a line.
type Finding struct {
	// Rule is the rule's id.
	Rule string `json:"rule"`
	// Start and End are the secret's byte offsets in the line as stored
	// (inside a JSON string: escapes count as they are written).
	Start int `json:"start"`
	End   int `json:"end"`
	// Key is the JSON key whose string value holds the secret.
	Key string `json:"key"`
	// Secret is the value, decoded from JSON.
	Secret string `json:"-"`
	// prio orders overlapping findings: the lowest wins.
	prio int
}

// Detector finds secrets inside the JSON string values of a line. It is
// safe for concurrent use.
type Detector struct {
	rules []compiled
	// kw is the keyword filter over every rule's keywords; kwRules maps a
	// keyword to the rules it turns on.
	kw      keywordSet
	kwRules [][]int
	allow   []*regexp.Regexp
}

// skipKeys are keys whose string values are identifiers or signatures,
// never redacted: the chain and routing stay as they are.
var skipKeys = map[string]bool{
	"uuid": true, "parentUuid": true, "logicalParentUuid": true, "sessionId": true, "leafUuid": true,
	"requestId": true, "promptId": true, "messageId": true, "agentId": true, "tool_use_id": true,
	"toolUseID": true, "sourceToolAssistantUUID": true, "parentToolUseID": true, "id": true,
	"signature": true, "timestamp": true, "type": true, "cwd": true, "version": true, "gitBranch": true,
	"uuids": true, "slug": true,
}

// NewDetector compiles rules; allow are regexes of secrets left alone
// whatever rule found them.
func NewDetector(rules []Rule, allow []string) (*Detector, error) {
	d := &Detector{}
	seen := map[string]bool{}
	var words []string
	idx := map[string]int{}
	for _, r := range rules {
		if seen[r.ID] {
			return nil, fmt.Errorf("rule %s: declared twice", r.ID)
		}
		seen[r.ID] = true
		c, err := compileRule(r)
		if err != nil {
			return nil, err
		}
		ri := len(d.rules)
		d.rules = append(d.rules, c)
		for _, k := range r.Keywords {
			k = string(bytes.ToLower([]byte(k)))
			i, ok := idx[k]
			if !ok {
				i = len(words)
				idx[k] = i
				words = append(words, k)
				d.kwRules = append(d.kwRules, nil)
			}
			d.kwRules[i] = append(d.kwRules[i], ri)
		}
	}
	d.kw = newKeywordSet(words)
	for _, a := range allow {
		re, err := regexp.Compile(a)
		if err != nil {
			return nil, fmt.Errorf("allow pattern %q: %w", a, err)
		}
		d.allow = append(d.allow, re)
	}
	return d, nil
}

// Rules returns the ids of the rules in use, in order.
func (d *Detector) Rules() []string {
	out := make([]string, len(d.rules))
	for i, r := range d.rules {
		out[i] = r.ID
	}
	return out
}

// Scan returns the secrets in line, a JSON value, in order. A line that
// is not JSON is scanned as one string.
func (d *Detector) Scan(line []byte) []Finding {
	var out []Finding
	var buf []byte
	var offs []int
	var hits []hit
	walkStrings(line, func(key string, s, e int) {
		if skipKeys[key] {
			return
		}
		raw := line[s:e]
		if hits = d.kw.positions(raw, hits[:0]); !d.live(raw, hits) {
			return
		}
		var text []byte
		text, offs, buf = unescape(raw, buf[:0], offs[:0])
		hits = d.kw.positions(text, hits[:0])
		out = d.findIn(out, key, text, offs, s, e-s, hits)
	})
	return out
}

// assignmentAt reports whether text at i continues a name (letters,
// digits, '_', '-', '.') and then, after a quote and blanks, has ':' or
// '='.
func assignmentAt(text []byte, i int) bool {
	for n := 0; i < len(text) && n < 64; i, n = i+1, n+1 {
		c := text[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			break
		}
	}
	if i+1 < len(text) && text[i] == '\\' && text[i+1] == '"' {
		i += 2 // an escaped quote: the raw bytes of a nested JSON string
	} else if i < len(text) && (text[i] == '"' || text[i] == '\'') {
		i++
	}
	for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	return i < len(text) && (text[i] == ':' || text[i] == '=')
}

// live reports whether some hit turns on a rule that could match there:
// a rule that is not an Assignment, or one whose keyword is followed by
// an assignment. It lets a string whose keywords are only prose skip
// decoding and every regex.
func (d *Detector) live(raw []byte, hits []hit) bool {
	for _, h := range hits {
		for _, ri := range d.kwRules[h.word] {
			if !d.rules[ri].Assignment || assignmentAt(raw, h.pos+len(d.kw.words[h.word])) {
				return true
			}
		}
	}
	return false
}

// window is a part of a string a rule runs on.
type window struct{ rule, from, to int }

// lookBehind is how far before its keyword a match may start (the name
// of a generic assignment, say).
const lookBehind = 128

// defaultSpan is how far past its keyword a match may end, for a rule
// that does not say.
const defaultSpan = 1024

// findIn runs each rule a keyword turned on over the windows around its
// keywords in one decoded string, and appends what they find with
// offsets mapped back to the line.
func (d *Detector) findIn(out []Finding, key string, text []byte, offs []int, base, rawLen int, hits []hit) []Finding {
	var ws []window
	var anchored []window // Assignment rules: one anchored match each
	for _, h := range hits {
		for _, ri := range d.kwRules[h.word] {
			if d.rules[ri].Assignment {
				if assignmentAt(text, h.pos+len(d.kw.words[h.word])) {
					anchored = append(anchored, window{ri, nameStart(text, h.pos), min(len(text), h.pos+max(d.rules[ri].Span, 64))})
				}
				continue
			}
			span := d.rules[ri].Span
			if span <= 0 {
				span = defaultSpan
			}
			ws = append(ws, window{ri, max(0, h.pos-lookBehind), min(len(text), h.pos+span)})
		}
	}
	sort.Slice(ws, func(i, j int) bool {
		if ws[i].rule != ws[j].rule {
			return ws[i].rule < ws[j].rule
		}
		return ws[i].from < ws[j].from
	})
	// Merge the windows of each rule.
	merged := ws[:0]
	for _, w := range ws {
		if n := len(merged); n > 0 && merged[n-1].rule == w.rule && w.from <= merged[n-1].to {
			merged[n-1].to = max(merged[n-1].to, w.to)
			continue
		}
		merged = append(merged, w)
	}
	marks := markerSpans(text)
	first := len(out)
	for _, w := range anchored {
		r := &d.rules[w.rule]
		if m := r.anchored.FindSubmatchIndex(text[w.from:w.to]); m != nil {
			out = d.add(out, r, key, text, offs, base, rawLen, marks, m[2*r.SecretGroup]+w.from, m[2*r.SecretGroup+1]+w.from)
		}
	}
	for _, w := range merged {
		r := &d.rules[w.rule]
		for _, m := range r.re.FindAllSubmatchIndex(text[w.from:w.to], -1) {
			out = d.add(out, r, key, text, offs, base, rawLen, marks, m[2*r.SecretGroup]+w.from, m[2*r.SecretGroup+1]+w.from)
		}
	}
	return dropOverlaps(out, first)
}

// add appends the finding of rule r at text[a:b] unless it is empty, lies
// on a marker of an earlier redaction, or fails r's conditions.
func (d *Detector) add(out []Finding, r *compiled, key string, text []byte, offs []int, base, rawLen int, marks [][2]int, a, b int) []Finding {
	if a < 0 || b <= a || overlapsAny(marks, a, b) {
		return out
	}
	secret := string(text[a:b])
	if !d.keep(r, secret) {
		return out
	}
	prio := 0
	if r.Generic {
		prio = 1
	}
	return append(out, Finding{Rule: r.ID, Key: key, Secret: secret, prio: prio,
		Start: base + rawOffset(offs, a, rawLen), End: base + rawOffset(offs, b, rawLen)})
}

// nameStart is where the name holding the keyword at i starts: back over
// letters, digits and '_' (at most lookBehind bytes).
func nameStart(text []byte, i int) int {
	for n := 0; i > 0 && n < lookBehind; i, n = i-1, n+1 {
		c := text[i-1]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			break
		}
	}
	return i
}

// markerPrefix starts every marker.
var markerPrefix = []byte("[REDACTED:")

// markerSpans returns the [start, end) spans of the markers in text.
func markerSpans(text []byte) [][2]int {
	var out [][2]int
	for at := 0; ; {
		i := bytes.Index(text[at:], markerPrefix)
		if i < 0 {
			return out
		}
		a := at + i
		j := bytes.IndexByte(text[a:], ']')
		if j < 0 {
			return append(out, [2]int{a, len(text)})
		}
		out = append(out, [2]int{a, a + j + 1})
		at = a + j + 1
	}
}

func overlapsAny(spans [][2]int, a, b int) bool {
	for _, s := range spans {
		if a < s[1] && s[0] < b {
			return true
		}
	}
	return false
}

// keep applies a rule's entropy, digit and allow conditions and the
// detector's allowlist to one match.
func (d *Detector) keep(r *compiled, secret string) bool {
	if r.Entropy > 0 && entropy(secret) < r.Entropy {
		return false
	}
	if r.NeedDigit && !hasDigit(secret) {
		return false
	}
	for _, a := range r.allow {
		if a.MatchString(secret) {
			return false
		}
	}
	for _, a := range d.allow {
		if a.MatchString(secret) {
			return false
		}
	}
	return true
}

// dropOverlaps sorts out[first:] by position and keeps, of overlapping
// findings, the one of the lowest prio (a specific rule over a generic
// one, a rule over a recurrence), then the first and longest (a PEM key's
// body is not also a generic secret).
func dropOverlaps(out []Finding, first int) []Finding {
	fs := out[first:]
	if len(fs) < 2 {
		return out
	}
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].prio != fs[j].prio {
			return fs[i].prio < fs[j].prio
		}
		if fs[i].Start != fs[j].Start {
			return fs[i].Start < fs[j].Start
		}
		return fs[i].End > fs[j].End
	})
	kept := make([]Finding, 0, len(fs))
	for _, f := range fs {
		overlaps := false
		for _, k := range kept {
			if f.Start < k.End && k.Start < f.End {
				overlaps = true
				break
			}
		}
		if !overlaps {
			kept = append(kept, f)
		}
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].Start < kept[j].Start })
	return append(out[:first], kept...)
}

// Replace returns line with each finding's bytes replaced by marker(f).
// findings must come from Scan of the same line. Every other byte stays.
func Replace(line []byte, findings []Finding, marker func(Finding) string) []byte {
	out := make([]byte, 0, len(line))
	at := 0
	for _, f := range findings {
		out = append(out, line[at:f.Start]...)
		out = append(out, marker(f)...)
		at = f.End
	}
	return append(out, line[at:]...)
}

// walkStrings calls fn with the offsets of the contents of every JSON
// string value in line (between its quotes) and the key it belongs to
// (the array's key for an array's items). Keys themselves are not
// values. Malformed input ends the walk early; what was seen stays seen.
func walkStrings(line []byte, fn func(key string, start, end int)) {
	var stack []string
	key := ""
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '"':
			end := stringEnd(line, i+1)
			if end < 0 {
				return
			}
			j := end + 1
			for j < len(line) && (line[j] == ' ' || line[j] == '\t' || line[j] == '\n' || line[j] == '\r') {
				j++
			}
			if j < len(line) && line[j] == ':' {
				key = string(line[i+1 : end])
				i = j
				continue
			}
			fn(key, i+1, end)
			i = end
		case '{':
			stack = append(stack, key)
		case '[':
			stack = append(stack, key)
		case '}', ']':
			if n := len(stack); n > 0 {
				key = stack[n-1]
				stack = stack[:n-1]
			}
		}
	}
}

// stringEnd returns the index of the quote that closes the string whose
// contents start at i, or -1.
func stringEnd(b []byte, i int) int {
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return -1
		}
		q += i
		n := 0
		for k := q - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		i = q + 1
	}
}

// unescape decodes a JSON string's contents. offs[k] is the offset in raw
// of the escape or byte that produced text byte k; raw without escapes is
// returned as is, with offs nil.
func unescape(raw, buf []byte, offs []int) (text []byte, o []int, b []byte) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw, nil, buf
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			buf = append(buf, c)
			offs = append(offs, i)
			i++
			continue
		}
		start := i
		var dec []byte
		switch raw[i+1] {
		case 'n':
			dec, i = []byte{'\n'}, i+2
		case 't':
			dec, i = []byte{'\t'}, i+2
		case 'r':
			dec, i = []byte{'\r'}, i+2
		case 'b':
			dec, i = []byte{'\b'}, i+2
		case 'f':
			dec, i = []byte{'\f'}, i+2
		case 'u':
			r, n := decodeU(raw[i:])
			dec, i = utf8.AppendRune(nil, r), i+n
		default: // \" \\ \/ and anything else: the byte itself
			dec, i = []byte{raw[i+1]}, i+2
		}
		for _, x := range dec {
			buf = append(buf, x)
			offs = append(offs, start)
		}
	}
	return buf, offs, buf
}

// decodeU decodes \uXXXX (and a surrogate pair) at the start of b,
// returning the rune and how many bytes it took.
func decodeU(b []byte) (rune, int) {
	r1, ok := hex4(b)
	if !ok {
		return utf8.RuneError, 2
	}
	if r1 >= 0xD800 && r1 < 0xDC00 {
		if r2, ok := hex4(b[6:]); ok && len(b) >= 12 && b[6] == '\\' && r2 >= 0xDC00 && r2 < 0xE000 {
			return (r1-0xD800)<<10 + (r2 - 0xDC00) + 0x10000, 12
		}
		return utf8.RuneError, 6
	}
	return r1, 6
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[2:6]), 16, 32)
	return rune(v), err == nil
}

// rawOffset maps a decoded offset to the raw string: a start maps to the
// start of its escape; the end (k == len(text)) maps to rawLen, and an
// end inside the text to the start of the byte that follows it.
func rawOffset(offs []int, k, rawLen int) int {
	if offs == nil {
		return k
	}
	if k >= len(offs) {
		return rawLen
	}
	return offs[k]
}
