package redact

import (
	"context"
	"fmt"

	"github.com/e0dc0000/scribe/core"
)

// Sink applies a processor to every entry before an inner sink sees it:
// redaction for one sink only (the team mirror redacted while the local
// copy stays as Claude Code wrote it). It is the component behind
//
//	sink "redacted" "team" { processor = "redact/team", sink = "events/team" }
//
// which the host wires (it builds the inner sink and the processor from
// their own blocks); see the README's "Secrets" section.
type Sink struct {
	inner core.Sink
	proc  core.Processor
}

var (
	_ core.Sink     = (*Sink)(nil)
	_ core.Reporter = (*Sink)(nil)
)

// WrapSink returns inner behind proc.
func WrapSink(inner core.Sink, proc core.Processor) *Sink { return &Sink{inner: inner, proc: proc} }

// Start implements core.Sink.
func (s *Sink) Start(ctx context.Context) error { return s.inner.Start(ctx) }

// Write implements core.Sink: the inner sink gets the processed copies,
// in order. An entry the processor fails on (or drops) is a permanent
// error for that entry, after the ones before it were written: it never
// reaches the inner sink unprocessed.
func (s *Sink) Write(ctx context.Context, entries []core.Entry) error {
	out := make([]core.Entry, 0, len(entries))
	for i, e := range entries {
		p, err := s.proc.Process(ctx, e)
		if err == nil && !sameRaw(p.Raw, e.Raw) {
			var perr error
			if p, perr = reparse(p, e); perr != nil {
				err = perr
			}
		}
		if err != nil {
			if len(out) > 0 {
				if werr := s.inner.Write(ctx, out); werr != nil {
					return werr
				}
			}
			return &core.PartialError{N: i, Err: core.Permanent(fmt.Errorf("processor: %w", err))}
		}
		out = append(out, p)
	}
	return s.inner.Write(ctx, out)
}

// reparse parses a processor's changed copy, keeping the routing fields
// and sequence of the entry it came from.
func reparse(p, e core.Entry) (core.Entry, error) {
	parsed, err := core.ParseEntryOwned(p.Raw)
	if err != nil {
		return e, fmt.Errorf("the processor returned a malformed line: %w", err)
	}
	if parsed.SessionID == "" {
		parsed.SessionID = e.SessionID
	}
	if parsed.CWD == "" {
		parsed.CWD = e.CWD
	}
	parsed.Seq = e.Seq
	return parsed, nil
}

func sameRaw(a, b []byte) bool { return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) }

// Flush implements core.Sink.
func (s *Sink) Flush(ctx context.Context) error { return s.inner.Flush(ctx) }

// Shutdown implements core.Sink.
func (s *Sink) Shutdown(ctx context.Context) error { return s.inner.Shutdown(ctx) }

// Report implements core.Reporter: the inner sink's counters and the
// processor's, the latter prefixed "redact_".
func (s *Sink) Report() map[string]int64 {
	out := map[string]int64{}
	if r, ok := s.inner.(core.Reporter); ok {
		for k, v := range r.Report() {
			out[k] = v
		}
	}
	if r, ok := s.proc.(core.Reporter); ok {
		for k, v := range r.Report() {
			out["redact_"+k] = v
		}
	}
	return out
}
