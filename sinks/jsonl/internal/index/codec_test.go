package index

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

func TestIndexEncodingRoundTrip(t *testing.T) {
	noRacy(t)
	l, _ := layRules(t, t.TempDir())
	if _, err := l.RebuildIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	x := &memIndex{folders: loadAll(t, l)}
	a, b, n := encode(x)
	y, err := decodeA(string(a), uint32(n))
	if err != nil {
		t.Fatal(err)
	}
	lives, err := decodeB(b, len(y.listed))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range y.listed {
		e.life = lives[i]
	}
	y.listed = nil
	if !reflect.DeepEqual(x.folders, y.folders) {
		t.Fatal("the index does not survive encoding")
	}
}

func FuzzIndexDecode(f *testing.F) {
	x := &memIndex{folders: map[string]map[string]*entry{}}
	ca := int64(1)
	x.put("-p", "a.jsonl", &entry{key: fileKey{present: true, size: 10, mtime: 2, ctime: 3, ino: 4}, listed: true,
		info: sessions.Info{SessionID: "a", Summary: "s", CreatedAt: &ca}, recCwd: "/p", recFound: true,
		life: &lifecycle{tail: []byte(`{"type":"user"}`), model: "m", tools: []string{"Bash"}, lastTSok: true, lastTS: 5, class: core.InterruptedTurn, state: core.StateRunning}})
	x.put("-p", "b.jsonl", &entry{key: fileKey{present: true}, sideDir: true, sideArch: fileKey{present: true, size: 1}})
	a, b, n := encode(x)
	f.Add(a, b, uint32(n), 1)
	f.Add([]byte{}, []byte{}, uint32(0), 0)
	f.Add((&header{count: 1, lenA: 3}).encode(), []byte{0xff, 0xff}, uint32(1), 2)
	f.Fuzz(func(t *testing.T, a, b []byte, count uint32, listed int) {
		if x, err := decodeA(string(a), count); err == nil && x == nil {
			t.Fatal("nil index without an error")
		}
		n := listed % 1000
		lives, err := decodeB(b, n)
		if err == nil && len(lives) != n {
			t.Fatalf("decoded %d lives for a count of %d", len(lives), n)
		}
		if n < 0 && err == nil {
			t.Fatal("a negative count was accepted")
		}
		_, _ = decodeHeader(a)
	})
}

// A fork (its first chain row carries forkedFrom) is marked Forked, by the
// files and by the index after it was saved; a plain session is not.
func TestListingMarksForks(t *testing.T) {
	noRacy(t)
	l := Layout{Layout: layout.Layout{ConfigDir: t.TempDir()}}
	dir := l.ProjectDir("/p")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	row := `{"parentUuid":null,"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p","sessionId":"%s"%s}` + "\n"
	fork, plain := "0c0ffee0-0000-4000-8000-000000000001", "0c0ffee0-0000-4000-8000-000000000002"
	for id, extra := range map[string]string{fork: `,"forkedFrom":{"sessionId":"x","messageUuid":"y"}`, plain: ""} {
		if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), fmt.Appendf(nil, row, id, extra), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, infos []sessions.Info) {
		t.Helper()
		if len(infos) != 2 {
			t.Fatalf("%s: %d sessions", what, len(infos))
		}
		for _, s := range infos {
			if s.Forked != (s.SessionID == fork) {
				t.Errorf("%s: %s Forked=%v", what, s.SessionID, s.Forked)
			}
		}
	}
	opt := sessions.ListOptions{IncludeProgrammatic: true}
	infos, err := l.listing().List(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	check("files", infos)
	for _, what := range []string{"index, cold", "index, saved"} {
		infos, _, err := l.ListIndexedWith(context.Background(), opt, sessions.IndexOptions{})
		if err != nil {
			t.Fatal(err)
		}
		check(what, infos)
	}
}
