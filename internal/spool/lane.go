package spool

// A lane spool is the on-disk part of a network sink's queue (sinkhelper.Sender): append-only segment
// files under the sink's spool folder, and an ack index.
//
//	<spool dir>/                        ~/.claude/scribe/spool/<type>/<name>/ by default
//	  owner                             the sink's ID: another sink refuses the folder
//	  lane-0/                           one process at a time: flock on lane-0/lock
//	    lock                            the flock; holds the holder's pid
//	    ack                             the ack index (two slots, written in turn)
//	    00000000000000000001.seg        a segment, named by the seq of its first record
//	    00000000000000004097.seg        the tail segment: spills append here
//	  lane-1/                           a second process sending through the same sink
//
// A segment is a run of frames (see the package doc) without extra.
//
// With spool_encryption the payload is sealed (seal.RecordKey: nonce,
// XChaCha20-Poly1305 ciphertext and tag, bound to seq) and len has its top
// bit set; the data key lives sealed with age in <spool dir>/key.age.
// Frames written before encryption was turned on stay readable; a sealed
// frame without the key, or with another one, is an error, never skipped.
//
// The ack file holds two 16-byte slots, written alternately with pwrite, so
// a torn write of one slot leaves the other; the larger valid one wins:
//
//	┌─────────┬─────────┬─────────┐┌─────────┬─────────┬─────────┐
//	│ ack u64 │ crc u32 │ 0   u32 ││ ack u64 │ crc u32 │ 0   u32 │
//	└─────────┴─────────┴─────────┘└─────────┴─────────┴─────────┘
//
// Every record has a sequence number (seq), given by the Sender when the
// entry is written and never reused. Three indexes move forward only:
//
//	             ack                  read                               tail
//	              │                    │                                  │
//	  acked       ▼  sent, not yet     ▼  waiting                         ▼  the next
//	  (deleted) ──┼── acknowledged ────┼──────────────────────────────────┤  spill goes
//	              │  (in flight)       │                                  │  here
//	  ┌───────────┴──────┬─────────────┴──────────┬───────────────────────┐
//	  │ 0000…0001.seg    │ 0000…0734.seg          │ 0000…4097.seg (tail)  │
//	  └──────────────────┴────────────────────────┴───────────────────────┘
//
//   - ack: every seq below it was delivered (or dropped, counted). It is
//     rewritten after each acknowledged batch that came from disk, without
//     fsync: the page cache survives a killed process, and an ack lost to a
//     power cut only means a batch is sent again, which the server absorbs
//     (it stores an entry once, by uuid).
//   - read: the next seq handed to the push function; frames below it are
//     skipped when met.
//   - tail: one past the last seq on disk. A segment wholly below ack is
//     deleted; when ack reaches tail every segment is deleted.
//
// Appends go to the tail segment (a new one is started once it holds
// segmentBytes) and are fsynced by the spill that wrote them. On open, a
// torn tail of the last segment (a spill that was killed before its fsync,
// so never acknowledged) is copied aside to <segment>.torn and cut off. A
// damaged frame anywhere else is a disk fault: the segment is copied aside
// to <segment>.corrupt, the rest of it is skipped, and both are counted and
// logged as errors.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/internal/seal"
)

const (
	dirMode  = 0o700
	fileMode = 0o600

	// FrameHeader is the bytes a lane adds to each record.
	FrameHeader = 16
	ackSlot     = 16
	// MaxRecord bounds one lane record, so that a damaged length cannot
	// make recovery allocate gigabytes.
	MaxRecord = 256 << 20
	// maxLanes bounds how many processes can send through one sink's spool
	// at the same time.
	maxLanes = 64
	segExt   = ".seg"
)

// ErrOwner is returned when the spool folder belongs to another sink:
// two sinks given one spool_dir would deliver each other's entries.
var ErrOwner = errors.New("spool folder belongs to another sink")

type laneSegment struct {
	first uint64 // from the name
	path  string
	size  int64 // bytes of whole frames
}

// Record is one spooled entry.
type Record struct {
	Seq  uint64
	Data []byte
}

// Lane is one lane of a spool folder. It is not safe for concurrent use;
// the Sender serializes calls under its lock.
type Lane struct {
	dir          string
	log          hclog.Logger
	segmentBytes int64
	// key, when set, seals every record written; reading a sealed record
	// without it, or with another key, is an error.
	key *seal.RecordKey

	lock *durable.Lock
	ackF *os.File
	ackN uint64 // slot writes so far
	ack  uint64
	tail uint64 // one past the last seq on disk; 0 when nothing was ever written
	segs []*laneSegment

	wf       *os.File // the tail segment, for appends
	unsynced []*os.File
	dirDirty bool

	// The reader.
	rseg int
	roff int64
	rf   *os.File
	br   *bufio.Reader

	bytes                      int64
	tornTails, corrupt, fsyncs int64
	recovered                  int64 // bytes found pending at open
	wbuf                       []byte
}

// OpenLane locks and opens the first free lane of dir, which belongs to
// the sink named owner.
func OpenLane(dir, owner string, segmentBytes int64, log hclog.Logger) (*Lane, error) {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("spool folder: %w", err)
	}
	path := filepath.Join(dir, "owner")
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.WriteFile(path, []byte(owner+"\n"), fileMode); err != nil {
			return nil, fmt.Errorf("spool folder owner: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("spool folder owner: %w", err)
	case strings.TrimSpace(string(b)) != owner:
		return nil, fmt.Errorf("%w: %s is the spool of %q, not %q (give each sink its own spool_dir)",
			ErrOwner, dir, strings.TrimSpace(string(b)), owner)
	}
	for i := range maxLanes {
		sp, err := openSpool(filepath.Join(dir, "lane-"+strconv.Itoa(i)), segmentBytes, log)
		if errors.Is(err, ErrBusy) {
			continue
		}
		return sp, err
	}
	return nil, fmt.Errorf("%w: all %d lanes of %s are held by running processes", ErrBusy, maxLanes, dir)
}

// OrphanLanes opens, one at a time, every other lane of dir that no live
// process holds and that has something pending. The caller closes each.
func OrphanLanes(dir string, self *Lane, log hclog.Logger, each func(*Lane) error) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("spool folder: %w", err)
	}
	for _, de := range ents {
		if !de.IsDir() || !strings.HasPrefix(de.Name(), "lane-") {
			continue
		}
		path := filepath.Join(dir, de.Name())
		if path == self.dir {
			continue
		}
		segs, _ := filepath.Glob(filepath.Join(path, "*"+segExt))
		if len(segs) == 0 {
			continue
		}
		sp, err := openSpool(path, self.segmentBytes, log)
		if errors.Is(err, ErrBusy) {
			continue
		}
		if err != nil {
			return err
		}
		sp.key = self.key
		if err := each(sp); err != nil {
			sp.Close(false)
			return err
		}
	}
	return nil
}

// openSpool locks dir and recovers its state.
func openSpool(dir string, segmentBytes int64, log hclog.Logger) (_ *Lane, err error) {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("spool lane: %w", err)
	}
	lock, err := lockFolder(dir)
	if err != nil {
		return nil, err
	}
	s := &Lane{dir: dir, log: log, segmentBytes: segmentBytes, lock: lock}
	defer func() {
		if err != nil {
			s.Close(false)
		}
	}()
	if err := s.readAck(); err != nil {
		return nil, err
	}
	if err := s.recover(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Lane) readAck() error {
	f, err := os.OpenFile(filepath.Join(s.dir, "ack"), os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return fmt.Errorf("spool ack index: %w", err)
	}
	s.ackF = f
	var b [2 * ackSlot]byte
	n, err := f.ReadAt(b[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read spool ack index: %w", err)
	}
	for i := 0; i+ackSlot <= n; i += ackSlot {
		slot := b[i : i+ackSlot]
		v := binary.LittleEndian.Uint64(slot)
		if crc32.Checksum(slot[:8], castagnoli) == binary.LittleEndian.Uint32(slot[8:]) && v > s.ack {
			s.ack = v
		}
	}
	return nil
}

// recover lists the segments, cuts a torn tail and finds the tail seq.
func (s *Lane) recover() error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("read spool lane: %w", err)
	}
	for _, de := range ents {
		name := de.Name()
		num, ok := strings.CutSuffix(name, segExt)
		if !ok || de.IsDir() {
			continue
		}
		first, err := strconv.ParseUint(num, 10, 64)
		if err != nil || first == 0 {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			return fmt.Errorf("spool segment %s: %w", name, err)
		}
		s.segs = append(s.segs, &laneSegment{first: first, path: filepath.Join(s.dir, name), size: fi.Size()})
	}
	sort.Slice(s.segs, func(i, j int) bool { return s.segs[i].first < s.segs[j].first })
	// The last segment is the only one a killed spill can have torn. One
	// left with no whole frame is removed, and the one before is checked.
	for len(s.segs) > 0 {
		last := s.segs[len(s.segs)-1]
		lastSeq, valid, err := scanSegment(last.path)
		if err != nil {
			return err
		}
		if valid < last.size {
			if err := s.cutTail(last, valid); err != nil {
				return err
			}
		}
		if lastSeq > 0 {
			s.tail = lastSeq + 1
			break
		}
		if err := os.Remove(last.path); err != nil {
			return fmt.Errorf("remove empty spool segment: %w", err)
		}
		s.segs = s.segs[:len(s.segs)-1]
	}
	if s.tail <= s.ack {
		// Everything on disk was delivered: start clean.
		if err := s.removeAll(); err != nil {
			return err
		}
	}
	for _, sg := range s.segs {
		s.bytes += sg.size
	}
	s.recovered = s.bytes
	if len(s.segs) > 0 {
		s.log.Info("spool recovered", "lane", s.dir, "segments", len(s.segs), "bytes", s.bytes, "ack", s.ack, "tail", s.tail)
	}
	return nil
}

// scanSegment returns the seq of the last whole frame of a segment (0 when
// it has none) and the size of its valid prefix.
func scanSegment(path string) (lastSeq uint64, valid int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, fmt.Errorf("open spool segment: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	var hdr [FrameHeader]byte
	var buf []byte
	for {
		var h header
		if h, buf, err = laneFormat.next(br, hdr[:], buf); err != nil || h.seq <= lastSeq {
			return lastSeq, valid, nil // the end, or a torn or damaged frame
		}
		lastSeq = h.seq
		valid += FrameHeader + int64(h.n)
	}
}

// cutTail copies the torn bytes after valid aside and truncates.
func (s *Lane) cutTail(sg *laneSegment, valid int64) error {
	s.tornTails++
	torn := sg.size - valid
	s.log.Warn("spool: cutting a torn tail (a spill interrupted before it was acknowledged)",
		"segment", sg.path, "offset", valid, "bytes", torn)
	if err := durable.CopyRange(sg.path, sg.path+".torn", valid, torn); err != nil {
		return fmt.Errorf("keep torn spool tail: %w", err)
	}
	if err := os.Truncate(sg.path, valid); err != nil {
		return fmt.Errorf("cut torn spool tail: %w", err)
	}
	sg.size = valid
	return nil
}

// Pending reports whether the spool holds records not yet acknowledged.
func (s *Lane) Pending() bool { return len(s.segs) > 0 && s.tail > s.ack }

// overhead is what sealing adds to a record.
func (s *Lane) overhead() int {
	if s.key == nil {
		return 0
	}
	return s.key.Overhead()
}

// Append writes records (in seq order, above tail) to the tail segment,
// starting a new segment when it is full. It does not sync.
func (s *Lane) Append(recs []Record) error {
	for len(recs) > 0 {
		if s.wf == nil || s.segs[len(s.segs)-1].size >= s.segmentBytes {
			if err := s.newSegment(recs[0].Seq); err != nil {
				return err
			}
		}
		sg := s.segs[len(s.segs)-1]
		// Fill the tail segment up to segmentBytes (at least one record).
		buf := s.wbuf[:0]
		n := 0
		for n < len(recs) && (n == 0 || sg.size+int64(len(buf))+FrameHeader+int64(len(recs[n].Data)+s.overhead()) <= s.segmentBytes) {
			r := recs[n]
			data := r.Data
			if s.key != nil {
				data = s.key.Seal(nil, r.Data, binary.LittleEndian.AppendUint64(nil, r.Seq))
			}
			buf = laneFormat.appendFrame(buf, r.Seq, 0, data, s.key != nil)
			n++
		}
		if _, err := s.wf.Write(buf); err != nil {
			// A partial frame would read as a torn tail; cut it now so
			// that the next append starts on a frame boundary.
			_ = s.wf.Truncate(sg.size)
			return fmt.Errorf("append to spool segment %s: %w", sg.path, err)
		}
		if cap(buf) <= 4<<20 {
			s.wbuf = buf[:0]
		}
		sg.size += int64(len(buf))
		s.bytes += int64(len(buf))
		s.tail = recs[n-1].Seq + 1
		recs = recs[n:]
	}
	return nil
}

func (s *Lane) newSegment(first uint64) error {
	if s.wf != nil {
		// The full segment is synced by the next sync; keep it listed.
		s.unsynced = append(s.unsynced, s.wf)
		s.wf = nil
	}
	path := filepath.Join(s.dir, fmt.Sprintf("%020d%s", first, segExt))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, fileMode)
	if err != nil {
		return fmt.Errorf("create spool segment: %w", err)
	}
	s.wf = f
	s.dirDirty = true
	s.segs = append(s.segs, &laneSegment{first: first, path: path})
	return nil
}

// Sync makes every append durable: the segments written since the last
// sync, then the folder when a segment was created.
func (s *Lane) Sync() error {
	for _, f := range s.unsynced {
		err := f.Sync()
		f.Close()
		if err != nil {
			s.unsynced = nil
			return fmt.Errorf("fsync spool segment: %w", err)
		}
		s.fsyncs++
	}
	s.unsynced = nil
	if s.wf != nil {
		if err := s.wf.Sync(); err != nil {
			return fmt.Errorf("fsync spool segment: %w", err)
		}
		s.fsyncs++
	}
	if s.dirDirty {
		if err := durable.SyncDir(s.dir); err != nil {
			return err
		}
		s.dirDirty = false
		s.fsyncs++
	}
	return nil
}

// Read returns records with seq >= from, at most maxN of them and about
// maxBytes of payload (at least one record).
func (s *Lane) Read(from uint64, maxN, maxBytes int) ([]Record, error) {
	var out []Record
	size := 0
	var hdr [FrameHeader]byte
	// Appends since the last read are past the section the reader saw.
	s.refreshReader()
	for len(out) < maxN && (len(out) == 0 || size < maxBytes) {
		if s.rseg >= len(s.segs) {
			break
		}
		sg := s.segs[s.rseg]
		if s.roff >= sg.size {
			if s.rseg == len(s.segs)-1 {
				break // caught up with the tail
			}
			s.nextReadSegment()
			continue
		}
		if s.rf == nil {
			f, err := os.Open(sg.path)
			if err != nil {
				return out, fmt.Errorf("open spool segment: %w", err)
			}
			s.rf = f
			s.resetReader(sg)
		}
		if _, err := io.ReadFull(s.br, hdr[:]); err != nil {
			s.damaged(sg, fmt.Errorf("frame header: %w", err))
			continue
		}
		h := laneFormat.parse(hdr[:])
		n, sealed, seq := h.n, h.sealed, h.seq
		if n > MaxRecord || s.roff+FrameHeader+int64(n) > sg.size {
			s.damaged(sg, fmt.Errorf("frame length %d", n))
			continue
		}
		if seq < from {
			if _, err := s.br.Discard(int(n)); err != nil {
				s.damaged(sg, fmt.Errorf("frame payload: %w", err))
				continue
			}
			s.roff += FrameHeader + int64(n)
			continue
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(s.br, data); err != nil {
			s.damaged(sg, fmt.Errorf("frame payload: %w", err))
			continue
		}
		if !laneFormat.valid(hdr[:], h, data) {
			s.damaged(sg, errors.New("checksum mismatch"))
			continue
		}
		if sealed {
			var err error
			if s.key == nil {
				err = fmt.Errorf("spool segment %s holds encrypted records and no spool_encryption key is configured", sg.path)
			} else if data, err = s.key.Open(nil, data, hdr[8:16]); err != nil {
				err = fmt.Errorf("spool segment %s: %w (another key?)", sg.path, err)
			}
			if err != nil {
				// The frame stays where it is (roff is not advanced): the
				// records before it go out now, the error comes next time
				// and every time until the right key is configured.
				if len(out) > 0 {
					return out, nil
				}
				return nil, err
			}
		}
		s.roff += FrameHeader + int64(n)
		out = append(out, Record{Seq: seq, Data: data})
		size += int(n)
	}
	return out, nil
}

func (s *Lane) resetReader(sg *laneSegment) {
	sr := io.NewSectionReader(s.rf, s.roff, sg.size-s.roff)
	if s.br == nil {
		s.br = bufio.NewReaderSize(sr, 256<<10)
	} else {
		s.br.Reset(sr)
	}
}

// refreshReader makes the reader see bytes appended to the segment it is
// on since it was positioned.
func (s *Lane) refreshReader() {
	if s.rf != nil && s.rseg < len(s.segs) {
		s.resetReader(s.segs[s.rseg])
	}
}

func (s *Lane) nextReadSegment() {
	if s.rf != nil {
		s.rf.Close()
		s.rf = nil
	}
	s.rseg++
	s.roff = 0
}

// damaged handles a bad frame met while reading: a disk fault, since torn
// tails are cut at open. The segment is copied aside and the reader skips
// what is left of it; new appends to it are still read.
func (s *Lane) damaged(sg *laneSegment, why error) {
	s.corrupt++
	lost := sg.size - s.roff
	s.log.Error("spool: damaged record; copying the segment aside and skipping the rest of it",
		"segment", sg.path, "offset", s.roff, "bytes_skipped", lost, "error", why)
	if err := durable.CopyRange(sg.path, sg.path+".corrupt", 0, sg.size); err != nil {
		s.log.Error("spool: could not copy the damaged segment aside", "segment", sg.path, "error", err)
	}
	s.roff = sg.size
	s.refreshReader()
}

// SetAck records that every seq below ack is done, and deletes the
// segments that holds nothing else.
func (s *Lane) SetAck(ack uint64) error {
	if ack <= s.ack {
		return nil
	}
	s.ack = ack
	var slot [ackSlot]byte
	binary.LittleEndian.PutUint64(slot[:], ack)
	binary.LittleEndian.PutUint32(slot[8:], crc32.Checksum(slot[:8], castagnoli))
	if _, err := s.ackF.WriteAt(slot[:], int64(s.ackN%2)*ackSlot); err != nil {
		return fmt.Errorf("write spool ack index: %w", err)
	}
	s.ackN++
	if ack >= s.tail {
		return s.removeAll()
	}
	for len(s.segs) > 1 && s.segs[1].first <= ack {
		sg := s.segs[0]
		if err := os.Remove(sg.path); err != nil {
			return fmt.Errorf("remove delivered spool segment: %w", err)
		}
		s.bytes -= sg.size
		s.segs = s.segs[1:]
		if s.rseg == 0 {
			if s.rf != nil {
				s.rf.Close()
				s.rf = nil
			}
			s.roff = 0
		} else {
			s.rseg--
		}
	}
	return nil
}

// removeAll deletes every segment: all of them are delivered.
func (s *Lane) removeAll() error {
	s.closeFiles()
	for _, sg := range s.segs {
		if err := os.Remove(sg.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove delivered spool segment: %w", err)
		}
	}
	s.segs = nil
	s.bytes = 0
	s.rseg, s.roff = 0, 0
	return nil
}

func (s *Lane) closeFiles() {
	for _, f := range s.unsynced {
		_ = f.Sync()
		f.Close()
	}
	s.unsynced = nil
	if s.wf != nil {
		s.wf.Close()
		s.wf = nil
	}
	if s.rf != nil {
		s.rf.Close()
		s.rf = nil
	}
}

// Close releases the lane; with sync, appends and the ack index are made
// durable first.
func (s *Lane) Close(sync bool) error {
	var err error
	if sync {
		err = s.Sync()
		if s.ackF != nil {
			if serr := s.ackF.Sync(); serr != nil && err == nil {
				err = fmt.Errorf("fsync spool ack index: %w", serr)
			}
		}
	}
	s.drop()
	return err
}

// drop closes every file and gives the lock back.
func (s *Lane) drop() {
	s.closeFiles()
	if s.ackF != nil {
		s.ackF.Close()
		s.ackF = nil
	}
	s.lock.Release()
	s.lock = nil
}

// SetKey makes the lane seal what it writes from now on, and open sealed
// records it reads (seal.RecordKey).
func (s *Lane) SetKey(k *seal.RecordKey) { s.key = k }

// Dir is the lane's folder.
func (s *Lane) Dir() string { return s.dir }

// Ack is the ack index: every seq below it is done.
func (s *Lane) Ack() uint64 { return s.ack }

// Tail is one past the last seq on disk (0 when nothing was written).
func (s *Lane) Tail() uint64 { return s.tail }

// HasSegments reports whether any segment is on disk.
func (s *Lane) HasSegments() bool { return len(s.segs) > 0 }

// First is the seq that begins the oldest segment (0 when none).
func (s *Lane) First() uint64 {
	if len(s.segs) == 0 {
		return 0
	}
	return s.segs[0].first
}

// Bytes is what the segments on disk hold.
func (s *Lane) Bytes() int64 { return s.bytes }

// LaneStats are a lane's counters since it was opened.
type LaneStats struct {
	Bytes, Fsyncs, TornTails, Corrupt, Recovered int64
}

// Stats returns the lane's counters.
func (s *Lane) Stats() LaneStats {
	return LaneStats{Bytes: s.bytes, Fsyncs: s.fsyncs, TornTails: s.tornTails, Corrupt: s.corrupt, Recovered: s.recovered}
}

// Abandon drops the lane as a killed process would: nothing more is
// written or synced, and the lock goes. Tests use it to play kill -9.
func (s *Lane) Abandon() {
	for _, f := range s.unsynced {
		f.Close() // the kernel keeps what was written
	}
	s.unsynced = nil
	s.drop()
}
