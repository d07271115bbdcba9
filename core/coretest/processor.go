package coretest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/e0dc0000/scribe/core"
)

// ProcessorCase is an entry and what a processor is expected to do with it.
type ProcessorCase struct {
	Name string
	Line string
	// Drop: the processor drops the entry (an error wrapping
	// core.ErrDropped). Change: it returns a changed copy. Neither: it
	// returns the entry as it came.
	Drop, Change bool
}

// ProcessorHarness lets RunProcessorContract drive one processor.
type ProcessorHarness struct {
	New   func(t *testing.T) core.Processor
	Cases []ProcessorCase
}

// RunProcessorContract holds a processor to the contract every processor
// shares: it never changes its input, a changed copy is one valid JSON
// object with the entry's uuid, parent, session and type kept, a drop is an
// error wrapping core.ErrDropped, an unchanged entry comes back as the same
// bytes, and concurrent calls agree with one call.
func RunProcessorContract(t *testing.T, h ProcessorHarness) {
	ctx := context.Background()
	var drops, changes, keeps int
	for _, c := range h.Cases {
		switch {
		case c.Drop:
			drops++
		case c.Change:
			changes++
		default:
			keeps++
		}
	}
	if drops+changes == 0 || keeps == 0 {
		t.Fatal("a processor contract needs a case it leaves alone and one it drops or changes")
	}
	for _, c := range h.Cases {
		t.Run(c.Name, func(t *testing.T) {
			p := h.New(t)
			in := MustEntry(t, c.Line)
			before := bytes.Clone(in.Raw)
			out, err := p.Process(ctx, in)
			if !bytes.Equal(in.Raw, before) {
				t.Fatalf("the processor changed its input:\n%s\nwas\n%s", in.Raw, before)
			}
			switch {
			case c.Drop:
				if !errors.Is(err, core.ErrDropped) {
					t.Fatalf("want a drop wrapping core.ErrDropped, got %v", err)
				}
				return
			case err != nil:
				t.Fatalf("Process: %v", err)
			}
			if !c.Change {
				if !bytes.Equal(out.Raw, in.Raw) {
					t.Fatalf("an entry left alone came back changed:\n%s", out.Raw)
				}
				return
			}
			if bytes.Equal(out.Raw, in.Raw) {
				t.Fatalf("the entry was not changed")
			}
			var obj map[string]any
			if err := json.Unmarshal(out.Raw, &obj); err != nil {
				t.Fatalf("the changed copy is not one JSON object: %v\n%s", err, out.Raw)
			}
			re, err := core.ParseEntry(out.Raw)
			if err != nil {
				t.Fatal(err)
			}
			if re.UUID != in.UUID || re.ParentUUID != in.ParentUUID || re.SessionID != in.SessionID || re.Type != in.Type {
				t.Fatalf("the changed copy lost the entry's identity: uuid %q parent %+v session %q type %q", re.UUID, re.ParentUUID, re.SessionID, re.Type)
			}
		})
	}
	t.Run("concurrent calls agree", func(t *testing.T) {
		p := h.New(t)
		want := make([][]byte, len(h.Cases))
		for i, c := range h.Cases {
			out, err := p.Process(ctx, MustEntry(t, c.Line))
			if err == nil {
				want[i] = out.Raw
			}
		}
		var wg sync.WaitGroup
		errs := make(chan string, 8*len(h.Cases))
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i, c := range h.Cases {
					out, err := p.Process(ctx, MustEntry(t, c.Line))
					if (err == nil) != (want[i] != nil) || (err == nil && !bytes.Equal(out.Raw, want[i])) {
						errs <- c.Name
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for name := range errs {
			t.Fatalf("case %s: a concurrent call disagreed with a single one", name)
		}
	})
}
