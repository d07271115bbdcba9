package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"

	"github.com/e0dc0000/scribe/core"
)

// Reading the input of record: the reader reads regions of whole lines
// into large blocks (core.LineReader.ReadRegion); a parse worker per core
// cuts a region into lines and parses them in place (no copy per line: an
// entry keeps a slice of its block and a reference on the block's lease,
// which the pipeline gives back once every sink wrote it, so the block is
// reused instead of fresh memory); the entries are handed on in input
// order, numbered here.
//
//	read (one goroutine) ──► chunk ──┬──► parse worker ──┐
//	                         │       └──► parse worker ──┤ (each closes chunk.done)
//	                         └──► ordered ───────────────┴──► readInputs: numbers, counts, sends in order

type lineResult struct {
	entry core.Entry
	err   error
	blank bool
}

type chunk struct {
	file string
	// region is the lines one read brought, each ended by its newline;
	// lease holds it (core.LineReader.ReadRegion).
	region []byte
	lease  *core.Lease
	res    []lineResult
	eof    bool  // the end of file: no lines
	err    error // a read error ends the input
	done   chan struct{}
}

// parse cuts the region into lines and parses them. Each entry holds a
// reference on the lease (its Entry.Lease, given back by the pipeline);
// the chunk's own is returned.
func (c *chunk) parse() {
	lines := core.CutLines(c.region, make([][]byte, 0, 1+len(c.region)/2048))
	c.res = make([]lineResult, len(lines))
	for i, l := range lines {
		if isBlank(l) {
			c.res[i].blank = true
			continue
		}
		c.res[i].entry, c.res[i].err = core.ParseEntryOwned(l)
		if c.res[i].err == nil && c.lease != nil {
			c.lease.Retain(1)
			c.res[i].entry.Lease = c.lease
		}
	}
	c.lease.Release()
	close(c.done)
}

// readInputs parses every line of the files (or stdin) and sends the
// entries on, a chunk's at a time (one hand-off per chunk, not per line),
// then an eof marker per file; malformed and blank lines are counted in
// rep. seq numbers every line of the whole input.
func readInputs(ctx context.Context, files []string, stdin io.Reader, out chan<- []input, rep *recordReport) error {
	defer close(out)
	if len(files) == 0 {
		files = []string{"-"}
	}
	workers := min(max(goruntime.GOMAXPROCS(0), 1), 4)
	work := make(chan *chunk, 2*workers)
	ordered := make(chan *chunk, 4*workers)
	for range workers {
		go func() {
			for c := range work {
				c.parse()
			}
		}()
	}
	splitCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		defer close(ordered)
		defer close(work)
		for _, name := range files {
			if !splitFile(splitCtx, name, stdin, work, ordered) {
				return
			}
		}
	}()
	// seq numbers every line of the input, line those of the file the
	// chunks come from (they come in order, a file's eof after its last).
	var seq, line int64
	send := func(in []input) error {
		select {
		case out <- in:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for c := range ordered {
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil
		}
		if c.err != nil {
			return c.err
		}
		if c.eof {
			line = 0
			if send([]input{{file: c.file, eof: true, seq: seq}}) != nil {
				return nil // the intake stopped
			}
			continue
		}
		batch := make([]input, 0, len(c.res))
		for i := range c.res {
			seq++
			rep.Lines++
			r := &c.res[i]
			line++
			n := line
			switch {
			case r.blank:
				rep.BlankLines++
			case r.err != nil:
				rep.MalformedCount++
				if len(rep.Malformed) < maxMalformedListed {
					rep.Malformed = append(rep.Malformed, badLine{File: c.file, Line: n, Error: r.err.Error()})
				}
			default:
				batch = append(batch, input{entry: r.entry, file: c.file, line: n, seq: seq})
			}
		}
		if len(batch) > 0 && send(batch) != nil {
			return nil
		}
	}
	return nil
}

// splitFile cuts one input into chunks; false ends the input (a read
// error, reported in its chunk, or a stopped intake).
func splitFile(ctx context.Context, name string, stdin io.Reader, work, ordered chan<- *chunk) bool {
	display := "<stdin>"
	r := stdin
	// emit queues a chunk in input order, and for parsing when it has
	// lines.
	emit := func(c *chunk) bool {
		select {
		case ordered <- c:
		case <-ctx.Done():
			return false
		}
		if len(c.region) == 0 {
			close(c.done)
			return true
		}
		select {
		case work <- c:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			emit(&chunk{file: display, err: fmt.Errorf("open input: %w", err), done: make(chan struct{})})
			return false
		}
		defer f.Close()
		r, display = f, name
	}
	lr := core.NewLineReader(r)
	for {
		// What one read brought goes on now: a live stream must not wait
		// for a block to fill.
		region, lease, err := lr.ReadRegion()
		if len(region) > 0 {
			c := &chunk{file: display, region: region, lease: lease, done: make(chan struct{})}
			if !emit(c) {
				return false
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			return emit(&chunk{file: display, eof: true, done: make(chan struct{})})
		case err != nil:
			emit(&chunk{file: display, err: fmt.Errorf("read %s: %w", display, err), done: make(chan struct{})})
			return false
		}
	}
}

func isBlank(line []byte) bool {
	for _, c := range line {
		switch c {
		case ' ', '\t', '\r', '\n', '\v', '\f':
		default:
			return false
		}
	}
	return true
}
