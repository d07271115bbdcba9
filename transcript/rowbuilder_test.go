package transcript

import "testing"

// TestRowBuilderSharesRepeatedMembers: a member equal to the last row's is
// that row's bytes (Same reports it and the reader keeps no copy); one that
// differs, or follows a malformed line's, is not.
func TestRowBuilderSharesRepeatedMembers(t *testing.T) {
	var b RowBuilder
	sid := jv(`"0c1f0000-0000-4000-8000-000000000001"`)
	b.Set(fSession, sid)
	b.Set(fUUID, jv(`"u1"`))
	b.Set(fType, jv(`"user"`))
	first := b.Row()

	if !b.Same(fSession, []byte(`"0c1f0000-0000-4000-8000-000000000001"`)) {
		t.Fatal("Same: an equal sessionId was not shared")
	}
	if b.Same(fUUID, []byte(`"u2"`)) {
		t.Fatal("Same: a different uuid was shared")
	}
	if b.Same(fParent, []byte(`"u1"`)) {
		t.Fatal("Same: a member the last row lacks was shared")
	}
	b.Set(fUUID, jv(`"u2"`))
	b.Set(fType, jv(`"assistant"`))
	second := b.Row()
	got := second.r.f.get(fSession)
	if string(got) != string(sid) || &got[0] != &first.r.f.get(fSession)[0] {
		t.Fatalf("second row's sessionId %q is not the first row's bytes", got)
	}
	if string(second.r.f.get(fUUID)) != `"u2"` || second.r.typ != "assistant" {
		t.Fatalf("second row: uuid %q, type %q", second.r.f.get(fUUID), second.r.typ)
	}

	// A malformed line's members (Reset) are never offered to the next.
	b.Set(fTimestamp, jv(`"2026-01-01T00:00:00.000Z"`))
	b.Reset()
	if b.Same(fTimestamp, []byte(`"2026-01-01T00:00:00.000Z"`)) {
		t.Fatal("Same shared a member of a line that was reset")
	}
}
