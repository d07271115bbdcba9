package transcript

// JavaScript's string rules, shared by everything that must produce or judge
// text exactly as Claude Code's readers do: the fork writer
// (transcript/fork), the listing's first prompt, the synthetic rows of a
// repair.

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// UnwrapPastedContent replaces each `<pasted_content id="xxxx">\n…\n</pasted_content
// id="xxxx">` block (xxxx four lowercase hex digits) by its body, eating up
// to two newlines on each side.
func UnwrapPastedContent(e string) string {
	const open = `<pasted_content id="`
	type part struct {
		text  string
		block bool
	}
	var parts []part
	n, r := 0, 0
	for {
		o := strings.Index(e[r:], open)
		if o < 0 {
			break
		}
		o += r
		s := o + len(open)
		id := e[s:min(s+4, len(e))]
		if !isLowerHex4(id) || !strings.HasPrefix(e[s+4:], "\">\n") {
			r = s
			continue
		}
		a := s + 4 + 3
		closing := `</pasted_content id="` + id + `">`
		u := strings.Index(e[a-1:], "\n"+closing)
		if u < 0 {
			break
		}
		u += a - 1 + 1
		p := o
		for k := 0; k < 2 && p > n && e[p-1] == '\n'; k++ {
			p--
		}
		if p > n {
			parts = append(parts, part{text: e[n:p]})
		}
		n = u + len(closing)
		for k := 0; k < 2 && n < len(e) && e[n] == '\n'; k++ {
			n++
		}
		body := ""
		if u-1 > a {
			body = e[a : u-1]
		}
		parts = append(parts, part{text: body, block: true})
		r = n
	}
	if n < len(e) {
		parts = append(parts, part{text: e[n:]})
	}
	if len(parts) == 1 && !parts[0].block {
		return e
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.text)
	}
	return b.String()
}

func isLowerHex4(s string) bool {
	if len(s) != 4 {
		return false
	}
	for i := 0; i < 4; i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// IsJSSpace is JavaScript's white space and line terminators (String.trim).
func IsJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// JSTrim is JavaScript's String.prototype.trim.
func JSTrim(s string) string { return strings.TrimFunc(s, IsJSSpace) }

// UTF16Len is a string's JavaScript length (UTF-16 code units).
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// TruncateUTF16 keeps the first n UTF-16 units of s, never half a pair.
func TruncateUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if r > 0xFFFF {
			w = 2
		}
		if units+w > n {
			return s[:i]
		}
		units += w
	}
	return s
}

// ErrUnreproducibleUnicode is returned by SanitizeJSTag for input whose
// result depends on what Go's Unicode tables cannot tell: a character
// newer than them (see jsUnicodeMismatch), a run of more than 30
// combining marks (Go's NFKC is stream-safe, JavaScript's is not) or
// invalid UTF-8.
var ErrUnreproducibleUnicode = errors.New("unicode the sanitizer cannot reproduce")

// SanitizeJSTag is the Claude Agent SDK's Unicode sanitizer as tagSession
// applies it (before trimming): ASCII is returned as it is; otherwise,
// until nothing changes (at most 10 rounds, then an error as the SDK
// throws), NFKC normalization, then removal of every format (Cf),
// private use (Co) and unassigned (Cn) code point. (Lone surrogates,
// which the SDK also drops, cannot occur in a Go string.)
func SanitizeJSTag(s string) (string, error) {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s, nil
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("sanitize %q: %w: invalid UTF-8", s, ErrUnreproducibleUnicode)
	}
	for _, r := range s {
		if jsUnicodeMismatches(r) {
			return "", fmt.Errorf("sanitize %q: %w: U+%04X is newer than Unicode %s", s, ErrUnreproducibleUnicode, r, goUnicodeVersion)
		}
	}
	const rounds = 10
	t, prev := s, ""
	r := 0
	for ; t != prev && r < rounds; r++ {
		prev = t
		n := norm.NFKC.String(t)
		if strings.Count(n, "\u034F") > strings.Count(t, "\u034F") {
			return "", fmt.Errorf("sanitize %q: %w: a run of more than 30 combining marks", s, ErrUnreproducibleUnicode)
		}
		t = strings.Map(func(r rune) rune {
			if jsRemovedBySanitizer(r) {
				return -1
			}
			return r
		}, n)
	}
	if r >= rounds {
		return "", fmt.Errorf("sanitize %q: reached the maximum of %d rounds", s, rounds)
	}
	return t, nil
}

// jsRemovedBySanitizer is the SDK's /[\p{Cf}\p{Co}\p{Cn}]/u.
func jsRemovedBySanitizer(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Co) ||
		!unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

func jsUnicodeMismatches(r rune) bool {
	i := sort.Search(len(jsUnicodeMismatch), func(i int) bool { return jsUnicodeMismatch[i][1] >= r })
	return i < len(jsUnicodeMismatch) && jsUnicodeMismatch[i][0] <= r
}

// sidecarTitleMax is the SDK's cap on a custom-title.json title, in code
// points.
const sidecarTitleMax = 200

// CleanSidecarTitle is the Claude Agent SDK's (0.3.337) cleaning of the
// customTitle of a session's <id>/custom-title.json, as its listing and
// forkSession read it: trim; keep the first 200 code points; replace each
// run of control and format characters (and U+2028/U+2029) by one space,
// except that a run made only of format characters that holds a zero-width
// joiner or non-joiner (U+200D, U+200C), next to a character that is
// neither ASCII nor white space, becomes that first joiner or non-joiner
// (so emoji sequences and Persian or Indic text survive); trim.
// (0.3.332 collapsed the runs before cutting, and kept no joiner.)
func CleanSidecarTitle(s string) string {
	s = JSTrim(s)
	n := 0
	for i := range s {
		if n == sidecarTitleMax {
			s = s[:i]
			break
		}
		n++
	}
	isRun := func(r rune) bool { return unicode.In(r, unicode.Cc, unicode.Cf) || r == 0x2028 || r == 0x2029 }
	wide := func(r rune) bool { return r >= utf8.RuneSelf && !IsJSSpace(r) }
	var b strings.Builder
	b.Grow(len(s))
	prev := rune(-1) // the character before the run; -1 at the start
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isRun(r) {
			b.WriteString(s[i : i+size])
			prev = r
			i += size
			continue
		}
		joiner, onlyFormat := rune(0), true
		j := i
		for j < len(s) {
			q, qs := utf8.DecodeRuneInString(s[j:])
			if !isRun(q) {
				break
			}
			if !unicode.Is(unicode.Cf, q) {
				onlyFormat = false
			} else if joiner == 0 && (q == 0x200C || q == 0x200D) {
				joiner = q
			}
			j += qs
		}
		next := rune(-1)
		if j < len(s) {
			next, _ = utf8.DecodeRuneInString(s[j:])
		}
		if onlyFormat && joiner != 0 && (prev >= 0 && wide(prev) || next >= 0 && wide(next)) {
			b.WriteRune(joiner)
		} else {
			b.WriteByte(' ')
		}
		i = j
	}
	return JSTrim(b.String())
}
