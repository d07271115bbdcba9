package jsonl

// The extent record of a sealed transcript: what the file must hold, kept
// sealed beside it as <name>.jsonl.sealed.extent, so that a file cut at a
// frame boundary or rolled back to an older copy is seen (sealed.go).
//
//	extent = magic "scribe-extent-1\n" | nonce (24) | XChaCha20-Poly1305(frames uint64 BE | length uint64 BE | last frame's tag (16)) | tag (16)
//	ad     = "scribe-sealed-extent\x00" | relative name
//
// It is written before the file is created (0 frames), and after every
// sync of the file, once the frames it names are on disk (never before:
// after a power cut the file may hold more than its record, never less).
// Replaced atomically (internal/durable). The file and its record rolled
// back together, or both deleted, cannot be told from an older archive.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/internal/seal"
)

// ExtentSuffix ends a sealed transcript's extent record, after SealedSuffix.
const ExtentSuffix = ".extent"

var (
	extentMagic = []byte("scribe-extent-1\n")
	extentAD    = []byte("scribe-sealed-extent\x00")
)

// extent is what a sealed file holds at least.
type extent struct {
	frames uint64
	end    int64
	tag    [tagLen]byte
}

func extentAssoc(rel string) []byte { return append(bytes.Clone(extentAD), rel...) }

// readExtent reads the extent record of the sealed file disk; nil when it
// has none. One that fails authentication is damage.
func readExtent(key *seal.RecordKey, disk, rel string) (*extent, error) {
	p := disk + ExtentSuffix
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if !bytes.HasPrefix(b, extentMagic) {
		return nil, fmt.Errorf("%w: %s: not an extent record", ErrSealedDamaged, p)
	}
	plain, err := key.Open(nil, b[len(extentMagic):], extentAssoc(rel))
	if err != nil || len(plain) != 16+tagLen {
		return nil, fmt.Errorf("%w: %s: the extent record of %s fails authentication (changed, or moved from another file)", ErrSealedDamaged, p, disk)
	}
	e := &extent{frames: binary.BigEndian.Uint64(plain), end: int64(binary.BigEndian.Uint64(plain[8:]))}
	copy(e.tag[:], plain[16:])
	return e, nil
}

// writeExtent replaces the extent record of the sealed file disk.
func writeExtent(key *seal.RecordKey, disk, rel string, e extent) error {
	plain := binary.BigEndian.AppendUint64(nil, e.frames)
	plain = binary.BigEndian.AppendUint64(plain, uint64(e.end))
	plain = append(plain, e.tag[:]...)
	b := key.Seal(bytes.Clone(extentMagic), plain, extentAssoc(rel))
	if err := durable.WriteFile(disk+ExtentSuffix, b, fileMode); err != nil {
		return fmt.Errorf("write the extent record of %s: %w", disk, err)
	}
	return nil
}
