package usage

// The usage cache: what Read parsed of each transcript, kept in a folder
// of scribe's own (the caller's cacheDir; never Claude Code's folder) so
// that the next report reads only what changed. It is derived from the
// transcripts and can be deleted at any time.
//
// The entries are spread over cacheBuckets files (by a hash of the
// transcript's path), so that a session that grew rewrites one of them,
// not all. A file, little-endian:
//
//	magic "SCRIBEUC"          8 bytes
//	format version            u32
//	code stamp                16 bytes  (the build that parsed the rows)
//	head length               u64
//	crc32c(head)              u32
//	head                      uvarint entry count, then the entries
//	sections                  the entries' rows' sections, one after another
//
// An entry: path, session, device, inode, size, mtime, ctime, the bytes of
// whole lines read, the two checksums, the racy flag, the bad rows by
// reason, the rows' summary (their number, the latest row's time as
// seconds and nanoseconds, the sum of their hashes as 8 bytes: see
// summary.go), then where its rows' section is among the sections (offset
// and length) and its crc32c (4 bytes). A section: a table of the model
// and speed names its rows use, then the rows (time as seconds and
// nanoseconds, message and request ids, model and speed as indexes into
// the table, the five token counts, flags and, when it has one, costUSD's
// bits). Numbers are (zig-zag) uvarints, strings a uvarint length and the
// bytes. A report reads whole files and checks every section; the status
// line's fast path reads the heads only and a section when it needs its
// rows (entry.load, which checks it then): it needs the summaries of
// most files, not their rows. A file that is missing,
// unreadable, corrupt, of another version or written by another build is
// ignored (and said in CacheStats.Discarded) and rewritten.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"github.com/e0dc0000/scribe/internal/bincodec"
	"github.com/e0dc0000/scribe/internal/buildid"
	"github.com/e0dc0000/scribe/internal/durable"
)

const (
	cacheBuckets = 16
	cacheMagic   = "SCRIBEUC"
	cacheVersion = 3
	cacheHeader  = 8 + 4 + 16 + 8 + 4
)

// cacheStamp identifies the code that parses rows.
var cacheStamp = sync.OnceValue(func() [16]byte { return buildid.Stamp("scribe usage cache") })

// Row flags in the cache.
const (
	rowHasCost = 1 << iota
)

// cache is the cache folder's entries, by bucket and path.
type cache struct {
	dir       string
	buckets   [cacheBuckets]map[string]*entry
	discarded []string
	// broken marks the buckets whose file was there but not used: they
	// are rewritten even when nothing in them changed.
	broken [cacheBuckets]bool
	// open are the bucket files whose sections are read when needed.
	open []*os.File
}

func bucketOf(path string) int { return int(crc32.Checksum([]byte(path), castagnoli) % cacheBuckets) }

func (c *cache) bucketFile(b int) string {
	return filepath.Join(c.dir, fmt.Sprintf("usage-%02d.bin", b))
}

// loadCache reads every bucket file of dir (side by side); a file that
// cannot be used leaves its bucket empty. With heads, only the files'
// heads are read, each section when its rows are needed, from the file
// kept open until close.
func loadCache(dir string, heads bool) *cache {
	c := &cache{dir: dir}
	var wg sync.WaitGroup
	errs := make([]error, cacheBuckets)
	open := make([]*os.File, cacheBuckets)
	for b := range cacheBuckets {
		c.buckets[b] = map[string]*entry{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if heads {
				open[b], err = readHeads(c.bucketFile(b), c.buckets[b])
			} else {
				err = readBucket(c.bucketFile(b), c.buckets[b])
			}
			if err != nil {
				c.buckets[b] = map[string]*entry{}
				c.broken[b] = true
				errs[b] = err
			}
		}()
	}
	wg.Wait()
	for b, err := range errs {
		if err != nil {
			c.discarded = append(c.discarded, fmt.Sprintf("%s: %v", filepath.Base(c.bucketFile(b)), err))
		}
		if open[b] != nil {
			c.open = append(c.open, open[b])
		}
	}
	return c
}

// close closes the bucket files loadCache left open.
func (c *cache) close() {
	for _, f := range c.open {
		f.Close()
	}
	c.open = nil
}

// readBucket reads a whole bucket file into m, its sections checked; a
// file that is not there leaves m empty.
func readBucket(path string, m map[string]*entry) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	n, err := unsealHeader(data, cacheMagic, cacheVersion)
	if err != nil {
		return err
	}
	if n > uint64(len(data)-cacheHeader) {
		return fmt.Errorf("head of %d bytes, the file holds %d", n, len(data)-cacheHeader)
	}
	head, rest := data[cacheHeader:cacheHeader+int(n)], data[cacheHeader+int(n):]
	if err := checkPayload(data, head); err != nil {
		return err
	}
	// The rows' strings are cut out of the file's bytes, which nothing
	// writes once read: one string over them, not a copy.
	src := &sections{all: unsafe.String(unsafe.SliceData(rest), len(rest)), whole: true}
	if err := decodeBucket(head, src, m); err != nil {
		return err
	}
	return src.checkAll(m)
}

// readHeads reads the head of a bucket file into m and gives the file,
// open for its sections (nil when there is none).
func readHeads(path string, m map[string]*entry) (*os.File, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	head, err := readHead(f)
	if err == nil {
		err = decodeBucket(head, &sections{f: f, base: int64(cacheHeader + len(head))}, m)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readHead reads and checks the header and head of the bucket file f.
func readHead(f *os.File) ([]byte, error) {
	header := make([]byte, cacheHeader)
	if _, err := io.ReadFull(f, header); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	n, err := unsealHeader(header, cacheMagic, cacheVersion)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || n > uint64(fi.Size()-cacheHeader) {
		return nil, fmt.Errorf("a head of %d bytes cut short", n)
	}
	head := make([]byte, n)
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, fmt.Errorf("head: %w", err)
	}
	return head, checkPayload(header, head)
}

// sections are a bucket file's sections: held whole (read with the file),
// or read from the open file when needed.
type sections struct {
	whole bool
	all   string
	// checked: every section of all was checked (checkAll).
	checked bool
	f       *os.File
	base    int64 // where the sections start in f
}

// read is the section at off of n bytes, checked against its crc.
func (s *sections) read(off, n int64, crc uint32) (string, error) {
	var sec string
	switch {
	case s.whole:
		if off < 0 || n < 0 || off+n > int64(len(s.all)) {
			return "", errors.New("section out of the file")
		}
		sec = s.all[off : off+n]
	default:
		b := make([]byte, n)
		if _, err := s.f.ReadAt(b, s.base+off); err != nil {
			return "", fmt.Errorf("section: %w", err)
		}
		sec = unsafe.String(unsafe.SliceData(b), len(b))
	}
	if !s.checked && crc32.Update(0, castagnoli, unsafe.Slice(unsafe.StringData(sec), len(sec))) != crc {
		return "", errors.New("section checksum mismatch")
	}
	return sec, nil
}

// checkAll checks the sections of m's entries (read whole): each against
// its crc, and that they make up the file's rest.
func (s *sections) checkAll(m map[string]*entry) error {
	total := int64(0)
	for _, en := range m {
		if _, err := s.read(en.secOff, en.secLen, en.secCRC); err != nil {
			return fmt.Errorf("%s: %w", en.Path, err)
		}
		total += en.secLen
	}
	if total != int64(len(s.all)) {
		return errors.New("bytes beyond the sections")
	}
	s.checked = true
	return nil
}

// get is path's entry, nil when the cache has none.
func (c *cache) get(path string) *entry { return c.buckets[bucketOf(path)][path] }

// update takes the scan's entries in and saves the buckets that changed
// (an entry new or replaced, one of a file that is gone, or a file that
// could not be used), atomically but without fsync: a cache file a crash
// damaged fails its checksum and is rebuilt.
//
// With slack, a file that only grew by less than slack bytes keeps its
// old entry (its bucket is not rewritten for it): the next read parses
// what was appended since that entry again, which costs less than writing
// the bucket at every call of a status line.
func (c *cache) update(results []fileResult, st *CacheStats, slack int64) {
	st.Discarded = c.discarded
	next := [cacheBuckets]map[string]*entry{}
	dirty := c.broken
	for b := range next {
		next[b] = map[string]*entry{}
	}
	for _, r := range results {
		if r.e == nil {
			continue
		}
		b := bucketOf(r.e.Path)
		old := c.buckets[b][r.e.Path]
		switch {
		case old == r.e:
			next[b][r.e.Path] = r.e
		case old != nil && r.answer == answerGrown && r.bytes < slack:
			next[b][r.e.Path] = old
		default:
			next[b][r.e.Path] = r.e
			dirty[b] = true
		}
	}
	for b, m := range c.buckets {
		for path := range m {
			if _, kept := next[b][path]; !kept {
				st.Dropped++
				dirty[b] = true
			}
		}
	}
	for b := range next {
		if !dirty[b] {
			continue
		}
		data := encodeBucket(next[b])
		_, err := durable.Replace(c.bucketFile(b), durable.Options{NoSync: true}, func(w io.Writer) error {
			_, err := w.Write(data)
			return err
		})
		if err != nil {
			st.SaveError = err.Error()
			return
		}
		st.Saved++
	}
	c.buckets = next
}

// encodeBucket writes a bucket file. An entry whose section cannot be
// read back is left out (its file is read again next time).
func encodeBucket(m map[string]*entry) []byte {
	var head bincodec.Enc
	var secs []byte
	type item struct {
		en  *entry
		sec string
	}
	items := make([]item, 0, len(m))
	for _, en := range m {
		if sec, err := en.sectionData(); err == nil {
			items = append(items, item{en, sec})
		}
	}
	head.Uv(uint64(len(items)))
	for _, it := range items {
		encodeEntry(&head, it.en)
		head.Uv(uint64(len(secs)))
		head.Uv(uint64(len(it.sec)))
		head.B = binary.LittleEndian.AppendUint32(head.B, crc32.Checksum(unsafe.Slice(unsafe.StringData(it.sec), len(it.sec)), castagnoli))
		secs = append(secs, it.sec...)
	}
	return append(sealFile(cacheMagic, cacheVersion, head.B), secs...)
}

// encodeEntry writes an entry's head but where its section is.
func encodeEntry(e *bincodec.Enc, en *entry) {
	e.Str(en.Path)
	e.Str(en.Session)
	e.Uv(en.Dev)
	e.Uv(en.Ino)
	for _, v := range []int64{en.Size, en.MTime, en.CTime, en.Committed} {
		e.V(v)
	}
	e.Uv(uint64(en.HeadSum))
	e.Uv(uint64(en.TailSum))
	racy := uint64(0)
	if en.Racy {
		racy = 1
	}
	e.Uv(racy)
	e.Uv(uint64(len(en.Bad)))
	for reason, n := range en.Bad {
		e.Str(reason)
		e.Uv(uint64(n))
	}
	sum := en.summary()
	e.Uv(uint64(sum.rows))
	e.V(sum.latest.Unix())
	e.Uv(uint64(sum.latest.Nanosecond()))
	e.B = binary.LittleEndian.AppendUint64(e.B, sum.hash)
}

// sectionData is the entry's rows' section: encoded from its rows once
// loaded, else as the cache holds it (read and checked now).
func (en *entry) sectionData() (string, error) {
	if en.loaded {
		var rows bincodec.Enc
		encodeRows(&rows, en.Rows)
		return string(rows.B), nil
	}
	if en.src == nil {
		return en.section, nil
	}
	return en.src.read(en.secOff, en.secLen, en.secCRC)
}

// encodeRows writes a rows' section.
func encodeRows(e *bincodec.Enc, rows []Row) {
	names, index := []string{}, map[string]uint64{}
	for _, r := range rows {
		for _, s := range []string{r.Model, r.Speed} {
			if _, ok := index[s]; !ok {
				index[s] = uint64(len(names))
				names = append(names, s)
			}
		}
	}
	e.Uv(uint64(len(names)))
	for _, s := range names {
		e.Str(s)
	}
	for _, r := range rows {
		e.V(r.Time.Unix())
		e.Uv(uint64(r.Time.Nanosecond()))
		e.Str(r.MessageID)
		e.Str(r.RequestID)
		e.Uv(index[r.Model])
		e.Uv(index[r.Speed])
		for _, n := range []int64{r.Input, r.Output, r.CacheCreate, r.CacheRead, r.CacheCreate1h} {
			e.Uv(uint64(n))
		}
		if !r.HasCost {
			e.Uv(0)
			continue
		}
		e.Uv(rowHasCost)
		e.B = binary.LittleEndian.AppendUint64(e.B, math.Float64bits(r.CostUSD))
	}
}

// decodeBucket reads a bucket file's head into m, the entries' sections
// in src.
func decodeBucket(head []byte, src *sections, m map[string]*entry) error {
	// The strings are cut out of the head's bytes, which nothing writes
	// once read: one string over them, not a copy.
	d := &bincodec.Dec{S: unsafe.String(unsafe.SliceData(head), len(head))}
	n := d.Count()
	for range n {
		en := decodeEntry(d)
		if d.Err != nil {
			return d.Err
		}
		if _, dup := m[en.Path]; dup {
			return fmt.Errorf("%s twice", en.Path)
		}
		en.src = src
		m[en.Path] = en
	}
	if d.Err == nil && d.Off != d.Len() {
		d.Fail("trailing bytes")
	}
	return d.Err
}

func decodeEntry(d *bincodec.Dec) *entry {
	en := &entry{Path: d.Str(), Session: d.Str(), Dev: d.Uv(), Ino: d.Uv(), Size: d.V(), MTime: d.V(), CTime: d.V(), Committed: d.V()}
	en.HeadSum, en.TailSum = uint32(d.Uv()), uint32(d.Uv())
	en.Racy = d.Uv() != 0
	en.Bad = map[string]int{}
	for range d.Count() {
		reason := d.Str()
		en.Bad[reason] = int(d.Uv())
	}
	en.sum.rows = int(d.Uv())
	sec, nsec := d.V(), d.Uv()
	en.sum.latest = timeOf(sec, nsec, d)
	if d.Off+8 > d.Len() {
		d.Fail("short summary")
		return en
	}
	en.sum.hash = le64(d.S[d.Off:])
	d.Off += 8
	en.summed = true
	en.secOff, en.secLen = int64(d.Uv()), int64(d.Uv())
	if d.Off+4 > d.Len() {
		d.Fail("short section checksum")
		return en
	}
	en.secCRC = binary.LittleEndian.Uint32([]byte(d.S[d.Off : d.Off+4]))
	d.Off += 4
	if en.Committed < 0 || en.Committed > en.Size || en.sum.rows < 0 || en.secOff < 0 || en.secLen < 0 || int64(en.sum.rows) > en.secLen {
		d.Fail("bad offset")
	}
	return en
}

// load decodes the entry's rows' section, once; an entry whose section
// cannot be decoded is not to be used.
func (en *entry) load() error {
	if en.loaded {
		return nil
	}
	section, err := en.sectionData()
	if err != nil {
		return fmt.Errorf("usage cache entry of %s: %w", en.Path, err)
	}
	d := &bincodec.Dec{S: section}
	names := make([]string, d.Count())
	for i := range names {
		names[i] = d.Str()
	}
	name := func() string {
		i := d.Uv()
		if i >= uint64(len(names)) {
			d.Fail("bad name index")
			return ""
		}
		return names[i]
	}
	rows := make([]Row, en.sum.rows)
	for i := range rows {
		r := &rows[i]
		sec, nsec := d.V(), d.Uv()
		r.Session, r.Time = en.Session, timeOf(sec, nsec, d)
		r.MessageID, r.RequestID = d.Str(), d.Str()
		r.Model, r.Speed = name(), name()
		for _, p := range []*int64{&r.Input, &r.Output, &r.CacheCreate, &r.CacheRead, &r.CacheCreate1h} {
			*p = int64(d.Uv())
		}
		if d.Uv()&rowHasCost != 0 {
			if d.Off+8 > d.Len() {
				d.Fail("short costUSD")
				break
			}
			r.HasCost, r.CostUSD = true, math.Float64frombits(le64(d.S[d.Off:]))
			d.Off += 8
		}
		if d.Err != nil {
			break
		}
	}
	if d.Err == nil && d.Off != d.Len() {
		d.Fail("trailing bytes")
	}
	if d.Err != nil {
		return fmt.Errorf("usage cache entry of %s: %w", en.Path, d.Err)
	}
	en.Rows, en.loaded, en.section, en.src = rows, true, "", nil
	return nil
}

// le64 reads 8 little-endian bytes at the start of s.
func le64(s string) uint64 {
	var v uint64
	for k := 7; k >= 0; k-- {
		v = v<<8 | uint64(s[k])
	}
	return v
}

// timeOf is a row's time from the cache, in UTC as ParseLine gives it.
func timeOf(sec int64, nsec uint64, d *bincodec.Dec) time.Time {
	if nsec >= 1e9 {
		d.Fail("bad time")
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}
