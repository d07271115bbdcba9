package writer

import (
	"bytes"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/freelist"
	"github.com/e0dc0000/scribe/internal/mem"
)

// wqueue is one file's bytes waiting for a drain, as the segments one
// writev(2) writes. A line of copyBelow bytes or more whose entry has a
// Lease is not copied: its segment is the entry's own Raw, followed by a
// shared newline, and the queue holds a reference on the lease until the
// line is written (core.Sink). Other lines are copied, with their
// newlines, into blocks of the queue's own (a line longer than a block
// into one of its own size), and consecutive short lines share one
// segment. Appending never moves what is already queued.
//
//	add ──► [Raw]["\n"][block: line\nline\nline\n][Raw]["\n"] … ──► writev ──► leases and blocks returned
type wqueue struct {
	segs   [][]byte      // what the drain writes, in order
	owned  [][]byte      // the blocks the short lines were copied into
	leases []*core.Lease // one reference per line written from its own bytes
	// cur is the block being filled; curEnd is one more than the index in
	// segs of the segment that ends at its end (0: none). A short line
	// extends that segment when it is still the last one.
	cur    []byte
	curEnd int
	n      int // bytes queued
	lines  int // lines queued
}

const (
	blockSize = 64 << 10
	// copyBelow is the size under which a line is copied rather than
	// referenced: two iovecs per tiny line would cost the kernel more
	// than the copy.
	copyBelow = 1 << 10
)

var newline = []byte{'\n'} // shared, never written to

// freeBlocks keeps written blocks for the next short lines, up to 16 MiB,
// the one written last first (internal/freelist says why).
var freeBlocks = freelist.Stack[[]byte]{Max: 256}

func getBlock() []byte {
	if b, ok := freeBlocks.Get(); ok {
		return b[:0]
	}
	b := make([]byte, blockSize)
	mem.Prefault(b)
	return b[:0]
}

func putBlock(b []byte) {
	if cap(b) != blockSize {
		return
	}
	freeBlocks.Put(b[:0])
}

func (q *wqueue) len() int { return q.n }

// add queues raw and a newline. A long raw with a lease is kept, not
// copied: the queue takes a reference on the lease.
func (q *wqueue) add(raw []byte, lease *core.Lease) {
	if q.segs == nil {
		q.segs, _ = segSlices.Get()
		q.owned, _ = ownedSlices.Get()
		q.leases, _ = leaseSlices.Get()
	}
	need := len(raw) + 1
	q.n += need
	q.lines++
	if len(raw) >= copyBelow && lease != nil {
		lease.Retain(1)
		q.leases = append(q.leases, lease)
		q.segs = append(q.segs, raw, newline)
		return
	}
	if need > blockSize {
		// A long line of a host that gives no lease: a copy of its own.
		q.segs = append(q.segs, append(append(make([]byte, 0, need), raw...), '\n'))
		return
	}
	if q.cur == nil || cap(q.cur)-len(q.cur) < need {
		q.cur, q.curEnd = getBlock(), 0
		q.owned = append(q.owned, q.cur)
	}
	start := len(q.cur)
	q.cur = append(append(q.cur, raw...), '\n')
	if q.curEnd > 0 && q.curEnd == len(q.segs) {
		s := q.segs[q.curEnd-1]
		q.segs[q.curEnd-1] = s[:len(s)+need]
		return
	}
	// Its capacity runs to the block's end: the next short line extends it.
	q.segs = append(q.segs, q.cur[start:])
	q.curEnd = len(q.segs)
}

// take empties the queue and returns what it held.
func (q *wqueue) take() wqueue {
	out := *q
	*q = wqueue{}
	return out
}

// prepend puts back, in front, what a failed drain did not write (with
// every block and reference the taken queue held).
func (q *wqueue) prepend(rest wqueue) {
	if rest.n == 0 {
		rest.release()
		return
	}
	q.segs = append(rest.segs, q.segs...)
	q.owned = append(rest.owned, q.owned...)
	q.leases = append(rest.leases, q.leases...)
	if q.curEnd > 0 {
		q.curEnd += len(rest.segs)
	}
	q.n += rest.n
	q.lines += rest.lines
}

// release returns the blocks and the references; the queue must have been
// written (or be dropped).
func (q *wqueue) release() {
	for _, b := range q.owned {
		putBlock(b)
	}
	for _, l := range q.leases {
		l.Release()
	}
	freelist.Recycle(&segSlices, q.segs)
	freelist.Recycle(&ownedSlices, q.owned)
	freelist.Recycle(&leaseSlices, q.leases)
	*q = wqueue{}
}

// The slices of written queues, kept for the next ones: a queue is
// taken at every drain, and growing new ones each time cost as much as
// the copies (internal/freelist).
var (
	segSlices   = freelist.Stack[[][]byte]{Max: 256}
	ownedSlices = freelist.Stack[[][]byte]{Max: 256}
	leaseSlices = freelist.Stack[[]*core.Lease]{Max: 256}
	iovecs      = freelist.Stack[[]unix.Iovec]{Max: 4}
)

// writev is unix.Writev with an iovec array of its own, reused: unix.Writev
// allocates one per call.
func writev(fd int, segs [][]byte) (int, error) {
	iov, _ := iovecs.Get()
	defer func() { freelist.Recycle(&iovecs, iov) }()
	for _, s := range segs {
		if len(s) == 0 {
			continue
		}
		v := unix.Iovec{Base: &s[0]}
		v.SetLen(len(s))
		iov = append(iov, v)
	}
	if len(iov) == 0 {
		return 0, nil
	}
	n, _, errno := unix.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
	if errno != 0 {
		return int(n), errno
	}
	return int(n), nil
}

// maxIOV bounds the segments given to one writev (IOV_MAX is 1024).
const maxIOV = 1024

// writeTo writes the queue to fd with as few writev calls as it can. On an
// error it returns what is left, trimmed to the byte where the write
// stopped and holding all the queue's blocks and references (the caller
// puts it back, it does not release q), and the bytes and lines written.
func (q *wqueue) writeTo(fd int) (rest wqueue, written, lines int, err error) {
	segs := q.segs
	for len(segs) > 0 {
		n, werr := writev(fd, segs[:min(len(segs), maxIOV)])
		if n > 0 {
			written += n
			for n > 0 {
				if n >= len(segs[0]) {
					n -= len(segs[0])
					segs = segs[1:]
					continue
				}
				segs[0] = segs[0][n:]
				n = 0
			}
		}
		if werr == unix.EINTR {
			continue
		}
		if werr != nil {
			left := wqueue{segs: segs, owned: q.owned, leases: q.leases, n: q.n - written}
			for _, s := range segs {
				left.lines += bytes.Count(s, newline)
			}
			return left, written, q.lines - left.lines, werr
		}
	}
	return wqueue{}, written, q.lines, nil
}
