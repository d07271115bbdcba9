package record

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/freelist"
)

// Reading the input of record: each file (or stdin) goes through
// core.Intake, which reads it in regions of whole lines, parses them on a
// worker per core without copying them (each entry holding a reference on
// its block's lease, given back by the pipeline so that the block is
// reused) and hands them back in input order; here they are numbered,
// counted and sent on a region at a time, then an eof marker per file.

// inputBatches keeps the batches the recorder took (recycleBatch), for
// the next regions.
var inputBatches = freelist.Stack[[]input]{Max: 16}

// recycleBatch gives a batch back once every input in it was taken.
func recycleBatch(b []input) { freelist.Recycle(&inputBatches, b) }

// readInputs parses every line of the files (or stdin) and sends the
// entries on, a region's at a time (one hand-off per region, not per
// line), then an eof marker per file; malformed and blank lines are
// counted in rep. seq numbers every line of the whole input.
func readInputs(ctx context.Context, files []string, stdin io.Reader, out chan<- []input, rep *recordReport) error {
	defer close(out)
	if len(files) == 0 {
		files = []string{"-"}
	}
	var seq int64
	send := func(in []input) error {
		select {
		case out <- in:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, name := range files {
		display, r, closeFile := "<stdin>", stdin, func() {}
		if name != "-" {
			f, err := os.Open(name)
			if err != nil {
				return fmt.Errorf("open input: %w", err)
			}
			display, r, closeFile = name, f, func() { f.Close() }
		}
		var line int64
		err := core.Intake(ctx, r, 0, func(lines []core.Line) error {
			batch, _ := inputBatches.Get()
			for i := range lines {
				seq++
				line++
				rep.Lines++
				l := &lines[i]
				switch {
				case l.Blank:
					rep.BlankLines++
				case l.Err != nil:
					rep.MalformedCount++
					if len(rep.Malformed) < maxMalformedListed {
						rep.Malformed = append(rep.Malformed, badLine{File: display, Line: line, Error: l.Err.Error()})
					}
				default:
					batch = append(batch, input{entry: l.Entry, file: display, line: line, seq: seq})
				}
			}
			if len(batch) == 0 {
				recycleBatch(batch)
				return nil
			}
			return send(batch)
		})
		closeFile()
		switch {
		case ctx.Err() != nil:
			return nil // the intake stopped
		case err != nil:
			return fmt.Errorf("read %s: %w", display, err)
		}
		if send([]input{{file: display, eof: true, seq: seq}}) != nil {
			return nil
		}
	}
	return nil
}
