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
	list atomic.Pointer[[]knownSecret]
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
	if p := k.list.Load(); p != nil {
		cur = *p
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
	if added {
		k.list.Store(&cur)
	}
}

// recurrences appends to fs the places in line's string values where a
// known secret recurs outside what fs already covers.
func (k *known) recurrences(line []byte, fs []Finding) []Finding {
	p := k.list.Load()
	if p == nil {
		return fs
	}
	var hit []knownSecret
	for _, s := range *p {
		if bytes.Contains(line, s.raw) {
			hit = append(hit, s)
		}
	}
	if len(hit) == 0 {
		return fs
	}
	first := len(fs)
	walkStrings(line, func(key string, s, e int) {
		if skipKeys[key] {
			return
		}
		for _, ks := range hit {
			for at := s; at < e; {
				i := bytes.Index(line[at:e], ks.raw)
				if i < 0 {
					break
				}
				a := at + i
				fs = append(fs, Finding{Rule: ks.rule, Key: key, Secret: ks.secret, Start: a, End: a + len(ks.raw), prio: 2})
				at = a + len(ks.raw)
			}
		}
	})
	if len(fs) == first {
		return fs
	}
	return dropOverlaps(fs, 0)
}
