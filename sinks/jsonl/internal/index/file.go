package index

// The sessions index: its file, loaded and saved (the layout is in index.go).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// ---------------------------------------------------------------------------
// The file

const (
	magic      = "SCRIBEIX"
	version    = 4 // 3: the nested-session flag (SDK 0.3.337's programmatic filter); 4: the fork flag (flagForked)
	headerSize = 64
	// maxSection bounds what a header may claim, so a damaged one cannot
	// make the reader allocate without limit.
	maxSection = 1 << 32
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

type header struct {
	count        uint32
	lenA, lenB   uint64
	crcA, crcB   uint32
	stamp        [16]byte
	sectionBBase int64
}

func (h *header) encode() []byte {
	b := make([]byte, headerSize)
	copy(b, magic)
	binary.LittleEndian.PutUint32(b[8:], version)
	binary.LittleEndian.PutUint32(b[12:], h.count)
	binary.LittleEndian.PutUint64(b[16:], h.lenA)
	binary.LittleEndian.PutUint64(b[24:], h.lenB)
	binary.LittleEndian.PutUint32(b[32:], h.crcA)
	binary.LittleEndian.PutUint32(b[36:], h.crcB)
	copy(b[40:56], h.stamp[:])
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], crcTable))
	return b
}

func decodeHeader(b []byte) (header, string) {
	var h header
	if len(b) < headerSize {
		return h, "short header"
	}
	if string(b[:8]) != magic {
		return h, "not a scribe index (bad magic)"
	}
	if crc32.Checksum(b[:60], crcTable) != binary.LittleEndian.Uint32(b[60:]) {
		return h, "header checksum mismatch"
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != version {
		return h, fmt.Sprintf("format version %d, want %d", v, version)
	}
	h.count = binary.LittleEndian.Uint32(b[12:])
	h.lenA = binary.LittleEndian.Uint64(b[16:])
	h.lenB = binary.LittleEndian.Uint64(b[24:])
	h.crcA = binary.LittleEndian.Uint32(b[32:])
	h.crcB = binary.LittleEndian.Uint32(b[36:])
	copy(h.stamp[:], b[40:56])
	if h.lenA > maxSection || h.lenB > maxSection {
		return h, "section length out of range"
	}
	h.sectionBBase = headerSize + int64(h.lenA)
	return h, ""
}

// load opens and decodes the index's header and first section. It
// returns nil and why when there is no usable index ("" when there is no
// file at all).
func (l Layout) load() (*memIndex, string) {
	f, err := os.Open(l.IndexFile())
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, ""
		}
		return nil, "unreadable: " + err.Error()
	}
	x, why := loadFile(f)
	if x == nil {
		f.Close()
	}
	return x, why
}

func loadFile(f *os.File) (*memIndex, string) {
	hb := make([]byte, headerSize)
	if _, err := io.ReadFull(f, hb); err != nil {
		return nil, "corrupt: short header"
	}
	h, why := decodeHeader(hb)
	if why != "" {
		return nil, "corrupt: " + why
	}
	if h.stamp != codeStamp() {
		return nil, "written by another build of scribe"
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, "unreadable: " + err.Error()
	}
	if uint64(st.Size) != headerSize+h.lenA+h.lenB {
		return nil, fmt.Sprintf("corrupt: file is %d bytes, header says %d", st.Size, headerSize+h.lenA+h.lenB)
	}
	a, crc, err := readString(f, headerSize, int64(h.lenA))
	if err != nil {
		return nil, "corrupt: short first section"
	}
	if crc != h.crcA {
		return nil, "corrupt: first section checksum mismatch"
	}
	x, err := decodeA(a, h.count)
	if err != nil {
		return nil, "corrupt: " + err.Error()
	}
	x.src, x.hdr = f, h
	return x, ""
}

// readString reads n bytes at off into a string, and their checksum,
// through a small buffer (the section is held once, not twice).
func readString(f *os.File, off, n int64) (string, uint32, error) {
	var sb strings.Builder
	sb.Grow(int(n))
	buf := make([]byte, min(n, 64<<10))
	var crc uint32
	for done := int64(0); done < n; {
		k := min(int64(len(buf)), n-done)
		if _, err := f.ReadAt(buf[:k], off+done); err != nil {
			return "", 0, err
		}
		crc = crc32.Update(crc, crcTable, buf[:k])
		sb.Write(buf[:k])
		done += k
	}
	return sb.String(), crc, nil
}

// loadLife reads the second section into the listed entries. On failure
// the entries stay without it (and are read again from their files);
// the reason is returned for the log.
func (x *memIndex) loadLife() string {
	if x.bTried || x.src == nil {
		return ""
	}
	x.bTried = true
	b := make([]byte, x.hdr.lenB)
	if _, err := x.src.ReadAt(b, x.hdr.sectionBBase); err != nil {
		return "corrupt: short second section"
	}
	if crc32.Checksum(b, crcTable) != x.hdr.crcB {
		return "corrupt: second section checksum mismatch"
	}
	lives, err := decodeB(b, len(x.listed))
	if err != nil {
		return "corrupt: " + err.Error()
	}
	for i, e := range x.listed {
		e.life = lives[i]
	}
	return ""
}

// ForgetIndexed drops the index entries of files moved out of a project
// folder (rm, gc, relocate) in the same step as the move, and reports how
// many it dropped. No index, or one that cannot be used, is left to the
// next listing to rebuild (it drops entries of missing files anyway).
func (l Layout) ForgetIndexed(folder string, names ...string) (int, error) {
	x, _ := l.load()
	if x == nil {
		return 0, nil
	}
	defer x.close()
	n := 0
	for _, name := range names {
		if m := x.folders[folder]; m != nil && m[name] != nil {
			delete(m, name)
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	if err := l.save(x); err != nil {
		return 0, fmt.Errorf("update the sessions index: %w", err)
	}
	return n, nil
}

// save writes the index atomically. Entries without their lifecycle
// part (its section could not be read) are left out.
func (l Layout) save(x *memIndex) error {
	x.loadLife()
	a, b, n := encode(x)
	h := header{count: uint32(n), lenA: uint64(len(a)), lenB: uint64(len(b)),
		crcA: crc32.Checksum(a, crcTable), crcB: crc32.Checksum(b, crcTable), stamp: codeStamp()}
	path := l.IndexFile()
	sweepTemps(filepath.Dir(path))
	if err := layout.ReplaceFile(path, h.encode(), a, b); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	return nil
}

// sweepTemps removes temporary files that a writer which died left
// behind (older than a minute: a live writer's is younger).
func sweepTemps(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.Contains(e.Name(), ".tmp-") {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Minute {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
