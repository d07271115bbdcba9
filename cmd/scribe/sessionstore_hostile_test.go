package main_test

// Hostile cases of the SessionStore package against the real `scribe
// serve` binary (internal/peer's store-hostile.mjs says what each does):
// the SDK's own retry after an answer lost, appends cut in parts by UTF-8
// size and by count, an entry over the server's limit refused whole, and
// a request over it answered 413 (not reset).

import (
	"encoding/json"
	"testing"

	"github.com/e0dc0000/scribe/internal/peer"
)

func TestSessionStoreHostile(t *testing.T) {
	t.Parallel() // a long, self-contained run: it overlaps the others
	p := peer.Find(t)
	srv := startStoreServer(t)
	out := p.Run(t, "store-hostile.mjs", srv.url(), cloudToken)
	var r struct {
		Results []struct {
			Name  string `json:"name"`
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Results) == 0 {
		t.Fatalf("store-hostile.mjs: %v\n%s", err, out)
	}
	for _, c := range r.Results {
		if !c.OK {
			t.Errorf("%s: %s", c.Name, c.Error)
		}
	}
}
