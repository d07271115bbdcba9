package wire

import (
	"encoding/json"
	"testing"
)

// The answers keep the bytes the server wrote before these types (maps,
// whose keys encoding/json sorts), and a client's events are what the
// server's parser reads.
func TestWire(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{EventsResult{Stored: 2, Duplicates: 1, LastUUID: "u", State: "idle"}, `{"duplicates":1,"last_uuid":"u","state":"idle","stored":2}`},
		{SessionList{Data: []SessionInfo{}}, `{"data":[],"has_more":false}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil || string(b) != tc.want {
			t.Errorf("%T: %s %v, want %s", tc.v, b, err, tc.want)
		}
	}
	ev := Event{Type: "user", Payload: json.RawMessage(`{"a":"<b>"}`), AgentID: "a<1>", State: "idle"}
	got := string(AppendEvent(nil, &ev))
	if want := `{"type":"user","payload":{"a":"<b>"},"agent_id":"a\u003c1\u003e"}`; got != want {
		t.Fatalf("AppendEvent\n got %s\nwant %s", got, want)
	}
	var back Event
	if err := json.Unmarshal([]byte(got), &back); err != nil || back.Type != "user" || back.AgentID != "a<1>" || string(back.Payload) != `{"a":"<b>"}` {
		t.Fatalf("the server reads back %+v (%v)", back, err)
	}
}
