package scansearch

import (
	"context"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/testui"
	"github.com/e0dc0000/scribe/search"
	"github.com/e0dc0000/scribe/stores"
)

// A message holding every term is found, in a subagent too, its snippet
// marked with the query's marks; one holding some terms is not.
func TestSearchScansMessages(t *testing.T) {
	dir := t.TempDir()
	s := testui.NewSession(t, dir, "/home/alice/shop", "5ca75ca7-0000-4000-8000-000000000001")
	s.User(t, "where is the Flux capacitor")
	want := s.Assistant(t, testui.Text("the flux capacitor is in the garage"))
	s.User(t, "only flux here")
	a := s.Agent(t, "a1b2c3", "toolu_1")
	inAgent := a.User(t, "the capacitor, the flux, both")
	st := stores.NewLocal("claude", dir, nil)
	hits, err := Search(context.Background(), st, search.Query{Text: "flux capacitor", Limit: 10, Marks: [2]string{"<<", ">>"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, h := range hits {
		got[h.UUID] = h.Snippet
	}
	if len(hits) != 3 || got[want] == "" || got[inAgent] == "" {
		t.Fatalf("hits %+v", hits)
	}
	if sn := got[want]; !strings.Contains(sn, "<<flux>> <<capacitor>>") {
		t.Errorf("snippet %q", sn)
	}
	if _, err := Search(context.Background(), st, search.Query{Text: "  ", Limit: 10}, ""); err == nil {
		t.Error("an empty query is no error")
	}
}
