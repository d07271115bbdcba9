package server

import (
	"context"
	"fmt"

	"github.com/e0dc0000/scribe/core"
)

// SetProcessor makes the server pass every entry it is asked to store
// through p first (the redact processor that server { redact = NAME }
// names), so what JetStream keeps is the processed copy. Call it before
// Start. A processor that drops an entry or fails makes the request fail
// with 400 naming why; nothing of that request is stored unprocessed.
func (s *Server) SetProcessor(p core.Processor) { s.proc = p }

// process applies the processor to one parsed entry; the item's id stays
// the one of the entry as sent, so a retry of the same request is still a
// duplicate.
func (s *Server) process(ctx context.Context, it item) (item, error) {
	if s.proc == nil {
		return it, nil
	}
	out, err := s.proc.Process(ctx, it.e)
	if err != nil {
		return it, fmt.Errorf("processor: %w", err)
	}
	if len(out.Raw) == len(it.e.Raw) && (len(out.Raw) == 0 || &out.Raw[0] == &it.e.Raw[0]) {
		return it, nil
	}
	e, err := core.ParseEntryOwned(out.Raw)
	if err != nil {
		return it, fmt.Errorf("processor returned a malformed line: %w", err)
	}
	s.m.Processed.Add(1)
	it.e = e
	return it, nil
}
