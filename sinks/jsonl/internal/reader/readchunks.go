package reader

// The read engine: a transcript in chunks, parsed by one worker per core,
// from the end of the file towards its start, so that a large file whose
// last plain compact boundary sits near its end is read no further back
// than that boundary, and a file with none is read once, on every core.
//
// A line belongs to the chunk its first byte is in; a worker reads past its
// chunk's end to finish its last line. What a line means never depends on
// the chunk that read it: the SDK's 1 MiB read chunks, which decide how a
// boundary straddling them is recognised, are counted from the file's start
// (loadChunk), not from these.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/jsonv"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/transcript"
)

// Chunk sizes: the last chunk is small so that a boundary near the end is
// found after little work; each chunk further back doubles, up to
// chunkMax. Tests set them smaller to put chunk edges everywhere.
var (
	chunkFirst int64 = 256 << 10
	chunkMax   int64 = 512 << 10
)

// readMode says what an entry keeps of its line.
type readMode int

const (
	// keepLine: the entry's Raw is its whole line (ReadFile).
	keepLine readMode = iota
	// keepRebuild: no entries, only the rows of the conversation rebuild
	// (transcript.RowBuilder), holding copies of the members it reads:
	// enough for the SDK's message readers, a fraction of the memory when
	// tool output or progress rows make up the file, and each line is read
	// once.
	keepRebuild
)

// chunkResult is what one worker made of the lines starting in its chunk,
// from its last cut on (large files) or from its first line.
type chunkResult struct {
	entries   []core.Entry             // keepLine
	rows      []transcript.Row         // keepRebuild
	malformed []sessions.MalformedLine // numbered from the chunk's first line (or its cut) as 1
	lines     int
	torn      bool
	compact   int
	cut       bool  // a plain compact boundary the SDK loads from starts here
	cutStart  int64 // its offset
	snap      []byte
	snapLine  int
	err       error
}

type chunkReader struct {
	f     io.ReaderAt
	size  int64
	large bool // cut at the last plain compact boundary, move snapshots
	mode  readMode
}

// readOut is what read returns: entries (keepLine) or rows (keepRebuild).
type readOut struct {
	entries []core.Entry
	rows    []transcript.Row
}

// read returns what the file holds and the offset of the line reading
// started from (the last plain compact boundary of a large file, or 0).
func (r *chunkReader) read(rep *sessions.ReadReport) (readOut, int64, error) {
	bounds := chunkBounds(r.size)
	n := len(bounds) - 1
	res := make([]chunkResult, n)
	// Chunks are taken from the last one back. Once a chunk holds a cut,
	// the chunks before it are not needed: skipped when not started.
	var next atomic.Int64
	next.Store(int64(n))
	var cutAt atomic.Int64
	cutAt.Store(-1)
	workers := runtime.GOMAXPROCS(0)
	if workers > n {
		workers = n
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf, arena []byte
			var rb transcript.RowBuilder
			if r.mode == keepRebuild {
				// One buffer a worker, with room for the line running past
				// a chunk's end in most files.
				buf = make([]byte, 0, min(chunkMax, r.size)+64<<10+1)
			}
			for {
				j := next.Add(-1)
				if j < 0 || (r.large && cutAt.Load() > j) {
					return
				}
				if r.mode == keepLine {
					buf = nil // entries keep their chunk's bytes
				}
				res[j], buf, arena = r.chunk(bounds[j], bounds[j+1], buf, arena, &rb)
				if res[j].cut {
					for {
						c := cutAt.Load()
						if c >= j || cutAt.CompareAndSwap(c, j) {
							break
						}
					}
				}
			}
		}()
	}
	wg.Wait()

	from, cut := 0, int64(0)
	if c := cutAt.Load(); c >= 0 {
		from, cut = int(c), res[c].cutStart
	}
	var out readOut
	total := 0
	for j := from; j < n; j++ {
		if res[j].err != nil {
			return out, cut, res[j].err
		}
		total += len(res[j].entries) + len(res[j].rows)
	}
	if r.mode == keepLine {
		out.entries = make([]core.Entry, 0, total+1)
	} else {
		out.rows = make([]transcript.Row, 0, total+1)
	}
	var snap []byte
	snapLine, base := 0, 0
	for j := from; j < n; j++ {
		c := &res[j]
		out.entries = append(out.entries, c.entries...)
		out.rows = append(out.rows, c.rows...)
		for _, m := range c.malformed {
			m.Line += base
			rep.Malformed = append(rep.Malformed, m)
		}
		if c.snap != nil {
			snap, snapLine = c.snap, base+c.snapLine
		}
		rep.Compactions += c.compact
		rep.Torn = rep.Torn || c.torn
		base += c.lines
		res[j] = chunkResult{}
	}
	rep.Lines = base
	if snap != nil {
		if r.mode == keepLine {
			if e, ok := r.parseLine(snap, snapLine, &rep.Malformed); ok {
				if isCompaction(&e) {
					rep.Compactions++
				}
				out.entries = append(out.entries, e)
			}
		} else if row, _, compaction, ok := r.parseRebuild(snap, snapLine, nil, new(transcript.RowBuilder), &rep.Malformed); ok {
			if compaction {
				rep.Compactions++
			}
			out.rows = append(out.rows, row)
		}
	}
	rep.Entries = len(out.entries) + len(out.rows)
	return out, cut, nil
}

func isCompaction(e *core.Entry) bool {
	return e.IsCompactBoundary()
}

// chunkBounds splits [0, size) into chunks growing from the end: the last
// one chunkFirst long, each before it twice as long up to chunkMax.
func chunkBounds(size int64) []int64 {
	var rev []int64
	end, n := size, chunkFirst
	for end > 0 {
		rev = append(rev, end)
		end -= n
		if n < chunkMax {
			n *= 2
			if n > chunkMax {
				n = chunkMax
			}
		}
	}
	bounds := make([]int64, 0, len(rev)+1)
	bounds = append(bounds, 0)
	for i := len(rev) - 1; i >= 0; i-- {
		bounds = append(bounds, rev[i])
	}
	if len(bounds) == 1 {
		bounds = append(bounds, 0) // an empty file: one empty chunk
	}
	return bounds
}

// chunk reads the lines starting in [a, b), with buf as its buffer (reused
// in keepRebuild mode) and arena for rows (appended to, never overwritten),
// and returns both for the next chunk.
func (r *chunkReader) chunk(a, b int64, buf, arena []byte, rb *transcript.RowBuilder) (chunkResult, []byte, []byte) {
	var c chunkResult
	// Read from a-1: whether byte a-1 is a newline says if a line starts
	// at a.
	from := a
	if a > 0 {
		from = a - 1
	}
	buf, err := readRange(r.f, from, b, buf[:0])
	if err != nil {
		c.err = err
		return c, buf, arena
	}
	pos := int64(0) // offset in buf of the next line's start
	if a > 0 {
		nl := bytes.IndexByte(buf, '\n')
		if nl < 0 {
			// A line that started before a runs past b: nothing starts here.
			return c, buf, arena
		}
		pos = int64(nl) + 1
	}
	for from+pos < b && pos < int64(len(buf)) {
		start := from + pos
		nl := bytes.IndexByte(buf[pos:], '\n')
		more := int64(64 << 10)
		for nl < 0 && from+int64(len(buf)) < r.size {
			// The line runs past what was read: read on until its newline,
			// in steps doubling from 64 KiB.
			grown, err := readRange(r.f, from+int64(len(buf)), min(from+int64(len(buf))+more, r.size), buf)
			if err != nil {
				c.err = err
				return c, buf, arena
			}
			scanned := len(buf) - int(pos)
			if len(grown) == len(buf) {
				break // the file ends sooner than it did: a torn last line
			}
			buf = grown
			if i := bytes.IndexByte(buf[int(pos)+scanned:], '\n'); i >= 0 {
				nl = scanned + i
			}
			more *= 2
		}
		var line []byte
		if nl < 0 {
			line = buf[pos:]
			pos = int64(len(buf))
			c.torn = true
		} else {
			line = buf[pos : pos+int64(nl)]
			pos += int64(nl) + 1
			if r.large && cutsAt(line, start) {
				// Everything before this line is not loaded.
				c = chunkResult{cut: true, cutStart: start}
			}
		}
		c.lines++
		if r.large && bytes.HasPrefix(line, snapshotPrefix) {
			c.snap, c.snapLine = bytes.Clone(line), c.lines
			continue
		}
		if r.mode == keepRebuild {
			var row transcript.Row
			var compaction, ok bool
			row, arena, compaction, ok = r.parseRebuild(line, c.lines, arena, rb, &c.malformed)
			if ok {
				if compaction {
					c.compact++
				}
				c.rows = append(c.rows, row)
			}
		} else if e, ok := r.parseLine(line, c.lines, &c.malformed); ok {
			if isCompaction(&e) {
				c.compact++
			}
			c.entries = append(c.entries, e)
		}
	}
	return c, buf, arena
}

// readRange appends the bytes [from, to) of f to buf: fewer when the file
// ends before to (it was cut while being read: what is there is read, as
// a whole-file read would).
func readRange(f io.ReaderAt, from, to int64, buf []byte) ([]byte, error) {
	n := int(to - from)
	if n <= 0 {
		return buf, nil
	}
	buf = growTo(buf, len(buf)+n)
	got, err := f.ReadAt(buf[len(buf)-n:], from)
	if got < n && err != nil && !errors.Is(err, io.EOF) {
		return buf[:len(buf)-n+got], fmt.Errorf("read at %d: %w", from, err)
	}
	return buf[:len(buf)-n+got], nil
}

func growTo(buf []byte, n int) []byte {
	if cap(buf) >= n {
		return buf[:n]
	}
	nb := make([]byte, n, n+n/4)
	copy(nb, buf)
	return nb
}

// trimLine removes what the SDK's loader ignores around a line: leading
// bytes up to ' ', a trailing "\n" or "\r".
func trimLine(line []byte) []byte {
	i := 0
	for i < len(line) && line[i] <= ' ' {
		i++
	}
	return line[i:]
}

func (r *chunkReader) parseLine(line []byte, no int, bad *[]sessions.MalformedLine) (core.Entry, bool) {
	line = trimLine(line)
	if len(line) == 0 {
		return core.Entry{}, false
	}
	e, err := core.ParseEntryOwned(line)
	if err != nil {
		*bad = append(*bad, sessions.MalformedLine{Line: no, Err: err.Error()})
		return core.Entry{}, false
	}
	return e, true
}

// parseRebuild checks the line as ParseEntryOwned does and returns its
// row, the members the rebuild reads copied into arena, and whether the
// line is a compact boundary.
func (r *chunkReader) parseRebuild(line []byte, no int, arena []byte, rb *transcript.RowBuilder, bad *[]sessions.MalformedLine) (row transcript.Row, _ []byte, compaction, ok bool) {
	line = trimLine(line)
	if len(line) == 0 {
		return row, arena, false, false
	}
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	if len(arena)+len(line) > cap(arena) {
		// A new arena, so that the line's values never move; rows before
		// keep theirs.
		arena = make([]byte, 0, max(64<<10, len(line)))
	}
	start := len(arena)
	var typ, subtype []byte // the last ones, as JSON.parse keeps
	ok = jsonv.EachMember(line, func(key, val []byte) {
		i := transcript.Field(key)
		if i < 0 {
			return
		}
		switch {
		case string(key) == "type":
			typ = val
		case string(key) == "subtype":
			subtype = val
		}
		if rb.Same(i, val) {
			return
		}
		at := len(arena)
		arena = append(arena, val...)
		rb.Set(i, arena[at:len(arena):len(arena)])
	})
	if !ok {
		rb.Reset()
		_, err := core.ParseEntryOwned(line)
		if err == nil {
			err = errors.New("malformed entry")
		}
		*bad = append(*bad, sessions.MalformedLine{Line: no, Err: err.Error()})
		return row, arena[:start], false, false
	}
	return rb.Row(), arena, isString(typ, core.TypeSystem) && isString(subtype, core.SubtypeCompactBoundary), true
}

// isString reports whether the JSON value v is the string s, decoding it
// only when it holds an escape.
func isString(v []byte, s string) bool {
	return len(v) >= 2 && v[0] == '"' && jsonv.KeyIs(v, s)
}
