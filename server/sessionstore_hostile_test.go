package server

// Hostile requests to the SessionStore routes: a key parameter given twice
// is refused, never read as its first value (a proxy or a log may read the
// last one: two readers, two keys).

import (
	"net/http"
	"testing"
)

func TestStoreDuplicatedParams(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newClient(t, s, tokACME)
	const p = "-proj"
	c.storeAppend(p, storeSID, "", "", userEntry(storeSID, "u-1", "one"))
	other := "5e55a000-0000-4000-8000-000000000002"
	for name, q := range map[string]string{
		"project_key": storeQuery(p, storeSID, "") + "&project_key=-other",
		"session_id":  storeQuery(p, storeSID, "") + "&session_id=" + other,
		"subpath":     storeQuery(p, storeSID, "subagents/agent-a") + "&subpath=subagents/agent-b",
		"batch":       storeQuery(p, storeSID, "") + "&batch=a&batch=b",
	} {
		r := c.do(http.MethodPost, "/v1/session_store/entries?"+q, []byte(`[{"type":"x"}]`))
		if r.code != http.StatusBadRequest {
			t.Errorf("%s twice: %s, want 400", name, r)
		}
	}
	if got := c.storeLoad(p, storeSID, ""); len(got) != 1 {
		t.Fatalf("the session holds %d entries, want 1", len(got))
	}
}
