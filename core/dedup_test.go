package core

import "testing"

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
	if len(s.ids) != 2 || len(s.other) != len(ids)-2 {
		t.Errorf("%d canonical keys, %d others; want 2 and %d", len(s.ids), len(s.other), len(ids)-2)
	}
	k, ok := uuidKey("0123abcd-4567-89ab-cdef-0123456789ab")
	want := [16]byte{0x01, 0x23, 0xab, 0xcd, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab}
	if !ok || k != want {
		t.Fatalf("uuidKey = %x, %v", k, ok)
	}
}
