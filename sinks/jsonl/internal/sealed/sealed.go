package sealed

// The sealed transcript file: an archive configured with encryption keeps
// every transcript (subagents and the lifecycle sidecar likewise) as
// <name>.jsonl.sealed, never as plain text, not even for a moment.
//
// Format 2 (what every write makes):
//
//	file   = magic "scribe-sealed-2\n" (16 bytes) frame*
//	frame  = header (32 bytes) body
//	header = "SFR2" | index uint64 BE | body length uint32 BE | mac (16)
//	mac    = MAC(data key; "scribe-sealed-header\x00" | relative name | "\x00" | header[:16] | frame offset uint64 BE | prev)
//	body   = nonce (24) | XChaCha20-Poly1305(lines of one write batch) | tag (16)
//	ad     = "scribe-sealed-frame\x00" | relative name | "\x00" | header | frame offset uint64 BE | prev
//	prev   = the previous frame's tag (the body's last 16 bytes; zeros for frame 0)
//
// The data key is one random key per archive, kept sealed with age beside
// the projects tree (ArchiveKeyName). The header is authenticated with a
// key derived from the data key before its length is trusted: a forged
// length is damage at that frame, never a torn tail that would hide (and
// get cut) every later frame. The header and the body are bound to the
// file's relative name (<project>/<id>.jsonl, no .sealed), the frame's
// index, its byte offset and the frame before it (a chain): a frame moved,
// swapped, reordered, duplicated or copied from another file fails.
//
// What a file must hold is kept beside it, sealed (<name>.jsonl.sealed.extent,
// see sealedextent.go): its whole frames, its length and the tag of its last
// frame, written once those frames are on disk. A file shorter than that
// (truncated at a frame boundary, rolled back to an older copy) is damage.
//
// A kill mid-write leaves a torn last frame: a short body behind a whole,
// authentic header, a prefix of the header the next frame would have, or
// the zero fill a power cut leaves. Only that is cut (counted as
// torn_frames_cut), and only past what the extent record vouches for; a
// complete frame that fails authentication is an error naming the file,
// never cut. File names (project folders, session ids) stay in the clear.
//
// Format 1 ("scribe-sealed-1\n", headers "SFR1" with a crc32c instead of a
// mac, no chain, no extent record) is still read; the writer rewrites such
// a file in format 2, frame for frame, the first time it appends to it.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/e0dc0000/scribe/internal/seal"
)

const (
	FrameHeaderLen   = 32
	FrameHeaderLenV1 = 20
	tagLen           = 16
	// maxFrameBody bounds a frame's body; a header claiming more is damage.
	maxFrameBody = 1 << 30
)

var (
	Magic          = []byte("scribe-sealed-2\n")
	MagicV1        = []byte("scribe-sealed-1\n")
	frameMagic     = []byte("SFR2")
	FrameMagicV1   = []byte("SFR1")
	frameAD        = []byte("scribe-sealed-frame\x00")
	headerMACLabel = []byte("scribe-sealed-header\x00")
	CRCTable       = crc32.MakeTable(crc32.Castagnoli)
)

// ErrSealedDamaged is returned for a sealed file whose content is not a torn
// tail: a complete frame that fails authentication, a corrupt header, a
// frame out of place, a file shorter than its extent record. Nothing is
// cut then.
var ErrSealedDamaged = errors.New("sealed transcript damaged")

// sealedTail says where the whole frames of a sealed file end.
type sealedTail struct {
	end    int64  // offset just after the last whole frame (0: not even the file header)
	frames uint64 // whole frames
	cut    int64  // bytes after end that a torn write left (to be cut)
	prev   [tagLen]byte
	v1     bool  // the file is in format 1
	bounds []int // format 1: the plain text's length after each frame
}

func frameAssoc(rel string, hdr []byte, off int64, prev []byte) []byte {
	ad := make([]byte, 0, len(frameAD)+len(rel)+1+FrameHeaderLen+8+tagLen)
	ad = append(append(append(ad, frameAD...), rel...), 0)
	ad = append(ad, hdr...)
	ad = binary.BigEndian.AppendUint64(ad, uint64(off))
	return append(ad, prev...)
}

func headerMAC(key *seal.RecordKey, rel string, hdr []byte, off int64, prev []byte) []byte {
	var offb [8]byte
	binary.BigEndian.PutUint64(offb[:], uint64(off))
	return key.MAC(nil, headerMACLabel, []byte(rel), []byte{0}, hdr[:16], offb[:], prev)
}

// AppendFrame appends to dst the frame holding plain, the index'th of the
// file rel, starting at file offset off (the file header first when off
// is 0) after the frame whose tag is prev. It returns the bytes to write;
// the new frame's tag is their last tagLen bytes.
func AppendFrame(dst []byte, key *seal.RecordKey, rel string, index uint64, off int64, prev [tagLen]byte, plain []byte) []byte {
	if off == 0 {
		dst = append(dst, Magic...)
		off = int64(len(Magic))
	}
	hdr := make([]byte, 16, FrameHeaderLen)
	copy(hdr, frameMagic)
	binary.BigEndian.PutUint64(hdr[4:], index)
	binary.BigEndian.PutUint32(hdr[12:], uint32(len(plain)+key.Overhead()))
	hdr = append(hdr, headerMAC(key, rel, hdr, off, prev[:])...)
	dst = append(dst, hdr...)
	return key.Seal(dst, plain, frameAssoc(rel, hdr, off, prev[:]))
}

// LastTag is the tag of the frame that ends b.
func LastTag(b []byte) (t [tagLen]byte) {
	copy(t[:], b[len(b)-tagLen:])
	return t
}

// openSealed decrypts a sealed file's bytes, appending the plain text of
// its whole frames to dst. A torn tail is reported in the returned
// sealedTail (cut > 0), not as an error; anything else that is wrong is
// ErrSealedDamaged naming name (the path to show) and the offset. With
// ext (the file's extent record), a file holding less than it says, or
// other frames, is damage too.
func Open(dst []byte, key *seal.RecordKey, name, rel string, data []byte, ext *Extent) ([]byte, sealedTail, error) {
	var t sealedTail
	dst, err := openFrames(dst, key, name, rel, data, ext, &t)
	if err != nil {
		return dst, t, err
	}
	if t.cut > FrameHeaderLen+maxFrameBody {
		cut := t.cut
		t.cut = 0 // more than one write could leave: not a torn write
		return dst, t, fmt.Errorf("%w: %s: %d bytes after its last whole frame, more than one write's worth", ErrSealedDamaged, name, cut)
	}
	if ext != nil && t.frames < ext.Frames {
		t.cut = 0 // nothing of it is a torn write to cut
		return dst, t, fmt.Errorf("%w: %s holds %d whole frames (%d bytes), its extent record %d frames (%d bytes): truncated, or rolled back to an older copy",
			ErrSealedDamaged, name, t.frames, t.end, ext.Frames, ext.End)
	}
	if ext != nil && ext.weak && t.frames == ext.Frames {
		// Only a write of a newer record can leave a slot torn, and it
		// named frames synced before it: they are gone.
		t.cut = 0
		return dst, t, fmt.Errorf("%w: %s holds %d whole frames, no more than the older slot of its extent record names, and the other slot fails authentication: truncated, with its extent record changed",
			ErrSealedDamaged, name, t.frames)
	}
	return dst, t, nil
}

func openFrames(dst []byte, key *seal.RecordKey, name, rel string, data []byte, ext *Extent, t *sealedTail) ([]byte, error) {
	if len(data) == 0 {
		return dst, nil
	}
	if len(data) >= len(MagicV1) && bytes.Equal(data[:len(MagicV1)], MagicV1) {
		t.v1 = true
		return openSealedV1(dst, key, name, rel, data, t)
	}
	if len(data) < len(Magic) || !bytes.Equal(data[:len(Magic)], Magic) {
		if tornPrefix(data, Magic) || tornPrefix(data, MagicV1) {
			t.cut = int64(len(data))
			return dst, nil
		}
		return dst, fmt.Errorf("%w: %s: not a sealed transcript (no %q header)", ErrSealedDamaged, name, bytes.TrimSpace(Magic))
	}
	off := int64(len(Magic))
	t.end = off
	for off < int64(len(data)) {
		rest, want := data[off:], headerStart(frameMagic, t.frames)
		if len(rest) < FrameHeaderLen || !bytes.Equal(rest[:12], want) ||
			!bytes.Equal(rest[16:FrameHeaderLen], headerMAC(key, rel, rest, off, t.prev[:])) {
			if tornHeader(rest, want) {
				t.cut = int64(len(rest))
				return dst, nil
			}
			if len(rest) >= FrameHeaderLen && !bytes.Equal(rest[:12], want) && bytes.Equal(rest[:4], frameMagic) {
				return dst, fmt.Errorf("%w: %s: frame at offset %d is not frame %d (moved, reordered or repeated)", ErrSealedDamaged, name, off, t.frames)
			}
			return dst, fmt.Errorf("%w: %s: frame %d at offset %d: header fails authentication (changed, moved from another file, or another key)", ErrSealedDamaged, name, t.frames, off)
		}
		hdr := rest[:FrameHeaderLen]
		n := int64(binary.BigEndian.Uint32(hdr[12:16]))
		if n > maxFrameBody || n < int64(key.Overhead()) {
			return dst, fmt.Errorf("%w: %s: frame %d at offset %d: body length %d", ErrSealedDamaged, name, t.frames, off, n)
		}
		if int64(len(rest)) < FrameHeaderLen+n {
			t.cut = int64(len(rest)) // a short body behind an authentic header
			return dst, nil
		}
		body := rest[FrameHeaderLen : FrameHeaderLen+n]
		var err error
		dst, err = key.Open(dst, body, frameAssoc(rel, hdr, off, t.prev[:]))
		if err != nil {
			if int64(len(rest)) == FrameHeaderLen+n && allZero(body[len(body)-tagLen:]) && (ext == nil || t.frames >= ext.Frames) {
				// The last frame, past what the extent record vouches
				// for, its end the zero fill of a write a power cut
				// stopped.
				t.cut = int64(len(rest))
				return dst, nil
			}
			return dst, fmt.Errorf("%w: %s: frame %d at offset %d fails authentication (changed, moved from another file, or another key): %v",
				ErrSealedDamaged, name, t.frames, off, err)
		}
		t.prev = LastTag(body)
		off += FrameHeaderLen + n
		t.end = off
		t.frames++
		if ext != nil && t.frames == ext.Frames && (t.end != ext.End || t.prev != ext.Tag) {
			return dst, fmt.Errorf("%w: %s: its first %d frames are not those its extent record names (rolled back or replaced)", ErrSealedDamaged, name, t.frames)
		}
	}
	return dst, nil
}

// headerStart is what the header of frame index starts with.
func headerStart(magic []byte, index uint64) []byte {
	return binary.BigEndian.AppendUint64(bytes.Clone(magic), index)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// openSealedV1 reads a format 1 file (after its magic was checked). Its
// headers have a crc, no mac: a short body behind a whole header is a
// torn tail only when no later frame's header follows in the bytes it
// would hide (a length changed to swallow them is damage).
func openSealedV1(dst []byte, key *seal.RecordKey, name, rel string, data []byte, t *sealedTail) ([]byte, error) {
	off := int64(len(MagicV1))
	t.end = off
	for off < int64(len(data)) {
		rest, want := data[off:], headerStart(FrameMagicV1, t.frames)
		if len(rest) < FrameHeaderLenV1 || crc32.Checksum(rest[:16], CRCTable) != binary.BigEndian.Uint32(rest[16:20]) {
			if tornHeaderLen(rest, want, FrameHeaderLenV1) {
				t.cut = int64(len(rest))
				return dst, nil
			}
			return dst, fmt.Errorf("%w: %s: frame %d at offset %d: corrupt header", ErrSealedDamaged, name, t.frames, off)
		}
		hdr := rest[:FrameHeaderLenV1]
		if !bytes.Equal(hdr[:12], want) {
			return dst, fmt.Errorf("%w: %s: frame at offset %d is not frame %d (moved or reordered)", ErrSealedDamaged, name, off, t.frames)
		}
		n := int64(binary.BigEndian.Uint32(hdr[12:16]))
		if n > maxFrameBody {
			return dst, fmt.Errorf("%w: %s: frame %d at offset %d: body length %d", ErrSealedDamaged, name, t.frames, off, n)
		}
		if int64(len(rest)) < FrameHeaderLenV1+n {
			if at := laterHeaderV1(rest[FrameHeaderLenV1:], off+FrameHeaderLenV1, t.frames+1, key, rel); at >= 0 {
				return dst, fmt.Errorf("%w: %s: frame %d at offset %d claims %d bytes, over a later frame's header at offset %d (a changed length)",
					ErrSealedDamaged, name, t.frames, off, n, off+FrameHeaderLenV1+int64(at))
			}
			t.cut = int64(len(rest)) // a short body behind a whole header
			return dst, nil
		}
		var err error
		dst, err = key.Open(dst, rest[FrameHeaderLenV1:FrameHeaderLenV1+n], FrameAssocV1(rel, hdr, off))
		if err != nil {
			return dst, fmt.Errorf("%w: %s: frame %d at offset %d fails authentication (changed, moved from another file, or another key): %v",
				ErrSealedDamaged, name, t.frames, off, err)
		}
		off += FrameHeaderLenV1 + n
		t.end = off
		t.frames++
		t.bounds = append(t.bounds, len(dst))
	}
	return dst, nil
}

// laterHeaderV1 is the offset in b (which starts at file offset base) of
// a later format 1 frame (index from or more): a header whose crc is right,
// or, its crc changed too, one whose body opens at that place; -1 if none.
func laterHeaderV1(b []byte, base int64, from uint64, key *seal.RecordKey, rel string) int {
	for i := 0; ; i++ {
		j := bytes.Index(b[i:], FrameMagicV1)
		if j < 0 {
			return -1
		}
		i += j
		h := b[i:]
		if len(h) < FrameHeaderLenV1 || binary.BigEndian.Uint64(h[4:12]) < from {
			continue
		}
		if crc32.Checksum(h[:16], CRCTable) == binary.BigEndian.Uint32(h[16:20]) {
			return i
		}
		if n := int64(binary.BigEndian.Uint32(h[12:16])); n <= int64(len(h)-FrameHeaderLenV1) {
			if _, err := key.Open(nil, h[FrameHeaderLenV1:FrameHeaderLenV1+n], FrameAssocV1(rel, h, base+int64(i))); err == nil {
				return i
			}
		}
	}
}

// FrameAssocV1 is the associated data of a format 1 frame.
func FrameAssocV1(rel string, hdr []byte, off int64) []byte {
	ad := make([]byte, 0, len(frameAD)+len(rel)+1+16+8)
	ad = append(append(append(ad, frameAD...), rel...), 0)
	ad = append(ad, hdr[:16]...)
	return binary.BigEndian.AppendUint64(ad, uint64(off))
}

// tornPrefix reports whether b is what a torn write of something starting
// with want can leave: a prefix of want, then zero fill (or nothing).
func tornPrefix(b, want []byte) bool {
	i := 0
	for i < len(b) && i < len(want) && b[i] == want[i] {
		i++
	}
	for _, c := range b[i:] {
		if c != 0 {
			return false
		}
	}
	return true
}

// tornHeader reports whether rest, which holds no whole valid header, is
// what a torn write of the header want starts leaves: nothing but zero
// fill after the header's place, and the header's known part (magic and
// index) a prefix of want, then zeros.
func tornHeader(rest, want []byte) bool { return tornHeaderLen(rest, want, FrameHeaderLen) }

func tornHeaderLen(rest, want []byte, hdrLen int) bool {
	last := bytes.LastIndexFunc(rest, func(r rune) bool { return r != 0 })
	if last >= hdrLen {
		return false
	}
	return tornPrefix(rest[:min(len(rest), len(want))], want)
}

// FrameSpans returns where each frame of a format 2 file starts and ends,
// as its headers say (nothing checked: for tests that change a frame).
func FrameSpans(b []byte) [][2]int {
	var out [][2]int
	for off := len(Magic); off+FrameHeaderLen <= len(b); {
		n := int(binary.BigEndian.Uint32(b[off+12 : off+16]))
		out = append(out, [2]int{off, off + FrameHeaderLen + n})
		off += FrameHeaderLen + n
	}
	return out
}
