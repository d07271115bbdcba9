package usage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/internal/durable"
)

// File is one transcript whose usage is counted: where it is, and the
// session its rows count under (a subagent's file: its parent's).
type File struct {
	Path    string
	Session string
}

// Scan is what reading a set of transcripts gave: their usage rows, the
// rows with usage left out by reason, and what the cache did.
type Scan struct {
	// Files are the rows of each transcript, in the files' path order,
	// each's in line order (the cache's own rows: not to be changed).
	Files [][]Row
	Bad   map[string]int
	Cache CacheStats
}

// Rows points at every row, in order: the rows are not copied.
func (s *Scan) Rows() []*Row {
	n := 0
	for _, f := range s.Files {
		n += len(f)
	}
	out := make([]*Row, 0, n)
	for _, f := range s.Files {
		for i := range f {
			out = append(out, &f[i])
		}
	}
	return out
}

// CacheStats says what reading through the usage cache did.
type CacheStats struct {
	// Files is the number of transcripts looked at.
	Files int `json:"files"`
	// Unchanged were answered from the cache without reading them; Grown
	// had only what was appended since read; Read were read whole (new to
	// the cache, changed, shrunk or replaced).
	Unchanged int `json:"unchanged"`
	Grown     int `json:"grown"`
	Read      int `json:"read"`
	// Bytes is how many bytes of transcript were parsed.
	Bytes int64 `json:"bytes"`
	// Dropped counts the entries of files that are gone.
	Dropped int `json:"dropped"`
	// Discarded says why cache files were not used (corrupt, written by
	// another build), one reason each.
	Discarded []string `json:"discarded,omitempty"`
	// Saved is the number of cache files rewritten; SaveError why one
	// could not be ("" when none failed: the cache is never needed).
	Saved     int    `json:"saved"`
	SaveError string `json:"saveError,omitempty"`
}

// checkWindow is how many bytes at a file's start and before the end of
// its whole lines the cache checks before it reads only what follows.
const checkWindow = 4096

// racyWindow: a file changed this close to the moment it was looked at
// may change again within the same timestamp tick without its size,
// mtime or ctime changing, so its entry is checked against the file's
// bytes next time instead of trusted on its stat alone.
const racyWindow = time.Second

// entry is what the cache knows of one transcript: the version of the
// file it read (identity, size, times), how far its whole lines go, the
// rows and bad rows of those lines, and checksums of the bytes that tell
// an append from a rewrite.
type entry struct {
	Path, Session    string
	Dev, Ino         uint64
	Size             int64
	MTime, CTime     int64 // ns
	Committed        int64 // bytes of whole lines read: up to and with the last newline
	HeadSum, TailSum uint32
	// Racy marks an entry saved when the file had just changed: its stat
	// alone does not vouch for it.
	Racy bool
	// Rows are the rows of the whole lines, once loaded: an entry read
	// from the cache holds its rows' section undecoded until load.
	Rows   []Row
	loaded bool
	// section is the rows' section when held (the checkpoint's rows);
	// else src holds it, at secOff for secLen bytes, of crc32c secCRC.
	section        string
	src            *sections
	secOff, secLen int64
	secCRC         uint32
	Bad            map[string]int
	// sum summarizes the first sum.rows rows (all of them when summed).
	sum    rowSummary
	summed bool
}

// stat is the version of a file the cache compares with an entry's.
type stat struct {
	dev, ino           uint64
	size, mtime, ctime int64
}

func statFile(path string) (stat, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return stat{}, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return statOf(&st), nil
}

func fstat(fh *os.File) (stat, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(fh.Fd()), &st); err != nil {
		return stat{}, &fs.PathError{Op: "fstat", Path: fh.Name(), Err: err}
	}
	return statOf(&st), nil
}

func statOf(st *unix.Stat_t) stat {
	return stat{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// How a file was answered.
const (
	answerUnchanged = iota
	answerGrown
	answerRead
)

// fileResult is one file's part of a scan: its entry (nil when the file
// is gone), the rows and bad rows of a last line without its newline
// (never cached), how it was answered and the bytes parsed.
type fileResult struct {
	e        *entry
	tailRows []Row
	tailBad  map[string]int
	answer   int
	bytes    int64
}

// Read reads the usage rows of files through the cache in cacheDir ("":
// no cache): a file whose identity, size and times are what the cache
// read is not opened; one that only grew (the same inode, the bytes the
// cache checks unchanged) is read from where the cache stopped; any other
// is read whole. Either way the rows are those reading every file whole
// gives. A file that is gone is left out. The cache is saved when it
// changed; a cache that cannot be read or saved only costs time.
func Read(ctx context.Context, files []File, cacheDir string) (*Scan, error) {
	files = sortFiles(files)
	var c *cache
	if cacheDir != "" {
		c = loadCache(cacheDir, false)
	}
	results, err := scanAll(ctx, files, c, true)
	if err != nil {
		return nil, err
	}
	sc := &Scan{Files: make([][]Row, 0, len(results)), Bad: map[string]int{}}
	for _, r := range results {
		if r.e == nil {
			continue
		}
		sc.Cache.count(r)
		rows := r.e.Rows
		if len(r.tailRows) > 0 {
			rows = append(rows[:len(rows):len(rows)], r.tailRows...)
		}
		sc.Files = append(sc.Files, rows)
		addBad(sc.Bad, r.e.Bad)
		addBad(sc.Bad, r.tailBad)
	}
	if c != nil {
		c.update(results, &sc.Cache, 0)
	}
	return sc, nil
}

// sortFiles is a copy of files in path order: the order of the rows.
func sortFiles(files []File) []File {
	files = append([]File(nil), files...)
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files
}

// scanAll answers every file from the cache c (nil: none), side by side.
// With load, the rows of every entry are decoded (an entry of the cache
// whose rows cannot be is read again whole); without, an unchanged
// file's entry is left as the cache holds it.
func scanAll(ctx context.Context, files []File, c *cache, load bool) ([]fileResult, error) {
	results := make([]fileResult, len(files))
	now := time.Now()
	bufs := newBufs()
	err := durable.Each(ctx, runtime.GOMAXPROCS(0), len(files), func(_ context.Context, i int) error {
		var old *entry
		if c != nil {
			old = c.get(files[i].Path)
		}
		r, err := scanFile(files[i], old, now, bufs)
		if err == nil && load && r.e != nil && r.e.load() != nil {
			r, err = scanFile(files[i], nil, now, bufs)
		}
		results[i] = r
		return err
	})
	return results, err
}

// newBufs is a pool of read buffers: one per file read at a time.
func newBufs() *sync.Pool {
	return &sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}
}

// count notes how a file was answered.
func (st *CacheStats) count(r fileResult) {
	st.Files++
	switch r.answer {
	case answerUnchanged:
		st.Unchanged++
	case answerGrown:
		st.Grown++
	default:
		st.Read++
	}
	st.Bytes += r.bytes
}

func addBad(dst, src map[string]int) {
	for k, v := range src {
		dst[k] += v
	}
}

// scanFile answers one file from old (its cache entry, nil when none).
func scanFile(f File, old *entry, now time.Time, bufs *sync.Pool) (fileResult, error) {
	st, err := statFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileResult{}, nil // removed since the listing
	}
	if err != nil {
		return fileResult{}, err
	}
	if old != nil && old.Session == f.Session && !old.Racy && st == old.stat() {
		r := fileResult{e: old, answer: answerUnchanged}
		if st.size > old.Committed {
			err = r.readTail(f, old.Committed, st.size, bufs)
		}
		return r, err
	}
	fh, err := os.Open(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileResult{}, nil
	}
	if err != nil {
		return fileResult{}, err
	}
	defer fh.Close()
	if st, err = fstat(fh); err != nil {
		return fileResult{}, err
	}
	e := &entry{Path: f.Path, Session: f.Session, Dev: st.dev, Ino: st.ino, Size: st.size, MTime: st.mtime, CTime: st.ctime,
		Racy: now.Sub(time.Unix(0, st.ctime)) < racyWindow, loaded: true}
	r := fileResult{e: e, answer: answerRead}
	from := int64(0)
	if old != nil && old.Session == f.Session && old.grownInto(fh, st) && old.load() == nil {
		from, r.answer = old.Committed, answerGrown
		e.Rows, e.Bad, e.sum = old.Rows, old.Bad, old.summary()
		if st == old.stat() {
			r.answer = answerUnchanged
		}
	}
	err = r.parse(fh, f.Session, from, st.size, bufs)
	return r, err
}

func (e *entry) stat() stat {
	return stat{dev: e.Dev, ino: e.Ino, size: e.Size, mtime: e.MTime, ctime: e.CTime}
}

// grownInto says whether the file open as fh (at st) is the file e read,
// grown or as it was: the same inode, at least as long as e's whole
// lines, and the same bytes at its start and before their end.
func (e *entry) grownInto(fh *os.File, st stat) bool {
	if st.dev != e.Dev || st.ino != e.Ino || st.size < e.Committed {
		return false
	}
	head, tail, err := checksums(fh, e.Committed)
	return err == nil && head == e.HeadSum && tail == e.TailSum
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksums are the CRC-32C of up to checkWindow bytes at the start of fh
// and of up to checkWindow bytes before end.
func checksums(fh *os.File, end int64) (head, tail uint32, err error) {
	n := min(end, checkWindow)
	buf := make([]byte, n)
	if _, err := fh.ReadAt(buf, 0); err != nil {
		return 0, 0, err
	}
	head = crc32.Checksum(buf, castagnoli)
	if _, err := fh.ReadAt(buf, end-n); err != nil {
		return 0, 0, err
	}
	return head, crc32.Checksum(buf, castagnoli), nil
}

// parse reads [from, to) of fh: its whole lines' rows are added to the
// entry (which then covers them), a last line without its newline goes
// to the tail, and the entry's checksums are taken.
func (r *fileResult) parse(fh *os.File, session string, from, to int64, bufs *sync.Pool) error {
	e := r.e
	e.Rows = append([]Row(nil), e.Rows...)
	bad := map[string]int{}
	addBad(bad, e.Bad)
	committed, err := eachLine(io.NewSectionReader(fh, from, to-from), to-from, bufs, func(line []byte, whole bool) {
		if whole {
			parseInto(session, line, &e.Rows, bad)
		} else {
			if r.tailBad == nil {
				r.tailBad = map[string]int{}
			}
			parseInto(session, line, &r.tailRows, r.tailBad)
		}
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", fh.Name(), err)
	}
	e.Bad, e.Committed = bad, from+committed
	r.bytes = to - from
	e.HeadSum, e.TailSum, err = checksums(fh, e.Committed)
	if err != nil {
		return fmt.Errorf("read %s: %w", fh.Name(), err)
	}
	return nil
}

// readTail parses [from, to) of an unchanged file: the part of its last
// line the cache never keeps, written without its newline.
func (r *fileResult) readTail(f File, from, to int64, bufs *sync.Pool) error {
	fh, err := os.Open(f.Path)
	if err != nil {
		return err
	}
	defer fh.Close()
	r.tailBad = map[string]int{}
	_, err = eachLine(io.NewSectionReader(fh, from, to-from), to-from, bufs, func(line []byte, _ bool) {
		parseInto(f.Session, line, &r.tailRows, r.tailBad)
	})
	r.bytes = to - from
	return err
}

// parseInto parses one line into rows, counting a bad one by reason.
func parseInto(session string, line []byte, rows *[]Row, bad map[string]int) {
	row, ok, reason := ParseLine(session, line)
	switch {
	case ok:
		*rows = append(*rows, row)
		if row.Absurd() {
			bad[Absurd]++
		}
	case reason != "":
		bad[reason]++
	}
}

// eachLine calls fn with every line of r (whole: ended by its newline,
// which is passed along) and then with what follows the last newline, if
// anything; it returns the bytes of the whole lines. size is about how
// many bytes r holds; the buffer comes from bufs.
func eachLine(r io.Reader, size int64, bufs *sync.Pool, fn func(line []byte, whole bool)) (int64, error) {
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	buf := (*bp)[:min(int64(cap(*bp)), size+1)]
	defer func() { *bp = buf[:0] }()
	var done int64
	have := 0
	for {
		n, err := io.ReadFull(r, buf[have:])
		have += n
		start := 0
		for {
			i := bytes.IndexByte(buf[start:have], '\n')
			if i < 0 {
				break
			}
			fn(buf[start:start+i+1], true)
			start += i + 1
		}
		done += int64(start)
		have = copy(buf, buf[start:have])
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			if have > 0 {
				fn(buf[:have], false)
			}
			return done, nil
		}
		if err != nil {
			return done, err
		}
		if have == len(buf) { // a line longer than the buffer
			buf = append(buf, make([]byte, max(len(buf), 64<<10))...)
		}
	}
}

// Lines is one transcript held as its lines (a store read through the
// session-store contract rather than a file).
type Lines struct {
	Session string
	Lines   [][]byte
}

// ReadLines is Read for transcripts held as lines: each transcript's rows
// in the order given, with no cache (nothing identifies a file).
func ReadLines(ts []Lines) *Scan {
	s := &Scan{Bad: map[string]int{}}
	for _, t := range ts {
		var rows []Row
		for _, l := range t.Lines {
			parseInto(t.Session, l, &rows, s.Bad)
			s.Cache.Bytes += int64(len(l)) + 1
		}
		s.Files = append(s.Files, rows)
		s.Cache.Files++
		s.Cache.Read++
	}
	return s
}
