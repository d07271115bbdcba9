package sealed

// The extent record of a sealed transcript: what the file must hold, kept
// sealed beside it as <name>.jsonl.sealed.extent, so that a file cut at a
// frame boundary or rolled back to an older copy is seen (sealed.go).
//
//	record = slot 0 at offset 0, slot 1 at offset 512
//	slot   = magic "scribe-extent-1\n" | nonce (24) | XChaCha20-Poly1305(seq uint64 BE | frames uint64 BE | length uint64 BE | last frame's tag (16)) | tag (16)
//	ad     = "scribe-sealed-extent\x00" | relative name
//
// It is made (durably, both slots: seq 0 in slot 0 and seq 1 in slot 1,
// naming 0 frames) before the file is created; after every sync of the
// file, once the frames it names are on disk, the slot the next seq falls
// on (seq s lives in slot s%2, always) is overwritten in place (no fsync of
// its own: it may reach the disk later, never before the frames it names).
// A reader takes the authentic slot with the highest seq: a slot caught
// mid-write, by a reader or a power cut, leaves the other, older one,
// which is still a true lower bound. Such a torn slot was naming frames
// synced before it was written, so the file then holds more frames than
// the older slot names: a record with a slot that is not authentic (changed,
// cut off, another slot copied over it) whose file holds no frame past the
// other slot is damage (the newest slot destroyed to hide a truncation).
// The file and its record rolled back together, or both deleted, cannot be
// told from an older archive.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

const (
	ExtentSlotAt  = 512 // slot 1's offset: its own sector
	extentPlain   = 24 + tagLen
	ExtentSlotLen = 16 + 24 + extentPlain + 16
)

var (
	extentMagic = []byte("scribe-extent-1\n")
	extentAD    = []byte("scribe-sealed-extent\x00")
)

// Extent is what a sealed file holds at least.
type Extent struct {
	Seq    uint64 // which write of the record (the highest slot wins)
	Frames uint64
	End    int64
	Tag    [tagLen]byte
	// weak: the other slot is not authentic (or not there), so the
	// record may be one write behind: the file must then hold more
	// frames than it names.
	weak bool
}

// ExtentMadeSeq is the seq of the record a file's extent starts with
// (slot 1; slot 0 holds seq 0, naming the same).
const ExtentMadeSeq = 1

func extentAssoc(rel string) []byte { return append(bytes.Clone(extentAD), rel...) }

// ReadExtent reads the extent record of the sealed file disk; nil when it
// has none. One with no authentic slot is damage.
func ReadExtent(key *seal.RecordKey, disk, rel string) (*Extent, error) {
	p := disk + claudedir.ExtentSuffix
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	var best *Extent
	authentic := 0
	for slot, at := range []int{0, ExtentSlotAt} {
		if len(b) < at+ExtentSlotLen || !bytes.HasPrefix(b[at:], extentMagic) {
			continue
		}
		plain, err := key.Open(nil, b[at+len(extentMagic):at+ExtentSlotLen], extentAssoc(rel))
		if err != nil || len(plain) != extentPlain {
			continue
		}
		e := &Extent{Seq: binary.BigEndian.Uint64(plain), Frames: binary.BigEndian.Uint64(plain[8:]), End: int64(binary.BigEndian.Uint64(plain[16:]))}
		if e.Seq%2 != uint64(slot) {
			continue // a slot copied over the other: an older record in the newest one's place
		}
		copy(e.Tag[:], plain[24:])
		authentic++
		if best == nil || e.Seq > best.Seq {
			best = e
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w: %s: the extent record of %s fails authentication (changed, or moved from another file)", ErrSealedDamaged, p, disk)
	}
	// A record of one slot naming nothing is how an older scribe made
	// it, before the file's first frame was synced: it vouches for nothing.
	legacy := len(b) == ExtentSlotLen && best.Seq == 0 && best.Frames == 0
	best.weak = authentic < 2 && !legacy
	return best, nil
}

// extentSlot is e sealed as a slot.
func extentSlot(key *seal.RecordKey, rel string, e Extent) []byte {
	plain := binary.BigEndian.AppendUint64(nil, e.Seq)
	plain = binary.BigEndian.AppendUint64(plain, e.Frames)
	plain = binary.BigEndian.AppendUint64(plain, uint64(e.End))
	plain = append(plain, e.Tag[:]...)
	return key.Seal(bytes.Clone(extentMagic), plain, extentAssoc(rel))
}

// MakeExtent makes the extent record of the sealed file disk anew,
// durably, e in both slots (seq 0 and extentMadeSeq; the first update,
// seq 2, goes to slot 0).
func MakeExtent(key *seal.RecordKey, disk, rel string, e Extent) error {
	e.Seq = 0
	// A writer killed while it made this record left its temporary file;
	// the session's lock, held here, says no other writer is making one.
	if _, err := durable.RemoveStaleTemps(disk + claudedir.ExtentSuffix); err != nil {
		return fmt.Errorf("remove the stale temporary files of %s's extent record: %w", disk, err)
	}
	rec := make([]byte, ExtentSlotAt, ExtentSlotAt+ExtentSlotLen)
	copy(rec, extentSlot(key, rel, e))
	e.Seq = ExtentMadeSeq
	rec = append(rec, extentSlot(key, rel, e)...)
	if err := durable.WriteFile(disk+claudedir.ExtentSuffix, rec, layout.FileMode); err != nil {
		return fmt.Errorf("write the extent record of %s: %w", disk, err)
	}
	return nil
}

// UpdateExtent writes e (its seq one past the last) into its slot of the
// sealed file disk's record, in place.
func UpdateExtent(key *seal.RecordKey, disk, rel string, e Extent) error {
	p := disk + claudedir.ExtentSuffix
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("write the extent record of %s: %w", disk, err)
	}
	_, err = f.WriteAt(extentSlot(key, rel, e), int64(e.Seq%2)*ExtentSlotAt)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write the extent record of %s: %w", disk, err)
	}
	return nil
}
