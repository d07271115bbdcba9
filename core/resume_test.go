package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
)

type stubLoader struct {
	t   *core.Transcript
	err error
	n   int
}

func (s *stubLoader) Load(context.Context, core.SessionRef) (*core.Transcript, error) {
	s.n++
	return s.t, s.err
}

func TestResumerTriesLoadersInOrder(t *testing.T) {
	ref := core.SessionRef{SessionID: sess}
	full := &core.Transcript{Entries: []core.Entry{coretest.MustEntry(t, coretest.Line("user", sess, "u-1", ""))}}
	onlyMeta := &core.Transcript{Entries: []core.Entry{coretest.MustEntry(t, `{"type":"custom-title","customTitle":"x","sessionId":"`+sess+`"}`)}}
	cache := &stubLoader{err: core.ErrNotFound}
	broken := &stubLoader{err: errors.New("disk says no")}
	empty := &stubLoader{t: onlyMeta}
	cloud := &stubLoader{t: full}
	last := &stubLoader{t: full}
	r := core.NewResumer([]core.NamedLoader{
		{ID: core.MustParseID("memcache/recent"), Loader: cache},
		{ID: core.MustParseID("jsonl/local"), Loader: broken},
		{ID: core.MustParseID("stub/empty"), Loader: empty},
		{ID: core.MustParseID("cloud/team"), Loader: cloud},
		{ID: core.MustParseID("summary/default"), Loader: last},
	})
	res, err := r.Load(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if res.Served.String() != "cloud/team" || res.Transcript.Source.String() != "cloud/team" {
		t.Fatalf("served by %s", res.Served)
	}
	if len(res.Misses) != 3 || !errors.Is(res.Misses[0].Err, core.ErrNotFound) ||
		!strings.Contains(res.Misses[1].Err.Error(), "disk says no") || !errors.Is(res.Misses[2].Err, core.ErrEmptyTranscript) {
		t.Fatalf("misses %+v", res.Misses)
	}
	if last.n != 0 {
		t.Error("a loader after the one that served was asked")
	}
	// --from: only the named loader.
	res, err = r.Load(context.Background(), ref, core.MustParseID("summary/default"))
	if err != nil || res.Served.String() != "summary/default" || len(res.Misses) != 0 {
		t.Fatalf("--from summary: %+v %v", res, err)
	}
}

func TestResumerNothingAnywhereIsAnError(t *testing.T) {
	r := core.NewResumer([]core.NamedLoader{
		{ID: core.MustParseID("a/x"), Loader: &stubLoader{err: core.ErrNotFound}},
		{ID: core.MustParseID("b/y"), Loader: &stubLoader{err: errors.New("boom")}},
	})
	res, err := r.Load(context.Background(), core.SessionRef{SessionID: sess})
	if !errors.Is(err, core.ErrNotFound) || !strings.Contains(err.Error(), "a/x") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v", err)
	}
	if res == nil || len(res.Misses) != 2 {
		t.Fatalf("misses %+v", res)
	}
	if _, err := r.Load(context.Background(), core.SessionRef{SessionID: sess}, core.MustParseID("c/z")); err == nil {
		t.Error("an unconfigured --from loader was accepted")
	}
}
