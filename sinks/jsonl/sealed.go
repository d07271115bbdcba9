package jsonl

// The sealed transcript file: an archive configured with encryption keeps
// every transcript (subagents and the lifecycle sidecar likewise) as
// <name>.jsonl.sealed, never as plain text, not even for a moment.
//
//	file   = magic "scribe-sealed-1\n" (16 bytes) frame*
//	frame  = header (20 bytes) body
//	header = "SFR1" | index uint64 BE | body length uint32 BE | crc32c(previous 16 bytes) uint32 BE
//	body   = nonce (24) | XChaCha20-Poly1305(lines of one write batch) | tag (16)
//	ad     = "scribe-sealed-frame\x00" | relative name | "\x00" | header[:16] | frame offset uint64 BE
//
// The data key is one random key per archive, kept sealed with age beside
// the projects tree (ArchiveKeyName). The associated data binds each frame
// to its file's relative name (<project>/<id>.jsonl, no .sealed), its index
// and its byte offset: a frame moved, swapped, reordered or copied from
// another file fails authentication. The header's own checksum means a
// flipped bit in a length is seen as damage at that frame, never read as a
// torn tail that would hide every later frame.
//
// A kill mid-write leaves a torn last frame: a short body behind a whole
// header, a prefix of the header the next frame would have, or the zero
// fill a power cut leaves. Only that is cut (counted as torn_frames_cut);
// a complete frame that fails authentication is an error naming the file,
// never cut. File names (project folders, session ids) stay in the clear.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/e0dc0000/scribe/internal/seal"
)

const (
	// SealedSuffix ends the name of every sealed transcript.
	SealedSuffix = ".sealed"
	// ArchiveKeyName is the archive's data key, sealed with age, in the
	// archive's folder beside projects/.
	ArchiveKeyName = "archive.key.age"

	frameHeaderLen = 20
	// maxFrameBody bounds a frame's body; a header claiming more is damage.
	maxFrameBody = 1 << 30
)

var (
	sealedMagic = []byte("scribe-sealed-1\n")
	frameMagic  = []byte("SFR1")
	frameAD     = []byte("scribe-sealed-frame\x00")
	crcTable    = crc32.MakeTable(crc32.Castagnoli)
)

// ErrSealedDamaged is returned for a sealed file whose content is not a torn
// tail: a complete frame that fails authentication, a corrupt header, a
// frame out of place. Nothing is cut then.
var ErrSealedDamaged = errors.New("sealed transcript damaged")

// sealedTail says where the whole frames of a sealed file end.
type sealedTail struct {
	end    int64  // offset just after the last whole frame (0: not even the file header)
	frames uint64 // whole frames
	cut    int64  // bytes after end that a torn write left (to be cut)
}

func frameAssoc(rel string, hdr []byte, off int64) []byte {
	ad := make([]byte, 0, len(frameAD)+len(rel)+1+16+8)
	ad = append(append(append(ad, frameAD...), rel...), 0)
	ad = append(ad, hdr[:16]...)
	return binary.BigEndian.AppendUint64(ad, uint64(off))
}

// appendFrame appends to dst the frame holding plain, the index'th of the
// file rel, starting at file offset off (the file header first when off
// is 0). It returns the bytes to write.
func appendFrame(dst []byte, key *seal.RecordKey, rel string, index uint64, off int64, plain []byte) []byte {
	if off == 0 {
		dst = append(dst, sealedMagic...)
		off = int64(len(sealedMagic))
	}
	hdr := make([]byte, frameHeaderLen)
	copy(hdr, frameMagic)
	binary.BigEndian.PutUint64(hdr[4:], index)
	binary.BigEndian.PutUint32(hdr[12:], uint32(len(plain)+key.Overhead()))
	binary.BigEndian.PutUint32(hdr[16:], crc32.Checksum(hdr[:16], crcTable))
	dst = append(dst, hdr...)
	return key.Seal(dst, plain, frameAssoc(rel, hdr, off))
}

// openSealed decrypts a sealed file's bytes, appending the plain text of
// its whole frames to dst. A torn tail is reported in the returned
// sealedTail (cut > 0), not as an error; anything else that is wrong is
// ErrSealedDamaged naming name (the path to show) and the offset.
func openSealed(dst []byte, key *seal.RecordKey, name, rel string, data []byte) ([]byte, sealedTail, error) {
	var t sealedTail
	if len(data) == 0 {
		return dst, t, nil
	}
	if len(data) < len(sealedMagic) || !bytes.Equal(data[:len(sealedMagic)], sealedMagic) {
		if tornPrefix(data, sealedMagic) {
			t.cut = int64(len(data))
			return dst, t, nil
		}
		return dst, t, fmt.Errorf("%w: %s: not a sealed transcript (no %q header)", ErrSealedDamaged, name, bytes.TrimSpace(sealedMagic))
	}
	off := int64(len(sealedMagic))
	t.end = off
	for off < int64(len(data)) {
		rest := data[off:]
		want := make([]byte, 12)
		copy(want, frameMagic)
		binary.BigEndian.PutUint64(want[4:], t.frames)
		if len(rest) < frameHeaderLen || crc32.Checksum(rest[:16], crcTable) != binary.BigEndian.Uint32(rest[16:20]) {
			if tornHeader(rest, want) {
				t.cut = int64(len(rest))
				return dst, t, nil
			}
			return dst, t, fmt.Errorf("%w: %s: frame %d at offset %d: corrupt header", ErrSealedDamaged, name, t.frames, off)
		}
		hdr := rest[:frameHeaderLen]
		if !bytes.Equal(hdr[:12], want) {
			return dst, t, fmt.Errorf("%w: %s: frame at offset %d is not frame %d (moved or reordered)", ErrSealedDamaged, name, off, t.frames)
		}
		n := int64(binary.BigEndian.Uint32(hdr[12:16]))
		if n > maxFrameBody {
			return dst, t, fmt.Errorf("%w: %s: frame %d at offset %d: body length %d", ErrSealedDamaged, name, t.frames, off, n)
		}
		if int64(len(rest)) < frameHeaderLen+n {
			t.cut = int64(len(rest)) // a short body behind a whole header
			return dst, t, nil
		}
		var err error
		dst, err = key.Open(dst, rest[frameHeaderLen:frameHeaderLen+n], frameAssoc(rel, hdr, off))
		if err != nil {
			return dst, t, fmt.Errorf("%w: %s: frame %d at offset %d fails authentication (changed, moved from another file, or another key): %v",
				ErrSealedDamaged, name, t.frames, off, err)
		}
		off += frameHeaderLen + n
		t.end = off
		t.frames++
	}
	return dst, t, nil
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
func tornHeader(rest, want []byte) bool {
	last := bytes.LastIndexFunc(rest, func(r rune) bool { return r != 0 })
	if last >= frameHeaderLen {
		return false
	}
	return tornPrefix(rest[:min(len(rest), len(want))], want)
}
