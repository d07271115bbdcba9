package listing

// The listing: finding fields in the windows as the SDK does (see listing.go).

import (
	"bytes"
	"encoding/binary"
	"iter"
	"strings"
	"unicode/utf8"

	"github.com/e0dc0000/scribe/jsonv"
)

// ---------------------------------------------------------------------------
// Substring search

// finder searches for one pattern by first looking for its rarest byte
// (bytes.IndexByte is vectorized; the patterns all start with '"', the
// commonest byte of a JSON line).
type finder struct {
	pat    []byte
	anchor int
}

func newFinder(p string) finder {
	best, at := 1<<30, 0
	for i := 0; i < len(p); i++ {
		if s := byteScore(p[i]); s <= best {
			best, at = s, i
		}
	}
	return finder{pat: []byte(p), anchor: at}
}

// byteFreq is how often each byte occurs in the tail windows of the
// real transcripts in testdata/corpus (per 64 KiB, measured once). Bytes
// not listed are rarer than all of these.
var byteFreq = map[byte]int{
	'"': 3333, ' ': 4663, ':': 1272, ',': 981, '-': 899, '_': 945, '{': 240, '}': 240, '[': 125, ']': 125,
	'0': 677, '1': 714, '2': 646, '3': 445, '4': 538, '5': 466, '6': 411, '7': 375, '8': 404, '9': 391,
	'A': 246, 'B': 159, 'C': 260, 'D': 192, 'E': 252, 'F': 154, 'G': 121, 'H': 108, 'I': 258, 'J': 93,
	'K': 115, 'L': 146, 'M': 144, 'N': 125, 'O': 108, 'P': 150, 'Q': 124, 'R': 193, 'S': 237, 'T': 327,
	'U': 219, 'V': 116, 'W': 111, 'X': 86, 'Y': 110, 'Z': 115,
	'a': 2603, 'b': 564, 'c': 1581, 'd': 1551, 'e': 4663, 'f': 755, 'g': 699, 'h': 870, 'i': 2310, 'j': 145,
	'k': 437, 'l': 1474, 'm': 1075, 'n': 3096, 'o': 2366, 'p': 1279, 'q': 167, 'r': 2099, 's': 2761, 't': 3520,
	'u': 1196, 'v': 344, 'w': 418, 'x': 299, 'y': 561, 'z': 95,
}

func byteScore(c byte) int {
	if n, ok := byteFreq[c]; ok {
		return n
	}
	return 50
}

// index returns the first match at or after from, or -1.
func (f *finder) index(b []byte, from int) int {
	n, a := len(f.pat), f.anchor
	c := f.pat[a]
	if from < 0 {
		from = 0
	}
	i := from + a
	for i < len(b) {
		j := bytes.IndexByte(b[i:], c)
		if j < 0 {
			return -1
		}
		i += j
		st := i - a
		if st+n > len(b) {
			return -1
		}
		if bytes.Equal(b[st:st+n], f.pat) {
			return st
		}
		i++
	}
	return -1
}

// headKey is a key the SDK looks for with its head-window patterns.
type headKey struct {
	val   finder // `"name":"`
	valSp finder // `"name": "`
}

func newHeadKey(name string) headKey {
	return headKey{val: newFinder(`"` + name + `":"`), valSp: newFinder(`"` + name + `": "`)}
}

var (
	keyTimestamp   = newHeadKey("timestamp")
	keyGitBranch   = newHeadKey("gitBranch")
	keyCwd         = newHeadKey("cwd")
	keyEntrypoint  = newHeadKey("entrypoint")
	keySessionKind = newHeadKey("sessionKind")

	parentUUIDPat = newFinder(`"parentUuid":`)
)

const (
	typeCustomTitle = "custom-title"
	typeAITitle     = "ai-title"
	typeTag         = "tag"
	typeRelocated   = "relocated"
)

// The keys a window index records.
const (
	lkCustomTitle = iota
	lkAITitle
	lkLastPrompt
	lkSummary
	lkTag
	lkRelocatedCwd
	lkGitBranch
	lkEntrypoint
	lkType
	lkParentUUID
	lkCount
)

var keyNames = [lkCount]string{"customTitle", "aiTitle", "lastPrompt", "summary", "tag", "relocatedCwd",
	"gitBranch", "entrypoint", "type", "parentUuid"}

// keyIndex records where each `"key":` of the keys above starts in one
// window. Every such pattern ends with `":`, so one pass over the window's
// colons (bytes.IndexByte) finds them all; that is several times cheaper
// than one substring search per key, as JSON is dense in '"' and letters.
type keyIndex struct {
	win    []byte
	titles bool // customTitle and aiTitle recorded
	pos    [lkCount][]int
}

func (x *keyIndex) reset(win []byte) {
	x.win, x.titles = win, false
	for i := range x.pos {
		x.pos[i] = x.pos[i][:0]
	}
}

// buildAll records every key.
func (x *keyIndex) buildAll() {
	win := x.win
	for i := 0; i < len(win); {
		j := bytes.IndexByte(win[i:], ':')
		if j < 0 {
			break
		}
		c := i + j
		i = c + 1
		if c < 3 || win[c-1] != '"' {
			continue
		}
		switch win[c-2] {
		case 'e':
			_ = x.try(c, lkCustomTitle) || x.try(c, lkAITitle) || x.try(c, lkType)
		case 't':
			_ = x.try(c, lkLastPrompt) || x.try(c, lkEntrypoint)
		case 'y':
			x.try(c, lkSummary)
		case 'g':
			x.try(c, lkTag)
		case 'd':
			_ = x.try(c, lkRelocatedCwd) || x.try(c, lkParentUUID)
		case 'h':
			x.try(c, lkGitBranch)
		}
	}
	x.titles = true
}

// try records key k if its pattern ends at the colon c.
func (x *keyIndex) try(c, k int) bool {
	name := keyNames[k]
	st := c - 2 - len(name)
	if st < 0 || x.win[st] != '"' || string(x.win[st+1:c-1]) != name {
		return false
	}
	x.pos[k] = append(x.pos[k], st)
	return true
}

// buildTitles records only `"customTitle":` and `"aiTitle":`, by their
// 'T' (rarer than ':').
func (x *keyIndex) buildTitles() {
	win := x.win
	for i := 0; i < len(win); {
		j := bytes.IndexByte(win[i:], 'T')
		if j < 0 {
			break
		}
		t := i + j
		i = t + 1
		if t >= 7 && t+7 <= len(win) && string(win[t-7:t+7]) == `"customTitle":` {
			x.pos[lkCustomTitle] = append(x.pos[lkCustomTitle], t-7)
		} else if t >= 3 && t+7 <= len(win) && string(win[t-3:t+7]) == `"aiTitle":` {
			x.pos[lkAITitle] = append(x.pos[lkAITitle], t-3)
		}
	}
	x.titles = true
}

// linesBack yields, from the last to the first, each line of win that
// holds one of the offsets occ (ascending), once however many it holds.
func linesBack(win []byte, occ []int) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		limit := len(win) + 1
		for j := len(occ) - 1; j >= 0; j-- {
			p := occ[j]
			if p >= limit {
				continue
			}
			ls := bytes.LastIndexByte(win[:p], '\n') + 1
			le := len(win)
			if e := bytes.IndexByte(win[p:], '\n'); e >= 0 {
				le = p + e
			}
			limit = ls
			if !yield(win[ls:le]) {
				return
			}
		}
	}
}

// lastKeyed is the SDK's backward line scan: going from the last line of
// the window to the first, the first line that contains `"key":` (and,
// when typ is set, `"type":"typ"`, or with older also `"type": "typ"`) and
// parses as JSON with a string key (and type == typ) gives the value. With
// older, a line that does not parse is retried from its last
// `{"type":"typ"` when the byte before that is not one of `:,[` (two
// entries glued together by a torn write). found is false when no line
// gave a string.
func (x *keyIndex) lastKeyed(k int, typ string, older bool) (string, bool) {
	occ, win := x.pos[k], x.win
	if len(occ) == 0 {
		return "", false
	}
	var typePats [2]string
	nt := 0
	if typ != "" {
		typePats[0] = `"type":"` + typ + `"`
		nt = 1
		if older {
			typePats[1] = `"type": "` + typ + `"`
			nt = 2
		}
	}
	for line := range linesBack(win, occ) {
		if nt > 0 {
			has := false
			for _, tp := range typePats[:nt] {
				if bytes.Contains(line, []byte(tp)) {
					has = true
					break
				}
			}
			if !has {
				continue
			}
		}
		v, kind := fieldOf(line, keyNames[k], typ)
		if kind == fieldParseErr && older {
			u := bytes.LastIndex(line, []byte("{"+typePats[0]))
			if u > 0 && !strings.ContainsRune(":,[", rune(line[u-1])) {
				v, kind = fieldOf(line[u:], keyNames[k], typ)
			}
		}
		if kind == fieldFound {
			return v, true
		}
	}
	return "", false
}

const (
	fieldParseErr = -1
	fieldAbsent   = 0
	fieldFound    = 1
)

// fieldOf is JSON.parse(line) then line[key] when it is a string (and
// line.type === typ when typ is set).
func fieldOf(line []byte, key, typ string) (string, int) {
	obj, ok := jsonv.Value(line)
	if !ok {
		return "", fieldParseErr
	}
	if obj[0] != '{' {
		return "", fieldAbsent
	}
	if typ != "" {
		t, ok := jsonv.GetString(obj, "type")
		if !ok || t != typ {
			return "", fieldAbsent
		}
	}
	v, ok := jsonv.GetString(obj, key)
	if !ok {
		return "", fieldAbsent
	}
	return v, fieldFound
}

// firstValue is the SDK's raw extraction of the first `"key":"…"`
// (then, only if that finds nothing closed, `"key": "…"`) in win, without
// parsing the line. The value is JSON-unescaped when it holds a backslash
// and unescaping succeeds.
func firstValue(win []byte, k *headKey) (string, bool) {
	for _, f := range [2]*finder{&k.val, &k.valSp} {
		o := f.index(win, 0)
		if o < 0 {
			continue
		}
		s := o + len(f.pat)
		for i := s; i < len(win); {
			if win[i] == '\\' {
				i += 2
				continue
			}
			if win[i] == '"' {
				return unescapeLoose(win[s:i]), true
			}
			i++
		}
	}
	return "", false
}

// lastValueFrom is the SDK's raw extraction of the last `"key":"…"` or
// `"key": "…"` whose value closes, scanning from start and stepping past
// each value (each form on its own).
func (x *keyIndex) lastValueFrom(k, start int) (string, bool) {
	win, occ := x.win, x.pos[k]
	l0 := len(keyNames[k]) + 3 // len(`"key":`)
	best := -1
	var val []byte
	for _, spaced := range [2]bool{false, true} {
		i := start
		for _, a := range occ {
			if a < i {
				continue
			}
			l := a + l0
			if spaced {
				if l+1 >= len(win) || win[l] != ' ' || win[l+1] != '"' {
					continue
				}
				l += 2
			} else {
				if l >= len(win) || win[l] != '"' {
					continue
				}
				l++
			}
			c := l
			for c < len(win) {
				if win[c] == '\\' {
					c += 2
					continue
				}
				if win[c] == '"' {
					if a > best {
						val, best = win[l:c], a
					}
					break
				}
				c++
			}
			i = c + 1
		}
	}
	if best < 0 {
		return "", false
	}
	return unescapeLoose(val), true
}

// lastValue is the SDK's tail extraction (gitBranch, entrypoint): look for
// `","key":"` in the last 8192 characters first and scan from there, else
// scan the whole window.
func (x *keyIndex) lastValue(k int) (string, bool) {
	win := x.win
	from := offsetFromEnd(win, 8192)
	n := len(keyNames[k]) + 4 // len(`"key":"`)
	for _, p := range x.pos[k] {
		o := p - 2
		if o < from || p+n > len(win) || win[p+n-1] != '"' || win[o] != '"' || win[o+1] != ',' {
			continue
		}
		// The first `","key":"` at or after from.
		if o > 0 && win[o-1] != '\\' && !(o+1 >= n && string(win[o+1-n:o+1]) == string(win[p:p+n])) {
			if v, ok := x.lastValueFrom(k, o+2); ok {
				return v, true
			}
		}
		break
	}
	return x.lastValueFrom(k, 0)
}

// offsetFromEnd returns the byte offset of the character that starts
// n UTF-16 units before the end of win (0 when win is shorter), as
// e.length - n indexes the decoded string.
func offsetFromEnd(win []byte, n int) int {
	if len(win) <= n {
		// Bytes >= UTF-16 units, so the string is at most n units long.
		return 0
	}
	start := len(win) - n
	ascii := true
	tail := win[start:]
	for len(tail) >= 8 {
		if binary.LittleEndian.Uint64(tail)&0x8080808080808080 != 0 {
			ascii = false
			break
		}
		tail = tail[8:]
	}
	for _, c := range tail {
		if c >= 0x80 {
			ascii = false
		}
	}
	if ascii {
		return start
	}
	units := 0
	i := len(win)
	for i > 0 {
		r, size := utf8.DecodeLastRune(win[:i])
		u := 1
		if r >= 0x10000 {
			u = 2
		}
		if units+u > n {
			// e.length-n falls on the low half of a surrogate pair: the
			// search effectively starts after the pair.
			return i
		}
		units += u
		i -= size
		if units == n {
			return i
		}
	}
	return 0
}

// unescapeLoose is the SDK's value decoding for raw extractions: as is
// without a backslash, else JSON.parse of the quoted value, falling back
// to the raw text when that fails.
func unescapeLoose(v []byte) string {
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v)
	}
	if s, ok := jsonv.UnquoteInside(v); ok {
		return s
	}
	return string(v)
}

// FirstParsed is the SDK's forward scan for a parsed field (used for
// the recorded cwd): the first line containing `"key":` that parses and
// has a string key.
func FirstParsed(win []byte, key string) (string, bool) {
	pat := []byte(`"` + key + `":`)
	for len(win) > 0 {
		line := win
		if i := bytes.IndexByte(win, '\n'); i >= 0 {
			line, win = win[:i], win[i+1:]
		} else {
			win = nil
		}
		if !bytes.Contains(line, pat) {
			continue
		}
		obj, ok := jsonv.Value(line)
		if !ok || obj[0] != '{' {
			continue
		}
		if v, ok := jsonv.GetString(obj, key); ok {
			return v, true
		}
	}
	return "", false
}
