package spool

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/e0dc0000/scribe/internal/durable"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

const (
	headerSize = 20
	// maxSegment is the size past which appends go to a new segment.
	maxSegment = 64 << 20
)

// Ref locates a batch's payload.
type Ref struct {
	seg uint64
	off int64 // of the payload
	len int
}

// Batch is a batch found on disk by OpenBatches.
type Batch struct {
	ID      uint64
	Entries int
	Bytes   int
	Ref     Ref
}

// Batches is the on-disk part of a plugin sink's queue: the batches
// that did not fit in memory, or that had to be made durable while the
// plugin could not take them.
//
// A spool is a folder owned by one host process at a time:
//
//	<dir>/
//	  lock                       flock(2)ed while a host has the spool open
//	  stream                     random id of this queue; with a batch id it
//	                             makes an idempotency key that survives restarts
//	  released                   decimal: every batch id <= it was made durable
//	                             by the plugin and is never sent again
//	  seg-0000000000000001.log   records, appended; removed once every batch
//	  seg-0000000000000002.log   in it is released
//
// A record is one batch: a frame (see the package doc) whose seq is the
// batch id and whose extra is its entry count.
//
// Batch ids increase over the life of the stream but need not follow file
// order: a batch kept in memory and spilled later lands after batches with
// higher ids. Readers therefore index records by id. A torn or corrupt
// record ends its segment: it was being written when the host died, and a
// record is only counted on once Sync has returned.
//
// Batches is an open batch spool folder. It is safe for concurrent use.
type Batches struct {
	dir    string
	lock   *durable.Lock
	stream string

	mu       sync.Mutex
	segs     map[uint64]*segment
	active   *segment
	nextSeg  uint64
	released uint64
	dirDirty bool
	closed   bool
}

type segment struct {
	num   uint64
	f     *os.File
	size  int64
	maxID uint64
	dirty bool
}

func segName(num uint64) string { return fmt.Sprintf("seg-%016d.log", num) }

// OpenBatches opens (creating it if needed) the spool in dir, takes its lock, and
// returns the batches it holds that are not yet released, in id order.
func OpenBatches(dir string) (s *Batches, recs []Batch, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("create spool %s: %w", dir, err)
	}
	lock, err := lockFolder(dir)
	if err != nil {
		return nil, nil, err
	}
	s = &Batches{dir: dir, lock: lock, segs: make(map[uint64]*segment), nextSeg: 1}
	// The error returns set s to nil: close what this spool opened.
	opened := s
	defer func() {
		if err != nil {
			opened.closeFiles()
			lock.Release()
		}
	}()
	if s.stream, err = s.loadStream(); err != nil {
		return nil, nil, err
	}
	if s.released, err = s.loadReleased(); err != nil {
		return nil, nil, err
	}
	names, err := filepath.Glob(filepath.Join(dir, "seg-*.log"))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(names)
	seen := make(map[uint64]bool)
	for _, name := range names {
		num, perr := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(name), "seg-"), ".log"), 10, 64)
		if perr != nil {
			continue
		}
		f, oerr := os.Open(name)
		if oerr != nil {
			return nil, nil, fmt.Errorf("open spool segment: %w", oerr)
		}
		seg := &segment{num: num, f: f}
		found, serr := scan(seg)
		if serr != nil {
			_ = f.Close()
			return nil, nil, fmt.Errorf("read spool segment %s: %w", name, serr)
		}
		live := 0
		for _, r := range found {
			if r.ID <= s.released || seen[r.ID] {
				continue
			}
			seen[r.ID] = true
			recs = append(recs, r)
			live++
		}
		if live == 0 {
			// Everything in it was released before the last stop.
			_ = f.Close()
			_ = os.Remove(name)
			s.dirDirty = true
			continue
		}
		s.segs[num] = seg
		s.nextSeg = max(s.nextSeg, num+1)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	return s, recs, nil
}

// scan reads a segment's records up to its first torn or corrupt one.
func scan(seg *segment) ([]Batch, error) {
	r := bufio.NewReaderSize(seg.f, 1<<20)
	var out []Batch
	var off int64
	hdr := make([]byte, headerSize)
	var payload []byte
	for {
		var h header
		var err error
		if h, payload, err = batchFormat.next(r, hdr, payload); err != nil {
			break // the end, or a torn or damaged record
		}
		out = append(out, Batch{
			ID:      h.seq,
			Entries: int(h.extra),
			Bytes:   int(h.n),
			Ref:     Ref{seg: seg.num, off: off + headerSize, len: int(h.n)},
		})
		seg.maxID = max(seg.maxID, h.seq)
		off += headerSize + int64(h.n)
	}
	seg.size = off
	return out, nil
}

func (s *Batches) loadStream() (string, error) {
	p := filepath.Join(s.dir, "stream")
	b, err := os.ReadFile(p)
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read spool stream id: %w", err)
	}
	var raw [12]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	id := hex.EncodeToString(raw[:])
	if err := durable.WriteFile(filepath.Join(s.dir, "stream"), []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write spool stream id: %w", err)
	}
	return id, nil
}

func (s *Batches) loadReleased() (uint64, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, "released"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read spool watermark: %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("spool watermark %s: %w", filepath.Join(s.dir, "released"), err)
	}
	return v, nil
}

// Dir returns the spool's folder.
func (s *Batches) Dir() string { return s.dir }

// Stream returns the spool's stream id.
func (s *Batches) Stream() string { return s.stream }

// Released returns the release watermark.
func (s *Batches) Released() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.released
}

// Append writes a batch. It is not durable until Sync returns.
func (s *Batches) Append(id uint64, entries int, payload []byte) (Ref, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Ref{}, errors.New("spool closed")
	}
	if len(payload) > int(batchFormat.maxRecord) {
		return Ref{}, fmt.Errorf("spool: batch %d is %d bytes, more than %d", id, len(payload), batchFormat.maxRecord)
	}
	if s.active == nil || s.active.size >= maxSegment {
		num := s.nextSeg
		f, err := os.OpenFile(filepath.Join(s.dir, segName(num)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return Ref{}, fmt.Errorf("create spool segment: %w", err)
		}
		s.nextSeg++
		s.active = &segment{num: num, f: f}
		s.segs[num] = s.active
		s.dirDirty = true
	}
	seg := s.active
	buf := batchFormat.appendFrame(make([]byte, 0, headerSize+len(payload)), id, uint32(entries), payload, false)
	if _, err := seg.f.WriteAt(buf, seg.size); err != nil {
		// Whatever part landed is a torn record that the next scan drops;
		// write after it no more.
		s.active = nil
		return Ref{}, fmt.Errorf("append to spool segment %s: %w", segName(seg.num), err)
	}
	ref := Ref{seg: seg.num, off: seg.size + headerSize, len: len(payload)}
	seg.size += int64(len(buf))
	seg.maxID = max(seg.maxID, id)
	seg.dirty = true
	return ref, nil
}

// Read returns a record's payload.
func (s *Batches) Read(ref Ref) ([]byte, error) {
	s.mu.Lock()
	seg := s.segs[ref.seg]
	s.mu.Unlock()
	if seg == nil {
		return nil, fmt.Errorf("spool: segment %d is gone", ref.seg)
	}
	buf := make([]byte, ref.len)
	if _, err := seg.f.ReadAt(buf, ref.off); err != nil {
		return nil, fmt.Errorf("read spool segment %s: %w", segName(ref.seg), err)
	}
	return buf, nil
}

// Sync makes every append so far durable.
func (s *Batches) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, seg := range s.segs {
		if !seg.dirty {
			continue
		}
		if err := seg.f.Sync(); err != nil {
			return fmt.Errorf("fsync spool segment %s: %w", segName(seg.num), err)
		}
		seg.dirty = false
	}
	if s.dirDirty {
		if err := durable.SyncDir(s.dir); err != nil {
			return fmt.Errorf("fsync spool folder: %w", err)
		}
		s.dirDirty = false
	}
	return nil
}

// Release records that every batch id <= through is durable downstream:
// segments holding nothing newer are removed. With persist, or when a
// segment went, the watermark is written durably.
func (s *Batches) Release(through uint64, persist bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || through < s.released {
		return nil
	}
	changed := through != s.released
	s.released = through
	removed := false
	for num, seg := range s.segs {
		if seg.maxID > through {
			continue
		}
		_ = seg.f.Close()
		if err := os.Remove(filepath.Join(s.dir, segName(num))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove spool segment: %w", err)
		}
		delete(s.segs, num)
		if s.active == seg {
			s.active = nil
		}
		removed = true
	}
	if (persist && changed) || removed {
		if err := durable.WriteFile(filepath.Join(s.dir, "released"), []byte(strconv.FormatUint(through, 10)+"\n"), 0o600); err != nil {
			return fmt.Errorf("write spool watermark: %w", err)
		}
		s.dirDirty = false
	}
	return nil
}

// Size returns the bytes held in segments.
func (s *Batches) Size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, seg := range s.segs {
		n += seg.size
	}
	return n
}

// Close syncs, closes the files and releases the lock.
func (s *Batches) Close() error {
	err := s.Sync()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.closeFiles()
	s.lock.Release()
	return err
}

func (s *Batches) closeFiles() {
	for _, seg := range s.segs {
		_ = seg.f.Close()
	}
	s.segs = map[uint64]*segment{}
	s.active = nil
}

// BatchStats describes a batch spool's content.
type BatchStats struct {
	Batches  int    `json:"batches"`
	Entries  int    `json:"entries"`
	Bytes    int64  `json:"bytes"`
	Released uint64 `json:"released"`
}

// InspectBatches reads what a spool folder holds without opening it for use: it
// takes no lock, so a host may be appending at the same time and the
// numbers are a snapshot. A missing folder is an empty spool.
func InspectBatches(dir string) (BatchStats, error) {
	var st BatchStats
	s := &Batches{dir: dir}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	released, err := s.loadReleased()
	if err != nil {
		return st, err
	}
	st.Released = released
	names, err := filepath.Glob(filepath.Join(dir, "seg-*.log"))
	if err != nil {
		return st, err
	}
	seen := make(map[uint64]bool)
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			continue // removed meanwhile
		}
		seg := &segment{f: f}
		recs, _ := scan(seg)
		_ = f.Close()
		for _, r := range recs {
			if r.ID <= released || seen[r.ID] {
				continue
			}
			seen[r.ID] = true
			st.Batches++
			st.Entries += r.Entries
			st.Bytes += int64(r.Bytes)
		}
	}
	return st, nil
}
