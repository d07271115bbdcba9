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
//	payload length            u64
//	crc32c(payload)           u32
//	payload                   uvarint entry count, then the entries
//
// An entry: path, session, device, inode, size, mtime, ctime, the bytes of
// whole lines read, the two checksums, the racy flag, the bad rows by
// reason, the rows' summary (their number, the latest row's time as
// seconds and nanoseconds, the sum of their hashes as 8 bytes: see
// summary.go), then the rows' section, prefixed by its length: a table of
// the model and speed names its rows use, then the rows (time as seconds
// and nanoseconds, message and request ids, model and speed as indexes
// into the table, the five token counts, flags and, when it has one,
// costUSD's bits). Numbers are (zig-zag) uvarints, strings a uvarint
// length and the bytes. The rows' section is decoded only when its rows
// are used (entry.load): the status line's fast path reads the summaries
// of the files it does not need, not their rows. A file that is missing,
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
	cacheVersion = 2
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
}

func bucketOf(path string) int { return int(crc32.Checksum([]byte(path), castagnoli) % cacheBuckets) }

func (c *cache) bucketFile(b int) string {
	return filepath.Join(c.dir, fmt.Sprintf("usage-%02d.bin", b))
}

// loadCache reads every bucket file of dir (side by side); a file that
// cannot be used leaves its bucket empty.
func loadCache(dir string) *cache {
	c := &cache{dir: dir}
	var wg sync.WaitGroup
	errs := make([]error, cacheBuckets)
	for b := range cacheBuckets {
		c.buckets[b] = map[string]*entry{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, err := os.ReadFile(c.bucketFile(b))
			if errors.Is(err, fs.ErrNotExist) {
				return
			}
			if err == nil {
				err = decodeBucket(data, c.buckets[b])
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
	}
	return c
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

// encodeBucket writes a bucket file.
func encodeBucket(m map[string]*entry) []byte {
	var e bincodec.Enc
	e.Uv(uint64(len(m)))
	for _, en := range m {
		encodeEntry(&e, en)
	}
	return sealFile(cacheMagic, cacheVersion, e.B)
}

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
	if !en.loaded { // as it was read: not decoded, not changed
		e.Str(en.section)
		return
	}
	var rows bincodec.Enc
	encodeRows(&rows, en.Rows)
	e.Bytes(rows.B)
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

// decodeBucket reads a bucket file into m.
func decodeBucket(data []byte, m map[string]*entry) error {
	payload, err := unsealFile(data, cacheMagic, cacheVersion)
	if err != nil {
		return err
	}
	// The rows' strings are cut out of the file's bytes, which nothing
	// writes once read: one string over them, not a copy.
	d := &bincodec.Dec{S: unsafe.String(unsafe.SliceData(payload), len(payload))}
	n := d.Count()
	for range n {
		en := decodeEntry(d)
		if d.Err != nil {
			return d.Err
		}
		if _, dup := m[en.Path]; dup {
			return fmt.Errorf("%s twice", en.Path)
		}
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
	en.section = d.Str()
	if en.Committed < 0 || en.Committed > en.Size || en.sum.rows < 0 || en.sum.rows > len(en.section) {
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
	d := &bincodec.Dec{S: en.section}
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
	en.Rows, en.loaded, en.section = rows, true, ""
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
