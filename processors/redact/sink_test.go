package redact

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/processors/redact/redacttest"
)

// TestWrappedSinkContract: a redacting sink is still a sink.
func TestWrappedSinkContract(t *testing.T) {
	coretest.RunSinkContract(t, coretest.SinkHarness{
		New: func(t *testing.T) core.Sink {
			return WrapSink(&coretest.RecordingSink{}, New(core.MustParseID("redact/t"), testRedactor(t, nil)))
		},
		Read: func(t *testing.T, s core.Sink, _ core.SessionRef) []string {
			return s.(*Sink).inner.(*coretest.RecordingSink).Durable()
		},
	})
}

// TestWrappedSinkRedactsOnlyItsSink: the wrapped sink gets redacted
// copies; the entries handed in (what another sink gets) are unchanged.
func TestWrappedSinkRedactsOnlyItsSink(t *testing.T) {
	secrets := redacttest.Secrets(3)
	in := redacttest.Transcript(sid, "/home/ada/src/shop", secrets)
	var entries []core.Entry
	for _, l := range bytes.Split(bytes.TrimSpace(in), []byte("\n")) {
		entries = append(entries, coretest.MustEntry(t, string(l)))
	}
	rec := &coretest.RecordingSink{}
	s := WrapSink(rec, New(core.MustParseID("redact/team"), testRedactor(t, nil)))
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, entries); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(rec.Durable(), "\n")
	if l := redacttest.Leaks([]byte(got), secrets); len(l) > 0 || len(rec.Durable()) != len(entries) {
		t.Fatalf("the wrapped sink got %d entries, secrets %v", len(rec.Durable()), l)
	}
	var orig bytes.Buffer
	for _, e := range entries {
		orig.Write(e.Raw)
		orig.WriteByte('\n')
	}
	if !bytes.Equal(orig.Bytes(), in) {
		t.Fatal("the entries handed in were changed")
	}
	if s.Report()["redact_entries_redacted"] == 0 {
		t.Fatalf("report %v", s.Report())
	}
}

type failing struct{}

func (failing) Process(_ context.Context, e core.Entry) (core.Entry, error) {
	if strings.Contains(string(e.Raw), "boom") {
		return e, core.ErrDropped
	}
	return e, nil
}

// TestWrappedSinkFailureIsPartial: an entry the processor fails on never
// reaches the inner sink; the ones before it do.
func TestWrappedSinkFailureIsPartial(t *testing.T) {
	rec := &coretest.RecordingSink{}
	s := WrapSink(rec, failing{})
	es := []core.Entry{
		coretest.MustEntry(t, coretest.Line(core.TypeUser, sid, "00000000-0000-4000-8000-000000000001", "")),
		coretest.MustEntry(t, `{"type":"user","sessionId":"`+sid+`","uuid":"00000000-0000-4000-8000-000000000002","message":{"content":"boom"}}`),
	}
	err := s.Write(context.Background(), es)
	var pe *core.PartialError
	if !errors.As(err, &pe) || pe.N != 1 || !core.IsPermanent(pe.Err) || len(rec.All()) != 1 {
		t.Fatalf("err %v, inner got %d", err, len(rec.All()))
	}
}
