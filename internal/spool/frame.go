// Package spool is scribe's one on-disk spool: append-only segment files
// of checksummed frames, read back after a crash with a torn tail taken
// for the end of the log, optionally sealed (seal.RecordKey). The network
// sinks' queue (sinks/sinkhelper) keeps its overflow in lanes (Lane: one
// per sending process, records in seq order, an ack index); the plugin
// host keeps batches (Batches: indexed by id, a release watermark). Both
// write the same frame and read it with the one decoder below.
//
// A frame, little endian; crc is CRC-32C of everything after it (seq,
// extra and payload), so a torn or damaged frame is recognised:
//
//	┌─────────┬─────────┬─────────┬──────────────────┬─────────────────────┐
//	│ len u32 │ crc u32 │ seq u64 │ extra (0 or 4 B) │ payload (len bytes) │ ...
//	└─────────┴─────────┴─────────┴──────────────────┴─────────────────────┘
//
// A lane's frames have no extra; with sealing, len has its top bit set and
// the payload is the sealed record (bound to seq). A batch's frames carry
// the batch's entry count as extra (u32).
package spool

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sealedBit in a lane frame's length says its payload is sealed.
const sealedBit = 1 << 31

// format is a frame layout: how many extra header bytes, the largest
// payload believed, and whether len's top bit means sealed.
type format struct {
	extra     int
	maxRecord uint32
	sealable  bool
}

var (
	laneFormat  = format{extra: 0, maxRecord: MaxRecord, sealable: true}
	batchFormat = format{extra: 4, maxRecord: 1 << 30}
)

func (f format) headerSize() int { return 16 + f.extra }

// header is a frame's header, decoded.
type header struct {
	n      uint32 // payload bytes
	sealed bool
	crc    uint32
	seq    uint64
	extra  uint32
}

func (f format) parse(hdr []byte) header {
	h := header{n: binary.LittleEndian.Uint32(hdr[0:]), crc: binary.LittleEndian.Uint32(hdr[4:]), seq: binary.LittleEndian.Uint64(hdr[8:])}
	if f.sealable && h.n&sealedBit != 0 {
		h.n &^= sealedBit
		h.sealed = true
	}
	if f.extra == 4 {
		h.extra = binary.LittleEndian.Uint32(hdr[16:])
	}
	return h
}

// valid reports whether payload goes with hdr (its checksum matches).
func (f format) valid(hdr []byte, h header, payload []byte) bool {
	c := crc32.Update(0, castagnoli, hdr[8:f.headerSize()])
	return crc32.Update(c, castagnoli, payload) == h.crc
}

// appendFrame appends one frame holding payload to buf.
func (f format) appendFrame(buf []byte, seq uint64, extra uint32, payload []byte, sealed bool) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, f.headerSize())...)
	hdr := buf[start:]
	n := uint32(len(payload))
	if sealed {
		n |= sealedBit
	}
	binary.LittleEndian.PutUint32(hdr[0:], n)
	binary.LittleEndian.PutUint64(hdr[8:], seq)
	if f.extra == 4 {
		binary.LittleEndian.PutUint32(hdr[16:], extra)
	}
	c := crc32.Update(0, castagnoli, hdr[8:f.headerSize()])
	binary.LittleEndian.PutUint32(hdr[4:], crc32.Update(c, castagnoli, payload))
	return append(buf, payload...)
}

// errTorn is a frame cut short or damaged: the end of the log as far as
// a reader is concerned.
var errTorn = errors.New("torn or damaged frame")

// next reads one whole frame from r into buf (grown as needed). At a
// clean end it returns io.EOF; a short, oversized or mis-summed frame is
// errTorn.
func (f format) next(r *bufio.Reader, hdr, buf []byte) (header, []byte, error) {
	if _, err := io.ReadFull(r, hdr); err != nil {
		if errors.Is(err, io.EOF) {
			return header{}, buf, io.EOF
		}
		return header{}, buf, errTorn
	}
	h := f.parse(hdr)
	if h.n > f.maxRecord {
		return h, buf, errTorn
	}
	if cap(buf) < int(h.n) {
		buf = make([]byte, h.n)
	}
	buf = buf[:h.n]
	if _, err := io.ReadFull(r, buf); err != nil || !f.valid(hdr, h, buf) {
		return h, buf, errTorn
	}
	return h, buf, nil
}
