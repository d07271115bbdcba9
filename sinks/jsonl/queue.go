package jsonl

import (
	"bytes"
	"sync"

	"golang.org/x/sys/unix"
)

// wqueue is one file's bytes waiting for a drain, kept in blocks that never
// move: appending never copies what is already queued (a growing slice
// would copy it again at every doubling), and a drain hands the blocks to
// one writev(2).
//
//	append ──► [block 1 MiB][block 1 MiB][block …] ──► writev ──► blocks back to the pool
//	           a line larger than a block gets a block of its own size
type wqueue struct {
	blocks [][]byte
	n      int // bytes queued
	lines  int // lines queued
}

const blockSize = 1 << 20

var blockPool = sync.Pool{New: func() any { b := make([]byte, 0, blockSize); return &b }}

func (q *wqueue) len() int { return q.n }

// add appends raw and a newline.
func (q *wqueue) add(raw []byte) {
	need := len(raw) + 1
	var last *[]byte
	if k := len(q.blocks); k > 0 && cap(q.blocks[k-1])-len(q.blocks[k-1]) >= need {
		last = &q.blocks[k-1]
	} else {
		var b []byte
		if need > blockSize {
			b = make([]byte, 0, need)
		} else {
			b = (*blockPool.Get().(*[]byte))[:0]
		}
		q.blocks = append(q.blocks, b)
		last = &q.blocks[len(q.blocks)-1]
	}
	*last = append(append(*last, raw...), '\n')
	q.n += need
	q.lines++
}

// take empties the queue and returns what it held.
func (q *wqueue) take() wqueue {
	out := *q
	*q = wqueue{}
	return out
}

// prepend puts back, in front, what a failed drain did not write.
func (q *wqueue) prepend(rest wqueue) {
	if rest.n == 0 {
		return
	}
	q.blocks = append(rest.blocks, q.blocks...)
	q.n += rest.n
	q.lines += rest.lines
}

// release gives the blocks back to the pool.
func (q *wqueue) release() {
	for _, b := range q.blocks {
		if cap(b) == blockSize {
			b = b[:0]
			blockPool.Put(&b)
		}
	}
	*q = wqueue{}
}

// maxIOV bounds the blocks given to one writev (IOV_MAX is 1024).
const maxIOV = 1024

// writeTo writes the queue to fd with as few writev calls as it can. On an
// error it returns what is left, trimmed to the byte where the write
// stopped, and the bytes and lines that were written.
func (q *wqueue) writeTo(fd int) (rest wqueue, written, lines int, err error) {
	blocks := q.blocks
	for len(blocks) > 0 {
		n, werr := unix.Writev(fd, blocks[:min(len(blocks), maxIOV)])
		if n > 0 {
			written += n
			for n > 0 {
				if n >= len(blocks[0]) {
					n -= len(blocks[0])
					blocks = blocks[1:]
					continue
				}
				blocks[0] = blocks[0][n:]
				n = 0
			}
		}
		if werr == unix.EINTR {
			continue
		}
		if werr != nil {
			left := wqueue{blocks: blocks, n: q.n - written}
			for _, b := range blocks {
				left.lines += bytes.Count(b, nl)
			}
			return left, written, q.lines - left.lines, werr
		}
	}
	return wqueue{}, written, q.lines, nil
}

var nl = []byte{'\n'}
