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

// Reading the input of record: lines are cut out of large blocks read
// straight from the file (no copy per line: an entry keeps a slice of its
// block), parsed by one worker per core, and handed on in input order.
//
//	split (one goroutine) ──► chunk ──┬──► parse worker ──┐
//	                          │       └──► parse worker ──┤ (each closes chunk.done)
//	                          └──► ordered ───────────────┴──► readInputs: counts, sends inputs in order

// chunkLines bounds the lines one parse job holds.
const chunkLines = 512

type lineResult struct {
	entry core.Entry
	err   error
	blank bool
}

type chunk struct {
	file  string
	first int64 // the number, in its file, of its first line
	lines [][]byte
	res   []lineResult
	eof   bool  // the end of file: no lines
	err   error // a read error ends the input
	done  chan struct{}
}

func (c *chunk) parse() {
	c.res = make([]lineResult, len(c.lines))
	for i, l := range c.lines {
		if isBlank(l) {
			c.res[i].blank = true
			continue
		}
		c.res[i].entry, c.res[i].err = core.ParseEntryOwned(l)
	}
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
	var seq int64
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
			n := c.first + int64(i)
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
		if len(c.lines) == 0 {
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
	var line int64 = 1
	cur := &chunk{file: display, first: line, done: make(chan struct{})}
	next := func() bool {
		if len(cur.lines) == 0 {
			return true
		}
		c := cur
		line += int64(len(c.lines))
		cur = &chunk{file: display, first: line, done: make(chan struct{})}
		return emit(c)
	}
	lr := core.NewLineReader(r)
	var lines [][]byte
	for {
		var err error
		lines, err = lr.Read(lines[:0])
		for _, l := range lines {
			cur.lines = append(cur.lines, l)
			if len(cur.lines) == chunkLines && !next() {
				return false
			}
		}
		clear(lines)
		// What one read brought goes on now: a live stream must not wait
		// for a chunk to fill.
		if !next() {
			return false
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
