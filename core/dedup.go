package core

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"sync"
)

// sessionSeen is one session's (or sidechain's) dedup state.
type sessionSeen struct {
	mu     sync.Mutex
	seeded bool
	// uuids maps each uuid to true once this run submitted it, false while
	// only the seeding store is known to hold it.
	uuids uuidSet
	// meta holds hashes of the uuid-less lines the store already had. While
	// no new chain entry has arrived for the session (live is false), an
	// identical metadata line is a replay of stored input, not a new fact.
	meta map[uint64]struct{}
	live bool
}

var metaSeed = maphash.MakeSeed()

// uuidSet maps uuids to a flag. Canonical uuids (Claude Code's, nearly all)
// are kept as their 16 bytes in a table of their own (open addressing,
// linear probing, at most three quarters full): one probe finds or places
// a key, where a map took two lookups and more cache misses per entry, and
// the table holds no pointer for the garbage collector to scan. Any other
// string is kept in a map, as it is.
type uuidSet struct {
	slots []uuidSlot // len a power of two, or 0
	n     int        // slots used
	other map[string]bool
}

type uuidSlot struct {
	k          [16]byte
	used, flag bool
}

// find returns the slot of k, or the free slot where it belongs (the
// table is never full: add grows it first).
func (s *uuidSet) find(k *[16]byte) *uuidSlot {
	mask := uint64(len(s.slots) - 1)
	h := (binary.LittleEndian.Uint64(k[:8]) ^ binary.LittleEndian.Uint64(k[8:])) * 0x9e3779b97f4a7c15
	for i := h >> 32 & mask; ; i = (i + 1) & mask {
		if sl := &s.slots[i]; !sl.used || sl.k == *k {
			return sl
		}
	}
}

// slot returns k's slot, placing k (flag false) when it is new; added
// says so.
func (s *uuidSet) slot(k *[16]byte) (sl *uuidSlot, added bool) {
	if 4*(s.n+1) > 3*len(s.slots) {
		s.grow()
	}
	sl = s.find(k)
	if !sl.used {
		*sl = uuidSlot{k: *k, used: true}
		s.n++
		return sl, true
	}
	return sl, false
}

func (s *uuidSet) grow() {
	old := s.slots
	s.slots = make([]uuidSlot, max(16, 2*len(old)))
	for i := range old {
		if old[i].used {
			*s.find(&old[i].k) = old[i]
		}
	}
}

// get returns the flag of u and whether u is in the set.
func (s *uuidSet) get(u string) (flag, ok bool) {
	if k, canon := uuidKey(u); canon {
		if len(s.slots) == 0 {
			return false, false
		}
		sl := s.find(&k)
		return sl.flag, sl.used
	}
	flag, ok = s.other[u]
	return flag, ok
}

// set sets the flag of u.
func (s *uuidSet) set(u string, flag bool) {
	if k, canon := uuidKey(u); canon {
		sl, _ := s.slot(&k)
		sl.flag = flag
		return
	}
	if s.other == nil {
		s.other = make(map[string]bool)
	}
	s.other[u] = flag
}

// mark sets the flag of u and returns what it was: found is false when u
// was not in the set. One probe for a canonical uuid.
func (s *uuidSet) mark(u string) (found, was bool) {
	if k, canon := uuidKey(u); canon {
		sl, added := s.slot(&k)
		was, sl.flag = sl.flag, true
		return !added, was
	}
	was, found = s.other[u]
	if s.other == nil {
		s.other = make(map[string]bool)
	}
	s.other[u] = true
	return found, was
}

// len is how many uuids the set holds.
func (s *uuidSet) len() int { return s.n + len(s.other) }

// uuidKey returns the 16 bytes of a uuid written as 8-4-4-4-12 lowercase
// hex digits; canonical is false for any other string (upper case
// included, so that two spellings stay two keys, as strings would).
func uuidKey(u string) (k [16]byte, canonical bool) {
	if len(u) != 36 || u[8] != '-' || u[13] != '-' || u[18] != '-' || u[23] != '-' {
		return k, false
	}
	j := 0
	for i := 0; i < 36; i += 2 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
		}
		hi, lo := hexVal[u[i]], hexVal[u[i+1]]
		if hi|lo > 0x0f {
			return k, false
		}
		k[j] = hi<<4 | lo
		j++
	}
	return k, true
}

// hexVal maps a lowercase hex digit to its value, anything else to 0xff.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c - '0'
	}
	for c := byte('a'); c <= 'f'; c++ {
		t[c] = c - 'a' + 10
	}
	return t
}()

// duplicate reports whether dedup drops e, and records it otherwise.
// replay is true when e is a duplicate only of what the seeding store
// held (not of an entry of this run): idempotent sinks still get it, since
// that store having it says nothing of theirs. Called with s.mu held.
func (s *sessionSeen) duplicate(e *Entry) (dup, replay bool) {
	if e.UUID == "" {
		if !s.live && len(s.meta) > 0 {
			if _, ok := s.meta[maphash.Bytes(metaSeed, e.Raw)]; ok {
				return true, true
			}
		}
		return false, false
	}
	if found, live := s.uuids.mark(e.UUID); found {
		return true, !live
	}
	// Only new conversation rows end a replay: a state event or a uuid'd
	// metadata line may precede stored lines in a replayed stream.
	if e.IsChain() {
		s.live = true
	}
	return false, false
}

// session returns the dedup state of ref, seeded, with its lock held.
func (p *Pipeline) session(ctx context.Context, ref SessionRef) (*sessionSeen, error) {
	key := ref.Key()
	p.seenMu.Lock()
	s := p.seen[key]
	if s == nil {
		s = &sessionSeen{}
		p.seen[key] = s
	}
	p.seenMu.Unlock()
	s.mu.Lock()
	if s.seeded || p.seeder == nil {
		s.seeded = true
		return s, nil
	}
	seed, err := p.seeder.Seed(ctx, ref)
	if err != nil {
		s.mu.Unlock()
		p.seedErrors.Add(1)
		return nil, fmt.Errorf("seed dedup for session %s: %w", key, err)
	}
	for _, u := range seed.UUIDs {
		s.uuids.set(u, false)
	}
	if len(seed.Metadata) > 0 {
		s.meta = make(map[uint64]struct{}, len(seed.Metadata))
		for _, m := range seed.Metadata {
			s.meta[maphash.Bytes(metaSeed, m)] = struct{}{}
		}
	}
	s.seeded = true
	return s, nil
}

// SeedSession adds uuids to a session's dedup set, for hosts that loaded a
// session some other way (resume) and will append to it.
func (p *Pipeline) SeedSession(ctx context.Context, ref SessionRef, uuids []string) error {
	s, err := p.session(ctx, ref)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	for _, u := range uuids {
		if _, ok := s.uuids.get(u); !ok {
			s.uuids.set(u, false)
		}
	}
	return nil
}
