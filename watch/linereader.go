package watch

import (
	"bytes"
	"errors"
	"io"
)

// DefaultMaxLine is the longest line watch mirrors when the configuration
// says nothing (watch { max_line_bytes }): a longer one is counted
// (OverLimit) and passed over, never held in memory.
const DefaultMaxLine = 256 << 20

// lineReader cuts the complete lines of a file from an offset up to a
// size. Each byte is searched for a newline once: a line that fits in
// the read buffer is a view of it; a longer one is found by reading on
// through the same buffer, then read whole into a buffer of its exact
// length (so a line of L bytes costs L plus the read buffer, and the
// bytes after a torn long line's start are not searched again on the next
// read: nlAt/nlFree). A line past maxLine is never read into memory: its
// length comes back (pendingLine.over).
type lineReader struct {
	fh      io.ReaderAt
	off     int64 // where the next line starts
	size    int64
	maxLine int64
	buf     []byte
	lo, hi  int // buf[lo:hi] holds the file's bytes from off on
	scanPos int // buf[lo:scanPos] holds no newline
	// nlAt, nlFree: the file's bytes [nlAt, nlAt+nlFree) hold no newline
	// (a long line's start, still torn at the last read).
	nlAt, nlFree int64
	read         int64 // bytes read
	scanned      int64 // bytes searched for a newline
}

func newLineReader(fh io.ReaderAt, off, size, maxLine int64) *lineReader {
	return &lineReader{fh: fh, off: off, size: size, maxLine: maxLine, buf: make([]byte, max(min(size-off, readChunk), 0))}
}

// next returns the next complete line; ok is false at the end or at a
// torn last line.
func (r *lineReader) next() (pendingLine, bool, error) {
	for r.off < r.size {
		if r.nlFree > 0 && r.nlAt == r.off && r.lo+int(min(r.nlFree, int64(r.hi-r.lo))) > r.scanPos {
			r.scanPos = r.lo + int(min(r.nlFree, int64(r.hi-r.lo)))
		}
		if r.scanPos < r.hi {
			i := bytes.IndexByte(r.buf[r.scanPos:r.hi], '\n')
			if i >= 0 {
				r.scanned += int64(i + 1)
				nl := r.scanPos + i
				pl := pendingLine{raw: r.buf[r.lo:nl], start: r.off, end: r.off + int64(nl-r.lo) + 1}
				if l := int64(nl - r.lo); l > r.maxLine {
					pl.raw, pl.over = nil, l
				}
				r.lo, r.scanPos, r.off = nl+1, nl+1, pl.end
				return pl, true, nil
			}
			r.scanned += int64(r.hi - r.scanPos)
			r.scanPos = r.hi
		}
		have := r.hi - r.lo
		if r.off+int64(have) >= r.size {
			break // a torn last line: wait for its end
		}
		if r.nlFree > 0 && r.nlAt == r.off && r.nlFree > int64(have) && r.nlFree >= int64(len(r.buf)) {
			return r.long() // known longer than the buffer: no need to fill it first
		}
		if r.lo > 0 {
			// The start of a line, shorter than the buffer: moved once.
			copy(r.buf, r.buf[r.lo:r.hi])
			r.hi, r.scanPos, r.lo = have, r.scanPos-r.lo, 0
		}
		if r.hi == len(r.buf) {
			return r.long()
		}
		n, err := r.fh.ReadAt(r.buf[r.hi:min(len(r.buf), r.hi+int(r.size-r.off-int64(r.hi)))], r.off+int64(r.hi))
		r.read += int64(n)
		r.hi += n
		if err != nil && !errors.Is(err, io.EOF) {
			return pendingLine{}, false, err
		}
		if n == 0 {
			break // shorter than it was: the next look sees why
		}
	}
	r.remember()
	return pendingLine{}, false, nil
}

// remember notes, at a torn last line, how much of it holds no newline.
func (r *lineReader) remember() {
	if free := int64(r.scanPos - r.lo); r.nlAt != r.off || free > r.nlFree {
		r.nlAt, r.nlFree = r.off, free
	}
}

// long finds the end of a line longer than the buffer, reading on through
// the buffer from where the search stopped, then reads it whole into a
// buffer of its own (or, past maxLine, only says its length).
func (r *lineReader) long() (pendingLine, bool, error) {
	p := r.off + int64(r.scanPos-r.lo)
	if r.nlAt == r.off && r.off+r.nlFree > p {
		p = r.off + r.nlFree
	}
	r.lo, r.hi, r.scanPos = 0, 0, 0 // the buffer is used to search on
	nl := int64(-1)
	for p < r.size {
		n, err := r.fh.ReadAt(r.buf[:min(int64(len(r.buf)), r.size-p)], p)
		r.read += int64(n)
		if i := bytes.IndexByte(r.buf[:n], '\n'); i >= 0 {
			r.scanned += int64(i + 1)
			nl = p + int64(i)
			break
		}
		r.scanned += int64(n)
		p += int64(n)
		if err != nil && !errors.Is(err, io.EOF) {
			return pendingLine{}, false, err
		}
		if n == 0 {
			break
		}
	}
	if nl < 0 {
		r.nlAt, r.nlFree = r.off, p-r.off
		return pendingLine{}, false, nil
	}
	pl := pendingLine{start: r.off, end: nl + 1}
	r.off, r.nlFree = nl+1, 0
	if l := nl - pl.start; l > r.maxLine {
		pl.over = l
		return pl, true, nil
	}
	pl.raw, pl.owned = make([]byte, nl-pl.start), true
	n, err := r.fh.ReadAt(pl.raw, pl.start)
	r.read += int64(n)
	if n < len(pl.raw) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // cut while read: the next look sees why
		}
		return pendingLine{}, false, err
	}
	return pl, true, nil
}
