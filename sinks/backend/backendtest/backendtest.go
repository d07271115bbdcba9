// Package backendtest holds the listing contract every storage backend
// (postgres, s3) runs, beside core/coretest's sink and loader suites.
package backendtest

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/sinks/backend"
)

// Store is a backend under test: its sink side fills it, its listing is
// checked.
type Store struct {
	Sink   core.Sink
	Lister backend.Lister
}

// RunListerContract holds a backend's listing to the SessionStore's
// listing contracts: sessions per project (project keys isolated, mtime in
// epoch milliseconds), subagents left out of the sessions and listed as
// subkeys of theirs. newStore returns a store with empty storage.
func RunListerContract(t *testing.T, newStore func(t *testing.T) Store) {
	ctx := context.Background()
	const cwdA, cwdB = "/home/alice/src/shop", "/home/alice/src/blog"
	sid := func(i int) string { return fmt.Sprintf("0565a3a4-0000-4000-8000-%012d", 700+i) }
	n := 0
	session := func(s, cwd string, agent string) []core.Entry {
		var es []core.Entry
		parent := ""
		for i := range 2 {
			typ := core.TypeUser
			if i == 1 {
				typ = core.TypeAssistant
			}
			n++
			u := fmt.Sprintf("4f7e0000-0000-4000-8000-%012d", n)
			l := strings.Replace(coretest.Line(typ, s, u, parent), "/home/alice/src/shop", cwd, 1)
			if agent != "" {
				l = strings.Replace(l, `"isSidechain":false`, `"isSidechain":true,"agentId":"`+agent+`"`, 1)
			}
			es = append(es, coretest.MustEntry(t, l))
			parent = u
		}
		return es
	}

	t.Run("empty", func(t *testing.T) {
		st := newStore(t)
		if err := st.Sink.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer st.Sink.Shutdown(ctx)
		got, err := st.Lister.ListSessions(ctx, "")
		if err != nil || len(got) != 0 {
			t.Fatalf("an empty store lists %v (%v)", got, err)
		}
	})

	t.Run("projects and subagents", func(t *testing.T) {
		st := newStore(t)
		if err := st.Sink.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer st.Sink.Shutdown(ctx)
		before := time.Now().Add(-time.Minute).UnixMilli()
		var all []core.Entry
		all = append(all, session(sid(1), cwdA, "")...)
		all = append(all, session(sid(1), cwdA, "a1")...)
		all = append(all, session(sid(1), cwdA, "b2")...)
		all = append(all, session(sid(2), cwdA, "")...)
		all = append(all, session(sid(3), cwdB, "")...)
		if err := st.Sink.Write(ctx, all); err != nil {
			t.Fatal(err)
		}
		if err := st.Sink.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		pkA, pkB := claudedir.SanitizePath(cwdA), claudedir.SanitizePath(cwdB)
		ids := func(ls []backend.Listed) []string {
			var out []string
			for _, l := range ls {
				out = append(out, l.ProjectKey+"/"+l.SessionID)
				if l.MTime < before || l.MTime > time.Now().Add(time.Minute).UnixMilli() {
					t.Errorf("%s: mtime %d is not the time of its write in epoch ms", l.SessionID, l.MTime)
				}
			}
			sort.Strings(out)
			return out
		}
		got, err := st.Lister.ListSessions(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{pkB + "/" + sid(3), pkA + "/" + sid(1), pkA + "/" + sid(2)}; !reflect.DeepEqual(ids(got), sortedCopy(want)) {
			t.Fatalf("every project: %v, want %v", ids(got), sortedCopy(want))
		}
		got, err = st.Lister.ListSessions(ctx, pkA)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{pkA + "/" + sid(1), pkA + "/" + sid(2)}; !reflect.DeepEqual(ids(got), want) {
			t.Fatalf("project %s: %v, want %v", pkA, ids(got), want)
		}
		subs, err := st.Lister.ListSubagents(ctx, pkA, sid(1))
		if err != nil || !reflect.DeepEqual(subs, []string{"a1", "b2"}) {
			t.Fatalf("subagents: %v (%v), want [a1 b2]", subs, err)
		}
		subs, err = st.Lister.ListSubagents(ctx, pkA, sid(2))
		if err != nil || len(subs) != 0 {
			t.Fatalf("a session without subagents lists %v (%v)", subs, err)
		}
	})
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// Entries parses lines into entries or fails the test.
func Entries(t testing.TB, lines []string) []core.Entry {
	t.Helper()
	es := make([]core.Entry, 0, len(lines))
	for _, l := range lines {
		es = append(es, coretest.MustEntry(t, l))
	}
	return es
}

// RawLines loads ref and returns its lines, failing the test on an error.
func RawLines(t testing.TB, l core.Loader, ref core.SessionRef) []string {
	t.Helper()
	tr, err := l.Load(context.Background(), ref)
	if err != nil {
		t.Fatalf("Load %s: %v", ref.Key(), err)
	}
	out := make([]string, 0, len(tr.Entries))
	for _, e := range tr.Entries {
		out = append(out, string(e.Raw))
	}
	return out
}
