package server

// Hostile requests to the SessionStore routes: a key parameter given twice
// is refused, never read as its first value (a proxy or a log may read the
// last one: two readers, two keys). Subpaths other than
// subagents/agent-<id>, which the SDK makes (workflow subagents, journals),
// are keys like any other: stored apart, listed, deleted.

import (
	"net/http"
	"reflect"
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

func TestStoreNestedSubpaths(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newClient(t, s, tokACME)
	const p = "-proj"
	wf, journal, plain := "subagents/workflows/wf-1/agent-abc", "subagents/workflows/wf-1/journal", "subagents/agent-abc"
	c.storeAppend(p, storeSID, "", "", userEntry(storeSID, "u-main", "main"))
	for i, sub := range []string{wf, journal, plain} {
		if r := c.storeAppend(p, storeSID, sub, "", userEntry(storeSID, "u-sub-"+string(rune('0'+i)), sub), `{"type":"x","i":`+string(rune('0'+i))+`}`); r.code != http.StatusOK {
			t.Fatalf("append to %s: %s", sub, r)
		}
	}
	for _, sub := range []string{wf, journal, plain} {
		if got := c.storeLoad(p, storeSID, sub); len(got) != 2 || got[0].(map[string]any)["message"] == nil {
			t.Fatalf("load %s: %v", sub, got)
		}
	}
	subkeys := func() []string {
		var out struct{ Subkeys []string }
		c.storeGet("subkeys", storeQuery(p, storeSID, ""), &out)
		return out.Subkeys
	}
	if got, want := subkeys(), []string{plain, wf, journal}; !reflect.DeepEqual(got, want) {
		t.Fatalf("subkeys %v, want %v", got, want)
	}
	if r := c.do(http.MethodDelete, "/v1/session_store/entries?"+storeQuery(p, storeSID, wf), nil); r.code != http.StatusOK {
		t.Fatalf("delete %s: %s", wf, r)
	}
	if got := c.storeLoad(p, storeSID, wf); got != nil {
		t.Fatalf("load %s after its delete: %v", wf, got)
	}
	if got, want := subkeys(), []string{plain, journal}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after the delete of %s: subkeys %v, want %v", wf, got, want)
	}
	if r := c.do(http.MethodDelete, "/v1/session_store/entries?"+storeQuery(p, storeSID, ""), nil); r.code != http.StatusOK {
		t.Fatalf("delete the session: %s", r)
	}
	if got := subkeys(); len(got) != 0 {
		t.Fatalf("after the delete of the session: subkeys %v", got)
	}
	c.storeAppend(p, storeSID, journal, "", userEntry(storeSID, "u-again", "again"))
	if got, want := subkeys(), []string{journal}; !reflect.DeepEqual(got, want) {
		t.Fatalf("appended again: subkeys %v, want %v", got, want)
	}
}
