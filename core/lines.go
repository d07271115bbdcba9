package core

import (
	"bytes"
	"io"
	"sync/atomic"

	"github.com/e0dc0000/scribe/internal/freelist"
	"github.com/e0dc0000/scribe/internal/mem"
)

// LineReader cuts a JSONL input into regions of whole lines that may be
// parsed in place (ParseEntryOwned) and submitted without a copy (Intake
// does both). The input is read into blocks that are never written again
// while a line cut from them may be read: a line is a slice of its block,
// its capacity ending at the line, and a new block is started (the
// unfinished line moved to it) when one is full. That is what
// Pipeline.Submit asks of Raw: its caller never changes it afterwards,
// since the sinks' queues read it later.
//
// The host holds a Lease per line and the pipeline returns it
// (Entry.Lease); once every reference is back the block is reused for the
// next read. Reading into memory that is already mapped is what makes that
// worth it: a read into fresh memory pays a page fault per 4 KiB, which
// costs more than reading the file.
type LineReader struct {
	r     io.Reader
	block []byte
	lease *Lease // the current block's, when leasing
	start int    // where the unfinished line begins in block
	err   error
}

// lineBlock is the size of a block; a line longer than the rest of a block
// moves to a block of at least twice its size.
const lineBlock = 1 << 20

// minRead is the least room a block must have for the next read.
const minRead = 64 << 10

// regionRead bounds one read of ReadRegion: a region is a unit of work
// downstream (a parse job, a batch), and what waits in the queues
// between the reader and the sinks holds its block.
const regionRead = 256 << 10

// NewLineReader reads r.
func NewLineReader(r io.Reader) *LineReader {
	return &LineReader{r: r}
}

// next makes sure the block has room for a read, moving the unfinished
// line to a new block when it has not: a leased one, or, for a line longer
// than half a block, one of twice its size that the GC frees.
func (lr *LineReader) next() {
	if lr.block != nil && cap(lr.block)-len(lr.block) >= minRead {
		return
	}
	tail := lr.block[lr.start:]
	var nb []byte
	var nl *Lease
	if 2*len(tail) <= lineBlock {
		nl = getLease()
		nb = nl.buf[:len(tail)]
	} else {
		nb = make([]byte, len(tail), 2*len(tail))
	}
	copy(nb, tail)
	if lr.lease != nil {
		lr.lease.Release() // the reader's own reference on the old block
	}
	lr.block, lr.start, lr.lease = nb, 0, nl
}

// fill reads once into the block, at most max bytes.
func (lr *LineReader) fill(max int) error {
	n, err := lr.r.Read(lr.block[len(lr.block):min(cap(lr.block), len(lr.block)+max)])
	lr.block = lr.block[:len(lr.block)+n]
	return err
}

// ReadRegion reads once more and returns the complete lines that read
// brought as one region, each line ended by its newline (at the end of the
// input, a last line without one comes too, with io.EOF), and a Lease
// holding one reference on the region's block. The caller cuts the region
// into lines (CutLines), retains the lease once for each line it keeps
// (an Entry's Lease), and releases the region's reference. The region is
// empty when the read ended inside a line. A read error comes once the
// lines before it were returned.
func (lr *LineReader) ReadRegion() (region []byte, lease *Lease, err error) {
	if lr.err != nil {
		return nil, nil, lr.err
	}
	lr.next()
	err = lr.fill(regionRead)
	end := bytes.LastIndexByte(lr.block[lr.start:], '\n') + 1 + lr.start
	if err == io.EOF {
		end = len(lr.block)
	}
	if err != nil {
		lr.err = err
		if lr.lease != nil {
			defer func() { lr.lease.Release(); lr.lease = nil }()
		}
	}
	if end <= lr.start {
		return nil, nil, err
	}
	region = lr.block[lr.start:end:end]
	lr.start = end
	if lr.lease != nil {
		lr.lease.Retain(1)
	}
	return region, lr.lease, err
}

// CutLines appends region's lines to lines, without their newlines, each
// with its capacity ending at the line.
func CutLines(region []byte, lines [][]byte) [][]byte {
	for len(region) > 0 {
		i := bytes.IndexByte(region, '\n')
		if i < 0 {
			return append(lines, region[:len(region):len(region)])
		}
		lines = append(lines, region[:i:i])
		region = region[i+1:]
	}
	return lines
}

// Lease counts the references on a LineReader block; the block is reused
// once the count returns to zero. A nil *Lease is valid and does nothing
// (memory the garbage collector frees).
type Lease struct {
	buf  []byte
	refs atomic.Int64
}

// NewLease returns a lease with one reference on memory of the caller's
// (which is never reused: only LineReader blocks are). Tests and hosts that
// follow the protocol without a LineReader use it.
func NewLease() *Lease {
	l := &Lease{}
	l.refs.Store(1)
	return l
}

// Refs reports the references held.
func (l *Lease) Refs() int64 {
	if l == nil {
		return 0
	}
	return l.refs.Load()
}

// Retain adds n references.
func (l *Lease) Retain(n int) {
	if l != nil {
		l.refs.Add(int64(n))
	}
}

// Release returns one reference; the last one puts the block back for
// reuse. Releasing more than was retained is a bug that would let a block
// be overwritten while read: it panics.
func (l *Lease) Release() {
	if l == nil {
		return
	}
	switch n := l.refs.Add(-1); {
	case n == 0:
		putLease(l)
	case n < 0:
		panic("core: Lease released more often than retained")
	}
}

// freeBlocks keeps returned blocks for reuse, up to 64 (64 MiB), the one
// returned last first; more are left to the garbage collector.
var freeBlocks = freelist.Stack[*Lease]{Max: 64}

// getLease returns a block with one reference (the reader's).
func getLease() *Lease {
	l, ok := freeBlocks.Get()
	if !ok {
		l = &Lease{buf: make([]byte, lineBlock)}
		mem.Prefault(l.buf)
	}
	l.refs.Store(1)
	return l
}

func putLease(l *Lease) {
	if len(l.buf) != lineBlock {
		return // not a reader's block
	}
	freeBlocks.Put(l)
}
