package redact

// keywordSet finds which of a set of lowercase keywords occur in a byte
// string, ignoring ASCII case, in one pass: a table indexed by each
// position's two lowercased bytes says which keywords can start there,
// and only those are compared.
type keywordSet struct {
	words [][]byte
	// start[b0<<8|b1] is 1 + the index in lists of the keywords starting
	// with b0 b1; 0 when none does.
	start []uint16
	lists [][]int
}

func newKeywordSet(words []string) keywordSet {
	ks := keywordSet{start: make([]uint16, 1<<16)}
	for i, w := range words {
		ks.words = append(ks.words, []byte(w))
		k := int(lower(w[0]))<<8 | int(lower(w[1]))
		if ks.start[k] == 0 {
			ks.lists = append(ks.lists, nil)
			ks.start[k] = uint16(len(ks.lists))
		}
		l := int(ks.start[k]) - 1
		ks.lists[l] = append(ks.lists[l], i)
	}
	return ks
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// hit is a keyword found at a position.
type hit struct{ word, pos int }

// positions returns every keyword occurrence in b, in order of position.
func (ks *keywordSet) positions(b []byte, out []hit) []hit {
	ks.scan(b, func(w, at int) bool { out = append(out, hit{w, at}); return true })
	return out
}

// scan calls fn for each keyword occurrence until fn returns false.
func (ks *keywordSet) scan(b []byte, fn func(word, at int) bool) {
	if len(b) < 2 {
		return
	}
	prev := lower(b[0])
	for i := 1; i < len(b); i++ {
		cur := lower(b[i])
		l := ks.start[int(prev)<<8|int(cur)]
		prev = cur
		if l == 0 {
			continue
		}
		at := i - 1
		for _, w := range ks.lists[l-1] {
			if hasPrefixFold(b[at:], ks.words[w]) && !fn(w, at) {
				return
			}
		}
	}
}

// hasPrefixFold reports whether b starts with w (lowercase), ignoring
// ASCII case in b.
func hasPrefixFold(b, w []byte) bool {
	if len(b) < len(w) {
		return false
	}
	for i, c := range w {
		if lower(b[i]) != c {
			return false
		}
	}
	return true
}
