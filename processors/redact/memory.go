package redact

import (
	"bytes"
	"sync"
	"sync/atomic"
)

// maxKnown bounds how many secrets a Redactor remembers.
const maxKnown = 4096

// minKnown is the shortest secret remembered: shorter ones would match
// ordinary text.
const minKnown = 8

// known is the set of secrets a Redactor has found so far, as they are
// written inside a JSON string: a value found once (a password in a
// DATABASE_URL) is replaced wherever it recurs later with no rule's
// context around it (the same password alone on stderr, or quoted by the
// assistant), with the same marker.
type known struct {
	mu   sync.Mutex
	set  map[string]bool
	snap atomic.Pointer[knownSnap]
}

// knownSnap is an immutable view: the secrets and a keyword set over
// their written forms, to find every recurrence in one pass.
type knownSnap struct {
	list []knownSecret
	ks   keywordSet
}

type knownSecret struct {
	raw    []byte // JSON-escaped form, as it sits in a line
	rule   string
	secret string
}

// remember adds the findings' secrets.
func (k *known) remember(fs []Finding, line []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.set == nil {
		k.set = map[string]bool{}
	}
	var cur []knownSecret
	if p := k.snap.Load(); p != nil {
		cur = p.list
	}
	added := false
	for _, f := range fs {
		if len(f.Secret) < minKnown || k.set[f.Secret] || len(k.set) >= maxKnown {
			continue
		}
		k.set[f.Secret] = true
		cur = append(cur[:len(cur):len(cur)], knownSecret{raw: bytes.Clone(line[f.Start:f.End]), rule: f.Rule, secret: f.Secret})
		added = true
	}
	if !added {
		return
	}
	words := make([]string, len(cur))
	for i, s := range cur {
		words[i] = string(bytes.ToLower(s.raw))
	}
	k.snap.Store(&knownSnap{list: cur, ks: newKeywordSet(words)})
}

// recurrences appends to fs the places in line's string values where a
// known secret recurs outside what fs already covers.
func (k *known) recurrences(line []byte, fs []Finding) []Finding {
	p := k.snap.Load()
	if p == nil {
		return fs
	}
	var at []hit
	p.ks.scan(line, func(w, i int) bool {
		if bytes.HasPrefix(line[i:], p.list[w].raw) {
			at = append(at, hit{w, i})
		}
		return true
	})
	if len(at) == 0 {
		return fs
	}
	first := len(fs)
	walkStrings(line, func(key string, s, e int) {
		if skipKeys[key] {
			return
		}
		for _, h := range at {
			ks := p.list[h.word]
			if h.pos >= s && h.pos+len(ks.raw) <= e {
				fs = append(fs, Finding{Rule: ks.rule, Key: key, Secret: ks.secret, Start: h.pos, End: h.pos + len(ks.raw), prio: 2})
			}
		}
	})
	if len(fs) == first {
		return fs
	}
	return dropOverlaps(fs, 0)
}
