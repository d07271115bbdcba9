package reader

// The whole-file reader the chunked engine replaced, kept as the oracle the
// engine is compared with (TestChunkedReadMatchesWholeFile).

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/transcript"
)

// oracleRead is ReadFile as it was before the chunked engine: the whole part after the cut in one buffer, parsed in one pass; the engine must return the same. It is on size bytes of f (a file, or a sealed
// transcript decrypted in memory); path names it in errors.
func oracleRead(f io.ReaderAt, size int64, path string, large bool) ([]core.Entry, sessions.ReadReport, error) {
	var rep sessions.ReadReport
	var start int64
	if large {
		var err error
		start, err = oracleCut(f, size)
		if err != nil {
			return nil, rep, fmt.Errorf("read %s: %w", path, err)
		}
	}
	rep.SkippedBytes = start
	buf := make([]byte, size-start)
	n, err := f.ReadAt(buf, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, rep, fmt.Errorf("read %s: %w", path, err)
	}
	buf = buf[:n]
	entries, err := oracleParse(buf, large, &rep)
	if err != nil {
		return nil, rep, fmt.Errorf("read %s: %w", path, err)
	}
	if len(rep.Malformed) > 0 && start > 0 {
		// Line numbers are counted from the cut; add the lines before it.
		before, err := countLines(f, start)
		if err != nil {
			return nil, rep, fmt.Errorf("read %s: %w", path, err)
		}
		for i := range rep.Malformed {
			rep.Malformed[i].Line += before
		}
	}
	return entries, rep, nil
}

// oracleParse splits buf into lines and parses them as the SDK's loader:
// leading bytes up to ' ' are skipped, blank lines ignored. With
// moveSnapshots, lines starting with {"type":"attribution-snapshot" are
// dropped except the last, which goes to the end.
func oracleParse(buf []byte, moveSnapshots bool, rep *sessions.ReadReport) ([]core.Entry, error) {
	entries := make([]core.Entry, 0, bytes.Count(buf, []byte{'\n'})+1)
	var snap []byte
	snapLine := 0
	parse := func(line []byte, no int) {
		i := 0
		for i < len(line) && line[i] <= ' ' {
			i++
		}
		if i == len(line) {
			return
		}
		e, err := core.ParseEntryOwned(line[i:])
		if err != nil {
			rep.Malformed = append(rep.Malformed, sessions.MalformedLine{Line: no, Err: err.Error()})
			return
		}
		if e.Type == core.TypeSystem && e.Subtype == "compact_boundary" {
			rep.Compactions++
		}
		entries = append(entries, e)
	}
	no := 0
	for len(buf) > 0 {
		no++
		nl := bytes.IndexByte(buf, '\n')
		var line []byte
		if nl < 0 {
			line, buf = buf, nil
			rep.Torn = true
		} else {
			line, buf = buf[:nl], buf[nl+1:]
		}
		if moveSnapshots && bytes.HasPrefix(line, snapshotPrefix) {
			snap, snapLine = line, no
			continue
		}
		parse(line, no)
	}
	rep.Lines = no
	if snap != nil {
		parse(snap, snapLine)
	}
	rep.Entries = len(entries)
	return entries, nil
}

// backReader reads a file backwards one aligned chunk at a time.
type backReader struct {
	f     io.ReaderAt
	size  int64
	buf   []byte
	start int64 // file offset of buf[0]; -1 when empty
}

func (b *backReader) load(idx int64) error {
	off := idx * loadChunk
	if b.start == off && b.buf != nil {
		return nil
	}
	n := int64(loadChunk)
	if b.size-off < n {
		n = b.size - off
	}
	if cap(b.buf) < loadChunk {
		b.buf = make([]byte, loadChunk)
	}
	got, err := b.f.ReadAt(b.buf[:n], off)
	if err != nil && !(errors.Is(err, io.EOF) && int64(got) == n) {
		b.start = -1
		return err
	}
	b.buf = b.buf[:n]
	b.start = off
	return nil
}

// lastNewline returns the offset of the last '\n' before pos, or -1.
func (b *backReader) lastNewline(pos int64) (int64, error) {
	for pos > 0 {
		if err := b.load((pos - 1) / loadChunk); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b.buf[:pos-b.start], '\n'); i >= 0 {
			return b.start + int64(i), nil
		}
		pos = b.start
	}
	return -1, nil
}

// readAt returns n bytes at off, from the chunk in hand when it has them.
func (b *backReader) readAt(off int64, n int) ([]byte, error) {
	if b.start >= 0 && off >= b.start && off+int64(n) <= b.start+int64(len(b.buf)) {
		return b.buf[off-b.start : off-b.start+int64(n)], nil
	}
	out := make([]byte, n)
	got, err := b.f.ReadAt(out, off)
	if got == n {
		return out, nil
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return nil, err
}

// oracleCut returns the offset of the last line of the file's first size
// bytes that the SDK's large-file loader takes as a plain compact boundary
// (0 when there is none), reading from the end.
func oracleCut(f io.ReaderAt, size int64) (int64, error) {
	b := &backReader{f: f, size: size, start: -1}
	nl, err := b.lastNewline(size)
	if err != nil {
		return 0, err
	}
	for nl >= 0 {
		prev, err := b.lastNewline(nl)
		if err != nil {
			return 0, err
		}
		start := prev + 1
		ok, err := oracleCutsHere(b, start, nl)
		if err != nil {
			return 0, err
		}
		if ok {
			return start, nil
		}
		nl = prev
	}
	return 0, nil
}

// oracleCutsHere applies the SDK's test to the line [start, nl): a line that
// starts with an attribution snapshot never cuts. A line that crosses a
// chunk edge with 30 or more bytes before the edge is a candidate when it
// starts with {"type":"system"; any other line when "compact_boundary"
// starts within its first 256 bytes. A candidate cuts when it parses as a
// compact_boundary system row without preserved segment or messages.
func oracleCutsHere(b *backReader, start, nl int64) (bool, error) {
	n := nl - start
	peek := int64(boundaryWindow + len(boundaryMarker) - 1)
	if n < peek {
		peek = n
	}
	head, err := b.readAt(start, int(peek))
	if err != nil {
		return false, err
	}
	if bytes.HasPrefix(head, snapshotPrefix) {
		return false, nil
	}
	startChunk, nlChunk := start/loadChunk, nl/loadChunk
	if startChunk != nlChunk && nlChunk*loadChunk-start >= straddleMin {
		if !bytes.HasPrefix(head, systemPrefix) {
			return false, nil
		}
	} else if i := bytes.Index(head, boundaryMarker); i < 0 || i >= boundaryWindow {
		return false, nil
	}
	line := make([]byte, n)
	if _, err := b.f.ReadAt(line, start); err != nil {
		return false, err
	}
	e, err := core.ParseEntryOwned(line)
	if err != nil {
		return false, nil
	}
	return transcript.IsPlainCompactBoundary(&e), nil
}
