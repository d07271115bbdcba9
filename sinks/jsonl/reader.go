package jsonl

// The read side: a transcript file into entries, and the SDK's offline
// readers (getSessionMessages, listSubagents, getSubagentMessages) over a
// config folder, with the SDK's rules for finding files and for large files.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/transcript"
)

// ErrNotFound is returned when a session or subagent transcript is not in
// the config folder. It wraps core.ErrNotFound.
var ErrNotFound = fmt.Errorf("jsonl: %w", core.ErrNotFound)

const (
	// precompactSkipSize: files larger than this are loaded from their last
	// plain compact boundary on (the SDK's 5 MiB).
	precompactSkipSize = 5 << 20
	// loadChunk is the SDK's read size for large files; where a line crosses
	// a chunk edge changes how its boundary is recognised.
	loadChunk = 1 << 20
	// boundaryWindow: the marker must start within a line's first 256 bytes.
	boundaryWindow = 256
	// straddleMin: a line crossing a chunk edge with at least this many
	// bytes before the edge is judged by its first bytes only.
	straddleMin = 30
)

var (
	boundaryMarker = []byte(`"compact_boundary"`)
	snapshotPrefix = []byte(`{"type":"attribution-snapshot"`)
	systemPrefix   = []byte(`{"type":"system"`)
)

// MalformedLine is a line that was skipped because it is not a JSON object.
type MalformedLine struct {
	Line int // 1-based line number in the file
	Err  string
}

// ReadReport says what ReadFile read and what it skipped.
type ReadReport struct {
	// Lines is the number of lines read (after SkippedBytes), blank ones
	// included; Entries the number of entries returned.
	Lines, Entries int
	// Malformed lists the lines skipped as unparseable.
	Malformed []MalformedLine
	// Torn is true when the last line had no newline.
	Torn bool
	// SkippedBytes is the size of the part before the last plain compact
	// boundary of a large file, which was neither read into memory nor
	// parsed.
	SkippedBytes int64
	// Compactions counts the compact_boundary rows among the entries read.
	Compactions int
}

// ReadOptions tune ReadFile.
type ReadOptions struct {
	// NoPrecompactSkip reads a large file whole, as the SDK does with
	// CLAUDE_CODE_DISABLE_PRECOMPACT_SKIP set.
	NoPrecompactSkip bool
}

// ReadFile reads a transcript into entries in the order the SDK's loader
// sees them. Unparseable lines are skipped and reported. A file over 5 MiB
// is loaded from its last plain compact_boundary line on (found by scanning
// from the end, without parsing what comes before), with attribution
// snapshots moved to the end, as the SDK's loader does.
func ReadFile(path string, opt ReadOptions) ([]core.Entry, ReadReport, error) {
	var rep ReadReport
	f, err := os.Open(path)
	if err != nil {
		return nil, rep, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, rep, err
	}
	if !fi.Mode().IsRegular() {
		return nil, rep, fmt.Errorf("read %s: not a regular file", path)
	}
	return readTranscript(f, fi.Size(), path, opt)
}

// readTranscript is ReadFile on size bytes of f (a file, or a sealed
// transcript decrypted in memory); path names it in errors.
func readTranscript(f io.ReaderAt, size int64, path string, opt ReadOptions) ([]core.Entry, ReadReport, error) {
	var rep ReadReport
	large := size > precompactSkipSize && !opt.NoPrecompactSkip
	var start int64
	if large {
		var err error
		start, err = findCut(f, size)
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
	entries, err := parseLines(buf, large, &rep)
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

// parseLines splits buf into lines and parses them as the SDK's loader:
// leading bytes up to ' ' are skipped, blank lines ignored. With
// moveSnapshots, lines starting with {"type":"attribution-snapshot" are
// dropped except the last, which goes to the end.
func parseLines(buf []byte, moveSnapshots bool, rep *ReadReport) ([]core.Entry, error) {
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
			rep.Malformed = append(rep.Malformed, MalformedLine{Line: no, Err: err.Error()})
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

// countLines counts the newlines in the first n bytes of f.
func countLines(f io.ReaderAt, n int64) (int, error) {
	buf := make([]byte, loadChunk)
	count := 0
	for off := int64(0); off < n; {
		want := int64(len(buf))
		if n-off < want {
			want = n - off
		}
		got, err := f.ReadAt(buf[:want], off)
		count += bytes.Count(buf[:got], []byte{'\n'})
		off += int64(got)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return 0, err
		}
	}
	return count, nil
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

// findCut returns the offset of the last line of the file's first size
// bytes that the SDK's large-file loader takes as a plain compact boundary
// (0 when there is none), reading from the end.
func findCut(f io.ReaderAt, size int64) (int64, error) {
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
		ok, err := cutsHere(b, start, nl)
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

// cutsHere applies the SDK's test to the line [start, nl): a line that
// starts with an attribution snapshot never cuts. A line that crosses a
// chunk edge with 30 or more bytes before the edge is a candidate when it
// starts with {"type":"system"; any other line when "compact_boundary"
// starts within its first 256 bytes. A candidate cuts when it parses as a
// compact_boundary system row without preserved segment or messages.
func cutsHere(b *backReader, start, nl int64) (bool, error) {
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
