package server

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// sameAsJSON checks the fast parser against encoding/json on body: when
// it takes a body, encoding/json takes it too, with the same steps.
func sameAsJSON(t *testing.T, body []byte, session string) (fast bool) {
	t.Helper()
	body = bytes.TrimSpace(body)
	got, ok := parseEventsFast(body, session)
	if !ok {
		return false
	}
	want, err := parseEventsJSON(body, session)
	if err != nil {
		t.Fatalf("fast parser took a body encoding/json refuses (%v):\n%s", err, body)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fast parser differs from encoding/json on:\n%s\ngot  %+v\nwant %+v", body, got, want)
	}
	return true
}

func TestParseEventsFast(t *testing.T) {
	sess := newUUID()
	e1 := chainEntry(sess, newUUID(), "", "hello \"quoted\" \\ \u00e9 \u2603 \n tab\t")
	e2 := agentEntry(sess, "a1", newUUID(), "sub")
	noUUID := []byte(`{"type":"summary","summary":"s","leafUuid":"x"}`)
	e3 := chainEntry(sess, newUUID(), "", `ends in a backslash \`)
	e4 := chainEntry(sess, newUUID(), "", `a quote after backslashes \\"`)
	usual := [][]byte{
		eventsBody(e1, e2, noUUID, e3, e4),
		[]byte(`[` + string(e1) + `,` + string(e2) + `]`),
		[]byte(`{"events":[]}`),
		[]byte(` [ ] `),
		[]byte(`{"events":[{"type":"state","state":"running"},{"type":"user","payload":` + string(e1) + `,"agent_id":"a2","event_id":"k1"}]}`),
		[]byte(`{"events":[{"type":"state","payload":{"state":"idle"}}],"other":[1,2,{"x":null}],"n":-1.5e3}`),
		[]byte(`{"events":[{"type":"x","payload":null,"uuid":"` + newUUID() + `","sessionId":"` + sess + `"}]}`),
		[]byte(`{"events":[{"type":"user","event_id":"e-1","payload":` + string(noUUID) + `}]}`),
	}
	for _, b := range usual {
		if !sameAsJSON(t, b, sess) {
			t.Errorf("fast parser gave up on a usual body:\n%s", b)
		}
	}
	// Unusual shapes: encoding/json decides (and words the error).
	unusual := []string{
		`{"Events":[]}`, `{"events":null}`, `{"events":[],"events":[]}`,
		`{"events":[{"Type":"state","state":"idle"}]}`,
		`{"events":[{"type":"state","state":"idle","payload":}]}`,
		`{"events":[{"type":null,"payload":{}}]}`,
		`{"events":[{"type":"u\u0073er","payload":{}}]}`,
		`{"events":[1]}`, `"x"`, `{"events":[]} x`, `[{"type":"state","state":"idle"}`,
		`{"events":[{"type":"state","state":"idle","payload":[1,]}]}`,
		`{"events":[{"type":"state","state":"idle","x":01}]}`,
	}
	for _, b := range unusual {
		if sameAsJSON(t, []byte(b), sess) {
			t.Errorf("fast parser took an unusual body:\n%s", b)
		}
	}
	// Mutations of the usual bodies: whatever the fast parser takes,
	// encoding/json takes the same way.
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`{}[]",:\ 0123456789-.eE+truefalsn` + "\t\n\x01\xff")
	taken := 0
	for n := 0; n < 20000; n++ {
		b := bytes.Clone(usual[r.IntN(len(usual))])
		for k := 0; k <= r.IntN(3); k++ {
			if len(b) == 0 {
				break
			}
			i := r.IntN(len(b))
			switch r.IntN(4) {
			case 0: // replace a byte
				b[i] = alphabet[r.IntN(len(alphabet))]
			case 1: // delete a byte
				b = append(b[:i], b[i+1:]...)
			case 2: // insert a byte
				b = append(b[:i], append([]byte{alphabet[r.IntN(len(alphabet))]}, b[i:]...)...)
			case 3: // cut
				b = b[:i]
			}
		}
		if sameAsJSON(t, b, sess) {
			taken++
		}
	}
	t.Logf("fast parser took %d of 20000 mutated bodies", taken)
}

func BenchmarkParseEvents(b *testing.B) {
	sess := newUUID()
	var entries [][]byte
	parent := ""
	for i := 0; i < 500; i++ {
		id := newUUID()
		entries = append(entries, chainEntry(sess, id, parent, fmt.Sprintf("entry %d %0800d", i, i)))
		parent = id
	}
	body := eventsBody(entries...)
	b.SetBytes(int64(len(body)))
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if _, err := parseEvents(body, sess); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			if _, err := parseEventsJSON(body, sess); err != nil {
				b.Fatal(err)
			}
		}
	})
}
