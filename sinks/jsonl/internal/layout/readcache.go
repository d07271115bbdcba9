package layout

import (
	"os"
	"sync"
	"syscall"
	"time"
)

// ReadCache keeps what was made from reading a file (a session's
// conversation, rebuilt from its transcript) with the file's stamp: its
// identity, size and times. It is used again only while a fresh stat of
// the file gives the same stamp, so an append, a rewrite or a rename over
// it reads the file again; a file that changed less than RacyWindow before
// it was stamped is not kept, since a rewrite within the file system's
// clock tick would not show. A long-lived reader of the same sessions (the
// web viewer: each page, window of older messages and live update reads
// the whole conversation again) keeps one; nil keeps none.
type ReadCache struct {
	// Clock is the time files are judged against (nil: time.Now); tests
	// move it on to age a file they just wrote.
	Clock func() time.Time
	// MinSize is the smallest file kept (NewReadCache: 1 MiB): a small one
	// is read again in no time, and keeping it would push out the large
	// ones the cache is for (a list page counting the messages of fifty
	// small sessions went through all eight places).
	MinSize int64

	mu    sync.Mutex
	hits  int
	reads map[readKey]cachedRead
	order []readKey // oldest first
}

// maxReads bounds the files kept (the oldest go first).
const maxReads = 8

type readKey struct{ path, variant string }

// FileStamp is a file as it was.
type FileStamp struct {
	Dev, Ino           uint64
	Size, Mtime, Ctime int64
}

type cachedRead struct {
	stamp FileStamp
	value any
}

// NewReadCache returns an empty cache.
func NewReadCache() *ReadCache {
	return &ReadCache{MinSize: 1 << 20, reads: map[readKey]cachedRead{}}
}

// StampFile is the file's stamp, and whether what is read from it now may
// be kept (it did not change within RacyWindow).
func StampFile(path string, now time.Time) (FileStamp, bool) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return FileStamp{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return FileStamp{}, false
	}
	s := FileStamp{Dev: uint64(st.Dev), Ino: st.Ino, Size: fi.Size(), Mtime: fi.ModTime().UnixNano(),
		Ctime: time.Unix(st.Ctim.Sec, st.Ctim.Nsec).UnixNano()}
	changed := max(s.Mtime, s.Ctime)
	return s, now.UnixNano()-changed >= int64(RacyWindow)
}

// Stamp is StampFile at the cache's time; a file below MinSize is not
// to be kept.
func (c *ReadCache) Stamp(path string) (FileStamp, bool) {
	s, keep := StampFile(path, c.now())
	return s, keep && s.Size >= c.MinSize
}

func (c *ReadCache) now() time.Time {
	if c.Clock != nil {
		return c.Clock()
	}
	return time.Now()
}

// Get is what was kept for path (read as variant, such as the options of
// the read) while the file is as it was when it was kept.
func (c *ReadCache) Get(path, variant string) (any, bool) {
	k := readKey{path, variant}
	c.mu.Lock()
	r, ok := c.reads[k]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	if s, _ := c.Stamp(path); s != r.stamp {
		c.mu.Lock()
		c.drop(k)
		c.mu.Unlock()
		return nil, false
	}
	c.mu.Lock()
	c.hits++
	c.mu.Unlock()
	return r.value, true
}

// Put keeps value, read from path (as variant) after the file was
// stamped as keepable with stamp.
func (c *ReadCache) Put(path, variant string, stamp FileStamp, value any) {
	k := readKey{path, variant}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(k)
	for len(c.order) >= maxReads {
		c.drop(c.order[0])
	}
	c.reads[k] = cachedRead{stamp: stamp, value: value}
	c.order = append(c.order, k)
}

// Hits counts the reads the cache answered.
func (c *ReadCache) Hits() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits
}

// drop forgets k (the caller holds mu).
func (c *ReadCache) drop(k readKey) {
	if _, ok := c.reads[k]; !ok {
		return
	}
	delete(c.reads, k)
	for i, o := range c.order {
		if o == k {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
}
