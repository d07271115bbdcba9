package jsonl

import (
	"bytes"
	"sync"

	"golang.org/x/sys/unix"
)

// wqueue is one file's bytes waiting for a drain, as the list of slices
// one writev(2) takes. A line of refMin bytes or more is not copied: the
// queue keeps a reference to the entry's own Raw. Shorter lines and every
// newline are copied into blocks that never move (appending never copies
// what is already queued), so a run of short lines still costs one slice.
//
//	add(long raw) ──► bufs: [raw][\n short short\n …][raw][\n …] ──► writev ──► blocks back to the pool
//	add(short)    ──► appended to the open segment of the current block ─┘
//
// Memory safety of the references. Raw is immutable once handed to the
// pipeline: Pipeline.Submit's caller must not change it afterwards, and
// core.Sink lets a sink keep it, unchanged, until its next Flush returns
// (which drains every queue: nothing is referenced after a successful
// Flush; a failed one keeps the lines queued, still unchanged, until a
// retry writes them). The bytes stay alive because the queue references
// them (the garbage collector, not a pool, frees them), so an input block
// of `scribe record` (readinput.go) lives until the last of its lines is
// written. What that pins is bounded by what is queued: every queued line
// was read after the previous drain, and Write drains at once above
// maxPending.
type wqueue struct {
	bufs   [][]byte // what writev writes, in order
	blocks [][]byte // the pool blocks the copies went to, released after the write
	seg    int      // start of the open segment in the last block
	n      int      // bytes queued
	lines  int      // lines queued
}

const (
	blockSize = 1 << 20
	// refMin is the shortest line queued by reference: below it, a copy
	// costs less than the slice it would add to writev.
	refMin = 1 << 10
)

var blockPool = sync.Pool{New: func() any { b := make([]byte, 0, blockSize); return &b }}

func (q *wqueue) len() int { return q.n }

// add queues raw and a newline. Raw must not change until it is written.
func (q *wqueue) add(raw []byte) {
	if len(raw) >= refMin {
		q.cut()
		q.bufs = append(q.bufs, raw)
		q.copy(nil)
	} else {
		q.copy(raw)
	}
	q.n += len(raw) + 1
	q.lines++
}

// copy appends raw and a newline to the open segment of the last block,
// starting a new block when it has no room.
func (q *wqueue) copy(raw []byte) {
	need := len(raw) + 1
	k := len(q.blocks)
	if k == 0 || cap(q.blocks[k-1])-len(q.blocks[k-1]) < need {
		q.cut()
		b := (*blockPool.Get().(*[]byte))[:0]
		q.blocks = append(q.blocks, b)
		q.seg = 0
		k++
	}
	q.blocks[k-1] = append(append(q.blocks[k-1], raw...), '\n')
}

// cut closes the open segment: it becomes a slice for writev.
func (q *wqueue) cut() {
	k := len(q.blocks)
	if k == 0 {
		return
	}
	b := q.blocks[k-1]
	if len(b) > q.seg {
		q.bufs = append(q.bufs, b[q.seg:len(b):len(b)])
		q.seg = len(b)
	}
}

// take empties the queue and returns what it held, ready to write.
func (q *wqueue) take() wqueue {
	q.cut()
	out := *q
	*q = wqueue{}
	return out
}

// prepend puts back, in front, what a failed drain did not write. The
// blocks go with it: they are released once all of it is written.
func (q *wqueue) prepend(rest wqueue) {
	if rest.n == 0 {
		rest.release()
		return
	}
	q.cut()
	q.bufs = append(rest.bufs, q.bufs...)
	if len(q.blocks) == 0 && len(rest.blocks) > 0 {
		// rest's last block becomes the last: its bytes are all in bufs,
		// so a new segment starts after them.
		q.seg = len(rest.blocks[len(rest.blocks)-1])
	}
	q.blocks = append(rest.blocks, q.blocks...)
	q.n += rest.n
	q.lines += rest.lines
}

// release gives the blocks back to the pool; the references are dropped.
func (q *wqueue) release() {
	for _, b := range q.blocks {
		b = b[:0]
		blockPool.Put(&b)
	}
	*q = wqueue{}
}

// maxIOV bounds the slices given to one writev (IOV_MAX is 1024).
const maxIOV = 1024

// writeTo writes the queue to fd with as few writev calls as it can. On an
// error it returns what is left, trimmed to the byte where the write
// stopped (it owns the blocks), and the bytes and lines that were written.
// On success the queue still owns its blocks: release them.
func (q *wqueue) writeTo(fd int) (rest wqueue, written, lines int, err error) {
	bufs := q.bufs
	for len(bufs) > 0 {
		n, werr := unix.Writev(fd, bufs[:min(len(bufs), maxIOV)])
		if n > 0 {
			written += n
			for n > 0 {
				if n >= len(bufs[0]) {
					n -= len(bufs[0])
					bufs = bufs[1:]
					continue
				}
				bufs[0] = bufs[0][n:]
				n = 0
			}
		}
		if werr == unix.EINTR {
			continue
		}
		if werr != nil {
			left := wqueue{bufs: bufs, blocks: q.blocks, n: q.n - written}
			if len(left.blocks) > 0 {
				left.seg = len(left.blocks[len(left.blocks)-1])
			}
			for _, b := range bufs {
				left.lines += bytes.Count(b, nl)
			}
			q.blocks = nil // left owns them now
			return left, written, q.lines - left.lines, werr
		}
	}
	return wqueue{}, written, q.lines, nil
}

var nl = []byte{'\n'}
