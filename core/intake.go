package core

import (
	"context"
	"io"
	"runtime"

	"github.com/e0dc0000/scribe/internal/freelist"
)

// Intake is the fast way in for a host that reads JSONL: the input is read
// in regions of whole lines into leased blocks (LineReader.ReadRegion), a
// worker per core cuts each region into lines and parses them in place,
// and the lines come back in input order, a region at a time, from one
// goroutine. No line is copied: each parsed entry keeps a slice of its
// block and holds a reference on the block's lease, which Submit gives
// back once every sink wrote it, so that the block is reused.
//
//	read (one goroutine) ──► region ──┬──► parse worker ──┐
//	                         │        └──► parse worker ──┤
//	                         └──► in order ───────────────┴──► emit(lines)

// Line is one line of an input read by Intake: a parsed entry (its Lease
// set), a blank line, or one that is not a valid entry (Err wraps
// ErrMalformed).
type Line struct {
	Entry Entry
	Err   error
	Blank bool
}

// IntakeWorkers is the number of parse workers Intake starts for workers
// <= 0: one per core, at most 4.
func IntakeWorkers() int { return min(max(runtime.GOMAXPROCS(0), 1), 4) }

// intakeRegion is one region on its way through the workers.
type intakeRegion struct {
	region []byte
	lease  *Lease
	lines  []Line
	done   chan struct{}
}

// lineSlices and cutSlices keep the slices regions were parsed into once
// emit returned: reused, they cost no allocation, no collection and no
// page faults per region (a region of 256 KiB holds some 100 lines; Line
// is some 300 bytes).
var (
	lineSlices = freelist.Stack[[]Line]{Max: 64}
	cutSlices  = freelist.Stack[[][]byte]{Max: 64}
)

func (c *intakeRegion) parse(in *interner) {
	cuts, _ := cutSlices.Get()
	raw := CutLines(c.region, cuts[:0])
	c.lines, _ = lineSlices.Get()
	if cap(c.lines) < len(raw) {
		c.lines = make([]Line, len(raw))
	}
	c.lines = c.lines[:len(raw)]
	for i, l := range raw {
		if isBlankLine(l) {
			c.lines[i].Blank = true
			continue
		}
		c.lines[i].Entry, c.lines[i].Err = parseOwned(l, in)
		if c.lines[i].Err == nil && c.lease != nil {
			c.lease.Retain(1)
			c.lines[i].Entry.Lease = c.lease
		}
	}
	freelist.Recycle(&cutSlices, raw)
	c.lease.Release() // the region's own
	close(c.done)
}

// recycle keeps c's lines for another region, once emit returned.
func (c *intakeRegion) recycle() {
	freelist.Recycle(&lineSlices, c.lines)
	c.lines = nil
}

// Intake reads r to its end and calls emit with each region's lines, in
// input order (a live stream's lines as they arrive: a region is what one
// read brought). The slice is Intake's again once emit returns (it is
// reused): emit copies the Lines it keeps. emit owns the entries: every
// parsed entry's lease reference must be given back, by Submit or by
// Entry.Lease.Release. It
// returns nil at the end of r, a read error once the lines before it were
// emitted, emit's error, or ctx's. workers <= 0 means IntakeWorkers().
func Intake(ctx context.Context, r io.Reader, workers int, emit func([]Line) error) error {
	if workers <= 0 {
		workers = IntakeWorkers()
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	work := make(chan *intakeRegion, 2*workers)
	ordered := make(chan *intakeRegion, 4*workers)
	for range workers {
		go func() {
			in := newInterner()
			for c := range work {
				c.parse(in)
			}
		}()
	}
	readErr := make(chan error, 1)
	go func() {
		defer close(ordered)
		defer close(work)
		readErr <- intakeRead(ctx, r, work, ordered)
	}()
	for c := range ordered {
		select {
		case <-c.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		err := emit(c.lines)
		c.recycle()
		if err != nil {
			stop()
			for range ordered { // let the reader end
			}
			return err
		}
	}
	if err := <-readErr; err != nil && err != io.EOF {
		return err
	}
	return ctx.Err()
}

// intakeRead reads regions and queues them for parsing and in order.
func intakeRead(ctx context.Context, r io.Reader, work, ordered chan<- *intakeRegion) error {
	lr := NewLineReader(r)
	for {
		region, lease, err := lr.ReadRegion()
		if len(region) > 0 {
			c := &intakeRegion{region: region, lease: lease, done: make(chan struct{})}
			select {
			case ordered <- c:
			case <-ctx.Done():
				lease.Release()
				return ctx.Err()
			}
			select {
			case work <- c:
			case <-ctx.Done():
				close(c.done)
				lease.Release()
				return ctx.Err()
			}
		}
		if err != nil {
			return err
		}
	}
}

func isBlankLine(line []byte) bool {
	for _, c := range line {
		switch c {
		case ' ', '\t', '\r', '\n', '\v', '\f':
		default:
			return false
		}
	}
	return true
}
