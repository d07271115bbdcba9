package reader

// The read side: a transcript file into entries, and the SDK's offline
// readers (getSessionMessages, listSubagents, getSubagentMessages) over a
// config folder, with the SDK's rules for finding files and for large files.

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/transcript"
)

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
func ReadFile(path string, opt ReadOptions) ([]core.Entry, sessions.ReadReport, error) {
	out, rep, err := readFile(nil, path, opt, keepLine)
	return out.entries, rep, err
}

func readFile(fsys layout.FS, path string, opt ReadOptions, mode readMode) (readOut, sessions.ReadReport, error) {
	var rep sessions.ReadReport
	f, err := layout.FSOf(fsys).Open(path)
	if err != nil {
		return readOut{}, rep, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return readOut{}, rep, err
	}
	if !fi.Mode().IsRegular() {
		return readOut{}, rep, fmt.Errorf("read %s: not a regular file", path)
	}
	return readEntries(f, fi.Size(), path, opt, mode)
}

// ReadTranscript is ReadFile on size bytes of f (a file, or a sealed
// transcript decrypted in memory); path names it in errors.
func ReadTranscript(f io.ReaderAt, size int64, path string, opt ReadOptions) ([]core.Entry, sessions.ReadReport, error) {
	out, rep, err := readEntries(f, size, path, opt, keepLine)
	return out.entries, rep, err
}

// readEntries reads the entries of size bytes of f, each keeping what mode
// says, with the SDK's loader's rules: leading bytes up to ' ' are skipped,
// blank lines ignored, unparseable lines reported. A file over 5 MiB
// (unless opt.NoPrecompactSkip) is read from its last plain compact
// boundary on, and of its lines starting with {"type":"attribution-snapshot"
// only the last is kept, moved to the end.
func readEntries(f io.ReaderAt, size int64, path string, opt ReadOptions, mode readMode) (readOut, sessions.ReadReport, error) {
	var rep sessions.ReadReport
	r := &chunkReader{f: f, size: size, large: size > precompactSkipSize && !opt.NoPrecompactSkip, mode: mode}
	out, cut, err := r.read(&rep)
	rep.SkippedBytes = cut
	if err != nil {
		return out, rep, fmt.Errorf("read %s: %w", path, err)
	}
	if len(rep.Malformed) > 0 && cut > 0 {
		// Line numbers are counted from the cut; add the lines before it.
		before, err := countLines(f, cut)
		if err != nil {
			return readOut{}, rep, fmt.Errorf("read %s: %w", path, err)
		}
		for i := range rep.Malformed {
			rep.Malformed[i].Line += before
		}
	}
	return out, rep, nil
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

// cutsAt applies the SDK's test to the line starting at offset start (its
// bytes, without the newline that ends it): a line that starts with an
// attribution snapshot never cuts. A line that crosses one of the SDK's
// 1 MiB read chunks with 30 or more bytes before the edge is a candidate
// when it starts with {"type":"system"; any other line when
// "compact_boundary" starts within its first 256 bytes. A candidate cuts
// when it parses as a compact_boundary system row without preserved
// segment or messages.
func cutsAt(line []byte, start int64) bool {
	nl := start + int64(len(line))
	head := line[:min(len(line), boundaryWindow+len(boundaryMarker)-1)]
	if bytes.HasPrefix(head, snapshotPrefix) {
		return false
	}
	startChunk, nlChunk := start/loadChunk, nl/loadChunk
	if startChunk != nlChunk && nlChunk*loadChunk-start >= straddleMin {
		if !bytes.HasPrefix(head, systemPrefix) {
			return false
		}
	} else if i := markerAt(head); i < 0 || i >= boundaryWindow {
		return false
	}
	e, err := core.ParseEntryOwned(line)
	if err != nil {
		return false
	}
	return transcript.IsPlainCompactBoundary(&e)
}

// markerUnderscore is the offset of the underscore in boundaryMarker.
const markerUnderscore = 8

// markerAt is bytes.Index(head, boundaryMarker), looking for the marker's
// underscore, which the first bytes of a line seldom hold, where
// bytes.Index starts from its quote, which they hold every few bytes (it
// is done for every line of a large file).
func markerAt(head []byte) int {
	for i := markerUnderscore; i < len(head); i++ {
		k := bytes.IndexByte(head[i:], '_')
		if k < 0 {
			return -1
		}
		i += k
		if s := i - markerUnderscore; bytes.HasPrefix(head[s:], boundaryMarker) {
			return s
		}
	}
	return -1
}

// ReadEntries is ReadFile through the layout's FS.
func (l Layout) ReadEntries(path string, opt ReadOptions) ([]core.Entry, sessions.ReadReport, error) {
	out, rep, err := readFile(l.FS, path, opt, keepLine)
	return out.entries, rep, err
}
