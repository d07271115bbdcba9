// Package bincodec writes and reads the compact binary records of
// scribe's caches: uvarints, zig-zag varints and length-prefixed strings,
// read back from a string (whose strings are then cut out of it, no
// allocation each) or from bytes (whose byte fields are slices of them).
package bincodec

import (
	"encoding/binary"
	"fmt"
)

// Enc appends to B.
type Enc struct{ B []byte }

// Uv appends a uvarint (binary.AppendUvarint's encoding).
func (e *Enc) Uv(v uint64) { e.B = binary.AppendUvarint(e.B, v) }

// V appends a zig-zag varint (binary.AppendVarint's encoding).
func (e *Enc) V(v int64) { e.B = binary.AppendVarint(e.B, v) }

// Str appends a length-prefixed string.
func (e *Enc) Str(s string) { e.Uv(uint64(len(s))); e.B = append(e.B, s...) }

// Bytes appends length-prefixed bytes.
func (e *Enc) Bytes(b []byte) { e.Uv(uint64(len(b))); e.B = append(e.B, b...) }

// Dec reads what Enc wrote, from S or (when not nil) from B. The first
// problem is kept in Err, after which every read gives a zero value; Off
// is where the next read starts.
type Dec struct {
	S   string
	B   []byte
	Off int
	Err error
}

// Len is the length of what is read.
func (d *Dec) Len() int {
	if d.B != nil {
		return len(d.B)
	}
	return len(d.S)
}

func (d *Dec) at(i int) byte {
	if d.B != nil {
		return d.B[i]
	}
	return d.S[i]
}

// Fail keeps the first problem, with where it was met.
func (d *Dec) Fail(what string) {
	if d.Err == nil {
		d.Err = fmt.Errorf("%s at byte %d", what, d.Off)
	}
}

// Uv reads a uvarint.
func (d *Dec) Uv() uint64 {
	if d.Err != nil {
		return 0
	}
	var v uint64
	var shift uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if d.Off >= d.Len() {
			break
		}
		c := d.at(d.Off)
		d.Off++
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			return v | uint64(c)<<shift
		}
		v |= uint64(c&0x7f) << shift
		shift += 7
	}
	d.Fail("bad number")
	return 0
}

// V reads a zig-zag varint.
func (d *Dec) V() int64 {
	ux := d.Uv()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// span returns the bounds of the next length-prefixed field.
func (d *Dec) span() (int, int) {
	n := d.Uv()
	if d.Err != nil {
		return 0, 0
	}
	if n > uint64(d.Len()-d.Off) {
		d.Fail("length out of range")
		return 0, 0
	}
	s := d.Off
	d.Off += int(n)
	return s, d.Off
}

// Str reads a length-prefixed string (cut out of S, or copied from B).
func (d *Dec) Str() string {
	s, e := d.span()
	if d.B == nil {
		return d.S[s:e]
	}
	return string(d.B[s:e])
}

// Bytes reads length-prefixed bytes (a slice of B, or copied from S).
func (d *Dec) Bytes() []byte {
	s, e := d.span()
	if d.B == nil {
		return []byte(d.S[s:e])
	}
	return d.B[s:e:e]
}

// Count reads an element count, refusing one the rest could not hold
// (each element takes at least one byte).
func (d *Dec) Count() int {
	n := d.Uv()
	if n > uint64(d.Len()-d.Off) {
		d.Fail("count out of range")
		return 0
	}
	return int(n)
}
