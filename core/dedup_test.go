package core

import (
	"fmt"
	"testing"
)

func TestUUIDSetKeepsEverySpellingApart(t *testing.T) {
	var s uuidSet
	ids := []string{
		"4f7e0000-0000-4000-8000-000000000001",
		"4f7e0000-0000-4000-8000-000000000002",
		"4F7E0000-0000-4000-8000-000000000001", // upper case: another string, another key
		"4f7e0000-0000-4000-8000-00000000000g", // not hex
		"4f7e0000x0000-4000-8000-000000000001", // not a dash
		"u-1",
		"",
	}
	for i, id := range ids {
		if _, ok := s.get(id); ok {
			t.Fatalf("%q found before it was added", id)
		}
		s.set(id, i%2 == 0)
	}
	for i, id := range ids {
		if flag, ok := s.get(id); !ok || flag != (i%2 == 0) {
			t.Errorf("%q: flag %v, found %v", id, flag, ok)
		}
	}
	if s.n != 2 || len(s.other) != len(ids)-2 || s.len() != len(ids) {
		t.Errorf("%d canonical keys, %d others; want 2 and %d", s.n, len(s.other), len(ids)-2)
	}
	k, ok := uuidKey("0123abcd-4567-89ab-cdef-0123456789ab")
	want := [16]byte{0x01, 0x23, 0xab, 0xcd, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab}
	if !ok || k != want {
		t.Fatalf("uuidKey = %x, %v", k, ok)
	}
}

// The table grows past many keys, random or sequential (test ids differ
// only in their last digits), and keeps each key's flag; mark sets the
// flag and says what it was, once per key.
func TestUUIDSetGrowsAndMarks(t *testing.T) {
	var s uuidSet
	const n = 50000
	id := func(i int) string {
		if i%2 == 0 {
			return fmt.Sprintf("00000000-0000-4000-8000-%012x", i)
		}
		return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(i*2654435761), i&0xffff, i&0xfff, (i>>12)&0xfff, uint64(i)*0x9e3779b97f4a7c15>>16)
	}
	for i := range n {
		if i%3 == 0 {
			s.set(id(i), false) // seeded: in the store
		}
	}
	for i := range n {
		found, was := s.mark(id(i))
		if found != (i%3 == 0) || was {
			t.Fatalf("mark(%s) = %v, %v; want %v, false", id(i), found, was, i%3 == 0)
		}
		if found, was := s.mark(id(i)); !found || !was {
			t.Fatalf("second mark(%s) = %v, %v", id(i), found, was)
		}
	}
	if s.len() != n || 4*s.n > 3*len(s.slots) {
		t.Fatalf("%d keys in %d slots, want %d at most three quarters full", s.n, len(s.slots), n)
	}
	if _, ok := s.get("00000000-0000-4000-8000-ffffffffffff"); ok {
		t.Fatal("found a key never added")
	}
}
